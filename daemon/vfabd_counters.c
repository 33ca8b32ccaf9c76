/* SPDX-License-Identifier: MIT */
/*
 * Live port counters: every tick the region's per-port counters (kept by the
 * provider's data path, data in 4-byte words as the kernel reports them) are
 * compared with what was last written to the node's sysfs view, and only the
 * files whose value changed are replaced. The cache starts at zero because
 * the views are written from a region whose counters are still zero (no
 * process can open an HCA before its node exists); an idle fabric costs no
 * file-system writes at all.
 */
#include "vfabd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const vfabd_counter_names[VFABD_NCOUNTERS] = {
    [VFABD_CNT_XMIT_DATA] = "port_xmit_data",
    [VFABD_CNT_RCV_DATA] = "port_rcv_data",
    [VFABD_CNT_XMIT_PACKETS] = "port_xmit_packets",
    [VFABD_CNT_RCV_PACKETS] = "port_rcv_packets",
    [VFABD_CNT_UNICAST_XMIT] = "unicast_xmit_packets",
    [VFABD_CNT_UNICAST_RCV] = "unicast_rcv_packets",
    [VFABD_CNT_LINK_DOWNED] = "link_downed",
    [VFABD_CNT_OUT_OF_SEQUENCE] = "out_of_sequence",
    [VFABD_CNT_DUPLICATE_REQUEST] = "duplicate_request",
    [VFABD_CNT_PACKET_SEQ_ERR] = "packet_seq_err",
    [VFABD_CNT_LOCAL_ACK_TIMEOUT] = "local_ack_timeout_err",
    [VFABD_CNT_RNR_NAK_RETRY] = "rnr_nak_retry_err",
    [VFABD_CNT_RX_WRITE] = "rx_write_requests",
    [VFABD_CNT_RX_READ] = "rx_read_requests",
    [VFABD_CNT_RX_ATOMIC] = "rx_atomic_requests",
};

struct vfabd_port_cache {
	uint64_t v[VFABD_NCOUNTERS];
};

void vfabd_port_counters(const struct vfabd *d, uint32_t hca, uint32_t port,
			 uint64_t v[VFABD_NCOUNTERS])
{
	const struct vfab_port_counters *c = &d->r->hcas[hca].ports[port - 1].cnt;

	v[VFABD_CNT_XMIT_DATA] = atomic_load_explicit(&c->xmit_data_words, memory_order_relaxed);
	v[VFABD_CNT_RCV_DATA] = atomic_load_explicit(&c->rcv_data_words, memory_order_relaxed);
	v[VFABD_CNT_XMIT_PACKETS] = atomic_load_explicit(&c->xmit_packets, memory_order_relaxed);
	v[VFABD_CNT_RCV_PACKETS] = atomic_load_explicit(&c->rcv_packets, memory_order_relaxed);
	/* vfab has no multicast: every packet is a unicast one. */
	v[VFABD_CNT_UNICAST_XMIT] = v[VFABD_CNT_XMIT_PACKETS];
	v[VFABD_CNT_UNICAST_RCV] = v[VFABD_CNT_RCV_PACKETS];
	v[VFABD_CNT_LINK_DOWNED] = d->link_downed[hca][port - 1];
	v[VFABD_CNT_OUT_OF_SEQUENCE] =
	    atomic_load_explicit(&c->out_of_sequence, memory_order_relaxed);
	v[VFABD_CNT_DUPLICATE_REQUEST] =
	    atomic_load_explicit(&c->duplicate_request, memory_order_relaxed);
	v[VFABD_CNT_PACKET_SEQ_ERR] =
	    atomic_load_explicit(&c->packet_seq_err, memory_order_relaxed);
	v[VFABD_CNT_LOCAL_ACK_TIMEOUT] =
	    atomic_load_explicit(&c->local_ack_timeout_err, memory_order_relaxed);
	v[VFABD_CNT_RNR_NAK_RETRY] =
	    atomic_load_explicit(&c->rnr_nak_retry_err, memory_order_relaxed);
	v[VFABD_CNT_RX_WRITE] = atomic_load_explicit(&c->rx_write_requests, memory_order_relaxed);
	v[VFABD_CNT_RX_READ] = atomic_load_explicit(&c->rx_read_requests, memory_order_relaxed);
	v[VFABD_CNT_RX_ATOMIC] = atomic_load_explicit(&c->rx_atomic_requests, memory_order_relaxed);
}

int vfabd_counters_init(struct vfabd *d)
{
	d->cache = calloc((size_t)VFAB_MAX_HCAS * VFAB_MAX_PORTS, sizeof(*d->cache));
	return d->cache ? 0 : -ENOMEM;
}

void vfabd_counters_free(struct vfabd *d)
{
	free(d->cache);
	d->cache = NULL;
}

static bool is_hw(int i)
{
	return i >= VFABD_CNT_OUT_OF_SEQUENCE;
}

/* Writes the changed counters of one port; a port without a view waits for one. */
static void update_port(struct vfabd *d, uint32_t hca, uint32_t port)
{
	struct vfabd_port_cache *cache = &d->cache[hca * VFAB_MAX_PORTS + port - 1];
	uint64_t v[VFABD_NCOUNTERS];
	int dirs[2] = {-1, -1};

	vfabd_port_counters(d, hca, port, v);
	for (int i = 0; i < VFABD_NCOUNTERS; i++) {
		int *dir = &dirs[is_hw(i)];
		char text[32];
		int rc;

		if (v[i] == cache->v[i])
			continue;
		if (*dir == -1) {
			*dir =
			    vfabd_view_open(d->r, hca, port, is_hw(i) ? "hw_counters" : "counters");
			if (*dir < 0) {
				if (*dir != -ENOENT)
					vfabd_log("counters of HCA %u port %u: %s", hca, port,
						  strerror(-*dir));
				*dir = -2; /* tried: no more attempts this tick */
			}
		}
		if (*dir < 0)
			continue;
		snprintf(text, sizeof(text), "%llu\n", (unsigned long long)v[i]);
		rc = vfabd_view_replace(*dir, vfabd_counter_names[i], text);
		if (rc == 0)
			cache->v[i] = v[i];
	}
	for (int k = 0; k < 2; k++)
		if (dirs[k] >= 0)
			close(dirs[k]);
}

void vfabd_counters_tick(struct vfabd *d)
{
	if (!d->cache)
		return;
	for (uint32_t h = 0; h < d->r->nhcas && h < VFAB_MAX_HCAS; h++) {
		if (!d->r->hcas[h].in_use)
			continue;
		for (uint32_t p = 1; p <= d->r->hcas[h].nports && p <= VFAB_MAX_PORTS; p++)
			update_port(d, h, p);
	}
}
