// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal_virtio_diff: which branch virtio_net's page_to_skb() took, told
 * from what it returned, to hold ppcoal's virtio branch counters against.
 *
 * ppcoal counts page_to_skb()'s branches by the calls the function makes
 * (build_skb, napi_alloc_skb, skb_add_rx_frag seen from its address
 * range). This module tells them apart another way, from its inputs and
 * its result, with a kretprobe: page_to_skb(vi, rq, page, ...) either
 * builds the skb around the receive buffer, whose head then lies in
 * @page (Debian 6.1.192 drivers/net/virtio_net.c:507-519, 6.12.117
 * :813-822), or copies the start of the frame into a new napi_alloc_skb()
 * head and leaves the rest, if any, in frags (6.1 :521-557, 6.12
 * :824-860). So: build when the returned head's page is @page's head,
 * else copy, and copy with frags when the returned skb has frags. NULL
 * returns (an allocation failed) are counted apart.
 *
 * Reading /sys/kernel/debug/ppcoal_virtio_diff/counts gives one
 * "name value" line each (ppcoal's stats format) for calls, build, copy,
 * frags, null and missed (returns the kretprobe could not watch; any makes
 * a comparison void).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/skbuff.h>

static atomic_long_t pvd_calls, pvd_build, pvd_copy, pvd_frags, pvd_null;
static struct dentry *pvd_dir;

/* The receive buffer's page: page_to_skb()'s third argument. */
struct pvd_call {
	struct page *page;
};

static int pvd_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct pvd_call *c = (struct pvd_call *)ri->data;

	c->page = (struct page *)regs_get_kernel_argument(regs, 2);
	return 0;
}

static int pvd_return(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct sk_buff *skb = (struct sk_buff *)regs_return_value(regs);
	struct pvd_call *c = (struct pvd_call *)ri->data;

	atomic_long_inc(&pvd_calls);
	if (!skb) {
		atomic_long_inc(&pvd_null);
	} else if (virt_to_head_page(skb->head) == compound_head(c->page)) {
		atomic_long_inc(&pvd_build);
	} else {
		atomic_long_inc(&pvd_copy);
		if (skb_shinfo(skb)->nr_frags)
			atomic_long_inc(&pvd_frags);
	}
	return 0;
}

static struct kretprobe pvd_probe = {
	.kp.symbol_name = "page_to_skb",
	.entry_handler = pvd_entry,
	.handler = pvd_return,
	.data_size = sizeof(struct pvd_call),
	.maxactive = 64,
};

static int pvd_counts_show(struct seq_file *m, void *v)
{
	seq_printf(m, "calls %ld\nbuild %ld\ncopy %ld\nfrags %ld\nnull %ld\nmissed %d\n",
		   atomic_long_read(&pvd_calls), atomic_long_read(&pvd_build),
		   atomic_long_read(&pvd_copy), atomic_long_read(&pvd_frags),
		   atomic_long_read(&pvd_null), pvd_probe.nmissed);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(pvd_counts);

static int __init pvd_init(void)
{
	int ret;

	ret = register_kretprobe(&pvd_probe);
	if (ret) {
		pr_err("kretprobe on page_to_skb: %d (is virtio_net loaded?)\n",
		       ret);
		return ret;
	}
	pvd_dir = debugfs_create_dir("ppcoal_virtio_diff", NULL);
	debugfs_create_file("counts", 0444, pvd_dir, NULL, &pvd_counts_fops);
	return 0;
}

static void __exit pvd_exit(void)
{
	debugfs_remove_recursive(pvd_dir);
	unregister_kretprobe(&pvd_probe);
}

module_init(pvd_init);
module_exit(pvd_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ppcoal test: virtio_net page_to_skb branches told from its result");
