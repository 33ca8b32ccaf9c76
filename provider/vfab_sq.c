/* SPDX-License-Identifier: MIT */
/*
 * The requester's send queue: work requests posted but not complete yet,
 * in posting order (see enum vfab_stage). Messages on a shaped path are
 * delivered when the link model says and complete when their ACK is back;
 * a WR that waits for an RNR or ACK timer holds back every later one (RC
 * order), and those later ones that were already on the wire go back to
 * queued and are sent again after it (go-back-N, as an HCA resends from the
 * NAKed PSN). The completer (vfab_comp.c) retires it in order. Everything
 * here runs under the QP's sq.lock, from post_send, poll_cq or the engine
 * thread.
 */
#include "provider/vfab.h"
#include "provider/vfab_lead.h"
#include "provider/vfab_wire.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define SPARES_KEPT 64

static struct vfab_swqe *take(struct vfab_qp *qp)
{
	struct vfab_swqe *w = qp->sq.spare;

	if (!w)
		return malloc(sizeof(*w));
	qp->sq.spare = w->next;
	qp->sq.nspare--;
	return w;
}

void vfab_sq_recycle(struct vfab_qp *qp, struct vfab_swqe *w)
{
	if (qp->sq.nspare >= SPARES_KEPT) {
		free(w);
		return;
	}
	w->next = qp->sq.spare;
	qp->sq.spare = w;
	qp->sq.nspare++;
}

/*
 * A WR takes about 1 KiB with its segment and inline arrays full; a small
 * one uses a few dozen bytes of them. Only what it uses is copied: at
 * millions of WRs a second the whole entry cost more than the rest of
 * posting.
 */
static void copy_wqe(struct vfab_swqe *c, const struct vfab_swqe *w)
{
	memcpy(c, w, offsetof(struct vfab_swqe, sge));
	if (w->is_inline)
		memcpy(c->inline_data, w->inline_data, w->inline_len);
	else
		memcpy(c->sge, w->sge, w->num_sge * sizeof(w->sge[0]));
}

int vfab_sq_append(struct vfab_qp *qp, const struct vfab_swqe *w)
{
	struct vfab_swqe *c = take(qp);

	if (!c)
		return ENOMEM;
	copy_wqe(c, w);
	c->next = NULL;
	if (qp->sq.tail)
		qp->sq.tail->next = c;
	else
		qp->sq.head = c;
	qp->sq.tail = c;
	if (!qp->sq.cursor && c->stage != VFAB_ST_ACKED)
		qp->sq.cursor = c;
	return 0;
}

bool vfab_sq_blocked(const struct vfab_qp *qp)
{
	const struct vfab_swqe *t = qp->sq.tail;

	return t && t->stage != VFAB_ST_ACKED && t->stage != VFAB_ST_FLIGHT &&
	       t->stage != VFAB_ST_WIRE;
}

struct vfab_swqe *vfab_sq_pop(struct vfab_qp *qp)
{
	struct vfab_swqe *w = qp->sq.head;

	if (w) {
		qp->sq.head = w->next;
		if (!qp->sq.head) {
			qp->sq.tail = NULL;
			qp->sq.batched = 0; /* nothing is held back any more */
		}
		if (qp->sq.cursor == w)
			qp->sq.cursor = w->next;
	}
	return w;
}

void vfab_sq_drop(struct vfab_qp *qp)
{
	struct vfab_swqe *w;

	while ((w = vfab_sq_pop(qp)))
		free(w);
	qp->sq.cursor = NULL;
	qp->sq.lost_tail = false;
	while ((w = qp->sq.spare)) {
		qp->sq.spare = w->next;
		free(w);
	}
	qp->sq.nspare = 0;
}

/* The WRs after a blocked one were sent for nothing: they go again later. */
static void go_back(struct vfab_swqe *w)
{
	for (w = w->next; w; w = w->next)
		if (w->stage == VFAB_ST_FLIGHT)
			w->stage = VFAB_ST_QUEUED;
}

/*
 * Queued RDMA WRITEs and SENDs one after the other (what post_send held
 * back, or WRs sent again), or a UD QP's datagrams, go with one copy when
 * the path allows (vfab_attempt_chain, vfab_attempt_ud_chain); *wp becomes
 * the last one delivered. False when none went: the first is then
 * attempted on its own.
 */
static bool send_chain(struct vfab_qp *qp, struct vfab_swqe **wp)
{
	struct vfab_swqe *c[VFAB_CHAIN_MAX], *w;
	bool ud = qp->vqp.qp.qp_type == IBV_QPT_UD;
	uint32_t n = 0, k;

	/* Only a chain with nothing undelivered before it: a chain goes at once. */
	if ((!ud && vfab_qp_transport(qp->vqp.qp.qp_type) != IBV_QPT_RC) || qp->wire ||
	    qp->state != IBV_QPS_RTS || qp->sq.cursor != *wp)
		return false;
	for (w = *wp; w && n < VFAB_CHAIN_MAX && w->stage == VFAB_ST_QUEUED; w = w->next) {
		if (ud ? w->opcode != IBV_WR_SEND && w->opcode != IBV_WR_SEND_WITH_IMM
		       : !vfab_chain_op(w->opcode))
			break;
		c[n++] = w;
	}
	if (n < 2)
		k = 0;
	else
		k = ud ? vfab_attempt_ud_chain(qp, c, n) : vfab_attempt_chain(qp, c, n);
	if (!k)
		return false;
	if (qp->sq.cursor == *wp)
		qp->sq.cursor = c[k - 1]->next;
	*wp = c[k - 1];
	return true;
}

/* mlx5 counts the retries (not the expiry or NAK that exceeds the limit). */
static void count_retry(struct vfab_qp *qp, const struct vfab_swqe *w)
{
	struct vfab_port_counters *c = vfab_cnt(qp->ctx->r, qp->ctx->hca_idx, qp->s->port);

	atomic_fetch_add_explicit(w->wait == VFAB_WAIT_NAK_SEQ ? &c->packet_seq_err
							       : &c->local_ack_timeout_err,
				  1, memory_order_relaxed);
}

void vfab_sq_nak_lost(struct vfab_qp *qp, uint64_t now)
{
	struct vfab_region *r = qp->ctx->r;
	struct vfab_swqe *w;
	uint64_t arrive;

	qp->sq.lost_tail = false;
	for (w = qp->sq.cursor; w && w->stage != VFAB_ST_WAIT_TIMEOUT; w = w->next)
		;
	if (!w || w->wait != VFAB_WAIT_LOST_TAIL)
		return;
	/* The new WR's first packet, behind the lost attempt on the same links. */
	arrive = now + fabric_path_latency_ns(r, &qp->req.dest.fwd);
	if (arrive < w->ack_ns)
		arrive = w->ack_ns;
	atomic_fetch_add_explicit(
	    &vfab_cnt(r, qp->req.dest.hca, qp->req.dest.port)->out_of_sequence, 1,
	    memory_order_relaxed);
	w->wait = VFAB_WAIT_NAK_SEQ;
	arrive += fabric_path_latency_ns(r, &qp->req.dest.rev);
	if (arrive < w->due_ns)
		w->due_ns = arrive;
}

/* From the first WR not acknowledged yet (the completer retires the rest). */
void vfab_sq_advance(struct vfab_qp *qp, uint64_t now)
{
	struct vfab_swqe *w;

	/* What post_send held back goes now (or waits behind a blocked WR). */
	qp->sq.batched = 0;
	if (qp->wire)
		vfab_wire_reap(qp);
	for (w = qp->sq.cursor; w; w = w->next) {
		enum vfab_stage out;

		switch (w->stage) {
		case VFAB_ST_ACKED:
			if (qp->sq.cursor == w)
				qp->sq.cursor = w->next;
			continue;
		case VFAB_ST_WIRE:
			continue;
		case VFAB_ST_FAILED:
			return;
		case VFAB_ST_FLIGHT: {
			uint64_t due = w->due_ns, started;

			if (vfab_lead_start_ns(w->byte_len, w->due_ns) > now)
				return;
			/* A lone message teaches when to start the next one. */
			started = w->next ? 0 : vfab_mono_ns();
			out = vfab_deliver(qp, w, now);
			if (started)
				vfab_lead_learn(w->byte_len, due, started, vfab_mono_ns());
			break;
		}
		case VFAB_ST_WAIT_TIMEOUT:
			if (w->due_ns > now)
				return;
			/*
			 * The ACK timer expired or a PSN sequence error NAK came:
			 * both spend the retry count (timeout 0: never gives up).
			 */
			if (qp->attr.timeout) {
				if (!w->retries_left) {
					w->stage = VFAB_ST_FAILED;
					w->status = IBV_WC_RETRY_EXC_ERR;
					return;
				}
				w->retries_left--;
			}
			count_retry(qp, w);
			out = vfab_attempt(qp, w, now);
			break;
		case VFAB_ST_WAIT_RNR:
			if (w->due_ns > now)
				return;
			out = vfab_attempt(qp, w, now);
			break;
		default: /* QUEUED: everything before it is on its way again */
			if (send_chain(qp, &w))
				continue;
			out = vfab_attempt(qp, w, now);
			break;
		}
		if (out == VFAB_ST_WAIT_RNR || out == VFAB_ST_WAIT_TIMEOUT) {
			go_back(w);
			return;
		}
		/* FAILED completes in order; QUEUED: a wire QP's requester is full. */
		if (out == VFAB_ST_FAILED || out == VFAB_ST_QUEUED)
			return;
		if (out == VFAB_ST_ACKED && qp->sq.cursor == w)
			qp->sq.cursor = w->next;
	}
}

/*
 * The next event: the first ACK (acknowledged WRs complete in order, their
 * ACKs come in order) or the first delivery or timer of the rest. A queued
 * WR waits for the one before it; a failed one for the ACKs before it.
 */
uint64_t vfab_sq_next_due(const struct vfab_qp *qp)
{
	const struct vfab_swqe *h = qp->sq.head, *c = qp->sq.cursor;
	uint64_t due = 0;

	if (h && h->stage == VFAB_ST_ACKED)
		due = h->due_ns;
	if (c && c->stage == VFAB_ST_QUEUED)
		return 1; /* nothing holds it back: send it as soon as possible */
	/* Its completer tells the engine when there is news (vfab_wire.c). */
	if (c && c->stage == VFAB_ST_WIRE)
		return due;
	if (c && c->stage == VFAB_ST_FLIGHT &&
	    (!due || vfab_lead_start_ns(c->byte_len, c->due_ns) < due))
		return vfab_lead_start_ns(c->byte_len, c->due_ns);
	if (c && c->stage != VFAB_ST_FAILED && (!due || c->due_ns < due))
		due = c->due_ns;
	return due;
}
