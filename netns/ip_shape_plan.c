/* SPDX-License-Identifier: MIT */
/* Pure: which disciplines give a link direction's rate, latency and loss. */
#include "netns/ip_shape.h"

#include <string.h>

#define GSO_MAX_BYTES 65536u	  /* one TSO/GSO packet passes HTB whole */
#define BURST_WINDOW_NS 200000ull /* and 200 us of the rate (see ip_shape.h) */
#define LOSS_ONE 4294967295.0	  /* a probability of 1 scaled to 32 bits */

static uint32_t scale_loss(uint32_t ppm)
{
	double v = (double)ppm / 1e6 * LOSS_ONE;

	return ppm >= 1000000 ? UINT32_MAX : (uint32_t)(v + 0.5);
}

void vfab_ip_shape_plan(const struct vfab_ip_shape *s, bool has_netem, struct vfab_ip_plan *p)
{
	memset(p, 0, sizeof(*p));
	if (s->rate_bps) {
		uint64_t window = s->rate_bps / 8 * BURST_WINDOW_NS / 1000000000ull;

		p->htb = true;
		p->rate_Bps = s->rate_bps / 8 ? s->rate_bps / 8 : 1;
		p->burst_bytes = window > GSO_MAX_BYTES
				     ? (window > UINT32_MAX ? UINT32_MAX : (uint32_t)window)
				     : GSO_MAX_BYTES;
	}
	if (has_netem && (s->delay_ns || s->loss_ppm)) {
		p->netem = true;
		p->delay_us = (s->delay_ns + 500) / 1000;
		p->netem_loss = scale_loss(s->loss_ppm);
	} else if (s->loss_ppm) {
		p->bpf_loss = scale_loss(s->loss_ppm);
	}
}

uint64_t vfab_ip_shared_rate(uint64_t rate_bps, uint64_t rdma_bps, bool rdma_queued)
{
	uint64_t half = rate_bps / 2;

	if (rdma_queued)
		return rate_bps - half;
	return rate_bps - (rdma_bps < half ? rdma_bps : half);
}
