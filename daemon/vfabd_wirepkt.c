/* SPDX-License-Identifier: MIT */
/* vfabd's RoCE wire, one packet at a time (see vfabd_wirepkt.h). */

#include "vfabd_wirepkt.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>

const char *vfabd_wire_drop_name(enum vfabd_wire_drop why)
{
	static const char *const names[VFABD_WIRE_DROP_REASONS] = {
	    [VFABD_WIRE_PASS] = "pass",		 [VFABD_WIRE_DROP_BINDING] = "binding",
	    [VFABD_WIRE_DROP_SGID] = "sgid",	 [VFABD_WIRE_DROP_DGID] = "dgid",
	    [VFABD_WIRE_DROP_SRC_QP] = "src_qp", [VFABD_WIRE_DROP_UNSEALED] = "unsealed",
	    [VFABD_WIRE_DROP_BUILD] = "build",	 [VFABD_WIRE_DROP_SEND] = "send",
	    [VFABD_WIRE_DROP_PARSE] = "parse",	 [VFABD_WIRE_DROP_UNBOUND] = "unbound",
	    [VFABD_WIRE_DROP_FULL] = "full",	 [VFABD_WIRE_DROP_GSI] = "gsi",
	};

	return (unsigned)why < VFABD_WIRE_DROP_REASONS ? names[why] : "?";
}

enum vfabd_wire_drop vfabd_wire_tx_check(const struct vfab_wire_msg *m,
					 const struct vfabd_wire_bind *b,
					 const uint8_t (*addrs)[16], size_t naddrs)
{
	size_t i;

	if (m->hca != b->hca || m->port != b->port || m->qpn != b->qpn)
		return VFABD_WIRE_DROP_BINDING;
	for (i = 0; i < naddrs; i++)
		if (!memcmp(addrs[i], m->sgid, 16))
			break;
	/* A raw IP socket puts any source address on the wire: only the port's own may go. */
	if (i == naddrs)
		return VFABD_WIRE_DROP_SGID;
	if (vfab_wire_gid_v4(m->sgid) != vfab_wire_gid_v4(m->dgid))
		return VFABD_WIRE_DROP_DGID;
	/* A UD packet names its sender in the DETH: only the bound QP may be named. */
	if ((m->bth.opcode & 0xe0) == ROCE_OP_UD && (m->ext.src_qpn & 0xffffff) != b->qpn)
		return VFABD_WIRE_DROP_SRC_QP;
	return VFABD_WIRE_PASS;
}

int vfabd_wire_tx_frame(const struct vfab_wire_msg *m, const void *payload, uint16_t ip_id,
			uint8_t *buf, size_t cap)
{
	struct roce_addr a = {
	    .l3 = vfab_wire_gid_v4(m->sgid) && vfab_wire_gid_v4(m->dgid) ? ROCE_L3_V2_IPV4
									 : ROCE_L3_V2_IPV6,
	    .tclass = m->tclass,
	    .hop_limit = m->hop_limit,
	    .flow_label = m->flow_label,
	    .udp_sport = m->udp_sport,
	    .ip_id = ip_id,
	};

	if (!ip_id)
		return -EINVAL;
	memcpy(a.sgid, m->sgid, 16);
	memcpy(a.dgid, m->dgid, 16);
	return roce_pkt_build(buf, cap, &a, &m->bth, &m->ext, payload, m->paylen);
}

int vfabd_wire_dst(const uint8_t dgid[16], int ifindex, struct sockaddr_storage *sa, socklen_t *len)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;

	memset(sa, 0, sizeof(*sa));
	if (vfab_wire_gid_v4(dgid)) {
		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, dgid + 12, 4);
		*len = sizeof(*s4);
		return AF_INET;
	}
	s6->sin6_family = AF_INET6;
	memcpy(&s6->sin6_addr, dgid, 16);
	/* fe80::/10 names a peer on this link only: which link, the kernel must be told. */
	if (dgid[0] == 0xfe && (dgid[1] & 0xc0) == 0x80)
		s6->sin6_scope_id = (uint32_t)ifindex;
	*len = sizeof(*s6);
	return AF_INET6;
}

void vfabd_wire_rx_msg(const struct roce_pkt_view *v, const struct vfabd_wire_bind *b,
		       struct vfab_wire_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = VFAB_WIRE_RX;
	m->hca = b->hca;
	m->port = b->port;
	m->qpn = b->qpn;
	memcpy(m->sgid, v->addr.sgid, 16);
	memcpy(m->dgid, v->addr.dgid, 16);
	m->udp_sport = v->addr.udp_sport;
	m->tclass = v->addr.tclass;
	m->hop_limit = v->addr.hop_limit;
	m->flow_label = v->addr.flow_label;
	m->bth = v->bth;
	m->ext = v->ext;
	m->paylen = v->paylen;
}
