#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Host tests of ppcoal-ab, printed as "PASS host:ab-x" / "FAIL host:ab-x: why":
#   ab-stats-known   the verdicts on data whose answer is published: Fisher's
#                    Zea mays differences (exact two-sided p 0.041259765625,
#                    as scipy.stats.wilcoxon's documentation gives it), six
#                    pairs all up (p 1/32), five pairs (no verdict at 95%)
#   ab-stats-ref     300 random data sets (ties, zeros, 1 to 14 pairs) against
#                    a second implementation written here in Python from the
#                    definitions: p by enumerating every sign vector, the
#                    Hodges-Lehmann estimate and interval from the Walsh
#                    averages; p, change, interval, significance agree; and
#                    busybox awk (the guest's) computes the same JSON
#   ab-false-pos     4000 A/A comparisons of 8 pairs in random order (a fixed
#                    seed: no flake), noise of 10%, half of them with a drift
#                    of 2% a run and a pattern of period 4 runs: at most 5%
#                    (and at least 2%: the test is not dead) claimed a change;
#                    the same pattern with a fixed A B, B A alternation: most
#                    claim one (why the order is a coin); 500 comparisons with
#                    a true +5% in 2% noise: at least 90% found it
#   ab-run           real iperf3 over the host's loopback, a fake ppcoal
#                    (parameter files, stats): the modes each run saw (each
#                    pair's order as ab.csv records it, --a/--b), the options passed to iperf3
#                    (-P, -O, -R, -u, -b, -l), the CSV, ab.json's meta and
#                    measure fields, -J alone on stdout, modes restored,
#                    --analyze reproducing the run's JSON, jq and awk reading
#                    iperf3's JSON alike, the old option names
#   ab-direction     receive by default when the server is not on this host,
#                    --send against it; --together, --baseline
#   ab-bad-args      every bad argument: exit 2 and its reason
# Needs python3 and iperf3 (the suite installs it); no root, no module.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
AB=$REPO/scripts/ppcoal-ab
T=$(mktemp -d "${TMPDIR:-/tmp}/host-ab.XXXXXX") || exit 1
srv=""
trap '[ -z "$srv" ] || kill "$srv" 2>/dev/null; rm -rf "$T"' EXIT
why=""
bad() { why="$why${why:+; }$*"; }
report() {
	if [ -z "$why" ]; then echo "PASS host:ab-$1"; else echo "FAIL host:ab-$1: $why"; fi
	why=""
}
HDR="arm,size,pair,order,side,mode,mbps,pps,bytes,cpu_s,cpu_s_per_gb,rx_cpu_pct,coalesce_calls,coalesce_ok,recycle_direct,recycle_ring,napi_build_skb,tcp_rcv_coalesce"

# ---- known answers ----------------------------------------------------------
# csv_of "d1 d2 ...": one group whose pairs have log(B/A) = d/1000 (A = 1000)
csv_of() {
	echo "$HDR"
	echo "$1" | awk '{ for (i = 1; i <= NF; i++) {
		b = 1000 * exp($i / 1000)
		printf "x,1,%d,AB,A,off,1000,,1000000000,1,1,,0,0,0,0,0,\n", i
		printf "x,1,%d,AB,B,on,%.9f,,1000000000,1,1,,0,0,0,0,0,\n", i, b } }'
}
# field JSONFILE EXPR: a value of the mbps measure of the first result
field() { python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['results'][0]['measures']['mbps']; print(eval(sys.argv[2]))" "$1" "$2"; }
csv_of "6 8 14 16 23 24 28 29 41 -48 49 56 60 -67 75" >"$T/zea.csv"
"$AB" --analyze "$T/zea.csv" -J >"$T/zea.json" || bad "--analyze exit $?"
[ "$(field "$T/zea.json" "'%.9f' % m['p']")" = 0.041259766 ] || bad "Zea mays p $(field "$T/zea.json" "m['p']"), not 0.041259765625"
[ "$(field "$T/zea.json" "m['significant']")" = True ] || bad "Zea mays: not significant at 95%"
csv_of "5 3 9 1 2 7" >"$T/six.csv"
"$AB" --analyze "$T/six.csv" -J >"$T/six.json"
[ "$(field "$T/six.json" "m['p']")" = 0.03125 ] || bad "six up: p $(field "$T/six.json" "m['p']"), not 1/32"
"$AB" --analyze "$T/six.csv" -J --confidence 99 >"$T/six99.json"
[ "$(field "$T/six99.json" "m['significant'], m['reason']")" = "(False, '6 pairs: 8 needed for a verdict at 99%')" ] ||
	bad "six up at 99%: $(field "$T/six99.json" "m['significant'], m['reason']")"
csv_of "5 3 9 1 2" >"$T/five.csv"
"$AB" --analyze "$T/five.csv" >"$T/five.out"
grep -q '~ (5 pairs: 6 needed for a verdict at 95% n=5)' "$T/five.out" || bad "five pairs: no '6 needed' in the table"
report stats-known

# ---- a second implementation ------------------------------------------------
cat >"$T/ref.py" <<'EOF'
import itertools, json, math, random, sys
# The definitions, written again: exact signed-rank p by enumeration of all
# sign vectors over mid-ranks; Hodges-Lehmann estimate and interval.
def ref(d, conf):
    alpha = 1 - conf / 100
    x = [v for v in d if v != 0]
    m = len(x)
    if m == 0:
        return None
    order = sorted(range(m), key=lambda i: abs(x[i]))
    rank = [0.0] * m
    i = 0
    while i < m:
        j = i
        while j < m and abs(x[order[j]]) == abs(x[order[i]]):
            j += 1
        for k in range(i, j):
            rank[order[k]] = (i + 1 + j) / 2
        i = j
    wp = sum(r for r, v in zip(rank, x) if v > 0)
    lo = hi = 0
    for signs in itertools.product((0, 1), repeat=m):
        w = sum(r for r, s in zip(rank, signs) if s)
        lo += w <= wp + 1e-9
        hi += w >= wp - 1e-9
    p = min(1.0, 2 * min(lo, hi) / 2 ** m)
    walsh = sorted((x[i] + x[j]) / 2 for i in range(m) for j in range(i, m))
    n = len(walsh)
    est = walsh[n // 2] if n % 2 else (walsh[n // 2 - 1] + walsh[n // 2]) / 2
    # untied null distribution of W over ranks 1..m, by enumeration
    counts = {}
    for signs in itertools.product((0, 1), repeat=m):
        w = sum(r + 1 for r, s in enumerate(signs) if s)
        counts[w] = counts.get(w, 0) + 1
    k, cum = 0, 0
    for c in range(0, m * (m + 1) // 2 + 1):
        if (cum + counts.get(c, 0)) / 2 ** m <= alpha / 2:
            cum += counts.get(c, 0)
            k = c + 1
        else:
            break
    if k == 0:
        return dict(p=p, sig=False, est=est, ci=None)
    L, H = walsh[k - 1], walsh[n - k]
    return dict(p=p, sig=p <= alpha + 1e-12 and (L > 0 or H < 0), est=est, ci=(L, H))

if sys.argv[1] == "gen":
    rnd = random.Random(20261205)
    with open(sys.argv[2], "w") as f:
        f.write(sys.argv[3] + "\n")
        for g in range(300):
            n = rnd.randint(1, 14)
            shift = rnd.choice((0, 0, 0.03, -0.05, 0.2))
            for i in range(n):
                a = round(rnd.uniform(50, 150), 1)
                if rnd.random() < 0.15:
                    b = a  # a zero difference
                elif rnd.random() < 0.2 and i:
                    b = round(a * 1.1, 1)  # ties in |d|, likely
                else:
                    b = round(a * math.exp(shift + rnd.gauss(0, 0.05)), 1)
                f.write("r,%d,%d,AB,A,off,%s,,1000000000,1,1,,0,0,0,0,0,\n" % (g + 1, i + 1, a))
                f.write("r,%d,%d,AB,B,on,%s,,1000000000,1,1,,0,0,0,0,0,\n" % (g + 1, i + 1, b))
    sys.exit(0)
# cmp CSV JSON CONF: the tool's verdicts against ref()
conf = float(sys.argv[4])
pairs = {}
for line in open(sys.argv[2]).read().splitlines()[1:]:
    c = line.split(",")
    pairs.setdefault(int(c[1]), {}).setdefault(int(c[2]), {})[c[4]] = float(c[6])
res = json.load(open(sys.argv[3]))["results"]
bad = []
for r in res:
    g = r["size"]
    d = [math.log(v["B"] / v["A"]) for _, v in sorted(pairs[g].items())]
    want = ref(d, conf)
    got = r["measures"]["mbps"]
    if want is None:
        if got["significant"] or got["p"] is not None:
            bad.append("group %d: all zero, tool says %s" % (g, got))
        continue
    if abs(got["p"] - want["p"]) > 1e-6:
        bad.append("group %d: p %s, reference %s" % (g, got["p"], want["p"]))
    if got["significant"] != want["sig"]:
        bad.append("group %d: significant %s, reference %s" % (g, got["significant"], want["sig"]))
    if abs(got["change_pct"] - (math.exp(want["est"]) - 1) * 100) > 0.006:
        bad.append("group %d: change %s, reference %.2f" % (g, got["change_pct"], (math.exp(want["est"]) - 1) * 100))
    wci = None if want["ci"] is None else [round((math.exp(v) - 1) * 100, 2) for v in want["ci"]]
    gci = got["ci_pct"]
    if (wci is None) != (gci is None) or (wci and any(abs(a - b) > 0.006 for a, b in zip(wci, gci))):
        bad.append("group %d: interval %s, reference %s" % (g, gci, wci))
print("; ".join(bad[:5]) + (" (%d in all)" % len(bad) if bad else ""))
EOF
python3 "$T/ref.py" gen "$T/ref.csv" "$HDR"
for c in 95 90; do
	"$AB" --analyze "$T/ref.csv" -J --confidence $c >"$T/ref.json" || bad "--analyze of the random sets: exit $?"
	r=$(python3 "$T/ref.py" cmp "$T/ref.csv" "$T/ref.json" $c 2>&1)
	[ -z "$r" ] || bad "at $c%: $r"
done
# the guest's busybox awk computes the same report (the JSON, byte for byte)
if command -v busybox >/dev/null 2>&1; then
	mkdir -p "$T/bb"
	for a in $(busybox --list); do ln -s "$(command -v busybox)" "$T/bb/$a" 2>/dev/null; done
	env PATH="$T/bb" busybox sh "$AB" --analyze "$T/ref.csv" -J --confidence 90 >"$T/ref-bb.json" 2>"$T/bb.err" ||
		bad "under busybox: exit $?: $(head -n 1 "$T/bb.err")"
	cmp -s "$T/ref.json" "$T/ref-bb.json" || bad "busybox awk's report differs: $(diff "$T/ref.json" "$T/ref-bb.json" | sed -n 2,3p | cut -c 1-160 | tr '\n' ' ')"
else
	bad "busybox not installed: the guest's awk is untested"
fi
report stats-ref

# ---- the false-positive rate, and power ------------------------------------
# sim SEED GROUPS SHIFT DRIFT PERIOD ORDER: GROUPS groups of 8 pairs, each
# pair's order a coin (ORDER random, as the tool runs them) or A B, B A in
# turn (ORDER fixed); each run's Mbit/s and CPU s/GB lognormal with 10%
# noise, B times exp(SHIFT), every run DRIFT of the level below the last,
# and PERIOD more on the 2nd and 3rd run of every 4 (a pattern of period 4)
sim() {
	awk -v seed="$1" -v G="$2" -v sh="$3" -v dr="$4" -v per="$5" -v ord="$6" -v hdr="$HDR" 'BEGIN { srand(seed); print hdr
		for (g = 1; g <= G; g++) { lvl = 100; t = 0
			for (p = 1; p <= 8; p++) {
				ab = ord == "fixed" ? p % 2 : rand() < 0.5
				o = ab ? "A B" : "B A"; split(o, s, " ")
				for (k = 1; k <= 2; k++) { t++
					z = sqrt(-2 * log(1 - rand())) * cos(6.283185307 * rand())
					z2 = sqrt(-2 * log(1 - rand())) * cos(6.283185307 * rand())
					pp = (t % 4 == 2 || t % 4 == 3) ? per : 0
					f = exp(0.1 * z - dr * t + pp + (s[k] == "B" ? sh : 0)); c = exp(0.1 * z2 - pp - (s[k] == "B" ? sh : 0))
					printf "s,%d,%d,%s,%s,%s,%.3f,,1000000000,1,%.5f,,0,0,0,0,0,\n", g, p, (ab ? "AB" : "BA"), s[k], (s[k] == "A" ? "off" : "on"), lvl * f, c } } } }'
}
# claims CSV: "verdicts significant" of the tool's report
claims() { "$AB" --analyze "$1" -J | python3 -c "import json,sys; j=json.load(sys.stdin); print(j['verdicts'], j['significant'])"; }
sim 1 1000 0 0 0 random >"$T/aa1.csv"
sim 2 1000 0 0.02 0.2 random >"$T/aa2.csv"
# shellcheck disable=SC2046 # two words each
set -- $(claims "$T/aa1.csv") $(claims "$T/aa2.csv")
nv=$(($1 + $3)) ns=$(($2 + $4))
echo "  A/A: $ns of $nv verdicts claimed a change (noise alone $2 of $1; with a drift of 2%/run and a period-4 pattern of 20% $4 of $3)"
[ "$nv" = 4000 ] || bad "$nv verdicts, not 4000"
[ $((ns * 100)) -le $((nv * 5)) ] || bad "A/A: $ns of $nv claimed a change, more than 5%"
[ $((ns * 100)) -ge $((nv * 2)) ] || bad "A/A: $ns of $nv claimed a change, fewer than 2%: the test cannot fire?"
# the same pattern under a fixed A B, B A alternation: the coin is needed
sim 4 200 0 0 0.2 fixed >"$T/aa3.csv"
# shellcheck disable=SC2046
set -- $(claims "$T/aa3.csv")
echo "  A/A with a fixed alternation and the period-4 pattern: $2 of $1 claimed a change"
[ $(($2 * 2)) -ge "$1" ] || bad "fixed alternation under a period-4 pattern: only $2 of $1 claimed a change (expected most: the coin would not be needed)"
# the power case: 2% noise (rescale the 10% draws)
sim 3 500 0 0 0 random | awk -F , -v OFS=, 'NR == 1 { print; next } { $7 = 100 * exp((log($7 / 100)) / 5 + ($5 == "B" ? 0.05 : 0)); print }' >"$T/pow.csv"
found=$("$AB" --analyze "$T/pow.csv" -J | python3 -c "import json,sys; print(sum(r['measures']['mbps']['significant'] for r in json.load(sys.stdin)['results']))")
echo "  power: a true +5% in 2% noise found in $found of 500"
[ "$found" -ge 450 ] || bad "+5% in 2% noise found in $found of 500: below 90%"
report false-pos

# ---- real runs over loopback, a fake ppcoal ------------------------------------
command -v iperf3 >/dev/null 2>&1 || { echo "FAIL host:ab-run: iperf3 not installed"; exit 0; }
P=$T/params
mkdir -p "$P" "$T/bin"
printf 'on\n' >"$P/coalesce"
printf 'observe\n' >"$P/recycle"
printf 'off\n' >"$P/virtio"
{
	echo "format 2"
	printf '%s\n' "version: 9.9.9" "release: 6.1.0-57-cloud-amd64" "debian_version: 6.1.192-3" \
		"hook_calls: ftrace" "coalesce.verified: listed" "recycle.verified: listed" "virtio.verified: local" \
		"coalesce.calls 5" "coalesce.copied 1"
} >"$T/stats"
# iperf3 beside the real one: logs the modes it ran in and its arguments;
# FAKE_JSON: print that file instead of running
real=$(command -v iperf3)
cat >"$T/bin/iperf3" <<EOF
#!/bin/sh
case "\$*" in *-c*) echo "\$(cat "$P/coalesce") \$(cat "$P/recycle") \$*" >>"$T/iperf.log" ;; esac
if [ -n "\${FAKE_JSON:-}" ]; then cat "\$FAKE_JSON"; exit 0; fi
exec "$real" "\$@"
EOF
chmod +x "$T/bin/iperf3"
port=$((20000 + $$ % 20000))
"$real" -s -p "$port" >/dev/null 2>&1 &
srv=$!
sleep 1
PPCOAL_PARAMS=$P PPCOAL_STATS=$T/stats PATH=$T/bin:$PATH
export PPCOAL_PARAMS PPCOAL_STATS PATH
modes() { echo "$(cat "$P/coalesce") $(cat "$P/recycle") $(cat "$P/virtio")"; }
: >"$T/iperf.log"
"$AB" -c 127.0.0.1 -p "$port" --paths "coalesce recycle" -l "512 1024" --pairs 2 -t 1 -O 1 -P 2 \
	--a observe --b on -o "$T/o1" >"$T/o1.out" 2>"$T/o1.err"
rc=$?
[ "$rc" = 0 ] || bad "run exit $rc: $(head -n 3 "$T/o1.err")"
[ "$(modes)" = "on observe off" ] || bad "modes after the run: $(modes)"
# the probe run, then the runs in ab.csv's order: the modes iperf3 saw are
# those the CSV records, each pair one A and one B in its recorded order
got=$(awk '{ print $1, $2 }' "$T/iperf.log" | tr '\n' '|')
want="on observe|$(awk -F , 'NR > 1 { if ($1 == "coalesce") printf "%s observe|", $6; else printf "on %s|", $6 }' "$T/o1/ab.csv")"
awk -F , 'NR > 1 { k = $1 "/" $2 "/" $3; o[k] = o[k] $5; r[k] = $4 } END { for (k in o) if (o[k] != r[k] || (o[k] != "AB" && o[k] != "BA")) { print k, o[k], r[k]; exit 1 } }' \
	"$T/o1/ab.csv" >"$T/badpair" || bad "a pair's runs are not its recorded order: $(cat "$T/badpair")"
awk -F , 'NR > 1 && (($5 == "A" && $6 != "observe") || ($5 == "B" && $6 != "on"))' "$T/o1/ab.csv" | grep -q . && bad "a side not in its mode (--a observe --b on)"
[ "$got" = "$want" ] || bad "modes seen by iperf3: $got, not $want"
awk 'NR > 1' "$T/iperf.log" | grep -v -e ' -t 1 -O 1 ' -e '^$' | head -n 1 | grep -q . && bad "a run without -t 1 -O 1"
grep -q -- '-P 2' "$T/iperf.log" || bad "-P 2 not passed"
grep -q -- ' -R' "$T/iperf.log" && bad "-R passed for a server on this host"
[ "$(grep -c -- '-l 512 ' "$T/iperf.log")" = 9 ] || bad "not 9 runs of -l 512 (the probe, 2 paths x 2 pairs x 2 sides)"
[ "$(awk 'END { print NR }' "$T/o1/ab.csv")" = 17 ] || bad "ab.csv: $(awk 'END { print NR }' "$T/o1/ab.csv") lines, not 1 + 16"
awk -F , 'NR > 1 && !($7 > 0 && $9 > 0 && $10 != "" && $11 > 0) { print; exit 1 }' "$T/o1/ab.csv" >"$T/badrow" || bad "a run without Mbit/s, bytes, CPU: $(cat "$T/badrow")"
python3 - "$T/o1/ab.json" >"$T/py.out" 2>&1 <<'EOF' || bad "ab.json: $(tail -n 1 "$T/py.out")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == 2, j["schema"]
m = j["meta"]
for k, v in dict(version=None, module_version="9.9.9", debian_version="6.1.192-3", hook_calls="ftrace",
                 direction="send", protocol="tcp", parallel=2, omit=1, duration=1, pairs=2, a="observe", b="on",
                 paths=["coalesce", "recycle"], together=False, sizes=[512, 1024], confidence=95).items():
    assert k in m, k
    assert v is None or m[k] == v, (k, m[k])
assert m["verified"] == {"coalesce": "listed", "recycle": "listed", "virtio": "local"}, m["verified"]
assert set(m["interface"]) == {"name", "driver", "mtu", "gro"}, m["interface"]
assert m["interface"]["name"] == "lo", m["interface"]
assert m["cpus"] >= 1
assert len(j["results"]) == 4
for r in j["results"]:
    for k in ("mbps", "cpu_s_per_gb", "rx_cpu_pct"):
        x = r["measures"][k]
        assert x["A"]["n"] == 2 and x["B"]["n"] == 2, x
    x = r["measures"]["mbps"]
    assert x["significant"] is False and x["p"] in (0.5, 1) and x["ci_pct"] is None and x["reason"] == "2 pairs: 6 needed for a verdict at 95%", x
    assert "pps" not in r["measures"]
    assert len(r["runs"]) == 4
EOF
grep -q '^receiving interface: lo (driver ' "$T/o1.out" || bad "no receiving interface line"
grep -Eq '^ +512 +CPU s/GB +[0-9.]+ \(' "$T/o1.out" || bad "no CPU s/GB row"
grep -q '^ppcoal modes restored: coalesce=on recycle=observe virtio=off$' "$T/o1.out" || bad "no 'modes restored' line"
# --analyze of the run's CSV gives the run's results
"$AB" --analyze "$T/o1/ab.csv" -J >"$T/re.json" || bad "--analyze exit $?"
python3 -c "import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(a['results'] != b['results'])" "$T/o1/ab.json" "$T/re.json" ||
	bad "--analyze of ab.csv differs from the run's ab.json"
# UDP at a fixed rate, receive (-R), -J alone on stdout, old option names
: >"$T/iperf.log"
"$AB" -s 127.0.0.1 -p "$port" --paths virtio -u -b 2M -R -l 256 -n 1 -t 1 -w 0 -J >"$T/o2.json" 2>"$T/o2.err"
rc=$?
[ "$rc" = 0 ] || bad "UDP run exit $rc: $(head -n 3 "$T/o2.err")"
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); r=j['results'][0]['measures']; assert j['meta']['protocol']=='udp' and j['meta']['direction']=='receive' and j['meta']['rate']=='2M'; assert r['pps']['A']['median'] > 0" "$T/o2.json" 2>"$T/py.out" ||
	bad "-J output: $(tail -n 1 "$T/py.out") in $(head -c 300 "$T/o2.json")"
grep -q -- '-u -b 2M' "$T/iperf.log" || bad "-u -b 2M not passed"
grep -q -- ' -R' "$T/iperf.log" || bad "-R not passed"
grep -q -- '-O 0' "$T/iperf.log" || bad "-w 0 is not -O 0"
grep -q -- '-s is -c now' "$T/o2.err" || bad "-s: no note"
grep -q -- '-n is --pairs now' "$T/o2.err" || bad "-n: no note"
grep -q -- '-w is -O' "$T/o2.err" && bad "-w 0 gave a note"
[ "$(modes)" = "on observe off" ] || bad "modes after the UDP run: $(modes)"
# jq and awk read iperf3's JSON alike (one canned TCP and one UDP result)
"$real" -c 127.0.0.1 -p "$port" -t 1 -J >"$T/tcp.json" 2>/dev/null
"$real" -c 127.0.0.1 -p "$port" -t 1 -u -b 1M -R -J >"$T/udp.json" 2>/dev/null
if command -v jq >/dev/null 2>&1; then
	for k in tcp udp; do
		u=""
		[ $k = tcp ] || u=-u
		for j in 0 1; do
			FAKE_JSON=$T/$k.json PPCOAL_AB_NO_JQ=$j "$AB" -c 127.0.0.1 -p "$port" --paths coalesce $u -l 256 --pairs 1 -t 1 -O 0 -o "$T/jq$j" >/dev/null 2>&1 ||
				bad "$k canned run (no_jq=$j) failed"
			cut -d , -f 7,8,9,12 "$T/jq$j/ab.csv" >"$T/jq$j.cols"
		done
		cmp -s "$T/jq0.cols" "$T/jq1.cols" || bad "$k: jq and awk differ: $(tr '\n' ' ' <"$T/jq0.cols") vs $(tr '\n' ' ' <"$T/jq1.cols")"
		grep -q '^[0-9.]*,[0-9]*,[0-9]*,[0-9.]*$' "$T/jq1.cols" || bad "$k: awk read $(tail -n 1 "$T/jq1.cols")"
	done
else
	bad "jq not installed: the jq reading is untested"
fi
# the order of each pair is a coin: 40 pairs (a canned iperf3 result, no
# wait) hold between 8 and 32 of A B (a fair coin leaves it 4 in 10^5)
FAKE_JSON=$T/tcp.json "$AB" -c 127.0.0.1 -p "$port" --paths coalesce -l 256 --pairs 40 -t 1 -O 0 -o "$T/coin" >/dev/null 2>&1 ||
	bad "40 canned pairs failed"
n=$(awk -F , 'NR > 1 && $5 == "A" && $4 == "AB"' "$T/coin/ab.csv" | wc -l)
{ [ "$n" -ge 8 ] && [ "$n" -le 32 ]; } || bad "$n of 40 pairs in order A B: no coin"
report run

# ---- the direction's default --------------------------------------------------
# An ip that knows no address and routes everything through eth9: the server
# is not on this host
cat >"$T/bin/ipfake" <<'EOF'
#!/bin/sh
case "$*" in
"route get "*) echo "$3 via 10.9.9.1 dev eth9 src 10.9.9.2 uid 0" ;;
"netns list") ;;
"-o addr show") echo "1: lo    inet 127.0.0.2/8 scope host lo" ;;
*) exit 1 ;;
esac
EOF
chmod +x "$T/bin/ipfake"
: >"$T/iperf.log"
IP=$T/bin/ipfake "$AB" -c 127.0.0.1 -p "$port" --paths coalesce -l 256 --pairs 1 -t 1 -O 0 >"$T/o3.out" 2>"$T/o3.err" ||
	bad "exit $?: $(head -n 2 "$T/o3.err")"
grep -q -- ' -R' "$T/iperf.log" || bad "no -R for a server not on this host"
grep -q '^receiving interface: eth9 ' "$T/o3.out" || bad "receiving interface not the route's: $(grep receiving "$T/o3.out")"
grep -q '127.0.0.1 -> this host (receive)' "$T/o3.out" || bad "no '(receive)' in the header"
# --send overrides it; --together switches the paths as one; --baseline is --a
: >"$T/iperf.log"
IP=$T/bin/ipfake "$AB" -c 127.0.0.1 -p "$port" --send --paths "coalesce recycle" --together --baseline observe \
	-l 256 --pairs 1 -t 1 -O 0 -J >"$T/o4.json" 2>"$T/o4.err" || bad "--send --together: exit $?: $(head -n 2 "$T/o4.err")"
grep -q -- ' -R' "$T/iperf.log" && bad "-R passed with --send"
# the probe in the modes found, then the pair in its recorded order
want="on observe|observe observe|on on|"
[ "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['results'][0]['runs'][0]['side'])" "$T/o4.json" 2>/dev/null)" = A ] ||
	want="on observe|on on|observe observe|"
[ "$(awk '{ print $1, $2 }' "$T/iperf.log" | tr '\n' '|')" = "$want" ] ||
	bad "--together --baseline observe: modes seen $(awk '{ print $1, $2 }' "$T/iperf.log" | tr '\n' '|'), not $want"
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['meta']['together'] is True and j['meta']['direction']=='send' and j['meta']['a']=='observe', j['meta']; assert [r['paths'] for r in j['results']]==[['coalesce','recycle']], j['results']" "$T/o4.json" 2>"$T/py.out" ||
	bad "--together JSON: $(tail -n 1 "$T/py.out")"
report direction

# ---- bad arguments ------------------------------------------------------------
# badarg EXPECT ARGS...: exit 2, stderr holds EXPECT
badarg() {
	x=$1
	shift
	"$AB" "$@" >"$T/b.out" 2>"$T/b.err" </dev/null
	rc=$?
	[ "$rc" = 2 ] || bad "'$*' exits $rc, not 2"
	grep -qF -- "$x" "$T/b.err" || bad "'$*': stderr lacks '$x': $(head -n 1 "$T/b.err")"
}
badarg "no server: -c HOST" --paths coalesce
badarg "--pairs must be a whole number, not 'x'" -c 127.0.0.1 --pairs x
badarg "-P must be a whole number" -c 127.0.0.1 -P -1
badarg "-t, --pairs and -P must be at least 1" -c 127.0.0.1 -P 0
badarg "-t 1.5: iperf3 runs whole seconds only" -c 127.0.0.1 -t 1.5
badarg "-O must be a whole number" -c 127.0.0.1 -O x
badarg "-b must be a rate such as 100M, not 'fast'" -c 127.0.0.1 -b fast
badarg "--a and --b take off, observe or on, not 'maybe'" -c 127.0.0.1 --b maybe
badarg "--paths: unknown path 'bogus'" -c 127.0.0.1 --paths bogus
badarg "--confidence must be between 50 and 99.99, not '100'" -c 127.0.0.1 --confidence 100
badarg "--confidence must be a percentage" -c 127.0.0.1 --confidence high
badarg "-l size must be a whole number" -c 127.0.0.1 -l "256 big"
badarg "option -c needs a value" -c
badarg "unknown option '--bogus'" --bogus
badarg "--analyze: cannot read '$T/none.csv'" --analyze "$T/none.csv"
badarg "no ppcoal path can act on lo" -c 127.0.0.1 -p "$port" -l 256 --pairs 1 -t 1
badarg "not reachable" -c 127.0.0.1 -p 1 --paths coalesce -l 256 --pairs 1 -t 1
PPCOAL_PARAMS=$T/none badarg "ppcoal is not loaded: sudo modprobe ppcoal" -c 127.0.0.1
echo "a,b" >"$T/junk.csv"
"$AB" --analyze "$T/junk.csv" >/dev/null 2>"$T/b.err"
rc=$?
[ "$rc" = 1 ] || bad "--analyze of a foreign CSV exits $rc, not 1"
grep -q "not an ab.csv" "$T/b.err" || bad "--analyze of a foreign CSV: $(cat "$T/b.err")"
[ "$(modes)" = "on observe off" ] || bad "modes after the refusals: $(modes)"
report bad-args
