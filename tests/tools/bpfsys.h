/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The bpf() syscall for the test tools that load a BPF program without
 * libbpf (xdppass, bpffentry): the wrapper and the program load.
 */
#ifndef BPFSYS_H
#define BPFSYS_H

#include <linux/bpf.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline int bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

/*
 * Load @n instructions @insns, GPL, with the verifier's log in @log:
 * @attr holds the program type and its attach fields, the rest is set
 * here. Returns the program's fd or -1 (errno set, the log filled).
 */
static inline int bpf_prog_load(union bpf_attr *attr,
				const struct bpf_insn *insns, unsigned int n,
				char *log, unsigned int log_size)
{
	attr->insns = (uint64_t)(uintptr_t)insns;
	attr->insn_cnt = n;
	attr->license = (uint64_t)(uintptr_t)"GPL";
	attr->log_buf = (uint64_t)(uintptr_t)log;
	attr->log_size = log_size;
	attr->log_level = 1;
	return bpf(BPF_PROG_LOAD, attr);
}

#endif
