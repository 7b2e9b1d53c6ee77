// SPDX-License-Identifier: GPL-2.0
/*
 * ppcoal: the state every other file reads, from the tables of
 * ppcoal_tables.h and ppcoal_counters.h: the per-CPU counters, the lock
 * that serialises mode changes, each path's mode, and the names of modes
 * and paths. It calls nothing of ppcoal's: the engine, the paths and main
 * all sit above it.
 */
#include <linux/mutex.h>
#include <linux/percpu.h>

#include "ppcoal.h"

DEFINE_PER_CPU(struct ppc_pcpu_stats, ppc_stats);
/* Serialises mode changes, hook attach/detach and module notifications. */
DEFINE_MUTEX(ppc_lock);

/* Written only under ppc_lock; the datapath reads it with READ_ONCE. */
enum ppc_mode ppc_mode[PPC_NR_PATHS] = {
#define PPC_PATH(id, n, on, d, dflt, ...) \
	[PPC_PATH_##id] = (enum ppc_mode)PPC_MODE_W_##dflt,
#include "ppcoal_tables.h"
#undef PPC_PATH
};

static const char * const ppc_mode_names[PPC_NR_MODES] = {
#define PPC_MODE(id, word) \
	[PPC_MODE_##id] = #word,
#include "ppcoal_tables.h"
#undef PPC_MODE
};

static const struct {
	const char *name;
	const char *on_means;	/* what "on" adds to "observe" here */
} ppc_path_info[PPC_NR_PATHS] = {
#define PPC_PATH(id, n, on, ...) \
	[PPC_PATH_##id] = { .name = #n, .on_means = on },
#include "ppcoal_tables.h"
#undef PPC_PATH
};

/**
 * ppc_mode_name() - the word of a mode
 * @mode: the mode
 *
 * Return: "off", "observe" or "on" (the PPC_MODE table).
 */
const char *ppc_mode_name(enum ppc_mode mode)
{
	return ppc_mode_names[mode];
}

/**
 * ppc_path_name() - the parameter name of a path
 * @path: the path
 *
 * Return: "coalesce", "recycle" or "virtio" (the PPC_PATH table).
 */
const char *ppc_path_name(enum ppc_path path)
{
	return ppc_path_info[path].name;
}

/**
 * ppc_path_on_means() - what "on" adds to "observe" for a path here
 * @path: the path
 *
 * Return: the PPC_PATH table's text for this kernel family.
 */
const char *ppc_path_on_means(enum ppc_path path)
{
	return ppc_path_info[path].on_means;
}
