# ppcoal guest tests: lockdown (busybox sh).
# Run last (lockdown cannot be lowered); securityfs is mounted by
# run-guest.sh's securityfs-mount step of tests.tsv.
# Sourced by run-guest.sh after lib.sh: defines t_NAME for each test NAME
# of tests.tsv in this file (- as _) and runs none of them.

t_lockdown() {
	begin lockdown
	ppcoal_load mode=observe || bad "insmod"
	echo integrity >/sys/kernel/security/lockdown || bad "cannot raise lockdown"
	grep -q '\[integrity\]' /sys/kernel/security/lockdown || bad "lockdown not integrity"
	cat "$S" >/dev/null || bad "stats unreadable under lockdown"
	check_stats_format
	r=$(iperf 1) || bad "traffic"
	echo on >$P/mode || bad "parameters under lockdown"
	end
}

# Booted with lockdown=integrity: unsigned modules are refused by the kernel.
t_lockdown_boot() {
	begin lockdown-boot
	grep -q '\[integrity\]' /sys/kernel/security/lockdown || bad "not booted in integrity mode"
	ppcoal_load 2>/dev/null && bad "unsigned module loaded under lockdown=integrity"
	dmesg_has "Lockdown: insmod: unsigned module loading is restricted" || bad "no lockdown refusal in dmesg"
	end
}
