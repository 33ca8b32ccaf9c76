/* SPDX-License-Identifier: MIT */
/*
 * One wire (docs/LINK_MODEL.md "One wire"): the IP side of every HCA port's
 * netdev follows the port's links at run time. `vfab up` shapes each wire
 * when it builds the node (netns/ip_shape.h); vfabd re-applies a wire when
 * SHAPE or a latency spike changes its links, drops and restores its
 * carrier with LINK, and couples the two sides of a converged port: every
 * VFABD_IPWIRE_PERIOD_MS the IP bytes that crossed the wire occupy the
 * port's links in the RDMA model, and the IP rate yields to RDMA down to
 * half the port (vfab_ip_shared_rate).
 */
#ifndef VFAB_DAEMON_VFABD_IPWIRE_H
#define VFAB_DAEMON_VFABD_IPWIRE_H

#include <stdbool.h>
#include <stdint.h>

#include "fabric/region.h"

#define VFABD_IPWIRE_PERIOD_MS 10

struct vfabd;
struct vfabd_ipwire; /* vfabd_ipwire.c */

int vfabd_ipwire_init(struct vfabd *d);
void vfabd_ipwire_free(struct vfabd *d);

/* Re-applies the IP side of every wire and leaf downlink that uses one of links[]. */
int vfabd_ipwire_links_changed(struct vfabd *d, const uint32_t *links, int n);

/* The carrier of the netdev bound to HCA hca's port `port` (from 1). */
int vfabd_ipwire_carrier(struct vfabd *d, uint32_t hca, uint32_t port, bool up);

/* Milliseconds until the next coupling step (-1: none needed), for poll(). */
int vfabd_ipwire_due(struct vfabd *d);
/* The coupling step, when it is due. */
void vfabd_ipwire_run(struct vfabd *d);

/*
 * Whether the IP side cannot delay or drop: no netem, and no right to load
 * the classifier programs that stand in for it (CAP_BPF: a rootless fabric).
 */
bool vfabd_ipwire_unprivileged(struct vfabd *d);

/* Whether the kernel models IP latency (netem): 1, 0, or -1 not known yet. */
int vfabd_ipwire_has_netem(const struct vfabd *d);

#endif /* VFAB_DAEMON_VFABD_IPWIRE_H */
