// SPDX-License-Identifier: GPL-2.0
/*
 * bpffentry: attach a BPF fentry (or fexit) program to a kernel function
 * and count its calls, as a BPF user (bpftrace's kfunc/kretfunc probes,
 * a libbpf tool) would attach to a function ppcoal hooks. No clang or
 * libbpf: the program is ten instructions (eleven slots: the map's load
 * takes two), loaded with the bpf() syscall; the function's BTF id is
 * read from /sys/kernel/btf/vmlinux.
 *
 * The kernel attaches it through a BPF trampoline, an ftrace direct call
 * (kernel/bpf/trampoline.c register_fentry()), so it meets ppcoal's hooks
 * on the same function: beside an IPMODIFY ftrace_ops it attaches and
 * shares the site (ops_func, FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_SELF;
 * 6.1 kernel/trace/ftrace.c __ftrace_hash_update_ipmodify()); beside
 * another direct call (ppcoal's direct_calls=1) it is refused. An fexit
 * program makes the trampoline call the function itself and run after it
 * returns; beside an IPMODIFY ops it calls the address on the stack,
 * which that ops redirected (BPF_TRAMP_F_ORIG_STACK: 6.1
 * kernel/bpf/trampoline.c:471-473, arch/x86/net/bpf_jit_comp.c:2254-2256),
 * so ppcoal's shadow runs inside it.
 *
 *   bpffentry [-x] FUNC
 *                    -x: fexit instead of fentry.
 *                    Prints "bpffentry: attached to FUNC" once live; on
 *                    SIGUSR1 "bpffentry: FUNC count N" (the calls so
 *                    far); on SIGTERM or SIGINT detaches, prints
 *                    "bpffentry: FUNC calls N" and exits 0. Exit 1 (with
 *                    strerror and errno) when the attach fails, 2 on a
 *                    usage or BTF error.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/btf.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpfsys.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Bytes that follow struct btf_type for a type of @kind with @vlen. */
static long btf_extra(unsigned int kind, unsigned int vlen)
{
	switch (kind) {
	case BTF_KIND_INT:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
		return 4;
	case BTF_KIND_ARRAY:
		return sizeof(struct btf_array);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		return (long)vlen * sizeof(struct btf_member);
	case BTF_KIND_ENUM:
		return (long)vlen * sizeof(struct btf_enum);
	case BTF_KIND_ENUM64:
		return (long)vlen * sizeof(struct btf_enum64);
	case BTF_KIND_FUNC_PROTO:
		return (long)vlen * sizeof(struct btf_param);
	case BTF_KIND_DATASEC:
		return (long)vlen * sizeof(struct btf_var_secinfo);
	case BTF_KIND_PTR:
	case BTF_KIND_FWD:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_FLOAT:
	case BTF_KIND_TYPE_TAG:
		return 0;
	}
	return -1;	/* a kind this tool does not know: stop */
}

/* The BTF id of the function @name in vmlinux's BTF, 0 if none. */
static unsigned int btf_func_id(const char *name)
{
	const char *path = "/sys/kernel/btf/vmlinux";
	const struct btf_header *h;
	const struct btf_type *t;
	const char *types, *strs, *p;
	unsigned int id = 0, found = 0;
	struct stat st;
	char *buf;
	ssize_t n, got;
	long extra;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "bpffentry: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 0;
	}
	if (st.st_size < (off_t)sizeof(*h)) {
		fprintf(stderr, "bpffentry: %s: too small for BTF\n", path);
		close(fd);
		return 0;
	}
	buf = malloc(st.st_size);
	/* sysfs hands a binary attribute out in pieces */
	for (n = 0, got = 1; buf && n < st.st_size && got > 0; n += got)
		got = read(fd, buf + n, st.st_size - n);
	close(fd);
	if (!buf || n != st.st_size) {
		fprintf(stderr, "bpffentry: %s: short read\n", path);
		return 0;
	}
	h = (const struct btf_header *)buf;
	if (h->magic != BTF_MAGIC ||
	    (uint64_t)h->hdr_len + h->str_off + h->str_len > (uint64_t)n ||
	    (uint64_t)h->hdr_len + h->type_off + h->type_len > (uint64_t)n) {
		fprintf(stderr, "bpffentry: %s: not raw BTF\n", path);
		return 0;
	}
	types = buf + h->hdr_len + h->type_off;
	strs = buf + h->hdr_len + h->str_off;
	for (p = types; p + sizeof(*t) <= types + h->type_len; ) {
		t = (const struct btf_type *)p;
		id++;
		if (BTF_INFO_KIND(t->info) == BTF_KIND_FUNC &&
		    t->name_off < h->str_len && !strcmp(strs + t->name_off, name)) {
			found = id;
			break;
		}
		extra = btf_extra(BTF_INFO_KIND(t->info), BTF_INFO_VLEN(t->info));
		if (extra < 0) {
			fprintf(stderr, "bpffentry: BTF kind %u unknown\n",
				BTF_INFO_KIND(t->info));
			break;
		}
		p += sizeof(*t) + extra;
	}
	free(buf);
	return found;
}

/* The program's count so far: the map's one value. */
static int read_count(int mfd, uint64_t *calls)
{
	union bpf_attr attr;
	uint32_t key = 0;

	memset(&attr, 0, sizeof(attr));
	attr.map_fd = mfd;
	attr.key = (uint64_t)(uintptr_t)&key;
	attr.value = (uint64_t)(uintptr_t)calls;
	if (bpf(BPF_MAP_LOOKUP_ELEM, &attr)) {
		perror("bpffentry: BPF_MAP_LOOKUP_ELEM");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bpf_insn prog[] = {
		/* *(u32 *)(r10 - 4) = 0: the map's key */
		{ .code = BPF_ST | BPF_MEM | BPF_W, .dst_reg = BPF_REG_10,
		  .off = -4 },
		/* r2 = r10 - 4 */
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_2,
		  .src_reg = BPF_REG_10 },
		{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_2,
		  .imm = -4 },
		/* r1 = the map (two instructions; imm set below) */
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1,
		  .src_reg = BPF_PSEUDO_MAP_FD },
		{ 0 },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_map_lookup_elem },
		/* if r0 == NULL skip the add */
		{ .code = BPF_JMP | BPF_JEQ | BPF_K, .dst_reg = BPF_REG_0,
		  .off = 2 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1,
		  .imm = 1 },
		/* lock *(u64 *)(r0 + 0) += r1 */
		{ .code = BPF_STX | BPF_ATOMIC | BPF_DW, .dst_reg = BPF_REG_0,
		  .src_reg = BPF_REG_1, .imm = BPF_ADD },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	static char log[16384];
	union bpf_attr attr;
	sigset_t set;
	unsigned int btf_id;
	uint32_t key = 0;
	uint64_t calls = 0;
	int mfd, pfd, lfd, sig;
	int type = BPF_TRACE_FENTRY;
	const char *func;

	if (argc == 3 && !strcmp(argv[1], "-x")) {
		type = BPF_TRACE_FEXIT;
	} else if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: %s [-x] FUNC\n", argv[0]);
		return 2;
	}
	func = argv[argc - 1];
	btf_id = btf_func_id(func);
	if (!btf_id) {
		fprintf(stderr, "bpffentry: no BTF function %s\n", func);
		return 2;
	}
	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = sizeof(key);
	attr.value_size = sizeof(calls);
	attr.max_entries = 1;
	mfd = bpf(BPF_MAP_CREATE, &attr);
	if (mfd < 0) {
		perror("bpffentry: BPF_MAP_CREATE");
		return 1;
	}
	prog[3].imm = mfd;
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_TRACING;
	attr.expected_attach_type = type;
	attr.attach_btf_id = btf_id;
	pfd = bpf_prog_load(&attr, prog, ARRAY_SIZE(prog), log, sizeof(log));
	if (pfd < 0) {
		fprintf(stderr, "bpffentry: BPF_PROG_LOAD %s: %s\n%s\n",
			func, strerror(errno), log);
		return 1;
	}
	/* A tracing program attaches with a NULL tracepoint name (a link). */
	memset(&attr, 0, sizeof(attr));
	attr.raw_tracepoint.prog_fd = pfd;
	lfd = bpf(BPF_RAW_TRACEPOINT_OPEN, &attr);
	if (lfd < 0) {
		fprintf(stderr, "bpffentry: attach %s: %s (errno %d)\n",
			func, strerror(errno), errno);
		return 1;
	}
	/* blocked before the line that says so: none can be lost */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("bpffentry: attached to %s\n", func);
	fflush(stdout);
	while (!sigwait(&set, &sig) && sig == SIGUSR1) {
		if (read_count(mfd, &calls))
			return 1;
		printf("bpffentry: %s count %llu\n", func,
		       (unsigned long long)calls);
		fflush(stdout);
	}
	close(lfd);	/* detached: the count below is final */
	if (read_count(mfd, &calls))
		return 1;
	printf("bpffentry: %s calls %llu\n", func,
	       (unsigned long long)calls);
	return 0;
}
