/* SPDX-License-Identifier: MIT */
/*
 * Whether a peer process still runs: the pid its messages carry and, when
 * they carry it, its start time, against /proc. A peer that is gone cannot
 * answer anything; its kernel would have (docs/DESIGN.md "RDMA CM"), so the
 * CM answers for it. An answer is kept for VFAB_CM_PEER_CACHE_MS: a round
 * of timers over a thousand connections to one peer reads /proc once.
 */
#ifndef VFAB_CM_PEER_H
#define VFAB_CM_PEER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define VFAB_CM_PEER_CACHE_MS 100
/* How often the peer of a waiting ID is looked at. */
#define VFAB_CM_ALIVE_MS 500

struct vfab_cm_id;

/* start 0: unknown (only the pid is checked). pid 0: unknown, counts as alive. */
bool vfab_cm_peer_alive(pid_t pid, unsigned long long start);

/*
 * When a peer is looked at next, from now: VFAB_CM_ALIVE_MS on, rounded up
 * to a tenth of it, so that one timer round serves a burst's connections.
 */
uint64_t vfab_cm_peer_due(uint64_t now);

/* Look at id's peer from VFAB_CM_ALIVE_MS on (id waits for that peer now). */
void vfab_cm_peer_watch(struct vfab_cm_id *id);

#endif /* VFAB_CM_PEER_H */
