/* SPDX-License-Identifier: MIT */
/*
 * What a message adds to the counters a peer reads in sysfs (this process's
 * shard's, which vfabd sums over every user's): the ports'
 * data and packet counters (port_xmit_data etc., in 4-byte words as the
 * kernel reports them) and, for a message the link model does not time,
 * the links' byte and message counters (fabric/link_model.h counts the
 * ones it books). Inline: every message on the plain path counts.
 */
#ifndef VFAB_COUNTERS_H
#define VFAB_COUNTERS_H

#include "fabric/link_model.h"
#include "fabric/region.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

static inline void vfab_count_port(struct vfab_port_counters *c, bool tx, uint64_t bytes,
				   uint32_t packets)
{
	_Atomic uint64_t *words = tx ? &c->xmit_data_words : &c->rcv_data_words;
	_Atomic uint64_t *pkts = tx ? &c->xmit_packets : &c->rcv_packets;

	atomic_fetch_add_explicit(words, bytes / 4, memory_order_relaxed);
	atomic_fetch_add_explicit(pkts, packets, memory_order_relaxed);
}

/* Counts a message on the two ports (the link model counts the links). */
static inline void vfab_count_ports(struct vfab_region *r, uint32_t from_hca, uint32_t from_port,
				    uint32_t to_hca, uint32_t to_port, uint64_t bytes,
				    uint32_t packets)
{
	vfab_count_port(vfab_cnt(r, from_hca, from_port), true, bytes, packets);
	vfab_count_port(vfab_cnt(r, to_hca, to_port), false, bytes, packets);
}

/* What the link model counts for a message it does not time. */
static inline void vfab_count_links(struct vfab_region *r, const struct fabric_path *p,
				    uint64_t bytes, uint32_t msgs)
{
	for (uint32_t i = 0; i < p->nhops; i++) {
		struct vfab_link_clock *l = &vfab_own(r)->clk[p->link[i]];

		atomic_fetch_add_explicit(&l->bytes, bytes, memory_order_relaxed);
		atomic_fetch_add_explicit(&l->msgs, msgs, memory_order_relaxed);
	}
}

/* One event on a port's hw_counters (out_of_sequence, rnr_nak_retry_err, ...). */
static inline void vfab_count_event(_Atomic uint64_t *counter, uint64_t n)
{
	atomic_fetch_add_explicit(counter, n, memory_order_relaxed);
}

#endif /* VFAB_COUNTERS_H */
