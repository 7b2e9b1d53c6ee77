// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal_kprobe: test module that puts a kprobe with a post handler on
 * skb_try_coalesce after the kernel's IPMODIFY kprobe ops is already
 * registered (by a first such kprobe, the anchor, on skb_copy_bits). That
 * is the one IPMODIFY user ftrace does not check against a direct call:
 * an ops already registered that adds a function to its filter, whose
 * record only a direct ops holds, passes (6.1 kernel/trace/ftrace.c
 * :1958-1988, the FTRACE_FL_IPMODIFY test then the "else if"). Beside
 * ppcoal's ftrace callback (an IPMODIFY ops) the same arm is refused.
 *
 * Both handlers count calls. The pre handler returns 0, so the kprobe's
 * ftrace handler puts regs->ip back after the post handler (6.1
 * arch/x86/kernel/kprobes/ftrace.c:42-52): the probe observes and moves
 * nothing.
 *
 * The module loads whether or not the probe on skb_try_coalesce could be
 * armed; /sys/kernel/debug/ppcoal_kprobe/state reads
 * "anchor A target T pre N post M", A and T the results of
 * register_kprobe() (0 or a negative errno).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/seq_file.h>

static atomic_long_t ppk_pre = ATOMIC_LONG_INIT(0);
static atomic_long_t ppk_post = ATOMIC_LONG_INIT(0);
static int ppk_anchor_err;
static int ppk_target_err;
static struct dentry *ppk_dir;
static struct kprobe ppk_target;

static int ppk_pre_handler(struct kprobe *p, struct pt_regs *regs)
{
	if (p == &ppk_target)
		atomic_long_inc(&ppk_pre);
	return 0;
}

static void ppk_post_handler(struct kprobe *p, struct pt_regs *regs,
			     unsigned long flags)
{
	if (p == &ppk_target)
		atomic_long_inc(&ppk_post);
}

static struct kprobe ppk_anchor = {
	.symbol_name = "skb_copy_bits",
	.pre_handler = ppk_pre_handler,
	.post_handler = ppk_post_handler,
};

static struct kprobe ppk_target = {
	.symbol_name = "skb_try_coalesce",
	.pre_handler = ppk_pre_handler,
	.post_handler = ppk_post_handler,
};

static int ppk_state_show(struct seq_file *m, void *v)
{
	seq_printf(m, "anchor %d target %d pre %ld post %ld\n",
		   ppk_anchor_err, ppk_target_err,
		   atomic_long_read(&ppk_pre), atomic_long_read(&ppk_post));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ppk_state);

static int __init ppk_init(void)
{
	ppk_anchor_err = register_kprobe(&ppk_anchor);
	if (ppk_anchor_err) {
		pr_err("anchor kprobe on %s: error %d\n",
		       ppk_anchor.symbol_name, ppk_anchor_err);
		return ppk_anchor_err;
	}
	ppk_target_err = register_kprobe(&ppk_target);
	pr_info("kprobe with a post handler on %s: %s (%d)\n",
		ppk_target.symbol_name, ppk_target_err ? "refused" : "armed",
		ppk_target_err);
	ppk_dir = debugfs_create_dir("ppcoal_kprobe", NULL);
	debugfs_create_file("state", 0444, ppk_dir, NULL, &ppk_state_fops);
	return 0;
}

static void __exit ppk_exit(void)
{
	debugfs_remove_recursive(ppk_dir);
	if (!ppk_target_err)
		unregister_kprobe(&ppk_target);
	unregister_kprobe(&ppk_anchor);
}

module_init(ppk_init);
module_exit(ppk_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ppcoal test: a kprobe with a post handler on skb_try_coalesce");
