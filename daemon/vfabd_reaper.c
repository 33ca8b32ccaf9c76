/* SPDX-License-Identifier: MIT */
/*
 * Periodic reaping: a process can die before it says HELLO (or after its
 * control connection was inherited by a child that lives on), so every tick
 * vfabd collects the owners present in the region and frees the objects of
 * those that no longer run. An owner is a pid and its start time: a pid that
 * a newer process holds now does not keep a dead owner's objects alive, and
 * loses none of its own.
 */

#include "vfabd_reaper.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vfabd_log.h"
#include "vfabd_seal.h"

#include "base/proc.h"

#define MAX_PIDS_PER_TICK 1024 /* more owners than this wait for the next tick */

struct owner_set {
	struct vfab_owner owners[MAX_PIDS_PER_TICK];
	size_t n;
	struct vfab_owner last;
};

static void owner_add(struct owner_set *s, const struct vfab_owner *o)
{
	if (o->pid <= 0 || (o->pid == s->last.pid && o->start_ticks == s->last.start_ticks))
		return;
	s->last = *o;
	for (size_t i = 0; i < s->n; i++)
		if (s->owners[i].pid == o->pid && s->owners[i].start_ticks == o->start_ticks)
			return;
	if (s->n < MAX_PIDS_PER_TICK)
		s->owners[s->n++] = *o;
}

bool vfabd_owner_alive(const struct vfab_owner *o)
{
	unsigned long long start;
	char state;

	if (!vfab_pid_alive(o->pid))
		return false;
	return !o->start_ticks || vfab_proc_stat(o->pid, &state, &start) || start == o->start_ticks;
}

/* The owners of a table's used slots; next: vfab_slot_next or vfab_ktab_next over t. */
#define COLLECT(set, t, tbl, kind, next)                                                           \
	do {                                                                                       \
		for (uint32_t i_ = next(t, kind, 0); i_ != VFAB_SLOT_END;                          \
		     i_ = next(t, kind, i_ + 1))                                                   \
			if (atomic_load_explicit(&(t)->tbl[i_].state, memory_order_relaxed) ==     \
			    VFAB_SLOT_USED)                                                        \
				owner_add((set), &(t)->tbl[i_].owner);                             \
	} while (0)

int vfabd_reap_dead(struct vfab_region *r, struct vfab_ktab *k)
{
	static struct owner_set set; /* large: keep it off the stack */
	int total = 0;

	memset(&set, 0, sizeof(set));
	COLLECT(&set, r, qps, VFAB_OBJ_QP, vfab_slot_next);
	COLLECT(&set, r, srqs, VFAB_OBJ_SRQ, vfab_slot_next);
	COLLECT(&set, r, cqs, VFAB_OBJ_CQ, vfab_slot_next);
	COLLECT(&set, r, mrs, VFAB_OBJ_MR, vfab_slot_next);
	COLLECT(&set, r, pds, VFAB_OBJ_PD, vfab_slot_next);
	if (k) { /* the owners vfabd sealed, whatever the region says now */
		COLLECT(&set, k, qps, VFAB_OBJ_QP, vfab_ktab_next);
		COLLECT(&set, k, srqs, VFAB_OBJ_SRQ, vfab_ktab_next);
		COLLECT(&set, k, cqs, VFAB_OBJ_CQ, vfab_ktab_next);
		COLLECT(&set, k, mrs, VFAB_OBJ_MR, vfab_ktab_next);
		COLLECT(&set, k, pds, VFAB_OBJ_PD, vfab_ktab_next);
	}
	for (size_t i = 0; i < set.n; i++) {
		int n;

		const struct vfab_owner *o = &set.owners[i];

		if (vfabd_owner_alive(o))
			continue;
		n = vfabd_seal_reap_owner(r, k, o->pid, o->start_ticks);
		n += vfab_region_reap_owner(r, o->pid, o->start_ticks);
		if (n > 0)
			vfabd_log("reaped %d object(s) of pid %d (process gone)", n, (int)o->pid);
		total += n;
	}
	return total;
}

int vfabd_reap_shards(struct vfab_region *r, const struct vfab_ktab *k, const uid_t *busy,
		      size_t nbusy)
{
	int n = 0;

	for (uint32_t s = 1; s < VFAB_SHARDS; s++) {
		bool used = false;

		if (!atomic_load(&r->shard_on[s]))
			continue;
		for (size_t i = 0; i < nbusy && !used; i++)
			used = (uint32_t)busy[i] == r->shard_uid[s];
		if (used || !vfab_shard_empty(r, s) || (k && !vfab_ktab_shard_empty(k, s)))
			continue;
		vfabd_log("shard %u of uid %u dropped: none of its processes holds a context or an "
			  "object",
			  s, r->shard_uid[s]);
		vfab_shard_drop(r, s);
		n++;
	}
	return n;
}
