// SPDX-License-Identifier: GPL-2.0
/*
 * insnmark: executes the marker no-op of the insncount QEMU plugin
 * (tests/plugin/insncount.c), "xchg %bx,%bx", which makes the plugin write
 * its instruction counters to its file.
 *
 *	insnmark              one marker
 *	insnmark loop N       marker, N x (dec; jnz): 2N instructions, marker
 *	insnmark lockloop N   marker, N x (lock incl; dec; jnz): 3N
 *	                      instructions of which N locked, marker
 *
 * The loops are the plugin's calibration: their counts are known from the
 * instructions written here, not from the plugin.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void mark(void)
{
	asm volatile("xchg %%bx, %%bx" ::: "memory");
}

int main(int argc, char **argv)
{
	unsigned long n;
	int word = 0;

	if (argc == 1) {
		mark();
		return 0;
	}
	if (argc != 3 || (strcmp(argv[1], "loop") && strcmp(argv[1], "lockloop"))) {
		fprintf(stderr, "usage: insnmark [loop|lockloop N]\n");
		return 2;
	}
	n = strtoul(argv[2], NULL, 0);
	if (!n) {
		fprintf(stderr, "insnmark: N must be a positive number\n");
		return 2;
	}
	mark();
	if (strcmp(argv[1], "loop") == 0)
		asm volatile("1: dec %0\n\tjnz 1b" : "+r"(n) : : "cc");
	else
		asm volatile("1: lock incl %1\n\tdec %0\n\tjnz 1b"
			     : "+r"(n), "+m"(word) : : "cc");
	mark();
	return 0;
}
