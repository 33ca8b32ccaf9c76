/* SPDX-License-Identifier: MIT */
/* The checks of a capture record (fabric/capture.h). */
#include "fabric/capture.h"
#include "fabric/region.h"
#include "fabric/roce_pkt.h"

bool vfab_cap_rec_sound(const struct vfab_cap_rec *r, size_t got, uint32_t max_hca)
{
	uint32_t mtu = vfab_cap_mtu_bytes(r->pmtu), i;
	uint64_t sum = 0;

	if (got < sizeof(*r) || r->magic != VFAB_CAP_MAGIC || got - sizeof(*r) != r->cap_len)
		return false;
	if (r->src_hca >= max_hca || r->dst_hca >= max_hca || r->src_port - 1 >= VFAB_MAX_PORTS ||
	    r->dst_port - 1 >= VFAB_MAX_PORTS || !mtu || r->result > VFAB_CAP_LOST ||
	    r->l3 > ROCE_L3_V2_IPV6)
		return false;
	if (r->msg_len > (1u << 31) || r->npkts != vfab_cap_npkts(r->msg_len, mtu) ||
	    !r->pkt_count || r->pkt_count > VFAB_CAP_DGRAM_PKTS || r->pkt >= r->npkts ||
	    r->pkt_count > r->npkts - r->pkt || r->cap_len > VFAB_CAP_DGRAM_PAYLOAD)
		return false;
	/* The payload is its packets' shares, whole. */
	for (i = 0; i < r->pkt_count && sum <= r->cap_len; i++)
		sum += vfab_cap_pkt_kept(r->msg_len, mtu, r->pkt + i, r->pkt_bytes);
	return sum == r->cap_len;
}
