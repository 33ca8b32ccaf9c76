/* SPDX-License-Identifier: MIT */
#include "cm/cm_port.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_log.h"
#include "cm/cm_mad.h"
#include "cm/cm_path.h"

#define GRH_BYTES 40
#define SLOT (GRH_BYTES + VFAB_CM_MSG_BYTES)
#define SEND_WR_ID (1ull << 63) /* sends' wr_ids; receives' are buffer numbers */

struct vfab_cm_port_out {
	struct vfab_cm_port_out *next;
	uint8_t sgid_index;
	uint8_t dgid[16];
	uint32_t dqpn;
	struct vfab_cm_msg m;
};

/* Transaction IDs of this process's MADs (the CM matches by communication IDs, not by these). */
static uint64_t tids;

static uint8_t *recv_slot(struct vfab_cm_port *p, unsigned i)
{
	return p->rbuf[i / VFAB_CM_PORT_RECV_CHUNK] + (size_t)(i % VFAB_CM_PORT_RECV_CHUNK) * SLOT;
}

static int post_recv(struct vfab_cm_port *p, unsigned i)
{
	struct ibv_sge sge = {(uintptr_t)recv_slot(p, i), SLOT,
			      p->rmr[i / VFAB_CM_PORT_RECV_CHUNK]->lkey};
	struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;

	return -ibv_post_recv(p->qp, &wr, &bad);
}

/* Buffers and posted receives up to target (whole chunks, at most the QP's queue). */
static int grow(struct vfab_cm_port *p, unsigned target)
{
	while (p->recvs < target && p->recvs < VFAB_CM_PORT_RECV_MAX) {
		unsigned c = p->recvs / VFAB_CM_PORT_RECV_CHUNK;
		size_t len = (size_t)VFAB_CM_PORT_RECV_CHUNK * SLOT;

		p->rbuf[c] = calloc(1, len);
		if (!p->rbuf[c])
			return -ENOMEM;
		p->rmr[c] = ibv_reg_mr(p->pd, p->rbuf[c], len, IBV_ACCESS_LOCAL_WRITE);
		if (!p->rmr[c]) {
			free(p->rbuf[c]);
			p->rbuf[c] = NULL;
			return -ENOMEM;
		}
		for (unsigned i = 0; i < VFAB_CM_PORT_RECV_CHUNK; i++) {
			int ret = post_recv(p, p->recvs + i);

			if (ret)
				return ret;
		}
		p->recvs += VFAB_CM_PORT_RECV_CHUNK;
	}
	return 0;
}

int vfab_cm_port_reserve(struct vfab_cm_port *p, int delta)
{
	long d = (long)p->demand + delta;

	p->demand = d < 0 ? 0 : (unsigned)d;
	return grow(p, VFAB_CM_PORT_RECV_BASE + p->demand);
}

static int to_rts(struct vfab_cm_port *p)
{
	struct ibv_qp_attr a = {
	    .qp_state = IBV_QPS_INIT, .port_num = p->port_num, .qkey = VFAB_CM_QP1_QKEY};

	if (ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return -EIO;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(p->qp, &a, IBV_QP_STATE))
		return -EIO;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return -EIO;
	return 0;
}

int vfab_cm_port_open(struct vfab_cm_port *p, struct ibv_context *ctx, uint8_t port_num)
{
	struct ibv_qp_init_attr qa = {0};
	size_t slen = (size_t)VFAB_CM_PORT_SENDS * SLOT;
	int ret = -ENOMEM;

	memset(p, 0, sizeof(*p));
	p->ctx = ctx;
	p->port_num = port_num;
	p->sbuf = calloc(1, slen);
	p->pd = ibv_alloc_pd(ctx);
	p->ch = ibv_create_comp_channel(ctx);
	if (!p->sbuf || !p->pd || !p->ch)
		goto fail;
	p->cq = ibv_create_cq(ctx, VFAB_CM_PORT_RECV_MAX, NULL, p->ch, 0);
	p->scq = ibv_create_cq(ctx, VFAB_CM_PORT_SENDS, NULL, p->ch, 0);
	p->smr = ibv_reg_mr(p->pd, p->sbuf, slen, IBV_ACCESS_LOCAL_WRITE);
	if (!p->cq || !p->scq || !p->smr)
		goto fail;
	qa.send_cq = p->scq;
	qa.recv_cq = p->cq;
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = VFAB_CM_PORT_SENDS;
	qa.cap.max_recv_wr = VFAB_CM_PORT_RECV_MAX;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	p->qp = ibv_create_qp(p->pd, &qa);
	if (!p->qp)
		goto fail;
	/* The agent polls it and drains what is there: reads must not block. */
	if (fcntl(p->ch->fd, F_SETFL, fcntl(p->ch->fd, F_GETFL) | O_NONBLOCK))
		goto fail;
	ret = to_rts(p);
	if (!ret)
		ret = grow(p, VFAB_CM_PORT_RECV_BASE);
	if (!ret && ibv_req_notify_cq(p->cq, 0))
		ret = -EIO;
	if (!ret)
		return 0;
fail:
	vfab_cm_port_close(p);
	return ret;
}

void vfab_cm_port_close(struct vfab_cm_port *p)
{
	for (unsigned i = 0; i < p->nahs; i++)
		ibv_destroy_ah(p->ahs[i].ah);
	if (p->qp)
		ibv_destroy_qp(p->qp);
	for (unsigned c = 0; c < VFAB_CM_PORT_RECV_MAX / VFAB_CM_PORT_RECV_CHUNK; c++) {
		if (p->rmr[c])
			ibv_dereg_mr(p->rmr[c]);
		free(p->rbuf[c]);
	}
	if (p->smr)
		ibv_dereg_mr(p->smr);
	if (p->cq)
		ibv_destroy_cq(p->cq);
	if (p->scq)
		ibv_destroy_cq(p->scq);
	if (p->ch)
		ibv_destroy_comp_channel(p->ch);
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	free(p->sbuf);
	while (p->wait_head) {
		struct vfab_cm_port_out *o = p->wait_head;

		p->wait_head = o->next;
		free(o);
	}
	memset(p, 0, sizeof(*p));
}

int vfab_cm_port_fd(const struct vfab_cm_port *p)
{
	return p->ch ? p->ch->fd : -1;
}

static struct ibv_ah *ah_for(struct vfab_cm_port *p, uint8_t sgid_index, const uint8_t dgid[16])
{
	struct ibv_ah_attr a = {0};
	struct ibv_ah *ah;

	for (unsigned i = 0; i < p->nahs; i++)
		if (p->ahs[i].sgid_index == sgid_index && !memcmp(p->ahs[i].dgid, dgid, 16))
			return p->ahs[i].ah;
	a.is_global = 1;
	memcpy(a.grh.dgid.raw, dgid, 16);
	a.grh.sgid_index = sgid_index;
	a.grh.hop_limit = VFAB_CM_HOP_LIMIT;
	a.port_num = p->port_num;
	ah = ibv_create_ah(p->pd, &a);
	if (!ah)
		return NULL;
	if (p->nahs == VFAB_CM_PORT_AHS) { /* full: the oldest goes */
		ibv_destroy_ah(p->ahs[0].ah);
		memmove(&p->ahs[0], &p->ahs[1], sizeof(p->ahs[0]) * (VFAB_CM_PORT_AHS - 1));
		p->nahs--;
	}
	memcpy(p->ahs[p->nahs].dgid, dgid, 16);
	p->ahs[p->nahs].sgid_index = sgid_index;
	p->ahs[p->nahs].ah = ah;
	p->nahs++;
	return ah;
}

/*
 * Post one send. The queue's entries complete in order, so with fewer than
 * VFAB_CM_PORT_SENDS outstanding the next buffer in turn is free.
 */
static int post_send(struct vfab_cm_port *p, uint8_t sgid_index, const uint8_t dgid[16],
		     uint32_t dqpn, const struct vfab_cm_msg *m)
{
	unsigned i = p->send_next++ % VFAB_CM_PORT_SENDS;
	uint8_t *slot = p->sbuf + (size_t)i * SLOT;
	struct ibv_sge sge = {(uintptr_t)slot, 0, p->smr->lkey};
	struct ibv_send_wr wr = {0}, *bad;
	struct ibv_ah *ah = ah_for(p, sgid_index, dgid);
	int ret;

	if (!ah)
		return -EHOSTUNREACH;
	/* QP1 is another machine's CM: it takes the IB CM's MADs (cm_mad.h). */
	if (dqpn == VFAB_CM_MAD_QPN) {
		ret = vfab_cm_mad_encode(m, ++tids, ibv_get_device_guid(p->ctx->device), dgid, slot,
					 SLOT);
		if (ret < 0)
			return ret;
		sge.length = (uint32_t)ret;
	} else {
		sge.length = (uint32_t)vfab_cm_msg_encode(m, slot, VFAB_CM_MSG_BYTES);
	}
	wr.wr_id = SEND_WR_ID | i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = dqpn;
	wr.wr.ud.remote_qkey = VFAB_CM_QP1_QKEY;
	ret = -ibv_post_send(p->qp, &wr, &bad);
	if (!ret) {
		p->sends_out++;
		p->sent++;
	}
	return ret;
}

/* Completed sends free their entries; waiting sends take them, oldest first. */
static void flush_sends(struct vfab_cm_port *p)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(p->scq, 16, wc)) > 0)
		p->sends_out -= (unsigned)n < p->sends_out ? (unsigned)n : p->sends_out;
	while (p->wait_head && p->sends_out < VFAB_CM_PORT_SENDS) {
		struct vfab_cm_port_out *o = p->wait_head;

		p->wait_head = o->next;
		if (!p->wait_head)
			p->wait_tail = NULL;
		if (post_send(p, o->sgid_index, o->dgid, o->dqpn, &o->m))
			p->dropped++;
		free(o);
	}
	/* Still waiting: the next completion must wake the agent. */
	if (p->wait_head)
		ibv_req_notify_cq(p->scq, 0);
}

int vfab_cm_port_send(struct vfab_cm_port *p, uint8_t sgid_index, const uint8_t dgid[16],
		      uint32_t dqpn, const struct vfab_cm_msg *m)
{
	struct vfab_cm_port_out *o;

	flush_sends(p);
	if (!p->wait_head && p->sends_out < VFAB_CM_PORT_SENDS)
		return post_send(p, sgid_index, dgid, dqpn, m);
	o = malloc(sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->next = NULL;
	o->sgid_index = sgid_index;
	memcpy(o->dgid, dgid, 16);
	o->dqpn = dqpn;
	o->m = *m;
	if (p->wait_tail)
		p->wait_tail->next = o;
	else
		p->wait_head = o;
	p->wait_tail = o;
	ibv_req_notify_cq(p->scq, 0);
	return 0;
}

/*
 * A received message behind its GRH: from QP1, another machine's CM MAD,
 * whose GIDs the GRH holds (an IPv6 header, or for RoCE v2 over IPv4 an
 * IPv4 header in its last 20 bytes, as mlx5 writes it); else cm_wire.h's
 * encoding.
 */
static int decode(const struct ibv_wc *wc, const uint8_t *buf, struct vfab_cm_msg *m)
{
	static const uint8_t v4[12] = {[10] = 0xff, [11] = 0xff};
	uint8_t sgid[16], dgid[16];

	if (wc->src_qp != VFAB_CM_MAD_QPN)
		return vfab_cm_msg_decode(m, buf + GRH_BYTES, wc->byte_len - GRH_BYTES);
	if (buf[0] >> 4 != 6) {
		memcpy(sgid, v4, 12);
		memcpy(sgid + 12, buf + 32, 4);
		memcpy(dgid, v4, 12);
		memcpy(dgid + 12, buf + 36, 4);
	} else {
		memcpy(sgid, buf + 8, 16);
		memcpy(dgid, buf + 24, 16);
	}
	return vfab_cm_mad_decode(m, buf + GRH_BYTES, wc->byte_len - GRH_BYTES, sgid, dgid);
}

int vfab_cm_port_recv(struct vfab_cm_port *p, struct vfab_cm_msg *out, int max)
{
	struct ibv_wc wc[16];
	struct ibv_cq *cq;
	void *cq_ctx;
	int got = 0, n;

	/* Drain the channel's events (the fd is non-blocking), then re-arm. */
	while (ibv_get_cq_event(p->ch, &cq, &cq_ctx) == 0)
		ibv_ack_cq_events(cq, 1);
	if (ibv_req_notify_cq(p->cq, 0))
		return -EIO;
	flush_sends(p);
	while (got < max && (n = ibv_poll_cq(p->cq, max - got < 16 ? max - got : 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			unsigned slot = (unsigned)wc[i].wr_id;

			if (wc[i].status == IBV_WC_SUCCESS && wc[i].byte_len >= GRH_BYTES &&
			    decode(&wc[i], recv_slot(p, slot), &out[got]) == 0)
				got++;
			if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
				post_recv(p, slot);
		}
	}
	p->received += (uint64_t)got;
	return got;
}

int vfab_cm_port_burst(struct vfab_cm_port *p, unsigned drained)
{
	/* More than half the buffers were full at once: peers outpace the agent. */
	if (drained <= p->recvs / 2 || p->recvs >= VFAB_CM_PORT_RECV_MAX)
		return 0;
	vfab_cm_dbg("CM QP %u: one drain took %u messages: %u receives", p->qp->qp_num, drained,
		    p->recvs * 2);
	return grow(p, p->recvs * 2);
}
