// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal: may a path's shadow run on this kernel? A shadow mirrors kernel
 * functions of a Debian source version; it runs only on a version whose
 * functions were compared with the ones it was written from:
 *  - listed: the build's table (verified-functions.tsv, made into
 *    ppcoal_verified.h by scripts/ppcoal-verified.sh);
 *  - local: the machine's own record, which the package's kernel hook
 *    writes when a new Debian kernel is installed ("ppcoal verify", kept in
 *    /var/lib/ppcoal and handed to the module as local_verified= by a
 *    generated modprobe.d file): the same comparison, made on this machine
 *    after the build, so that a monthly kernel update needs no rebuild;
 *  - or the administrator's accept_unverified=1, which taints the kernel.
 * The engine asks here once per path, at load; nothing here changes after.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/panic.h>
#include <linux/string.h>
#include <linux/utsname.h>

#include "ppcoal.h"

/* The versions each path was verified against (verified-functions.tsv). */
static const struct {
	enum ppc_path path;
	const char *version;
} ppc_verified[] = {
#define PPC_VERIFIED(p, v) { .path = PPC_PATH_##p, .version = v },
#define PPC_VERIFIED_AUDIT(m, v)
#include "ppcoal_verified.h"
#undef PPC_VERIFIED_AUDIT
#undef PPC_VERIFIED
};

/*
 * The versions each audited driver's row was verified against: the
 * functions its audit read (verified-functions.tsv's audit_MODULE rows).
 */
static const struct {
	const char *module;
	const char *version;
} ppc_audit_verified[] = {
#define PPC_VERIFIED(p, v)
#define PPC_VERIFIED_AUDIT(m, v) { .module = #m, .version = v },
#include "ppcoal_verified.h"
#undef PPC_VERIFIED_AUDIT
#undef PPC_VERIFIED
	{ }	/* a build may list none */
};

#define PPC_VERSION_MAX	32	/* a Debian version, with its NUL */
#define PPC_FUNC_MAX	64	/* a function name, with its NUL */
#define PPC_LOCAL_MAX	1024	/* local_verified, with its NUL */

static char ppc_debver[PPC_VERSION_MAX] = "unknown";	/* set at init */
static bool ppc_debver_known;	/* read from the kernel (or the test option) */

enum ppc_verdict {
	PPC_VERDICT_NO,
	PPC_VERDICT_LISTED,
	PPC_VERDICT_LOCAL,
};

static enum ppc_verdict ppc_verdict[PPC_NR_PATHS];
/* local_verified has an entry for the path on this kernel's version */
static bool ppc_local_has[PPC_NR_PATHS];
/* and it names the function that differs ("": none, the path is equal) */
static char ppc_changed[PPC_NR_PATHS][PPC_FUNC_MAX];

static char *test_debian_version;
module_param(test_debian_version, charp, 0444);
MODULE_PARM_DESC(test_debian_version,
		 "test only, taints the kernel: the Debian source version to assume instead of the running kernel's (default: the running kernel's)");

static bool accept_unverified;
module_param(accept_unverified, bool, 0444);
MODULE_PARM_DESC(accept_unverified,
		 "load-time, taints the kernel: attach paths on a Debian kernel version they were not verified against, at your own risk; a path whose function local_verified names as changed stays off (default 0)");

static char ppc_local[PPC_LOCAL_MAX];

/*
 * local_verified's entries for audited drivers' rows on this kernel's
 * version ("VERSION/audit_MODULE/RESULT"): the module, and the function
 * that differs ("": none).
 */
#define PPC_AUDIT_LOCAL_MAX	8
static struct {
	char module[PPC_FUNC_MAX];
	char changed[PPC_FUNC_MAX];
} ppc_audit_local[PPC_AUDIT_LOCAL_MAX];
static int ppc_audit_local_n;

/* @s[0..@n) holds only characters of @set, and 0 < @n < @max. */
static bool ppc_word_ok(const char *s, size_t n, size_t max, const char *set)
{
	size_t i;

	if (!n || n >= max)
		return false;
	for (i = 0; i < n; i++)
		if (!s[i] || !strchr(set, s[i]))
			return false;
	return true;
}

#define PPC_VERSION_CHARS "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+~-"
#define PPC_FUNC_CHARS "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"

/*
 * The path an entry's middle field names: @s[0..@n) is one of the
 * PPC_PATH table's names, or -1.
 */
static int ppc_path_of(const char *s, size_t n)
{
	int p;

	for (p = 0; p < PPC_NR_PATHS; p++)
		if (strlen(ppc_path_name(p)) == n && !strncmp(s, ppc_path_name(p), n))
			return p;
	return -1;
}

/*
 * Record an audited driver's entry (@n bytes at @name: "audit_MODULE")
 * with its result (@rn bytes at @res: "" for ok, else a function); a
 * later entry of the same module wins, others are ignored (the record
 * names each once a version).
 */
static void ppc_audit_local_add(const char *name, size_t n, const char *res,
				size_t rn)
{
	size_t pre = strlen("audit_");
	int i;

	if (n <= pre || strncmp(name, "audit_", pre))
		return;	/* a path of another ppcoal release */
	name += pre;
	n -= pre;
	for (i = 0; i < ppc_audit_local_n; i++)
		if (strlen(ppc_audit_local[i].module) == n &&
		    !strncmp(ppc_audit_local[i].module, name, n))
			break;
	if (i == PPC_AUDIT_LOCAL_MAX)
		return;
	if (i == ppc_audit_local_n)
		ppc_audit_local_n++;
	memcpy(ppc_audit_local[i].module, name, n);
	ppc_audit_local[i].module[n] = '\0';
	memcpy(ppc_audit_local[i].changed, res, rn);
	ppc_audit_local[i].changed[rn] = '\0';
}

/*
 * Walk the entries of a local_verified value: "VERSION/PATH/RESULT,...".
 * An entry for a path this build does not know (a record of another ppcoal
 * release) is skipped. With @apply, an entry of the running kernel's
 * version records its result (a later entry of the same path wins).
 * Returns false at the first malformed entry.
 */
static bool ppc_local_walk(const char *v, bool apply)
{
	const char *e, *end, *s1, *s2;
	size_t rn;
	int p;

	for (e = v; *e; e = *end ? end + 1 : end) {
		end = e + strcspn(e, ",");
		if (*end && !end[1])
			return false;	/* a trailing comma: an empty entry */
		s1 = memchr(e, '/', end - e);
		s2 = s1 ? memchr(s1 + 1, '/', end - s1 - 1) : NULL;
		if (!s2)
			return false;
		rn = end - s2 - 1;
		if (!ppc_word_ok(e, s1 - e, PPC_VERSION_MAX, PPC_VERSION_CHARS) ||
		    !ppc_word_ok(s1 + 1, s2 - s1 - 1, PPC_FUNC_MAX, PPC_FUNC_CHARS) ||
		    !ppc_word_ok(s2 + 1, rn, PPC_FUNC_MAX, PPC_FUNC_CHARS))
			return false;
		if (!apply || strlen(ppc_debver) != s1 - e ||
		    strncmp(e, ppc_debver, s1 - e))
			continue;
		if (rn == 2 && !strncmp(s2 + 1, "ok", 2))
			rn = 0;
		p = ppc_path_of(s1 + 1, s2 - s1 - 1);
		if (p >= 0) {
			ppc_local_has[p] = true;
			memcpy(ppc_changed[p], s2 + 1, rn);
			ppc_changed[p][rn] = '\0';
		} else {
			ppc_audit_local_add(s1 + 1, s2 - s1 - 1, s2 + 1, rn);
		}
	}
	return true;
}

/*
 * A malformed value is said in dmesg and ignored (nothing is verified
 * locally then): the file is the machine's, and a fault in it must not
 * keep ppcoal, and the paths the build verified, from loading.
 */
static int ppc_local_set(const char *val, const struct kernel_param *kp)
{
	size_t n = strlen(val);

	if (n < sizeof(ppc_local) && ppc_local_walk(val, false)) {
		strscpy(ppc_local, val, sizeof(ppc_local));
		return 0;
	}
	pr_err("local_verified: invalid value \"%.*s\", ignored: expected VERSION/PATH/RESULT entries, comma separated (RESULT: ok or a function name); it is written by \"ppcoal verify\" into /etc/modprobe.d/ppcoal-local-verified.conf: run \"ppcoal verify --record-local %s\" again\n",
	       (int)min_t(size_t, n, 80), val, init_utsname()->release);
	ppc_local[0] = '\0';
	return 0;
}

static int ppc_local_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", ppc_local);
}

static const struct kernel_param_ops ppc_local_ops = {
	.set = ppc_local_set,
	.get = ppc_local_get,
};

module_param_cb(local_verified, &ppc_local_ops, NULL, 0444);
MODULE_PARM_DESC(local_verified,
		 "load-time, written by \"ppcoal verify\": this machine's verification of Debian kernels the build did not list, VERSION/PATH/RESULT entries, comma separated, RESULT ok or the function that differs (default: empty)");

/* The Debian source version in "#1 SMP ... Debian 6.1.192-3 (date)". */
static void ppc_read_debver(void)
{
	const char *v = test_debian_version;
	size_t n;

	if (!v) {
		v = strstr(init_utsname()->version, "Debian ");
		if (!v)
			return;
		v += strlen("Debian ");
	}
	n = strcspn(v, " ");
	if (n && n < sizeof(ppc_debver)) {
		strscpy(ppc_debver, v, n + 1);
		ppc_debver_known = true;
	}
}

/* Taint the kernel as a dangerous module parameter does (kernel/params.c). */
static void ppc_taint(const char *what)
{
	pr_notice("%s - tainting kernel\n", what);
	add_taint(TAINT_USER, LOCKDEP_STILL_OK);
}

/**
 * ppc_verify_init() - decide, once, which paths may run on this kernel
 *
 * Reads the running kernel's Debian source version (or test_debian_version)
 * and looks it up in the build's table and in local_verified; taints the
 * kernel for test_debian_version and accept_unverified=1.
 */
void ppc_verify_init(void)
{
	int i, p;

	ppc_read_debver();
	if (test_debian_version)
		ppc_taint("test_debian_version: a test-only option is set");
	if (accept_unverified) {
		ppc_taint("accept_unverified=1: a dangerous option is set");
		pr_warn("accept_unverified=1: paths attach on Debian %s whether verified or not, at the administrator's risk\n",
			ppc_debver);
	}
	/* no Debian version read: no table or record can name this kernel */
	if (!ppc_debver_known)
		return;
	ppc_local_walk(ppc_local, true);
	for (p = 0; p < PPC_NR_PATHS; p++) {
		ppc_verdict[p] = PPC_VERDICT_NO;
		if (ppc_local_has[p] && !ppc_changed[p][0])
			ppc_verdict[p] = PPC_VERDICT_LOCAL;
		/* the build's table is the authority where it lists the version */
		for (i = 0; i < ARRAY_SIZE(ppc_verified); i++)
			if (ppc_verified[i].path == p &&
			    !strcmp(ppc_verified[i].version, ppc_debver))
				ppc_verdict[p] = PPC_VERDICT_LISTED;
	}
}

/**
 * ppc_verify_refuses() - must this path stay off on this kernel
 * @path: the path
 *
 * Return: true when the path was verified neither by the build nor by
 * this machine's record, and either accept_unverified=1 was not given or
 * the record names a function of the path that differs here.
 */
bool ppc_verify_refuses(enum ppc_path path)
{
	if (ppc_verdict[path] != PPC_VERDICT_NO)
		return false;
	/* a function known to differ is never run, accept_unverified or not */
	return !accept_unverified || ppc_changed[path][0];
}

/**
 * ppc_verify_reason() - why a path stays off, for stats and dmesg
 * @path: a path ppc_verify_refuses()
 * @buf: where the reason goes (the path's state in stats)
 * @len: its size
 *
 * Fills @buf and says it in dmesg, with the command that shows or fixes it.
 */
void ppc_verify_reason(enum ppc_path path, char *buf, size_t len)
{
	const char *rel = init_utsname()->release;

	if (ppc_changed[path][0]) {
		snprintf(buf, len, "%s differs in Debian %s from the verified sources",
			 ppc_changed[path], ppc_debver);
		pr_warn("%s: unavailable: %s differs in Debian %s from the sources ppcoal was verified against; this path stays off, the others keep working. See: ppcoal verify --kernel %s\n",
			ppc_path_name(path), ppc_changed[path], ppc_debver, rel);
		return;
	}
	snprintf(buf, len, "not verified for Debian %s", ppc_debver);
	pr_warn("%s: unavailable: not verified for Debian %s; this path stays off, the others keep working. Verify this kernel with: ppcoal verify --record-local %s, then reload ppcoal (or load it with accept_unverified=1 at your own risk)\n",
		ppc_path_name(path), ppc_debver, rel);
}

/**
 * ppc_verify_audit() - may an audited driver's row be used on this kernel
 * @module: the row's module (ppcoal_tables.h's PPC_AUDITED)
 * @buf: why not, when it may not (for stats and dmesg)
 * @len: its size
 *
 * An audit is of code: the row is used only on a Debian version whose
 * functions it read are the ones it was verified against, listed in the
 * build's table or found equal by this machine's record, as a path is
 * (ppc_verify_refuses()). accept_unverified=1 uses an unverified row, but
 * never one whose function the record names as changed.
 *
 * Return: true when the row may be used.
 */
bool ppc_verify_audit(const char *module, char *buf, size_t len)
{
	const char *changed = NULL;
	int i;

	if (ppc_debver_known) {
		for (i = 0; ppc_audit_verified[i].module; i++)
			if (!strcmp(ppc_audit_verified[i].module, module) &&
			    !strcmp(ppc_audit_verified[i].version, ppc_debver))
				return true;
		for (i = 0; i < ppc_audit_local_n; i++)
			if (!strcmp(ppc_audit_local[i].module, module))
				changed = ppc_audit_local[i].changed;
		if (changed && !changed[0])
			return true;
	}
	if (changed) {
		snprintf(buf, len, "%s differs in Debian %s from the audited sources",
			 changed, ppc_debver);
		return false;
	}
	if (accept_unverified)
		return true;
	snprintf(buf, len, "its audit is not verified for Debian %s", ppc_debver);
	return false;
}

/**
 * ppc_path_verified_word() - how a path was verified here, for stats
 * @path: the path
 *
 * Return: "listed" (the build's table), "local" (this machine's record)
 * or "no".
 */
const char *ppc_path_verified_word(enum ppc_path path)
{
	switch (ppc_verdict[path]) {
	case PPC_VERDICT_LISTED:
		return "listed";
	case PPC_VERDICT_LOCAL:
		return "local";
	default:
		return "no";
	}
}

/**
 * ppc_verify_show() - the kernel lines of the stats file
 * @m: the stats file
 */
void ppc_verify_show(struct seq_file *m)
{
	seq_printf(m, "debian_version: %s\n", ppc_debver);
	seq_printf(m, "accept_unverified: %d\n", accept_unverified);
}
