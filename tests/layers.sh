#!/usr/bin/env bash
# The module's files depend downwards only (CONTRIBUTING.md "Where things
# are"): from the built objects, every ppcoal symbol a file uses must be
# defined by a file of a lower layer (or its own), except the functions the
# engine reaches through the path and hook tables (named in
# ppcoal_tables.h, whose redirect rows also give ppcoal_direct.c its
# trampolines). Prints "PASS ID:layers" or "FAIL ID:layers: ...".
#
# Usage: tests/layers.sh ID BUILD-DIR
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
id=$1 dir=$2
# layer per object, bottom first
declare -A layer=(
	[ppcoal_tables.o]=0
	[ppcoal_verify.o]=1 [ppcoal_direct.o]=1
	[ppcoal_hook.o]=2
	[ppcoal_owner.o]=3 [ppcoal_owner_wrap.o]=3
	[ppcoal_coalesce.o]=4 [ppcoal_recycle.o]=4 [ppcoal_virtio_hook.o]=4
	[ppcoal_main.o]=5
)
# every object of the module must have a layer
objs=$(sed -n 's/.*ppcoal-y := //p; s/^[[:space:]]*\(ppcoal_[a-z_]*\.o.*\)$/\1/p' "$REPO/Kbuild" | tr -d '\\' | tr ' \t' '\n\n' | grep '\.o$' | sort -u)
why=""
for o in $objs; do
	[ -n "${layer[$o]:-}" ] || why="$why${why:+; }$o has no layer in tests/layers.sh"
	[ -f "$dir/$o" ] || why="$why${why:+; }$o not built in $dir"
done
[ -z "$why" ] || { echo "FAIL $id:layers: $why"; exit 0; }
# the names ppcoal_tables.h hands the engine (callbacks, replacements, ops)
tabled=" $(grep -o '\bppc_[a-z0-9_]*' "$REPO/ppcoal_tables.h" | sort -u | tr '\n' ' ') "
declare -A def=()
for o in $objs; do
	while read -r _ t s; do
		case $t in [TDBRC]) def[$s]=$o ;; esac
	done < <(nm "$dir/$o" | awk 'NF == 3')
done
n=0
for o in $objs; do
	for s in $(nm -u "$dir/$o" | awk '{ print $2 }'); do
		d=${def[$s]:-}
		[ -n "$d" ] || continue	# the kernel's
		n=$((n + 1))
		[ "${layer[$d]}" -le "${layer[$o]}" ] && continue
		# the engine's hook table, and the redirects' trampolines made
		# from its rows (ppcoal_direct.c), name them
		case $o in ppcoal_hook.o | ppcoal_direct.o)
			[[ $tabled == *" $s "* || $tabled == *" ${s%_tramp} "* ]] && continue ;;
		esac
		why="$why${why:+; }$o (layer ${layer[$o]}) uses $s of $d (layer ${layer[$d]})"
	done
done
if [ "$n" = 0 ]; then
	echo "FAIL $id:layers: no symbol of ppcoal's found used across files (nm failed?)"
elif [ -n "$why" ]; then
	echo "FAIL $id:layers: $why"
else
	echo "PASS $id:layers"
fi
