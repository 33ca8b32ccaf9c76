/* SPDX-License-Identifier: MIT */
/*
 * The CQ producer: appends completions to a CQ ring, for this process or a
 * peer (the completer's send CQEs, the responder's receive CQEs, the flushes),
 * as the two HCAs would. Entries are published with a release
 * store of their seq, after the data they complete, so a poller that sees the
 * entry also sees the bytes. An armed CQ wakes its channel's FIFO.
 */
#include "provider/vfab.h"
#include "provider/vfab_counters.h"
#include "provider/vfab_util.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

/*
 * What poll_cq reports in vendor_err. libmlx5 copies the error CQE's
 * vendor_err_synd byte there (not the syndrome, which gives the status);
 * ConnectX firmware's values are not published, so these are the ones its
 * users' logs show (UCX prints "synd 0x15 vend 0x81"; NCCL "vendor err
 * 129"): flush 0xf9, transport retries 0x81, remote access 0x88, remote
 * operation 0x89, remote invalid request 0x8a, local protection 0x51. For
 * the statuses no such log shows, the CQE syndrome stands in.
 */
uint32_t vfab_vendor_err(enum ibv_wc_status status)
{
	switch (status) {
	case IBV_WC_SUCCESS:
		return 0;
	case IBV_WC_LOC_LEN_ERR:
		return 0x01;
	case IBV_WC_LOC_QP_OP_ERR:
		return 0x02;
	case IBV_WC_LOC_PROT_ERR:
		return 0x51;
	case IBV_WC_WR_FLUSH_ERR:
		return 0xf9;
	case IBV_WC_BAD_RESP_ERR:
		return 0x10;
	case IBV_WC_LOC_ACCESS_ERR:
		return 0x11;
	case IBV_WC_REM_INV_REQ_ERR:
		return 0x8a;
	case IBV_WC_REM_ACCESS_ERR:
		return 0x88;
	case IBV_WC_REM_OP_ERR:
		return 0x89;
	case IBV_WC_RETRY_EXC_ERR:
		return 0x81;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return 0x16;
	default:
		return 0xff;
	}
}

/* Whether this completion fires the CQ's armed notification (lock held). */
static bool take_arm(struct vfab_cq_slot *s, const struct vfab_cqe *e, bool solicited)
{
	uint32_t armed = atomic_load(&s->armed);

	if (armed == 0)
		return false;
	if (armed == 2 && !solicited && e->status == IBV_WC_SUCCESS)
		return false;
	atomic_store(&s->armed, 0);
	return true;
}

/*
 * mlx5's extended error counters of the completion's QP's port: receive
 * completions are the responder's (resp_*), the others the requester's.
 * The port is the QP slot's (any user can rewrite it: it only picks a
 * counter, within bounds).
 */
static __attribute__((cold)) void count_error(struct vfab_region *r, const struct vfab_cqe *e)
{
	const struct vfab_qp_slot *q = &r->qps[vfab_qpn_slot(e->qp_num)];
	bool resp = e->opcode & IBV_WC_RECV, flush = e->status == IBV_WC_WR_FLUSH_ERR;
	uint32_t hca = q->hca, port = q->port;
	struct vfab_port_counters *c;

	if (hca >= VFAB_MAX_HCAS || port < 1 || port > VFAB_MAX_PORTS)
		return;
	c = vfab_cnt(r, hca, port);
	if (resp) {
		vfab_count_event(flush ? &c->resp_cqe_flush_error : &c->resp_cqe_error, 1);
		return;
	}
	vfab_count_event(flush ? &c->req_cqe_flush_error : &c->req_cqe_error, 1);
	if (e->status == IBV_WC_REM_ACCESS_ERR)
		vfab_count_event(&c->req_remote_access_errors, 1);
	else if (e->status == IBV_WC_REM_INV_REQ_ERR)
		vfab_count_event(&c->req_remote_invalid_request, 1);
	else if (e->status == IBV_WC_RETRY_EXC_ERR)
		vfab_count_event(&c->req_transport_retries_exceeded, 1);
	else if (e->status == IBV_WC_RNR_RETRY_EXC_ERR)
		vfab_count_event(&c->req_rnr_retries_exceeded, 1);
}

int vfab_cq_push(const struct vfab_rmap *map, uint32_t cq_slot, const struct vfab_owner *owner,
		 struct vfab_cqe *e, bool solicited)
{
	return vfab_cq_push_n(map, cq_slot, owner, e, 1, &solicited, NULL);
}

/*
 * The entries in order under one hold of the CQ's lock: a chain's receive
 * completions cost one lock, not one each.
 */
int vfab_cq_push_n(const struct vfab_rmap *map, uint32_t cq_slot, const struct vfab_owner *owner,
		   struct vfab_cqe *e, uint32_t n, const bool *solicited,
		   const struct vfab_cqe_scatter *sc)
{
	struct vfab_region *r = map->r;
	const struct vfab_cq_slot *k = vfab_kcq(map->k, cq_slot, owner);
	struct vfab_cq_slot *s;
	struct vfab_cqe *ring, *d;
	uint64_t head, tail, off, cookie = 0;
	uint32_t i, cap;
	bool notify = false, overflow = false;
	int rc = 0;

	/* A sealed CQ's region slot exists: vfabd sealed it below the table's top. */
	if (!k)
		return -ENOENT;
	s = &r->cqs[cq_slot];
	if (vfab_lock(&s->lock))
		return -EIO;
	/* The ring as the region says now (a resize moves it), used only inside the pool. */
	off = __atomic_load_n(&s->ring_off, __ATOMIC_RELAXED);
	cap = __atomic_load_n(&s->cap, __ATOMIC_RELAXED);
	if (atomic_load(&s->state) != VFAB_SLOT_USED || !cap || (cap & (cap - 1)) ||
	    !vfab_pool_holds(map->map_bytes, vfab_shard_of(VFAB_OBJ_CQ, cq_slot), off,
			     vfab_cq_ring_bytes(cap))) {
		rc = -ENOENT;
		goto out;
	}
	tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
	head = s->head_seen;
	cookie = k->user_cq;
	ring = vfab_at(r, off);
	/* One reading of the device clock for the batch, and only when asked for. */
	if (k->stamp) {
		uint64_t ts = vfab_device_clock_ns();

		for (i = 0; i < n; i++)
			vfab_ts48_store(e[i].ts_lo48, ts);
	}
	for (i = 0; i < n; i++, tail++) {
		/* The consumer's line is read only when the ring looks full. */
		if (tail - head >= cap) {
			head = atomic_load_explicit(&s->head, memory_order_acquire);
			s->head_seen = head;
		}
		if (tail - head >= cap) {
			/* Hardware drops the CQE (and those after it) and reports CQ_ERR once. */
			overflow = !atomic_exchange(&s->overflow, 1);
			rc = -ENOSPC;
			break;
		}
		if (e[i].status != IBV_WC_SUCCESS)
			count_error(r, &e[i]);
		d = &ring[tail & (cap - 1)];
		if (e[i].wc_flags & VFAB_WC_SCATTERED) {
			struct vfab_cqe_scatter *x =
			    &vfab_cq_scatter_of(ring, cap)[tail & (cap - 1)];

			memcpy(x, &sc[i], offsetof(struct vfab_cqe_scatter, data) + sc[i].len);
		}
		memcpy((char *)d + sizeof(d->seq), (const char *)&e[i] + sizeof(e[i].seq),
		       sizeof(*d) - sizeof(d->seq));
		atomic_store_explicit(&d->seq, tail + 1, memory_order_release);
		atomic_store_explicit(&s->tail, tail + 1, memory_order_relaxed);
		if (!k->chan_id || notify)
			continue;
		/*
		 * The entry before the arm: ibv_req_notify_cq stores the arm and
		 * then polls. Without a full fence here, our load of the arm
		 * may pass the entry's stores still in the store buffer, both
		 * sides see nothing, and the channel's waiter sleeps forever.
		 */
		atomic_thread_fence(memory_order_seq_cst);
		if (take_arm(s, &e[i], solicited[i]))
			notify = true;
	}
out:
	vfab_unlock(&s->lock);
	/* The FIFOs and the cookie are vfabd's record: the CQ owner's, named by its pid. */
	if (notify)
		vfab_fifo_send(r, k->chan_pid, k->chan_id, &cookie, sizeof(cookie));
	if (overflow)
		vfab_async_event(r, k->async_pid, k->async_id, cookie, IBV_EVENT_CQ_ERR);
	return rc;
}

/*
 * Removes the entries of a destroyed or reset QP, as mlx5 cleans its CQs, so
 * a later poll never reports a QP number that no longer exists.
 */
void vfab_cq_clean(struct vfab_cq *cq, uint32_t qpn)
{
	struct vfab_cq_slot *s = cq->s;
	uint64_t head, tail, i, w;

	pthread_spin_lock(&cq->poll_lock);
	if (vfab_lock(&s->lock)) {
		pthread_spin_unlock(&cq->poll_lock);
		return;
	}
	head = atomic_load(&s->head);
	tail = atomic_load(&s->tail);
	for (i = w = head; i < tail; i++) {
		struct vfab_cqe *e = &cq->ring[i & cq->mask];

		if (e->qp_num == qpn)
			continue;
		if (w != i) {
			struct vfab_cqe *d = &cq->ring[w & cq->mask];

			cq->scat[w & cq->mask] = cq->scat[i & cq->mask];
			memcpy((char *)d + sizeof(d->seq), (char *)e + sizeof(e->seq),
			       sizeof(*d) - sizeof(d->seq));
			atomic_store_explicit(&d->seq, w + 1, memory_order_release);
		}
		w++;
	}
	/* Vacated entries must not look valid for the positions they will hold. */
	for (i = w; i < tail; i++)
		atomic_store(&cq->ring[i & cq->mask].seq, 0);
	atomic_store(&s->tail, w);
	vfab_unlock(&s->lock);
	pthread_spin_unlock(&cq->poll_lock);
}
