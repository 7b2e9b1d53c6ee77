// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal_conflict: test module that owns skb_try_coalesce with an
 * IPMODIFY ftrace_ops (as a livepatch would) and changes nothing, so
 * the suite can check that ppcoal reports the conflict and keeps its
 * other paths working.
 *
 * count=FUNCTION: a kprobe (a pre handler alone) counts the calls of a
 * kernel function meanwhile; .../parameters/counted reads them. The
 * suite counts 6.1's register_ftrace_direct_multi(), which ppcoal must
 * not call for a function this module holds (its failure there frees
 * what a listed ftrace_ops may still read). A function that cannot be
 * probed fails the load.
 *
 * also=FUNCTION: the ops holds that function too (a module's function
 * by its name alone: ppf_poll), as a livepatch of it would; the load
 * fails where another IPMODIFY or direct-call user holds it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/ftrace.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/skbuff.h>
#include <linux/sysfs.h>

static char *count;
module_param(count, charp, 0444);
MODULE_PARM_DESC(count, "load-time: a kernel function whose calls a kprobe counts (read them in counted)");

static char *also;
module_param(also, charp, 0444);
MODULE_PARM_DESC(also, "load-time: a function the IPMODIFY ops holds too");

static atomic_t ppcoal_conflict_counted = ATOMIC_INIT(0);

static int ppcoal_conflict_counted_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&ppcoal_conflict_counted));
}

static const struct kernel_param_ops ppcoal_conflict_counted_ops = {
	.get = ppcoal_conflict_counted_get,
};

module_param_cb(counted, &ppcoal_conflict_counted_ops, NULL, 0444);
MODULE_PARM_DESC(counted, "the calls of count's function since the load");

static int ppcoal_conflict_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_inc(&ppcoal_conflict_counted);
	return 0;
}

static struct kprobe ppcoal_conflict_kp = {
	.pre_handler = ppcoal_conflict_pre,
};

static void notrace ppcoal_conflict_cb(unsigned long ip,
				       unsigned long parent_ip,
				       struct ftrace_ops *op,
				       struct ftrace_regs *fregs)
{
}

static struct ftrace_ops ppcoal_conflict_ops = {
	.func = ppcoal_conflict_cb,
	.flags = FTRACE_OPS_FL_IPMODIFY,
};

static int __init ppcoal_conflict_init(void)
{
	int ret;

	if (count) {
		ppcoal_conflict_kp.symbol_name = count;
		ret = register_kprobe(&ppcoal_conflict_kp);
		if (ret) {
			pr_err("count=%s: no kprobe there (%d)\n", count, ret);
			return ret;
		}
	}
	ret = ftrace_set_filter_ip(&ppcoal_conflict_ops,
				   (unsigned long)skb_try_coalesce, 0, 0);
	if (!ret && also)
		ret = ftrace_set_filter(&ppcoal_conflict_ops, also,
					strlen(also), 0);
	if (ret) {
		ftrace_free_filter(&ppcoal_conflict_ops);
		goto out;
	}
	ret = register_ftrace_function(&ppcoal_conflict_ops);
	if (ret) {
		ftrace_free_filter(&ppcoal_conflict_ops);
		goto out;
	}
	pr_info("holding skb_try_coalesce%s%s with IPMODIFY\n",
		also ? " and " : "", also ?: "");
	return 0;
out:
	if (count)
		unregister_kprobe(&ppcoal_conflict_kp);
	return ret;
}

static void __exit ppcoal_conflict_exit(void)
{
	unregister_ftrace_function(&ppcoal_conflict_ops);
	ftrace_free_filter(&ppcoal_conflict_ops);
	if (count)
		unregister_kprobe(&ppcoal_conflict_kp);
}

module_init(ppcoal_conflict_init);
module_exit(ppcoal_conflict_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ppcoal test: an IPMODIFY user of skb_try_coalesce");
