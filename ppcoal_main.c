// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal: modern page-pool and skb datapath optimisations for stock
 * distribution kernels, through ftrace-redirected shadow functions.
 *
 * This file: module parameters (modes, master switch, reset), the
 * debugfs stats file, and module init/exit. It sits on top: it calls the
 * engine (ppcoal_hook.c) and the paths, and nothing calls into it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/utsname.h>

#include "ppcoal.h"

static const char * const ppc_counter_names[PPC_NR_COUNTERS] = {
#define PPC_COUNTER(id, p, name, ...) \
	[PPC_C_##id] = #p "." #name,
#include "ppcoal_counters.h"
#undef PPC_COUNTER
};

/*
 * The mode each path was last asked for (at load or by a write, under
 * ppc_lock), which ppc_mode[] is not when a path could not be attached:
 * stats show both, so that a path asked to run and not running is seen.
 */
static enum ppc_mode ppc_wanted[PPC_NR_PATHS];

static bool ppc_ready;		/* init done: mode writes act at once */
static struct dentry *ppc_debugfs;

/* Length of a written value without its trailing newline, for messages. */
static int ppc_vlen(const char *val)
{
	return min_t(int, strcspn(val, "\n"), 32);
}

static int ppc_parse_mode(const char *val, enum ppc_mode *mode)
{
	char buf[16], *word;
	int m;

	if (strscpy(buf, val, sizeof(buf)) < 0)
		return -EINVAL;
	word = strim(buf);
	for (m = 0; m < PPC_NR_MODES; m++) {
		if (!strcmp(word, ppc_mode_name(m))) {
			*mode = m;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * Module exit has begun (ppc_engine_kill()): parameters stay writable
 * until the module is freed, but nothing may change any more. Called with
 * ppc_lock held.
 */
static int ppc_refuse_if_dying(const char *what)
{
	if (!ppc_engine_dying())
		return 0;
	pr_err_ratelimited("%s: ppcoal is being unloaded; mode writes are refused (load it again to change modes)\n",
			   what);
	return -ENODEV;
}

/* Called with ppc_lock held. */
static int ppc_set_path_mode(enum ppc_path path, enum ppc_mode mode)
{
	enum ppc_mode old = ppc_mode[path];
	int ret;

	if (!ppc_ready) {
		WRITE_ONCE(ppc_mode[path], mode);
		return 0;
	}
	if (old == PPC_MODE_ON && mode != PPC_MODE_ON) {
		/* The shadow stops optimising first, then "on" is retired. */
		WRITE_ONCE(ppc_mode[path], mode);
		ppc_path_set_on(path, false);
	}
	if (mode == PPC_MODE_OFF) {
		/* Stop the shadow first; unregistering waits for callers. */
		WRITE_ONCE(ppc_mode[path], mode);
		return ppc_path_detach(path) ? -EIO : 0;
	}
	if (old == PPC_MODE_OFF || !ppc_path_attached(path)) {
		ret = ppc_path_attach(path, false);
		if (ret) {
			pr_err("%s: cannot switch to %s: path unavailable on this kernel, left %s\n",
			       ppc_path_name(path), ppc_mode_name(mode),
			       ppc_mode_name(PPC_MODE_OFF));
			WRITE_ONCE(ppc_mode[path], PPC_MODE_OFF);
			return -EINVAL;
		}
	}
	if (mode == PPC_MODE_ON && old != PPC_MODE_ON) {
		ret = ppc_path_set_on(path, true);
		if (ret) {
			/* State unchanged: back to what it was. */
			if (old == PPC_MODE_OFF)
				ppc_path_detach(path);
			WRITE_ONCE(ppc_mode[path], old);
			pr_err("%s: cannot switch to on, left %s\n",
			       ppc_path_name(path), ppc_mode_name(old));
			return -EOPNOTSUPP;
		}
	}
	/* Counting hooks of observe alone: on retires them, observe adds them. */
	if (ppc_path_observe_arm(path, mode)) {
		WRITE_ONCE(ppc_mode[path], PPC_MODE_OFF);
		pr_err("%s: cannot switch to %s, left %s\n", ppc_path_name(path),
		       ppc_mode_name(mode), ppc_mode_name(PPC_MODE_OFF));
		return -EIO;
	}
	WRITE_ONCE(ppc_mode[path], mode);
	return 0;
}

static int ppc_param_set_path(const char *val, const struct kernel_param *kp)
{
	enum ppc_path path = (enum ppc_path)(unsigned long)kp->arg;
	enum ppc_mode mode;
	int ret;

	if (ppc_parse_mode(val, &mode)) {
		pr_err("%s: invalid mode \"%.*s\": use off, observe or on; mode unchanged\n",
		       ppc_path_name(path), ppc_vlen(val), val);
		return -EINVAL;
	}
	mutex_lock(&ppc_lock);
	ret = ppc_refuse_if_dying(ppc_path_name(path));
	if (!ret) {
		ppc_wanted[path] = mode;
		ret = ppc_set_path_mode(path, mode);
	}
	mutex_unlock(&ppc_lock);
	return ret;
}

static int ppc_param_get_path(char *buf, const struct kernel_param *kp)
{
	enum ppc_path path = (enum ppc_path)(unsigned long)kp->arg;

	return sysfs_emit(buf, "%s\n", ppc_mode_name(READ_ONCE(ppc_mode[path])));
}

static const struct kernel_param_ops ppc_path_param_ops = {
	.set = ppc_param_set_path,
	.get = ppc_param_get_path,
};

/*
 * The defaults are the PPC_PATH table's; each description names its
 * path's (the build's host check "param-defaults" holds them equal).
 */
module_param_cb(coalesce, &ppc_path_param_ops, (void *)PPC_PATH_COALESCE, 0644);
MODULE_PARM_DESC(coalesce, "shadow skb_try_coalesce: off, observe or on (default on)");
module_param_cb(recycle, &ppc_path_param_ops, (void *)PPC_PATH_RECYCLE, 0644);
MODULE_PARM_DESC(recycle, "shadow page-pool free of skb pages: off, observe or on (default off)");
module_param_cb(virtio, &ppc_path_param_ops, (void *)PPC_PATH_VIRTIO, 0644);
MODULE_PARM_DESC(virtio, "virtio_net receive build_skb -> napi_build_skb: off, observe or on (default on)");

/*
 * The master switch: sets every path. Paths that cannot be attached on
 * this kernel are reported and left off; the write fails only for a bad
 * word, so the available paths always follow the switch.
 */
static int ppc_param_set_master(const char *val, const struct kernel_param *kp)
{
	enum ppc_mode mode;
	int p, ret;

	if (ppc_parse_mode(val, &mode)) {
		pr_err("mode: invalid mode \"%.*s\": use off, observe or on; modes unchanged\n",
		       ppc_vlen(val), val);
		return -EINVAL;
	}
	mutex_lock(&ppc_lock);
	ret = ppc_refuse_if_dying("mode");
	for (p = 0; p < PPC_NR_PATHS && !ret; p++) {
		ppc_wanted[p] = mode;
		ppc_set_path_mode(p, mode);
	}
	mutex_unlock(&ppc_lock);
	return ret;
}

static int ppc_param_get_master(char *buf, const struct kernel_param *kp)
{
	enum ppc_mode m = READ_ONCE(ppc_mode[0]);
	int p;

	for (p = 1; p < PPC_NR_PATHS; p++)
		if (READ_ONCE(ppc_mode[p]) != m)
			return sysfs_emit(buf, "mixed\n");
	return sysfs_emit(buf, "%s\n", ppc_mode_name(m));
}

static const struct kernel_param_ops ppc_master_param_ops = {
	.set = ppc_param_set_master,
	.get = ppc_param_get_master,
};

module_param_cb(mode, &ppc_master_param_ops, NULL, 0644);
MODULE_PARM_DESC(mode, "master switch, sets every path: off, observe or on (reads \"mixed\" when paths differ; default: each path's own)");

static int ppc_param_set_reset(const char *val, const struct kernel_param *kp)
{
	bool doit;
	int cpu;

	if (kstrtobool(val, &doit)) {
		pr_err("reset_stats: invalid value \"%.*s\": write 1\n",
		       ppc_vlen(val), val);
		return -EINVAL;
	}
	if (!doit)
		return 0;
	/* Racy against concurrent increments by design: stats, not state. */
	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(&ppc_stats, cpu), 0, sizeof(ppc_stats));
	return 0;
}

static int ppc_param_get_reset(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "0\n");
}

static const struct kernel_param_ops ppc_reset_param_ops = {
	.set = ppc_param_set_reset,
	.get = ppc_param_get_reset,
};

module_param_cb(reset_stats, &ppc_reset_param_ops, NULL, 0200);
MODULE_PARM_DESC(reset_stats, "write 1 to zero every counter (write-only)");

/*
 * The stats file, format 2: "format 2" first; then state lines, "KEY: VALUE"
 * (VALUE any text to the end of the line); then counter lines,
 * "PATH.COUNTER VALUE" (VALUE an unsigned decimal). A parser tells them
 * apart by the colon, with no list of keys (docs/design.md "Stats"; ppcoal(4)).
 */
#define PPC_STATS_FORMAT 2

static int ppc_stats_show(struct seq_file *m, void *v)
{
	char state[224];	/* "unavailable: " and a reason */
	const char *n;
	u64 sum;
	int c, p, cpu;

	seq_printf(m, "format %d\n", PPC_STATS_FORMAT);
	seq_printf(m, "version: %s\n", PPC_VERSION);
	seq_printf(m, "release: %s\n", init_utsname()->release);
	ppc_verify_show(m);
	ppc_engine_show(m);
	seq_printf(m, "recycle_target: %s\n", PPC_RECYCLE_TARGET);
	mutex_lock(&ppc_lock);
	for (p = 0; p < PPC_NR_PATHS; p++) {
		n = ppc_path_name(p);
		seq_printf(m, "%s.mode: %s\n", n,
			   ppc_mode_name(READ_ONCE(ppc_mode[p])));
		seq_printf(m, "%s.wanted: %s\n", n,
			   ppc_mode_name(ppc_wanted[p]));
		seq_printf(m, "%s.state: %s\n", n,
			   ppc_path_state(p, state, sizeof(state)));
		seq_printf(m, "%s.verified: %s\n", n, ppc_path_verified_word(p));
		seq_printf(m, "%s.on_means: %s\n", n, ppc_path_on_means(p));
	}
	mutex_unlock(&ppc_lock);
	seq_printf(m, "coalesce.clone_policy: %s\n", ppc_clone_policy_name());
	ppc_owner_show(m);
	for (c = 0; c < PPC_NR_COUNTERS; c++) {
		sum = 0;
		for_each_possible_cpu(cpu)
			sum += per_cpu(ppc_stats.c[c], cpu);
		seq_printf(m, "%s %llu\n", ppc_counter_names[c], sum);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ppc_stats);

static int __init ppc_init(void)
{
	int p, ret;

	ret = ppc_engine_init();
	if (ret)
		return ret;
	ppc_owner_init();
	mutex_lock(&ppc_lock);
	ppc_ready = true;
	for (p = 0; p < PPC_NR_PATHS; p++) {
		enum ppc_mode want = ppc_mode[p];

		ppc_wanted[p] = want;
		/* The same transition as a later write, from off. */
		ppc_mode[p] = PPC_MODE_OFF;
		if (ppc_set_path_mode(p, want) == -EOPNOTSUPP)
			ppc_set_path_mode(p, PPC_MODE_OBSERVE);
	}
	mutex_unlock(&ppc_lock);
	/* 0444 and read-only fops: debugfs allows it under lockdown. */
	ppc_debugfs = debugfs_create_dir("ppcoal", NULL);
	debugfs_create_file("stats", 0444, ppc_debugfs, NULL, &ppc_stats_fops);
	pr_info("version %s loaded on %s (%s), modes: coalesce=%s recycle=%s virtio=%s\n",
		PPC_VERSION, init_utsname()->release, PPC_RECYCLE_TARGET,
		ppc_mode_name(ppc_mode[PPC_PATH_COALESCE]),
		ppc_mode_name(ppc_mode[PPC_PATH_RECYCLE]),
		ppc_mode_name(ppc_mode[PPC_PATH_VIRTIO]));
	return 0;
}

static void __exit ppc_exit(void)
{
	int p;

	debugfs_remove_recursive(ppc_debugfs);
	mutex_lock(&ppc_lock);
	/* First: a parameter write after this attaches nothing. */
	ppc_engine_kill();
	for (p = 0; p < PPC_NR_PATHS; p++)
		ppc_set_path_mode(p, PPC_MODE_OFF);
	mutex_unlock(&ppc_lock);
	/* Hooks first: until they are gone a free may queue learning work. */
	ppc_engine_exit();
	ppc_owner_exit();
	pr_info("unloaded\n");
}

module_init(ppc_init);
module_exit(ppc_exit);
MODULE_LICENSE("GPL");
MODULE_AUTHOR("ppcoal developers");
MODULE_DESCRIPTION("Page-pool coalescing, direct recycling and NAPI skb cache for stock kernels");
MODULE_VERSION(PPC_VERSION);
