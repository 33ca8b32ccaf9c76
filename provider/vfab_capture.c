/* SPDX-License-Identifier: MIT */
/* Capture records of the messages a requester moves (provider/vfab_capture.h). */
#include "provider/vfab_capture.h"
#include "provider/vfab_resp_check.h"
#include "fabric/roce_pkt.h"

#include "base/paths.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* The encapsulation (enum roce_l3) by the provider's one rule (vfab_roce_l3_of). */
static uint8_t cap_l3(uint8_t gid_type, const uint8_t *sgid, const uint8_t *dgid)
{
	switch (vfab_roce_l3_of(gid_type, sgid, dgid)) {
	case VFAB_ROCE_L3_IPV4:
		return ROCE_L3_V2_IPV4;
	case VFAB_ROCE_L3_IPV6:
		return ROCE_L3_V2_IPV6;
	default:
		return ROCE_L3_V1;
	}
}

/* enum ibv_mtu of the packets the requester splits messages into (qp->req.mtu_bytes). */
static uint8_t cap_pmtu(const struct vfab_qp *qp)
{
	uint32_t b = qp->req.mtu_bytes;

	return b >= 256 && b <= 4096 && !(b & (b - 1)) ? (uint8_t)(__builtin_ctz(b) - 7)
						       : IBV_MTU_4096;
}

/*
 * One socket per process serves every capture, unbound. A send waits at
 * most CAP_SEND_WAIT_US for the tool to make room (a datagram counts
 * against the sender's buffer until it is read): a capture slows the
 * traffic it records rather than lose it, up to that bound.
 */
#define CAP_SEND_WAIT_US 10000
#define CAP_SNDBUF_BYTES (4 << 20)
static _Atomic int cap_fd = -1;

static int cap_socket(void)
{
	struct timeval wait = {.tv_usec = CAP_SEND_WAIT_US};
	int fd = atomic_load_explicit(&cap_fd, memory_order_acquire), mine, buf = CAP_SNDBUF_BYTES;

	if (fd >= 0)
		return fd;
	mine = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (mine < 0)
		return -1;
	/* The buffer is capped at the host's wmem_max: as much as it allows. */
	setsockopt(mine, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	setsockopt(mine, SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof(wait));
	if (!atomic_compare_exchange_strong(&cap_fd, &fd, mine)) {
		close(mine);
		return fd;
	}
	return mine;
}

#define CAP_BATCH 8 /* datagrams per sendmmsg */
#define CAP_IOV 64  /* buffers one datagram's payload is gathered from */

/*
 * Adds to v (*nv entries, at most CAP_IOV) the want bytes from byte off of
 * iov[0..n); false when they do not fit v.
 */
static bool add_slices(const struct iovec *iov, unsigned int n, uint64_t off, uint32_t want,
		       struct iovec *v, unsigned int *nv)
{
	unsigned int i;

	for (i = 0; i < n && want; i++) {
		uint64_t k;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		if (*nv == CAP_IOV)
			return false;
		k = iov[i].iov_len - off;
		if (k > want)
			k = want;
		v[*nv].iov_base = (uint8_t *)iov[i].iov_base + off;
		v[*nv].iov_len = k;
		(*nv)++;
		want -= (uint32_t)k;
		off = 0;
	}
	return !want;
}

/*
 * The message's datagrams to one capture: each packet's first pkt_bytes of
 * payload, as many packets a datagram as fit it.
 */
static void send_all(int fd, const struct sockaddr_un *to, _Atomic uint64_t *drops,
		     const struct vfab_cap_rec *h, const struct iovec *iov, unsigned int n,
		     uint32_t pkt_bytes)
{
	struct vfab_cap_rec hdr[CAP_BATCH];
	struct iovec v[CAP_BATCH][CAP_IOV + 1];
	struct mmsghdr mm[CAP_BATCH];
	uint32_t mtu = vfab_cap_mtu_bytes(h->pmtu), pkt = 0;

	while (pkt < h->npkts) {
		unsigned int k;
		int sent;

		for (k = 0; k < CAP_BATCH && pkt < h->npkts; k++) {
			unsigned int nv = 0;

			hdr[k] = *h;
			hdr[k].pkt = pkt;
			hdr[k].pkt_bytes = pkt_bytes;
			hdr[k].cap_len = 0;
			for (; pkt < h->npkts && pkt - hdr[k].pkt < VFAB_CAP_DGRAM_PKTS; pkt++) {
				uint32_t kept = vfab_cap_pkt_kept(h->msg_len, mtu, pkt, pkt_bytes);
				unsigned int before = nv;

				if (pkt > hdr[k].pkt &&
				    hdr[k].cap_len + kept > VFAB_CAP_DGRAM_PAYLOAD)
					break;
				if (!add_slices(iov, n, (uint64_t)pkt * mtu, kept, v[k] + 1, &nv)) {
					/*
					 * Scattered past CAP_IOV: the packet starts the next
					 * datagram, or, when it is the first, goes alone
					 * without payload.
					 */
					nv = before;
					if (pkt == hdr[k].pkt) {
						hdr[k].pkt_bytes = 0;
						pkt++;
					}
					break;
				}
				hdr[k].cap_len += kept;
			}
			hdr[k].pkt_count = pkt - hdr[k].pkt;
			v[k][0].iov_base = &hdr[k];
			v[k][0].iov_len = sizeof(hdr[k]);
			memset(&mm[k], 0, sizeof(mm[k]));
			mm[k].msg_hdr.msg_name = (void *)to;
			mm[k].msg_hdr.msg_namelen = sizeof(*to);
			mm[k].msg_hdr.msg_iov = v[k];
			mm[k].msg_hdr.msg_iovlen = nv + 1;
		}
		sent = sendmmsg(fd, mm, k, MSG_NOSIGNAL);
		if (sent < (int)k) {
			/* Still full, or gone: the rest of this message is lost to the capture. */
			atomic_fetch_add_explicit(drops, k - (sent > 0 ? (unsigned int)sent : 0u),
						  memory_order_relaxed);
			return;
		}
	}
}

/* Sends h's datagrams to every running capture of its source or destination port. */
static void emit(const struct vfab_context *ctx, struct vfab_cap_rec *h, const struct iovec *iov,
		 unsigned int n)
{
	struct vfab_region *r = ctx->r;
	uint32_t i, mtu = vfab_cap_mtu_bytes(h->pmtu);
	struct timespec ts;
	int fd;

	clock_gettime(CLOCK_REALTIME, &ts);
	h->magic = VFAB_CAP_MAGIC;
	h->ts_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	h->npkts = vfab_cap_npkts(h->msg_len, mtu);
	for (i = 0; i < VFAB_CAPTURES; i++) {
		struct vfab_capture *c = &r->captures[i];
		struct sockaddr_un to = {.sun_family = AF_UNIX};
		uint32_t pkt_bytes;

		if (atomic_load_explicit(&c->state, memory_order_acquire) != VFAB_CAP_ACTIVE)
			continue;
		if (!(c->hca == h->src_hca && c->port == h->src_port) &&
		    !(c->hca == h->dst_hca && c->port == h->dst_port))
			continue;
		/* The socket is the locator's run dir's, by slot number: no path from the region.
		 */
		if (vfab_capture_sock(to.sun_path, sizeof(to.sun_path), ctx->dev->rundir, i))
			continue;
		fd = cap_socket();
		if (fd < 0)
			return;
		pkt_bytes = c->pkt_bytes < mtu ? c->pkt_bytes : mtu;
		send_all(fd, &to, &vfab_own(r)->cap_drops[i], h, iov, n, pkt_bytes);
	}
}

void vfab_cap_answer(const struct vfab_resp *res, uint8_t *result, uint8_t *syndrome)
{
	*syndrome = 0;
	switch (res->kind) {
	case VFAB_RESP_ACK:
		*result = VFAB_CAP_ACKED;
		return;
	case VFAB_RESP_RNR:
		*result = VFAB_CAP_RNR;
		*syndrome = (uint8_t)(0x20 | (res->rnr_timer & 0x1f));
		return;
	case VFAB_RESP_NAK:
		/* The NAK codes of the AETH: invalid request, remote access, operational. */
		*result = VFAB_CAP_NAK;
		*syndrome = res->status == IBV_WC_REM_ACCESS_ERR    ? 0x62
			    : res->status == IBV_WC_REM_INV_REQ_ERR ? 0x61
								    : 0x63;
		return;
	default:
		*result = VFAB_CAP_UNANSWERED;
	}
}

void vfab_cap_rc(const struct vfab_qp *qp, const struct vfab_swqe *w, uint64_t len, uint8_t result,
		 uint8_t syndrome, uint64_t orig, uint32_t lost_pkt, const struct iovec *iov,
		 unsigned int n)
{
	const struct ibv_global_route *grh = &qp->attr.ah_attr.grh;
	const struct vfab_context *ctx = qp->ctx;
	uint32_t port = qp->s->port;
	const struct vfab_gid *sg;
	bool atomic =
	    w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
	struct vfab_cap_rec h;

	if (port - 1 >= VFAB_MAX_PORTS)
		return;
	sg = vfab_port_gid(&ctx->hca->ports[port - 1], grh->sgid_index);
	memset(&h, 0, sizeof(h));
	h.result = result;
	h.syndrome = syndrome;
	h.src_hca = ctx->hca_idx;
	h.src_port = port;
	h.dst_hca = qp->req.dest.hca;
	h.dst_port = qp->req.dest.port;
	if (sg)
		memcpy(h.sgid, sg->raw, 16);
	memcpy(h.dgid, grh->dgid.raw, 16);
	h.l3 = cap_l3(sg ? sg->type : VFAB_GID_ROCE_V2, h.sgid, h.dgid);
	h.qp_type = (uint8_t)qp->vqp.qp.qp_type;
	h.wr_opcode = (uint8_t)w->opcode;
	h.pmtu = cap_pmtu(qp);
	h.solicited = (w->flags & IBV_SEND_SOLICITED) != 0;
	h.sqpn = qp->vqp.qp.qp_num;
	h.dqpn = qp->attr.dest_qp_num;
	h.psn = w->psn;
	h.lost_pkt = lost_pkt;
	/* An atomic carries no payload: its operands are in its header. */
	h.msg_len = atomic ? 0 : (uint32_t)len;
	h.rkey = w->rkey;
	h.va = w->remote_addr;
	h.imm = w->opcode == IBV_WR_SEND_WITH_INV ? w->inv_rkey : w->imm_data;
	h.swap_add = w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? w->swap : w->compare_add;
	h.compare = w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? w->compare_add : 0;
	h.orig = orig;
	h.xrc_srqn = w->remote_srqn;
	emit(ctx, &h, iov, atomic ? 0 : n);
}

void vfab_cap_ud(const struct vfab_qp *qp, const struct vfab_msg *m, uint32_t qpn)
{
	const struct vfab_swqe *w = m->wqe;
	struct vfab_cap_rec h;

	memset(&h, 0, sizeof(h));
	h.result = VFAB_CAP_UNANSWERED;
	h.src_hca = m->src_hca;
	h.src_port = m->src_port;
	h.dst_hca = m->dst_hca;
	h.dst_port = m->dst_port;
	memcpy(h.sgid, m->sgid, 16);
	memcpy(h.dgid, m->dgid, 16);
	h.l3 = cap_l3(m->sgid_type, m->sgid, m->dgid);
	h.qp_type = IBV_QPT_UD;
	h.wr_opcode = (uint8_t)w->opcode;
	h.pmtu = cap_pmtu(qp);
	h.solicited = (w->flags & IBV_SEND_SOLICITED) != 0;
	h.sqpn = qp->vqp.qp.qp_num;
	h.dqpn = qpn;
	h.psn = w->psn;
	h.msg_len = (uint32_t)m->len;
	h.imm = w->imm_data;
	/* A Q_Key with its top bit set means the QP's own (IBA 10.2.5). */
	h.qkey = (w->remote_qkey & 0x80000000u) ? qp->attr.qkey : w->remote_qkey;
	emit(qp->ctx, &h, m->liov, m->nliov);
}
