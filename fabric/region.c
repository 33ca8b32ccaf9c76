/* SPDX-License-Identifier: MIT */
/* Object slots of the shared fabric region: allocation in this process's shard, lookups, reaping.
 */
#include "region.h"

#include <infiniband/verbs.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "fabric/mcast.h"
#include "fabric/region_map.h"

/* Where a slot's lock is in each table's slots (-1: none). */
static const long slot_lock[VFAB_OBJ_KINDS] = {
    [VFAB_OBJ_PD] = -1,
    [VFAB_OBJ_MR] = -1,
    [VFAB_OBJ_CQ] = offsetof(struct vfab_cq_slot, lock),
    [VFAB_OBJ_SRQ] = offsetof(struct vfab_srq_slot, lock),
    [VFAB_OBJ_QP] = offsetof(struct vfab_qp_slot, lock),
};

/* ---- object slots ---- */

/*
 * Counts an object against its owner's device in this process's shard
 * (its lock held): false when the device has given all it gives. An owner
 * outside the table counts nowhere.
 */
static bool dev_take(struct vfab_region *r, struct vfab_shard *sh, const struct vfab_owner *o,
		     enum vfab_obj kind)
{
	if (o->hca >= VFAB_MAX_HCAS)
		return true;
	if (atomic_load(&sh->used[o->hca][kind]) >= vfab_dev_limit(r, o->hca, kind))
		return false;
	atomic_fetch_add(&sh->used[o->hca][kind], 1);
	return true;
}

static void dev_give(struct vfab_shard *sh, const struct vfab_owner *o, enum vfab_obj kind)
{
	if (o->hca < VFAB_MAX_HCAS)
		atomic_fetch_sub(&sh->used[o->hca][kind], 1);
}

/* Every slot begins with its state word. */
static _Atomic uint32_t *slot_state(struct vfab_region *r, enum vfab_obj kind, uint32_t i)
{
	return (_Atomic uint32_t *)((char *)r + vfab_table_off(kind) +
				    (size_t)i * vfab_table_stride(kind));
}

#define SLOT_RESERVE_BYTES (64u << 10) /* the tables' pages are reserved this much at a time */

/*
 * Makes slot top of this process's shard s usable (its lock held): its
 * pages reserved in the shard's file, its lock initialised, then top
 * published past it.
 */
static int slot_grow(struct vfab_region *r, uint32_t s, enum vfab_obj kind, uint32_t top)
{
	struct vfab_slot_table *t = &r->shard[s].tab[kind];
	size_t base = vfab_table_off(kind), stride = vfab_table_stride(kind);
	uint32_t hi = vfab_shard_lo(kind, s + 1);
	struct vfab_region_map m;

	if (top >= hi)
		return -ENOMEM;
	if (t->reserved <= top || t->reserved > hi) {
		uint64_t from = (base + (uint64_t)top * stride) & ~4095ull;
		uint64_t to = (base + (uint64_t)(top + 1) * stride + SLOT_RESERVE_BYTES - 1) &
			      ~(uint64_t)(SLOT_RESERVE_BYTES - 1);
		uint64_t end = base + (uint64_t)hi * stride;

		if (to > end)
			to = end;
		if (vfab_region_map_get(r, &m) == 0 && m.fd >= 0 &&
		    posix_fallocate(m.fd, (off_t)from, (off_t)(to - from)))
			return -ENOMEM;
		t->reserved = (uint32_t)((to - base) / stride);
	}
	if (slot_lock[kind] >= 0)
		vfab_mutex_init_shared(
		    (pthread_mutex_t *)((char *)slot_state(r, kind, top) + slot_lock[kind]));
	atomic_store(slot_state(r, kind, top), VFAB_SLOT_FREE);
	atomic_store_explicit(&t->top, top + 1, memory_order_release);
	return 0;
}

/* The next free slot of shard s below top from the cursor on (its lock held); -ENOMEM: none. */
static int slot_reuse(struct vfab_region *r, uint32_t s, enum vfab_obj kind, uint32_t top)
{
	struct vfab_slot_table *t = &r->shard[s].tab[kind];
	uint32_t lo = vfab_shard_lo(kind, s), n = top - lo;
	uint32_t start = t->cursor >= lo && t->cursor < top ? t->cursor - lo : 0;

	for (uint32_t j = 0; j < n; j++) {
		uint32_t i = lo + (start + j < n ? start + j : start + j - n);

		if (atomic_load(slot_state(r, kind, i)) == VFAB_SLOT_FREE) {
			t->cursor = i + 1;
			if (atomic_load(&t->nfree))
				atomic_fetch_sub(&t->nfree, 1);
			return (int)i;
		}
	}
	atomic_store(&t->nfree, 0); /* it said otherwise: rewritten by someone */
	return -ENOMEM;
}

/*
 * A free slot of this process's shard for o's device (the shard's lock
 * held), counted against that device: its index, or -ENOMEM. The caller
 * fills it and marks it used.
 */
static int slot_claim(struct vfab_region *r, const struct vfab_owner *o, enum vfab_obj kind)
{
	uint32_t s = r->local.own;
	struct vfab_shard *sh = &r->shard[s];
	uint32_t top = vfab_shard_top(r, kind, s);
	int idx = -ENOMEM;

	if (!dev_take(r, sh, o, kind))
		return -ENOMEM;
	if (top - vfab_shard_lo(kind, s) >= VFAB_SLOT_REUSE_MIN &&
	    atomic_load(&sh->tab[kind].nfree))
		idx = slot_reuse(r, s, kind, top);
	if (idx < 0 && slot_grow(r, s, kind, top) == 0)
		idx = (int)top;
	if (idx < 0)
		idx = slot_reuse(r, s, kind, top); /* no room to grow: take what was freed */
	if (idx < 0)
		dev_give(sh, o, kind);
	return idx;
}

/*
 * Frees a slot once (USED -> FREE) and gives its count back to the owner's
 * device in the slot's shard; a second free of the same slot (the reaper
 * racing the owner) does nothing.
 */
static void release_slot(struct vfab_region *r, enum vfab_obj kind, uint32_t i,
			 const struct vfab_owner *o)
{
	struct vfab_shard *sh = &r->shard[vfab_shard_of(kind, i)];
	uint32_t used = VFAB_SLOT_USED;

	if (atomic_compare_exchange_strong(slot_state(r, kind, i), &used, VFAB_SLOT_FREE)) {
		dev_give(sh, o, kind);
		atomic_fetch_add(&sh->tab[kind].nfree, 1);
	}
}

/*
 * The shard this process allocates in, locked: NULL when it has none (a
 * user whose shard vfabd has not made).
 */
static struct vfab_shard *own_locked(struct vfab_region *r)
{
	if (r->local.own >= VFAB_SHARDS)
		return NULL;
	vfab_lock(&r->shard[r->local.own].lock);
	return &r->shard[r->local.own];
}

/* The slot's shard's owner may free it: a slot of a shard not mapped here reads as free. */
static bool slot_mapped(const struct vfab_region *r, enum vfab_obj kind, int slot)
{
	return slot >= 0 && (uint32_t)slot < vfab_table_size(kind) &&
	       (r->local.mapped & (1u << vfab_shard_of(kind, (uint32_t)slot)));
}

int vfab_pd_alloc(struct vfab_region *r, const struct vfab_owner *o, uint32_t hca)
{
	struct vfab_shard *sh = own_locked(r);
	int idx;

	if (!sh)
		return -ENOMEM;
	idx = slot_claim(r, o, VFAB_OBJ_PD);
	if (idx >= 0) {
		struct vfab_pd_slot *s = &r->pds[idx];

		s->gen = ++sh->gen_counter;
		s->owner = *o;
		s->hca = hca;
		atomic_store(&s->state, VFAB_SLOT_USED);
	}
	vfab_unlock(&sh->lock);
	return idx;
}

int vfab_mr_alloc(struct vfab_region *r, const struct vfab_owner *o)
{
	struct vfab_shard *sh = own_locked(r);
	int idx;

	if (!sh)
		return -ENOMEM;
	idx = slot_claim(r, o, VFAB_OBJ_MR);
	if (idx >= 0) {
		struct vfab_mr_slot *s = &r->mrs[idx];

		/* The slot's own generation: an old key recurs after 256 reuses of it. */
		s->key = ((uint32_t)idx << 8) | ((s->key + 1) & 0xff);
		s->owner = *o;
		s->length = 0; /* caller fills, then publishes with access */
		s->access = 0;
		s->kind = VFAB_MKEY_MR; /* a window's allocator says otherwise */
		s->parent_key = 0;
		s->qpn = 0;
		atomic_store(&s->inflight, 0);
		atomic_store(&s->state, VFAB_SLOT_USED);
	}
	vfab_unlock(&sh->lock);
	return idx;
}

static int rq_init(struct vfab_region *r, struct vfab_rq *rq, uint32_t cap, uint32_t max_sge)
{
	uint32_t c = 1;
	int64_t off;

	while (c < cap)
		c <<= 1;
	rq->cap = c;
	rq->max_sge = max_sge ? max_sge : 1;
	rq->wqe_size = sizeof(struct vfab_rwqe) + rq->max_sge * sizeof(struct vfab_sge);
	atomic_store(&rq->head, 0);
	atomic_store(&rq->tail, 0);
	rq->ring_off = 0;
	if (!cap)
		return 0;
	off = vfab_pool_alloc(r, (uint64_t)c * rq->wqe_size);
	if (off < 0)
		return (int)off;
	rq->ring_off = (uint64_t)off;
	return 0;
}

/*
 * Moves a prepared ring into a slot field by field: the slot's atomics live in
 * shared memory that peers read, so no struct copy over them.
 */
static void rq_install(struct vfab_rq *dst, const struct vfab_rq *src)
{
	dst->cap = src->cap;
	dst->max_sge = src->max_sge;
	dst->wqe_size = src->wqe_size;
	dst->ring_off = src->ring_off;
	atomic_store(&dst->head, 0);
	atomic_store(&dst->tail, 0);
}

/* Frees a ring of shard s's slot (into that shard's pool only). */
static void rq_fini(struct vfab_region *r, uint32_t s, struct vfab_rq *rq)
{
	if (rq->ring_off)
		vfab_pool_free_shard(r, s, rq->ring_off, (uint64_t)rq->cap * rq->wqe_size);
	rq->ring_off = 0;
}

int vfab_cq_alloc(struct vfab_region *r, const struct vfab_owner *o, uint32_t cap)
{
	struct vfab_shard *sh;
	uint32_t c = 1;
	int64_t off;
	int idx;

	while (c < cap)
		c <<= 1;
	off = vfab_pool_alloc(r, vfab_cq_ring_bytes(c));
	if (off < 0)
		return (int)off;
	sh = own_locked(r);
	idx = sh ? slot_claim(r, o, VFAB_OBJ_CQ) : -ENOMEM;
	if (idx >= 0) {
		struct vfab_cq_slot *s = &r->cqs[idx];

		s->gen = ++sh->gen_counter;
		s->owner = *o;
		s->cap = c;
		s->ring_off = (uint64_t)off;
		atomic_store(&s->head, 0);
		atomic_store(&s->tail, 0);
		s->head_seen = 0;
		atomic_store(&s->armed, 0);
		atomic_store(&s->overflow, 0);
		s->chan_id = 0;
		s->async_id = 0;
		atomic_store(&s->state, VFAB_SLOT_USED);
	}
	if (sh)
		vfab_unlock(&sh->lock);
	if (idx < 0)
		vfab_pool_free(r, (uint64_t)off, vfab_cq_ring_bytes(c));
	return idx;
}

int vfab_cq_resize(struct vfab_region *r, int slot, uint32_t cap)
{
	struct vfab_cq_slot *s = &r->cqs[slot];
	uint64_t head, tail, old_off, old_bytes;
	struct vfab_cqe *from, *to;
	struct vfab_cqe_scatter *from_sc, *to_sc;
	uint32_t c = 1;
	int64_t off;

	while (c < cap)
		c <<= 1;
	off = vfab_pool_alloc(r, vfab_cq_ring_bytes(c));
	if (off < 0)
		return (int)off;
	to = vfab_at(r, (uint64_t)off);
	/* An entry is valid when its seq is its position + 1: none may be by chance. */
	memset(to, 0, (size_t)c * sizeof(*to));
	to_sc = vfab_cq_scatter_of(to, c);
	if (vfab_lock(&s->lock)) {
		vfab_pool_free(r, (uint64_t)off, vfab_cq_ring_bytes(c));
		return -EIO;
	}
	head = atomic_load(&s->head);
	tail = atomic_load(&s->tail);
	if (tail - head >= c) {
		vfab_unlock(&s->lock);
		vfab_pool_free(r, (uint64_t)off, vfab_cq_ring_bytes(c));
		return -EINVAL; /* fewer entries than are waiting */
	}
	from = vfab_at(r, s->ring_off);
	from_sc = vfab_cq_scatter_of(from, s->cap);
	/* The waiting entries keep their positions (so their seq) and scattered bytes. */
	for (uint64_t p = head; p < tail; p++) {
		memcpy(&to[p & (c - 1)], &from[p & (s->cap - 1)], sizeof(*to));
		memcpy(&to_sc[p & (c - 1)], &from_sc[p & (s->cap - 1)], sizeof(*to_sc));
	}
	old_off = s->ring_off;
	old_bytes = vfab_cq_ring_bytes(s->cap);
	s->ring_off = (uint64_t)off;
	s->cap = c;
	vfab_unlock(&s->lock);
	vfab_pool_free(r, old_off, old_bytes);
	return 0;
}

int vfab_srq_alloc(struct vfab_region *r, const struct vfab_owner *o, uint32_t cap,
		   uint32_t max_sge, uint32_t tm_tags)
{
	struct vfab_rq rq, tm = {0};
	struct vfab_shard *sh;
	int idx, rc;

	rc = rq_init(r, &rq, cap, max_sge);
	if (rc)
		return rc;
	if (tm_tags) {
		/* The tag table: entries of a tag and its sges, in the ring pool. */
		int64_t off;

		tm.cap = tm_tags;
		tm.max_sge = max_sge ? max_sge : 1;
		tm.wqe_size =
		    (uint32_t)(sizeof(struct vfab_tm_tag) + tm.max_sge * sizeof(struct vfab_sge));
		off = vfab_pool_alloc(r, (uint64_t)tm.cap * tm.wqe_size);
		if (off < 0) {
			rq_fini(r, r->local.own, &rq);
			return (int)off;
		}
		tm.ring_off = (uint64_t)off;
		memset(vfab_at(r, tm.ring_off), 0, (size_t)tm.cap * tm.wqe_size);
	}
	sh = own_locked(r);
	idx = sh ? slot_claim(r, o, VFAB_OBJ_SRQ) : -ENOMEM;
	if (idx >= 0) {
		struct vfab_srq_slot *s = &r->srqs[idx];

		s->gen = ++sh->gen_counter;
		s->owner = *o;
		atomic_store(&s->limit, 0);
		rq_install(&s->rq, &rq);
		rq_install(&s->tm, &tm);
		s->tm_tags = tm_tags;
		atomic_store(&s->tm_unexpected, 0);
		s->tm_seq = 0;
		atomic_store(&s->state, VFAB_SLOT_USED);
	}
	if (sh)
		vfab_unlock(&sh->lock);
	if (idx < 0) {
		rq_fini(r, r->local.own, &rq);
		rq_fini(r, r->local.own, &tm);
	}
	return idx;
}

int vfab_qp_alloc(struct vfab_region *r, const struct vfab_owner *o, uint32_t rq_cap,
		  uint32_t rq_max_sge)
{
	struct vfab_shard *sh;
	struct vfab_rq rq;
	int idx, rc;

	rc = rq_init(r, &rq, rq_cap, rq_max_sge);
	if (rc)
		return rc;
	sh = own_locked(r);
	idx = sh ? slot_claim(r, o, VFAB_OBJ_QP) : -ENOMEM;
	if (idx >= 0) {
		struct vfab_qp_slot *s = &r->qps[idx];
		uint32_t qpn;

		/*
		 * The slot's own generation (its last QPN's high bits, plus one,
		 * never 0): an old QPN recurs only after 15 reuses of its slot,
		 * each of which waits for VFAB_SLOT_REUSE_MIN others. No QPN is
		 * below 1 << VFAB_QPN_SLOT_BITS, so none is ever a WQ's number
		 * (an SRQ slot: a completion of an RSS QP names its WQ), nor
		 * QP 0 or 1 (SMI/GSI on real HCAs).
		 */
		qpn = s->qpn;
		do {
			qpn = (((qpn >> VFAB_QPN_SLOT_BITS) + 1) << VFAB_QPN_SLOT_BITS |
			       (uint32_t)idx) &
			      0xffffff;
		} while (qpn >> VFAB_QPN_SLOT_BITS == 0);
		s->qpn = qpn;
		s->owner = *o;
		s->srq = -1;
		atomic_store(&s->qp_state, IBV_QPS_RESET);
		atomic_store(&s->epsn, 0);
		rq_install(&s->rq, &rq);
		atomic_store(&s->state, VFAB_SLOT_USED);
	}
	if (sh)
		vfab_unlock(&sh->lock);
	if (idx < 0)
		rq_fini(r, r->local.own, &rq);
	return idx;
}

void vfab_pd_free(struct vfab_region *r, int slot)
{
	if (slot_mapped(r, VFAB_OBJ_PD, slot))
		release_slot(r, VFAB_OBJ_PD, (uint32_t)slot, &r->pds[slot].owner);
}

void vfab_mr_revoke(struct vfab_region *r, int slot)
{
	struct vfab_mr_slot *s = &r->mrs[slot];
	long long deadline;

	if (!slot_mapped(r, VFAB_OBJ_MR, slot))
		return;
	/* Revoke first so that a concurrent remote check fails the key. */
	s->access = 0;
	s->length = 0;
	atomic_thread_fence(memory_order_seq_cst);
	/*
	 * Then wait for the copies that passed the check before (vfab_mr_pin),
	 * the slot still taken so that nobody reuses it meanwhile.
	 */
	if (atomic_load(&s->inflight)) {
		deadline = vfab_now_ms() + VFAB_MR_DRAIN_MS;
		while (atomic_load(&s->inflight) && vfab_now_ms() < deadline)
			sched_yield();
		atomic_store(&s->inflight, 0); /* a requester that died mid-copy */
	}
}

void vfab_mr_free(struct vfab_region *r, int slot)
{
	if (!slot_mapped(r, VFAB_OBJ_MR, slot))
		return;
	vfab_mr_revoke(r, slot);
	release_slot(r, VFAB_OBJ_MR, (uint32_t)slot, &r->mrs[slot].owner);
}

void vfab_cq_free(struct vfab_region *r, int slot)
{
	struct vfab_cq_slot *s = &r->cqs[slot];
	uint64_t off, bytes;

	if (!slot_mapped(r, VFAB_OBJ_CQ, slot))
		return;
	vfab_lock(&s->lock);
	release_slot(r, VFAB_OBJ_CQ, (uint32_t)slot, &s->owner);
	off = s->ring_off;
	bytes = vfab_cq_ring_bytes(s->cap);
	s->ring_off = 0;
	vfab_unlock(&s->lock);
	vfab_pool_free_shard(r, vfab_shard_of(VFAB_OBJ_CQ, (uint32_t)slot), off, bytes);
}

void vfab_srq_free(struct vfab_region *r, int slot)
{
	struct vfab_srq_slot *s = &r->srqs[slot];
	uint32_t sh = vfab_shard_of(VFAB_OBJ_SRQ, (uint32_t)slot);

	if (!slot_mapped(r, VFAB_OBJ_SRQ, slot))
		return;
	vfab_lock(&s->lock);
	release_slot(r, VFAB_OBJ_SRQ, (uint32_t)slot, &s->owner);
	rq_fini(r, sh, &s->rq);
	rq_fini(r, sh, &s->tm);
	s->tm_tags = 0;
	vfab_unlock(&s->lock);
}

void vfab_qp_free(struct vfab_region *r, int slot)
{
	struct vfab_qp_slot *s = &r->qps[slot];
	uint32_t sh = vfab_shard_of(VFAB_OBJ_QP, (uint32_t)slot);

	if (!slot_mapped(r, VFAB_OBJ_QP, slot))
		return;
	/* Its groups first (destroy_qp and the reaper alike): no copy reaches it after. */
	vfab_mcast_detach_qp(r, s->hca, s->qpn);
	vfab_lock(&s->lock);
	atomic_store(&s->qp_state, IBV_QPS_ERR);
	release_slot(r, VFAB_OBJ_QP, (uint32_t)slot, &s->owner);
	rq_fini(r, sh, &s->rq);
	vfab_unlock(&s->lock);
}

/*
 * After a lookup of slot i found nothing: whether its shard was mapped now
 * (this process may write it and had not mapped it, a peer of another user
 * that root reaches, or it mapped a file vfabd has since dropped), so that
 * the lookup is worth trying once more.
 */
static bool mapped_now(struct vfab_region *r, enum vfab_obj kind, uint32_t i)
{
	uint32_t s, before;

	if (i >= vfab_table_size(kind))
		return false;
	s = vfab_shard_of(kind, i);
	before = r->local.mapped & (1u << s) ? r->local.gen[s] + 1 : 0;
	return vfab_region_map_shard(r, s) == 0 && before != r->local.gen[s] + 1;
}

bool vfab_shard_empty(const struct vfab_region *r, uint32_t s)
{
	for (int k = 0; k < VFAB_OBJ_KINDS; k++) {
		enum vfab_obj kind = (enum vfab_obj)k;

		for (uint32_t i = vfab_shard_lo(kind, s), top = vfab_shard_top(r, kind, s); i < top;
		     i++)
			if (atomic_load(slot_state((struct vfab_region *)r, kind, i)) ==
			    VFAB_SLOT_USED)
				return false;
	}
	return true;
}

struct vfab_mr_slot *vfab_mr_lookup(struct vfab_region *r, uint32_t key)
{
	uint32_t idx = key >> 8;

	for (int tries = 0; tries < 2; tries++) {
		struct vfab_mr_slot *s = &r->mrs[idx];

		if (vfab_slot_live(r, VFAB_OBJ_MR, idx) &&
		    atomic_load_explicit(&s->state, memory_order_acquire) == VFAB_SLOT_USED &&
		    s->key == key)
			return s;
		if (tries || !mapped_now(r, VFAB_OBJ_MR, idx))
			break;
	}
	return NULL;
}

struct vfab_qp_slot *vfab_qp_lookup(struct vfab_region *r, uint32_t hca, uint32_t qpn)
{
	uint32_t idx = vfab_qpn_slot(qpn);

	for (int tries = 0; tries < 2; tries++) {
		struct vfab_qp_slot *s = &r->qps[idx];

		if (vfab_slot_live(r, VFAB_OBJ_QP, idx) &&
		    atomic_load_explicit(&s->state, memory_order_acquire) == VFAB_SLOT_USED &&
		    s->qpn == qpn && s->hca == hca)
			return s;
		if (tries || !mapped_now(r, VFAB_OBJ_QP, idx))
			break;
	}
	return NULL;
}

int vfab_region_reap_owner(struct vfab_region *r, int32_t pid, uint64_t start_ticks)
{
	uint32_t i;
	int n = 0;

#define OWNED_BY(o) ((o).pid == pid && (!start_ticks || (o).start_ticks == start_ticks))
#define REAP(kind, tbl, fn)                                                                        \
	for (i = vfab_slot_next(r, kind, 0); i != VFAB_SLOT_END;                                   \
	     i = vfab_slot_next(r, kind, i + 1))                                                   \
		if (atomic_load(&r->tbl[i].state) == VFAB_SLOT_USED &&                             \
		    OWNED_BY(r->tbl[i].owner)) {                                                   \
			fn(r, (int)i);                                                             \
			n++;                                                                       \
		}

	REAP(VFAB_OBJ_QP, qps, vfab_qp_free)
	REAP(VFAB_OBJ_SRQ, srqs, vfab_srq_free)
	REAP(VFAB_OBJ_CQ, cqs, vfab_cq_free)
	REAP(VFAB_OBJ_MR, mrs, vfab_mr_free)
	REAP(VFAB_OBJ_PD, pds, vfab_pd_free)
#undef REAP
#undef OWNED_BY
	return n;
}

int vfab_region_reap_pid(struct vfab_region *r, int32_t pid)
{
	return vfab_region_reap_owner(r, pid, 0);
}

int vfab_gid_find(struct vfab_region *r, const uint8_t gid[16], uint8_t type, uint32_t *hca,
		  uint32_t *port)
{
	uint32_t h, p, g;

	/* Counts are any user's to write: bounded by the tables, as every reader of the region. */
	for (h = 0; h < r->nhcas && h < VFAB_MAX_HCAS; h++) {
		struct vfab_hca *hc = &r->hcas[h];

		if (!hc->in_use)
			continue;
		for (p = 0; p < hc->nports && p < VFAB_MAX_PORTS; p++) {
			struct vfab_port *pt = &hc->ports[p];

			for (g = 0; g < pt->ngids && g < VFAB_PORT_GIDS; g++) {
				if (pt->gids[g].type == type && !memcmp(pt->gids[g].raw, gid, 16)) {
					*hca = h;
					*port = p + 1;
					return 0;
				}
			}
		}
	}
	return -ENOENT;
}
