// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal_conflict: test module that owns skb_try_coalesce with an
 * IPMODIFY ftrace_ops (as a livepatch would) and changes nothing, so
 * the suite can check that ppcoal reports the conflict and keeps its
 * other paths working.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ftrace.h>
#include <linux/module.h>
#include <linux/skbuff.h>

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

	ret = ftrace_set_filter_ip(&ppcoal_conflict_ops,
				   (unsigned long)skb_try_coalesce, 0, 0);
	if (ret)
		return ret;
	ret = register_ftrace_function(&ppcoal_conflict_ops);
	if (ret) {
		ftrace_free_filter(&ppcoal_conflict_ops);
		return ret;
	}
	pr_info("holding skb_try_coalesce with IPMODIFY\n");
	return 0;
}

static void __exit ppcoal_conflict_exit(void)
{
	unregister_ftrace_function(&ppcoal_conflict_ops);
	ftrace_free_filter(&ppcoal_conflict_ops);
}

module_init(ppcoal_conflict_init);
module_exit(ppcoal_conflict_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ppcoal test: an IPMODIFY user of skb_try_coalesce");
