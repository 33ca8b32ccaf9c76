/* SPDX-License-Identifier: MIT */
/* Async events to the contexts that said HELLO with hca=/async=. */
#ifndef VFAB_DAEMON_VFABD_EVENTS_H
#define VFAB_DAEMON_VFABD_EVENTS_H

#include <stdint.h>

#include "fabric/region.h"

struct vfabd;
struct vfabd_conn;

/*
 * HELLO's hca= and async= options into c. r is vfabd's own topology (its
 * rundir and HCA table), never the shared region. 0, -EINVAL (syntax),
 * -ENOENT (no such HCA), -EPERM (not a FIFO of the client's in <rundir>/fifo/).
 */
int vfabd_hello_parse_opts(const struct vfab_region *r, struct vfabd_conn *c, char *opts);
/* Writes (element, event type) to every registered context of hca; returns how many got it. */
int vfabd_raise_port_event(struct vfabd *d, uint32_t hca, uint32_t port, uint32_t event_type);

#endif /* VFAB_DAEMON_VFABD_EVENTS_H */
