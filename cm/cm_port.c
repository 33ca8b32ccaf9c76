/* SPDX-License-Identifier: MIT */
#include "cm/cm_port.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_path.h"

#define GRH_BYTES 40
#define SLOT (GRH_BYTES + VFAB_CM_MSG_BYTES)

static uint8_t *recv_slot(struct vfab_cm_port *p, unsigned i)
{
	return p->buf + (size_t)i * SLOT;
}

static uint8_t *send_slot(struct vfab_cm_port *p, unsigned i)
{
	return p->buf + (size_t)(VFAB_CM_PORT_RECVS + i) * SLOT;
}

static int post_recv(struct vfab_cm_port *p, unsigned i)
{
	struct ibv_sge sge = {(uintptr_t)recv_slot(p, i), SLOT, p->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;

	return -ibv_post_recv(p->qp, &wr, &bad);
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
	size_t len = (size_t)(VFAB_CM_PORT_RECVS + VFAB_CM_PORT_SENDS) * SLOT;
	int ret = -ENOMEM;

	memset(p, 0, sizeof(*p));
	p->ctx = ctx;
	p->port_num = port_num;
	p->buf = calloc(1, len);
	p->pd = ibv_alloc_pd(ctx);
	p->ch = ibv_create_comp_channel(ctx);
	if (!p->buf || !p->pd || !p->ch)
		goto fail;
	p->cq = ibv_create_cq(ctx, VFAB_CM_PORT_RECVS, NULL, p->ch, 0);
	p->scq = ibv_create_cq(ctx, VFAB_CM_PORT_SENDS, NULL, NULL, 0);
	p->mr = ibv_reg_mr(p->pd, p->buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (!p->cq || !p->scq || !p->mr)
		goto fail;
	qa.send_cq = p->scq;
	qa.recv_cq = p->cq;
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = VFAB_CM_PORT_SENDS;
	qa.cap.max_recv_wr = VFAB_CM_PORT_RECVS;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	p->qp = ibv_create_qp(p->pd, &qa);
	if (!p->qp)
		goto fail;
	/* The agent polls it and drains what is there: reads must not block. */
	if (fcntl(p->ch->fd, F_SETFL, fcntl(p->ch->fd, F_GETFL) | O_NONBLOCK))
		goto fail;
	ret = to_rts(p);
	for (unsigned i = 0; !ret && i < VFAB_CM_PORT_RECVS; i++)
		ret = post_recv(p, i);
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
	if (p->mr)
		ibv_dereg_mr(p->mr);
	if (p->cq)
		ibv_destroy_cq(p->cq);
	if (p->scq)
		ibv_destroy_cq(p->scq);
	if (p->ch)
		ibv_destroy_comp_channel(p->ch);
	if (p->pd)
		ibv_dealloc_pd(p->pd);
	free(p->buf);
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

int vfab_cm_port_send(struct vfab_cm_port *p, uint8_t sgid_index, const uint8_t dgid[16],
		      uint32_t dqpn, const struct vfab_cm_msg *m)
{
	unsigned i = p->send_next++ % VFAB_CM_PORT_SENDS;
	uint8_t *slot = send_slot(p, i);
	struct ibv_sge sge = {(uintptr_t)slot, 0, p->mr->lkey};
	struct ibv_send_wr wr = {0}, *bad;
	struct ibv_ah *ah = ah_for(p, sgid_index, dgid);
	struct ibv_wc wc[16];

	if (!ah)
		return -EHOSTUNREACH;
	/* Reap finished sends: their queue entries (and slots) are free again. */
	while (ibv_poll_cq(p->scq, 16, wc) > 0)
		;
	sge.length = (uint32_t)vfab_cm_msg_encode(m, slot, VFAB_CM_MSG_BYTES);
	wr.wr_id = VFAB_CM_PORT_RECVS + i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = dqpn;
	wr.wr.ud.remote_qkey = VFAB_CM_QP1_QKEY;
	return -ibv_post_send(p->qp, &wr, &bad);
}

int vfab_cm_port_recv(struct vfab_cm_port *p, struct vfab_cm_msg *out, int max)
{
	struct ibv_wc wc[16];
	struct ibv_cq *cq;
	void *cq_ctx;
	int got = 0, n;

	/* Drain the channel's event if there is one (the fd is non-blocking). */
	if (ibv_get_cq_event(p->ch, &cq, &cq_ctx) == 0)
		ibv_ack_cq_events(cq, 1);
	if (ibv_req_notify_cq(p->cq, 0))
		return -EIO;
	while (got < max && (n = ibv_poll_cq(p->cq, max - got < 16 ? max - got : 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			unsigned slot = (unsigned)wc[i].wr_id;

			if (wc[i].status == IBV_WC_SUCCESS && got < max &&
			    wc[i].byte_len >= GRH_BYTES &&
			    vfab_cm_msg_decode(&out[got], recv_slot(p, slot) + GRH_BYTES,
					       wc[i].byte_len - GRH_BYTES) == 0)
				got++;
			if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
				post_recv(p, slot);
		}
	}
	return got;
}
