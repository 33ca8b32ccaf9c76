/* SPDX-License-Identifier: MIT */
/* Periodic reaping of the objects of processes that died. */
#ifndef VFAB_DAEMON_VFABD_REAPER_H
#define VFAB_DAEMON_VFABD_REAPER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "fabric/ktab.h"
#include "fabric/region.h"

/*
 * Frees the objects of every owner pid that no longer runs, in the region
 * and in vfabd's object table k (NULL: none). Returns region objects freed.
 */
int vfabd_reap_dead(struct vfab_region *r, struct vfab_ktab *k);

/*
 * Drops the shard of every user (fabric/region.h) none of whose processes
 * holds a context (busy: the uids of vfabd's live connections) nor an
 * object, by the region or by vfabd's records: its file goes and its index
 * serves the next new user. Returns how many.
 */
int vfabd_reap_shards(struct vfab_region *r, const struct vfab_ktab *k, const uid_t *busy,
		      size_t nbusy);

/* The process that registered o still runs (pid alive, not a zombie, same start time). */
bool vfabd_owner_alive(const struct vfab_owner *o);

#endif /* VFAB_DAEMON_VFABD_REAPER_H */
