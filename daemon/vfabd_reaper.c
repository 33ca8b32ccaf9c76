/* SPDX-License-Identifier: MIT */
/*
 * Periodic reaping: a process can die before it says HELLO (or after its
 * control connection was inherited by a child that lives on), so every tick
 * vfabd collects the owner pids present in the region and frees the objects of
 * those that no longer run.
 */

#include "vfabd_reaper.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vfabd_log.h"

#include "base/proc.h"

#define MAX_PIDS_PER_TICK 1024 /* more owners than this wait for the next tick */

struct pid_set {
	pid_t pids[MAX_PIDS_PER_TICK];
	size_t n;
	pid_t last;
};

static void pid_add(struct pid_set *s, pid_t pid)
{
	if (pid <= 0 || pid == s->last)
		return;
	s->last = pid;
	for (size_t i = 0; i < s->n; i++)
		if (s->pids[i] == pid)
			return;
	if (s->n < MAX_PIDS_PER_TICK)
		s->pids[s->n++] = pid;
}

#define COLLECT(set, tbl, count)                                                                   \
	do {                                                                                       \
		for (size_t i_ = 0; i_ < (count); i_++)                                            \
			if (atomic_load_explicit(&(tbl)[i_].state, memory_order_relaxed) ==        \
			    VFAB_SLOT_USED)                                                        \
				pid_add((set), (tbl)[i_].owner.pid);                               \
	} while (0)

int vfabd_reap_dead(struct vfab_region *r)
{
	static struct pid_set set; /* large: keep it off the stack */
	int total = 0;

	memset(&set, 0, sizeof(set));
	COLLECT(&set, r->qps, VFAB_MAX_QPS);
	COLLECT(&set, r->srqs, VFAB_MAX_SRQS);
	COLLECT(&set, r->cqs, VFAB_MAX_CQS);
	COLLECT(&set, r->mrs, VFAB_MAX_MRS);
	COLLECT(&set, r->pds, VFAB_MAX_PDS);
	for (size_t i = 0; i < set.n; i++) {
		int n;

		if (vfab_pid_alive(set.pids[i]))
			continue;
		n = vfab_region_reap_pid(r, set.pids[i]);
		if (n > 0)
			vfabd_log("reaped %d object(s) of pid %d (process gone)", n,
				  (int)set.pids[i]);
		total += n;
	}
	return total;
}
