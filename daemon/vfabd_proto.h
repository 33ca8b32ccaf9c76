/* SPDX-License-Identifier: MIT */
/* The control socket's line protocol: requests to the modules that serve them. */
#ifndef VFAB_DAEMON_VFABD_PROTO_H
#define VFAB_DAEMON_VFABD_PROTO_H

#include <stdbool.h>

struct vfabd;
struct vfabd_conn;

/*
 * Serves the first whole line of c->buf (without its newline; a trailing
 * CR is dropped) and removes it; false when no whole line is there. Verbs
 * that change the fabric or signal processes are refused (EPERM) unless
 * c->privileged.
 */
bool vfabd_proto_take(struct vfabd *d, struct vfabd_conn *c);

#endif /* VFAB_DAEMON_VFABD_PROTO_H */
