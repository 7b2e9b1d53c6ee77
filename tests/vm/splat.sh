# shellcheck shell=bash
# Sourced by tests/vm/parse-log.sh, tests/vm/digest.sh and
# tests/vm/emulator-fault.sh: the kernel messages that make a console log
# unclean, one list (extended regex, case-sensitive). parse-log.sh and
# digest.sh fail a boot on these and on a stalled page pool (the
# fixture's); emulator-fault.sh counts any of them, and a few more kernel
# reports, as a splat earlier than its own message.
# shellcheck disable=SC2034
PPCOAL_SPLAT_BASE='WARNING:|BUG:|Oops|Kernel panic|general protection'
# shellcheck disable=SC2034
PPCOAL_SPLAT_DEFAULT="$PPCOAL_SPLAT_BASE|stalled pool"
