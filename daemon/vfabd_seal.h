/* SPDX-License-Identifier: MIT */
/*
 * SEAL <kind> <slot> and UNSEAL <kind> <slot>: a process's verbs object
 * enters or leaves vfabd's object table (fabric/ktab.h), as an object is
 * made or destroyed through the kernel on a real host. Kinds: pd, mr (MRs
 * and memory windows), cq, srq, qp. The caller is the process on the other
 * end of the socket (SO_PEERCRED, its start time), after its HELLO.
 */
#ifndef VFAB_DAEMON_VFABD_SEAL_H
#define VFAB_DAEMON_VFABD_SEAL_H

#include <stdbool.h>
#include <stdint.h>

#include "fabric/ktab.h"

struct vfabd;
struct vfabd_conn;

/* SEAL (on) or UNSEAL (!on); arg is "<kind> <slot>". Replies OK or ERR. */
void vfabd_req_seal(struct vfabd *d, struct vfabd_conn *c, char *arg, bool on);
/*
 * Clears the records of the process pid started at start_ticks (0: any),
 * which exited, and frees their slots in the region r (whatever owner a
 * user wrote there). Returns how many. k may be NULL.
 */
int vfabd_seal_reap_owner(struct vfab_region *r, struct vfab_ktab *k, int32_t pid,
			  uint64_t start_ticks);

#endif /* VFAB_DAEMON_VFABD_SEAL_H */
