// SPDX-License-Identifier: GPL-2.0
/*
 * The EFLAGS a SIGSEGV reports for a faulting instruction that reads the
 * flags, after one that computed them (docs/qemu-tcg-eflags.md). Natively
 * the frame holds the flags from before the faulting instruction; QEMU's
 * TCG, restoring state at the fault, may report other ones.
 *
 *   cc -O2 -o eflrepro qemu-tcg-eflags-repro.c
 *   ./eflrepro; qemu-x86_64 ./eflrepro
 *
 * Prints one line per case: EFLAGS without RF (bit 16, which the kernel
 * sets on fault delivery and qemu-user does not).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <ucontext.h>

static sigjmp_buf jb;
/* a global: read again after sigsetjmp() returns the second time */
static unsigned long long efl;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	efl = ((ucontext_t *)uc)->uc_mcontext.gregs[REG_EFL];
	siglongjmp(jb, 1);
}

/* rax = 2 * 0xdeadbeef00000000 sets CF, SF and PF; then a jump ends the block */
#define SETUP "movabs $0xdeadbeef00000000, %%rax\n\tadd %%rax, %%rax\n\tjmp 1f\n1:\n\t"

int main(void)
{
	static const char *const name[] = {
		"add, seto to memory",
		"add, rcl on memory",
		"rol %cl, seto to memory",
		"rol $1, rcl on memory",
		"add, a plain store (control)",
	};
	struct sigaction sa = {
		.sa_sigaction = on_segv,
		.sa_flags = SA_SIGINFO | SA_NODEFER,
	};
	int i;

	sigaction(SIGSEGV, &sa, NULL);
	for (i = 0; i < 5; i++) {
		efl = 0;
		if (!sigsetjmp(jb, 1)) {
			switch (i) {
			case 0:
				asm volatile(SETUP "seto (%%rbx)"
					     : : "b"(0) : "rax", "memory", "cc");
				break;
			case 1:
				asm volatile(SETUP "rcll $1, (%%rbx)"
					     : : "b"(0) : "rax", "memory", "cc");
				break;
			case 2:
				asm volatile(SETUP "rol %%cl, %%edx\n\tseto (%%rbx)"
					     : : "b"(0), "c"(3), "d"(1) : "rax", "memory", "cc");
				break;
			case 3:
				asm volatile(SETUP "rol $1, %%edx\n\trcll $1, (%%rbx)"
					     : : "b"(0), "d"(1) : "rax", "memory", "cc");
				break;
			default:
				asm volatile(SETUP "movb $1, (%%rbx)"
					     : : "b"(0) : "rax", "memory", "cc");
			}
		}
		printf("%-30s EFLAGS %03llx\n", name[i],
		       efl & ~0x10000ULL);
	}
	return 0;
}
