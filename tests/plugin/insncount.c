// SPDX-License-Identifier: GPL-2.0
/*
 * insncount: a QEMU TCG plugin (API version 1, QEMU 7.2) that counts the
 * guest instructions executed on all vCPUs, and separately the locked ones
 * (a LOCK prefix, or XCHG with a memory operand, which locks implicitly).
 * Each time a guest executes the marker no-op "xchg %bx,%bx" (66 87 db,
 * legal in user space), one line goes to the file named by out=FILE:
 *
 *	mark SEQ INSNS LOCKED
 *
 * with the totals since QEMU started. Two marks around a window give its
 * instructions; tests/vm/insn-windows.sh pairs them with the windows the
 * guest names on its console.
 *
 * The counters are plain additions made inline by the translated code, so
 * they are exact only with one TCG thread (-accel tcg,thread=single): with
 * thread=multi two vCPUs' additions race. A block left early (an exception
 * or interrupt in its middle) counts whole: counts are exact to within the
 * interrupts a window takes.
 *
 *	qemu-system-x86_64 -accel tcg,thread=single \
 *		-plugin insncount.so,out=/tmp/marks ...
 *
 * Built against the plugin header of the installed QEMU's own Debian source
 * (tests/vm/kernels.sh insn_plugin_build).
 */
#include <stdio.h>
#include <string.h>
#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/* 64 bits each: the inline ADD_U64 operations add to them */
static unsigned long long insns;
static unsigned long long locked;
static unsigned long long seq;
static FILE *out;

/* Skip legacy prefixes and REX; report whether LOCK (f0) was among them. */
static size_t skip_prefixes(const unsigned char *p, size_t n, int *lock)
{
	size_t i = 0;

	*lock = 0;
	while (i < n) {
		unsigned char b = p[i];

		if (b == 0xf0)
			*lock = 1;
		else if (b != 0x66 && b != 0x67 && b != 0xf2 && b != 0xf3 &&
			 b != 0x2e && b != 0x3e && b != 0x26 && b != 0x36 &&
			 b != 0x64 && b != 0x65 && (b & 0xf0) != 0x40)
			break;
		i++;
	}
	return i;
}

static int is_locked(const unsigned char *p, size_t n)
{
	int lock;
	size_t i = skip_prefixes(p, n, &lock);

	if (lock)
		return 1;
	/* xchg r/m, r (86, 87) with a memory operand: ModRM.mod != 3 */
	return i + 1 < n && (p[i] == 0x86 || p[i] == 0x87) &&
	       (p[i + 1] >> 6) != 3;
}

static int is_marker(const unsigned char *p, size_t n)
{
	return n == 3 && p[0] == 0x66 && p[1] == 0x87 && p[2] == 0xdb;
}

static void marker_exec(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	(void)udata;
	fprintf(out, "mark %llu %llu %llu\n", seq++, insns, locked);
	fflush(out);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 &insns, n);
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const unsigned char *p = qemu_plugin_insn_data(insn);
		size_t sz = qemu_plugin_insn_size(insn);

		if (is_locked(p, sz))
			qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
								   &locked, 1);
		if (is_marker(p, sz))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, marker_exec,
							       QEMU_PLUGIN_CB_NO_REGS, NULL);
	}
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	fprintf(out, "exit %llu %llu %llu\n", seq, insns, locked);
	fclose(out);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *path = NULL;
	int i;

	if (strcmp(info->target_name, "x86_64") != 0) {
		fprintf(stderr, "insncount: x86_64 guests only, not %s\n",
			info->target_name);
		return -1;
	}
	for (i = 0; i < argc; i++)
		if (strncmp(argv[i], "out=", 4) == 0)
			path = argv[i] + 4;
	if (!path) {
		fprintf(stderr, "insncount: no out=FILE argument\n");
		return -1;
	}
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
