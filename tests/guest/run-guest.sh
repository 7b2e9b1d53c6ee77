#!/bin/sh
# PLACEHOLDER guest test runner (to be replaced by the real one).
# Runs inside the VM as PID 1's child. Protocol on the console:
#   PPCOAL-RESULT PASS <name>
#   PPCOAL-RESULT FAIL <name> <reason>
#   PPCOAL-DONE
# Environment from /etc/ppcoal-env: PPCOAL_KERNEL, PPCOAL_KVER, IP (iproute2 ip).
IP=${IP:-/usr/lib/iproute2/ip}

pass() { echo "PPCOAL-RESULT PASS $1"; }
fail() { n=$1; shift; echo "PPCOAL-RESULT FAIL $n $*"; }

# Test selection: ppcoal.tests=a,b,c on the kernel command line (default: all).
sel=$(sed -n 's/.*ppcoal\.tests=\([^ ]*\).*/\1/p' /proc/cmdline)
want() { [ -z "$sel" ] || case ",$sel," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

if want modules; then
	ok=1
	for ko in /ko/*.ko; do
		[ -f "$ko" ] || { ok=0; fail modules "no module in /ko"; break; }
		name=$(basename "$ko" .ko)
		if ! insmod "$ko"; then ok=0; fail modules "insmod $name failed"; continue; fi
		if ! rmmod "$name"; then ok=0; fail modules "rmmod $name failed"; fi
	done
	[ "$ok" = 1 ] && pass modules
fi

if want net; then
	# eth0 stays in the root netns, eth1 moves to netns "peer"; QEMU's hub joins them.
	# Benchmark-range addresses (RFC 2544); the hub has no host side.
	e0=$(grep -l 52:54:00:00:00:01 /sys/class/net/*/address | cut -d/ -f5)
	e1=$(grep -l 52:54:00:00:00:02 /sys/class/net/*/address | cut -d/ -f5)
	if [ -z "$e0" ] || [ -z "$e1" ]; then
		fail net "virtio NICs not found: $(ls /sys/class/net)"
	elif ! { "$IP" netns add peer &&
		"$IP" link set "$e1" netns peer &&
		"$IP" netns exec peer "$IP" link set lo up &&
		"$IP" netns exec peer "$IP" addr add 198.18.0.2/24 dev "$e1" &&
		"$IP" netns exec peer "$IP" link set "$e1" up &&
		"$IP" addr add 198.18.0.1/24 dev "$e0" &&
		"$IP" link set "$e0" up; }; then
		fail net "netns/address setup failed"
	elif ! ping -c 3 -W 5 198.18.0.2 >/dev/null; then
		fail net "ping 198.18.0.2 failed"
	else
		pass net
		"$IP" netns exec peer iperf3 -s -1 -D -B 198.18.0.2 >/dev/null 2>&1
		sleep 1
		if out=$(iperf3 -c 198.18.0.2 -t 1 2>&1); then
			pass iperf3
			echo "$out" | tail -n 4
		else
			fail iperf3 "$(echo "$out" | tail -n 1)"
		fi
	fi
fi

if want veth; then
	if "$IP" link add va type veth peer name vb && "$IP" link del va; then pass veth; else fail veth "veth create failed"; fi
fi

echo PPCOAL-DONE
