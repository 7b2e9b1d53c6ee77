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
 * Both handlers count calls. By default the pre handler returns 0, so the
 * kprobe's ftrace handler puts regs->ip back after the post handler (6.1
 * arch/x86/kernel/kprobes/ftrace.c:42-52, 6.12 :45-55): the probe
 * observes and moves nothing. With move=1 the pre handler moves regs->ip
 * to ppk_moved_to() and returns 1, which the kprobe's ftrace handler
 * leaves in place and skips the post handler for (6.1 :55-58, 6.12
 * :58-61); ftrace_regs_caller then returns there (6.1
 * arch/x86/kernel/ftrace_64.S:236-238, 6.12 :250-252), unless a direct
 * call shares the site: the caller makes the return a call to the direct
 * trampoline (6.1 :252-271, 6.12 :266-285), and ppcoal's overwrites that
 * return address with its replacement's.
 *
 * The module loads whether or not the probe on skb_try_coalesce could be
 * armed; /sys/kernel/debug/ppcoal_kprobe/state reads
 * "anchor A target T pre N post M moved K", A and T the results of
 * register_kprobe() (0 or a negative errno), K the calls ppk_moved_to()
 * received.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/skbuff.h>

static atomic_long_t ppk_pre = ATOMIC_LONG_INIT(0);
static atomic_long_t ppk_post = ATOMIC_LONG_INIT(0);
static atomic_long_t ppk_moved = ATOMIC_LONG_INIT(0);
static int ppk_anchor_err;
static int ppk_target_err;
static struct dentry *ppk_dir;
static struct kprobe ppk_target;

static bool move;
module_param(move, bool, 0444);
MODULE_PARM_DESC(move, "load-time: the pre handler on skb_try_coalesce moves the call to a function that refuses to coalesce (default 0)");

/*
 * Where move=1 sends skb_try_coalesce's calls, with their arguments: it
 * refuses, which its callers handle as stock's refusals (they read
 * neither output then).
 */
static noinline bool ppk_moved_to(struct sk_buff *to, struct sk_buff *from,
				  bool *fragstolen, int *delta_truesize)
{
	atomic_long_inc(&ppk_moved);
	return false;
}

static int ppk_pre_handler(struct kprobe *p, struct pt_regs *regs)
{
	if (p != &ppk_target)
		return 0;
	atomic_long_inc(&ppk_pre);
	if (!move)
		return 0;
	instruction_pointer_set(regs, (unsigned long)ppk_moved_to);
	return 1;
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
	seq_printf(m, "anchor %d target %d pre %ld post %ld moved %ld\n",
		   ppk_anchor_err, ppk_target_err,
		   atomic_long_read(&ppk_pre), atomic_long_read(&ppk_post),
		   atomic_long_read(&ppk_moved));
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
	pr_info("kprobe with a post handler%s on %s: %s (%d)\n",
		move ? " and a moving pre handler" : "",
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
