/* SPDX-License-Identifier: MIT */
/*
 * UD delivery (vfab_resp_ud, see vfab_resp.h): a datagram lands in the next
 * posted receive behind the 40 bytes of its GRH, or is silently dropped;
 * vfab_resp_ud_send sends one to a QP (unicast, or one copy of a multicast).
 */
#include "provider/vfab_resp.h"
#include "provider/vfab_capture.h"
#include "provider/vfab_counters.h"
#include "provider/vfab_dest.h"
#include "provider/vfab_resp_check.h"
#include "provider/vfab_xfer.h"

#include <arpa/inet.h>
#include <stdatomic.h>
#include <string.h>

static uint16_t ip_checksum(const uint8_t *hdr, size_t len)
{
	uint32_t sum = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)hdr[i] << 8 | hdr[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/*
 * The 40 bytes a UD receiver finds in front of the payload: an IPv4 header
 * in the last 20 bytes for RoCE v2 over IPv4 (as mlx5 delivers it), else an
 * IPv6-style GRH.
 */
void vfab_resp_ud_grh(const struct vfab_msg *m, uint8_t grh[VFAB_GRH_BYTES])
{
	enum vfab_roce_l3 l3 = vfab_resp_roce_l3(m);
	bool v2 = l3 != VFAB_ROCE_L3_GRH;
	/* BTH + DETH + payload + ICRC, plus UDP for RoCE v2. */
	uint32_t payload = 12 + 8 + (uint32_t)m->len + 4 + (v2 ? 8 : 0);
	uint32_t vtf;
	uint16_t csum;

	memset(grh, 0, VFAB_GRH_BYTES);
	if (l3 == VFAB_ROCE_L3_IPV4) {
		uint8_t *ip = grh + 20;
		uint16_t tot = (uint16_t)(20 + payload);

		ip[0] = 0x45;
		ip[1] = m->traffic_class;
		ip[2] = (uint8_t)(tot >> 8);
		ip[3] = (uint8_t)tot;
		ip[6] = 0x40; /* don't fragment */
		ip[8] = m->hop_limit;
		ip[9] = 17; /* UDP */
		memcpy(ip + 12, m->sgid + 12, 4);
		memcpy(ip + 16, m->dgid + 12, 4);
		csum = ip_checksum(ip, 20);
		ip[10] = (uint8_t)(csum >> 8);
		ip[11] = (uint8_t)csum;
		return;
	}
	vtf = htonl(6u << 28 | (uint32_t)m->traffic_class << 20 | (m->flow_label & 0xfffff));
	memcpy(grh, &vtf, 4);
	grh[4] = (uint8_t)(payload >> 8);
	grh[5] = (uint8_t)payload;
	grh[6] = v2 ? 17 : 0x1b; /* UDP, or the IB BTH next header */
	grh[7] = m->hop_limit;
	memcpy(grh + 8, m->sgid, 16);
	memcpy(grh + 24, m->dgid, 16);
}

void vfab_resp_ud(const struct vfab_msg *m)
{
	struct vfab_qp_slot *d = m->d;
	struct iovec src[VFAB_XFER_MAX_IOV], dst[VFAB_MAX_SRQ_SGE];
	struct vfab_mr_slot *pins[VFAB_MAX_SRQ_SGE];
	uint8_t grh[VFAB_GRH_BYTES];
	struct vfab_peer p;
	enum ibv_wc_status st;
	unsigned int n;
	struct vfab_resp_rwqe rw;
	uint64_t cap;
	int rc;

	/* The kernel would refuse the copy (another user): dropped, no receive taken. */
	if (m->refused || vfab_lock(&d->lock))
		return;
	if (vfab_resp_check_ud(m) != VFAB_RESP_PASS)
		goto out;
	if (vfab_resp_check_rq(m, &rw) != VFAB_RESP_PASS)
		goto out; /* no receive posted: the datagram is dropped */
	st = vfab_resp_scatter_list(m, &rw, dst, pins, &n, &cap);
	if (st == IBV_WC_SUCCESS && cap < m->len + VFAB_GRH_BYTES) {
		vfab_resp_unpin_list(pins, n);
		st = IBV_WC_LOC_LEN_ERR;
	}
	if (st != IBV_WC_SUCCESS) {
		vfab_resp_push_recv(m, &rw, st, IBV_WC_RECV, 0, 0);
		goto out;
	}
	vfab_resp_ud_grh(m, grh);
	src[0].iov_base = grh;
	src[0].iov_len = sizeof(grh);
	memcpy(src + 1, m->liov, m->nliov * sizeof(src[0]));
	p = vfab_resp_peer_of(m);
	rc = vfab_xfer_write(&p, src, m->nliov + 1, dst, n);
	vfab_resp_unpin_list(pins, n);
	if (rc)
		goto out;
	vfab_resp_push_recv(m, &rw, IBV_WC_SUCCESS, IBV_WC_RECV, (uint32_t)m->len + VFAB_GRH_BYTES,
			    IBV_WC_GRH);
out:
	vfab_unlock(&d->lock);
}

void vfab_resp_ud_send(struct vfab_qp *qp, const struct vfab_swqe *w, struct iovec *iov,
		       unsigned int n, uint64_t len, uint32_t h, uint32_t p, uint32_t qpn,
		       uint8_t type)
{
	struct vfab_context *ctx = qp->ctx;
	struct vfab_qp_slot *d = vfab_qp_lookup(ctx->r, h, qpn), kq;
	struct vfab_owner_fds *f = NULL;
	struct vfab_msg m;

	/* Each datagram reaches only the owner vfabd registered, as an RC message does. */
	if (d && vfab_kqp_copy(ctx->k, h, qpn, &kq) &&
	    (kq.owner.pid == ctx->owner.pid || !vfab_dest_ud_owner(qp, &kq, &f))) {
		vfab_msg_build_ud(&m, qp, w, iov, n, len, d, &kq, h, p, f ? f->memfd : -1, type);
		m.pidfd1 = f ? f->pidfd + 1 : 0;
		m.refused = f && f->refused;
		if (vfab_cap_on(ctx->r))
			vfab_cap_ud(qp, &m, qpn);
		vfab_resp_ud(&m);
	}
	vfab_count_ports(ctx->r, ctx->hca_idx, w->ah->port, h, p, len, 1);
}
