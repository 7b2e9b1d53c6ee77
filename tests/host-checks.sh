#!/usr/bin/env bash
# Host-side checks of the tree, printed as "PASS host:x" / "FAIL host:x: why":
#   readme-counters  README's counter table is the one generated from the table
#   checkpatch       checkpatch.pl --strict --no-tree -f from Debian's linux-source-6.1
#                    is clean on every kernel source file
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${PPCOAL_CACHE:-/var/cache/ppcoal}
cd "$REPO" || exit 1

want=$(scripts/ppcoal-doc markdown)
have=$(sed -n '/<!-- counters:begin -->/,/<!-- counters:end -->/p' README.md | sed '1d;$d')
if [ "$want" = "$have" ]; then
	echo "PASS host:readme-counters"
else
	echo "FAIL host:readme-counters: README.md counter table differs from scripts/ppcoal-doc markdown"
fi

# checkpatch.pl with its data files, extracted once from linux-source-6.1.
cp_dir=$CACHE/checkpatch
if [ ! -x "$cp_dir/scripts/checkpatch.pl" ]; then
	mkdir -p "$CACHE/debs" "$cp_dir"
	(cd "$CACHE/debs" && { ls linux-source-6.1_*.deb >/dev/null 2>&1 || apt-get download -q linux-source-6.1; }) >/dev/null 2>&1
	deb=$(ls "$CACHE"/debs/linux-source-6.1_*.deb 2>/dev/null | tail -n 1)
	if [ -n "$deb" ]; then
		dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/src/linux-source-6.1.tar.xz |
			tar -xJ -C "$cp_dir" --strip-components=1 \
				linux-source-6.1/scripts/checkpatch.pl \
				linux-source-6.1/scripts/spelling.txt \
				linux-source-6.1/scripts/const_structs.checkpatch 2>/dev/null
	fi
fi
if [ ! -x "$cp_dir/scripts/checkpatch.pl" ]; then
	echo "FAIL host:checkpatch: cannot get checkpatch.pl from linux-source-6.1"
else
	files=$(git ls-files '*.c' '*.h')
	# shellcheck disable=SC2086
	out=$(perl "$cp_dir/scripts/checkpatch.pl" --strict --no-tree --no-summary --terse -f $files 2>&1)
	if [ -z "$out" ]; then
		echo "PASS host:checkpatch"
	else
		echo "FAIL host:checkpatch: $(echo "$out" | head -n 3 | tr '\n' ' ')"
	fi
fi
