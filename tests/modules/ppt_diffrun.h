/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The debugfs files both differential test modules offer: writing
 * "SEED N MODE" to .../run runs the module's cases under its lock, and
 * .../result reads the line the last run wrote.
 */
#ifndef _PPT_DIFFRUN_H
#define _PPT_DIFFRUN_H

#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/uaccess.h>

struct ppt_diffrun {
	struct mutex lock;	/* one run at a time; result read whole */
	/* called under lock; writes result */
	int (*run)(u64 seed, unsigned int n, const char *mode);
	char result[512];
};

static ssize_t ppt_run_write(struct file *file, const char __user *ubuf,
			     size_t len, loff_t *ppos)
{
	struct ppt_diffrun *d = file->private_data;
	char buf[64], mode[16];
	unsigned int n;
	u64 seed;
	int ret;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	if (sscanf(buf, "%llu %u %15s", &seed, &n, mode) != 3)
		return -EINVAL;
	mutex_lock(&d->lock);
	ret = d->run(seed, n, mode);
	mutex_unlock(&d->lock);
	return ret ?: len;
}

static const struct file_operations ppt_run_fops = {
	.open = simple_open,
	.write = ppt_run_write,
};

static int ppt_result_show(struct seq_file *m, void *v)
{
	struct ppt_diffrun *d = m->private;

	mutex_lock(&d->lock);
	seq_puts(m, d->result);
	mutex_unlock(&d->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ppt_result);

/* NAME when stock's A and the shadow's B differ (kept in X, Y), else NULL. */
static inline const char *ppt_cmp(const char *name, long a, long b,
				  long *x, long *y)
{
	if (a == b)
		return NULL;
	*x = a;
	*y = b;
	return name;
}

/* The module's directory DIR under debugfs, with run and result. */
static inline struct dentry *ppt_diffrun_create(const char *dir,
						struct ppt_diffrun *d)
{
	struct dentry *de = debugfs_create_dir(dir, NULL);

	debugfs_create_file("run", 0200, de, d, &ppt_run_fops);
	debugfs_create_file("result", 0444, de, d, &ppt_result_fops);
	return de;
}

#endif /* _PPT_DIFFRUN_H */
