/* SPDX-License-Identifier: MIT */
/* HELLO and STATUS: who a connection is, and what the fabric holds. */
#ifndef VFAB_DAEMON_VFABD_SESSION_H
#define VFAB_DAEMON_VFABD_SESSION_H

struct vfabd;
struct vfabd_conn;

void vfabd_req_hello(struct vfabd *d, struct vfabd_conn *c, char *arg);
void vfabd_req_status(struct vfabd *d, struct vfabd_conn *c);

#endif /* VFAB_DAEMON_VFABD_SESSION_H */
