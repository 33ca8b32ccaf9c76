/* SPDX-License-Identifier: MIT */
/* The checks of a capture record (fabric/capture.h). */
#include "fabric/capture.h"
#include "fabric/region.h"

bool vfab_cap_rec_sound(const struct vfab_cap_rec *r, size_t got, uint32_t max_hca)
{
	uint32_t mtu = vfab_cap_mtu_bytes(r->pmtu);

	if (got < sizeof(*r) || r->magic != VFAB_CAP_MAGIC || got - sizeof(*r) != r->cap_len)
		return false;
	if (r->src_hca >= max_hca || r->dst_hca >= max_hca || r->src_port - 1 >= VFAB_MAX_PORTS ||
	    r->dst_port - 1 >= VFAB_MAX_PORTS || !mtu || r->result > VFAB_CAP_LOST ||
	    r->l3 > VFAB_CAP_V2_IPV6)
		return false;
	if (r->msg_len > (1u << 31) || r->npkts != vfab_cap_npkts(r->msg_len, mtu) ||
	    r->pkt >= r->npkts)
		return false;
	/* The payload lies in its packet's share of the message. */
	return r->pay_off == (uint64_t)r->pkt * mtu && r->cap_len <= mtu &&
	       (uint64_t)r->pay_off + r->cap_len <= r->msg_len;
}
