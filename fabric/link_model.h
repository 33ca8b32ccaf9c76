/* SPDX-License-Identifier: MIT */
/*
 * The link model (docs/LINK_MODEL.md): the time a message takes through the
 * fabric. Every link direction in the region has a rate, a one-way latency
 * and a busy-until clock (one per user: struct vfab_shard); a message books
 * serialization time on each hop of its path with atomic compare-and-swap
 * updates of that clock, so processes that share a link queue behind each
 * other without a lock or a daemon.
 *
 * Hops are cut-through: a hop starts sending when the first bit arrives and
 * cannot finish before the last bit has arrived. Messages travel as chunks
 * of FABRIC_CHUNK_BYTES, so a slow hop further down queues chunk by chunk.
 * Unshaped links (rate 0) cost no serialization; latency still applies.
 * Times are CLOCK_MONOTONIC nanoseconds (fabric_now_ns), the same in every
 * process of the host; unit tests pass their own clock.
 */
#ifndef VFAB_LINK_MODEL_H
#define VFAB_LINK_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "fabric/region.h"

#define FABRIC_PATH_MAX_HOPS 4
#define FABRIC_CHUNK_BYTES 65536u

/* The link directions a message crosses, in order. */
struct fabric_path {
	uint32_t nhops;
	uint32_t link[FABRIC_PATH_MAX_HOPS]; /* indices into region links[] */
};

struct fabric_booking {
	uint64_t deliver_ns; /* the last bit reaches the destination port */
	uint64_t sent_ns;    /* the last bit left the first hop: the sender's port is free */
	uint64_t queue_ns;   /* delay beyond what the idle path would have taken */
};

/*
 * The hops from one port to another (ports numbered from 1): the node's
 * loopback link when both ports are on one node; node up + node down on one
 * leaf; node up, leaf uplink, the other leaf's downlink, node down across the
 * spine. -EINVAL for an unknown port, -EHOSTUNREACH across leaves without a
 * spine.
 */
int fabric_path_resolve(const struct vfab_region *r, uint32_t src_hca, uint32_t src_port,
			uint32_t dst_hca, uint32_t dst_port, struct fabric_path *out);

/* Sum of the hops' latencies: what an empty path adds to every message. */
uint64_t fabric_path_latency_ns(const struct vfab_region *r, const struct fabric_path *p);
/* Whether any hop has a rate or a latency (else data may move inline at once). */
bool fabric_path_shaped(const struct vfab_region *r, const struct fabric_path *p);

/* Serialization time of bytes at rate_bps, rounded to the nearest ns; 0 when unshaped. */
uint64_t fabric_ser_ns(uint64_t bytes, uint64_t rate_bps);

/*
 * Books `bytes` entering the path at now_ns and fills *out. Counts the bytes
 * on every hop, one message when new_msg (a caller that books a long message
 * part by part passes true for the first part only) and the queueing each
 * hop caused. To share a link fairly with flows of other processes, book a
 * long message one FABRIC_CHUNK_BYTES part at a time, each part at the
 * previous part's sent_ns (or later): a single booking takes the link for the
 * whole message, as one burst would on a real port.
 */
void fabric_path_book(struct vfab_region *r, const struct fabric_path *p, uint64_t now_ns,
		      uint64_t bytes, bool new_msg, struct fabric_booking *out);

/* One whole message: returns its delivery time; *queue_ns (if not NULL) its queueing. */
uint64_t fabric_path_reserve(struct vfab_region *r, const struct fabric_path *p, uint64_t now_ns,
			     uint64_t bytes, uint64_t *queue_ns);

/*
 * Whether this attempt is lost: each hop with loss_ppm drops it with that
 * probability (parts per million), counted in the hop's drops. *rng is the
 * caller's generator state (any seed; advanced on every draw).
 */
bool fabric_path_drop(struct vfab_region *r, const struct fabric_path *p, uint64_t *rng);

/*
 * Which packet of a lost attempt of npkts packets (at least 1) the loss
 * took, 0-based, uniformly: the model loses whole attempts, and where in
 * the message the loss falls decides how the requester learns of it (later
 * packets of the message reach the responder and draw a NAK; a lost last
 * packet is noticed only by what is sent next, or by the ACK timer).
 */
uint32_t fabric_lost_packet(uint64_t *rng, uint32_t npkts);

/*
 * Other traffic on the same wire: `bytes` (the IP packets a converged port
 * carried, vfabd's one-wire coupling) take link `link` from now_ns on, as a
 * burst queued behind what is booked already. Counts nothing: the link's
 * counters stay RDMA's. No-op on an unshaped link.
 */
void fabric_link_occupy(struct vfab_region *r, uint32_t link, uint64_t now_ns, uint64_t bytes);

/* CLOCK_MONOTONIC in ns: the clock busy_until_ns is kept in. */
uint64_t fabric_now_ns(void);

#endif /* VFAB_LINK_MODEL_H */
