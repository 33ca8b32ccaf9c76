/* SPDX-License-Identifier: MIT */
/*
 * CMFREE: removing a stale entry of the RDMA CM's listener directory. The
 * directory is sticky (docs/TRUST.md "RDMA CM"), so a listener that died
 * without removing its entry leaves a file that only its owner and root
 * may remove; a listener of another user that wants the service asks
 * vfabd, which removes the entry only if it names no live listener.
 */
#ifndef VFAB_DAEMON_VFABD_CMFREE_H
#define VFAB_DAEMON_VFABD_CMFREE_H

struct vfabd;
struct vfabd_conn;

/* "CMFREE <name>": OK when no live listener holds name (any more). */
void vfabd_req_cmfree(struct vfabd *d, struct vfabd_conn *c, const char *name);

#endif /* VFAB_DAEMON_VFABD_CMFREE_H */
