#!/usr/bin/env bash
# Boot one kernel with an initramfs under QEMU TCG; the serial console goes to LOG.
#
#   tests/vm/boot.sh ID INITRD LOG [extra kernel cmdline...]
#
# Exit status: QEMU's (0 after poweroff or a reboot/panic with -no-reboot),
# 124 when PPCOAL_BOOT_TIMEOUT (kernels.sh sets the default) expired.
#
# Environment:
#   PPCOAL_BOOT_TIMEOUT  hard timeout in seconds (default: kernels.sh)
#   PPCOAL_QEMU_EXTRA    extra QEMU arguments (word-split)
#   PPCOAL_NIC_OPTS      appended to both virtio-net-pci devices, e.g. ",mrg_rxbuf=off"
#   PPCOAL_QEMU_SMP / PPCOAL_QEMU_MEM  (default 2 / 1G)
#   PPCOAL_QEMU          the QEMU to run (default qemu-system-x86_64 of the
#                        host; kernels.sh qemu-newer prints trixie's)
#   PPCOAL_QEMU_ACCEL    (default tcg,thread=single: both vCPUs on one host
#                        thread, no emulator flakes; tcg,thread=multi gives
#                        each vCPU a host thread: real parallelism)
set -euo pipefail

# shellcheck source=tests/vm/kernels.sh
. "$(dirname "${BASH_SOURCE[0]}")/kernels.sh"

[ $# -ge 3 ] || die "usage: $0 ID INITRD LOG [cmdline...]"
id=$1 initrd=$2 logf=$3
shift 3
check_id "$id"
kernel_pin "$id"
vmlinuz=$(kernel_vmlinuz "$id")
[ -f "$vmlinuz" ] || die "no kernel for $id (run kernels.sh prepare $id)"
[ -f "$initrd" ] || die "no initramfs $initrd"

# ppcoal.watchdog: the guest shows where its tests wait a minute before the
# timeout kills it (tests/vm/initramfs.sh)
append="console=ttyS0 panic_on_warn=1 oops=panic panic=-1 ppcoal.watchdog=$((PPCOAL_BOOT_TIMEOUT - 60)) $*"
nic=${PPCOAL_NIC_OPTS:-}
# shellcheck disable=SC2206 # word splitting of the extra arguments is intended
extra=(${PPCOAL_QEMU_EXTRA:-})

mkdir -p "$(dirname "$logf")"
rc=0
# --foreground keeps QEMU in our process group, so a Ctrl-C or a kill of the
# whole test run also ends it; the trap covers a kill of this script alone.
timeout --foreground -k 10 "$PPCOAL_BOOT_TIMEOUT" \
	"${PPCOAL_QEMU:-qemu-system-x86_64}" \
	-accel "${PPCOAL_QEMU_ACCEL:-tcg,thread=single}" -cpu max \
	-smp "${PPCOAL_QEMU_SMP:-2}" -m "${PPCOAL_QEMU_MEM:-1G}" \
	-nographic -no-reboot -monitor none -serial stdio \
	-kernel "$vmlinuz" -initrd "$initrd" -append "$append" \
	-netdev hubport,id=n0,hubid=0 \
	-device "virtio-net-pci,netdev=n0,romfile=,mac=52:54:00:00:00:01$nic" \
	-netdev hubport,id=n1,hubid=0 \
	-device "virtio-net-pci,netdev=n1,romfile=,mac=52:54:00:00:00:02$nic" \
	"${extra[@]}" \
	</dev/null >"$logf" 2>&1 &
qpid=$!
trap 'kill -TERM "$qpid" 2>/dev/null; wait "$qpid"; exit 143' TERM INT HUP
wait "$qpid" || rc=$?
exit "$rc"
