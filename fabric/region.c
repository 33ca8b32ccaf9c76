/* SPDX-License-Identifier: MIT */
/* Creating, mapping and allocating inside the shared fabric region. */
#include "region.h"

#include <infiniband/verbs.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "fabric/mcast.h"
#include "fabric/region_map.h"

int vfab_region_create(const char *fabric, const char *rundir, struct vfab_region **out)
{
	return vfab_region_create_pool(fabric, rundir, VFAB_POOL_BYTES, out);
}

int vfab_region_create_pool(const char *fabric, const char *rundir, uint64_t pool_bytes,
			    struct vfab_region **out)
{
	char path[256];
	struct vfab_region *r;
	uint64_t size = VFAB_POOL_OFF + pool_bytes;
	int fd, rc;

	rc = vfab_region_path(fabric, path, sizeof(path));
	if (rc)
		return rc;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/*
	 * Every user of a node may open the HCAs, as /dev/infiniband/uverbs*
	 * (0666) allows on a real host: the region is theirs to map. What that
	 * gives a local user is in docs/TRUST.md.
	 */
	if (fchmod(fd, 0666) < 0) {
		rc = -errno;
		goto fail;
	}
	if (ftruncate(fd, (off_t)size) < 0) {
		rc = -errno;
		goto fail;
	}
	/*
	 * The file is sparse, and a page of it that /dev/shm has no room for
	 * kills whoever touches it with SIGBUS. The header up to the object
	 * tables is reserved now; the tables page by page as their slots are
	 * first handed out (slot_grow), the pool block by block (pool.c). A
	 * full /dev/shm is then -ENOSPC here, -ENOMEM later.
	 */
	rc = posix_fallocate(fd, 0, (off_t)VFAB_REGION_FIXED_BYTES);
	if (rc) {
		rc = -rc;
		goto fail;
	}
	r = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r == MAP_FAILED) {
		rc = -errno;
		goto fail;
	}
	rc = vfab_region_map_add(r, size, fd);
	if (rc) {
		munmap(r, size);
		goto fail;
	}

	r->version = VFAB_REGION_VERSION;
	r->hdr_size = sizeof(*r);
	r->total_size = size;
	snprintf(r->fabric, sizeof(r->fabric), "%s", fabric);
	snprintf(r->rundir, sizeof(r->rundir), "%s", rundir);
	vfab_mutex_init_shared(&r->lock);
	vfab_mutex_init_shared(&r->atomic_lock);
	r->pool_off = VFAB_POOL_OFF;
	r->pool_size = pool_bytes;
	rc = vfab_pool_init(r);
	if (rc) {
		vfab_region_close(r);
		unlink(path);
		return rc;
	}
	r->next_ctx_id = 1;
	atomic_thread_fence(memory_order_release);
	r->magic = VFAB_REGION_MAGIC;
	*out = r;
	return 0;
fail:
	close(fd);
	unlink(path);
	return rc;
}

int vfab_region_open(const char *path, struct vfab_region **out)
{
	struct vfab_region *r;
	struct stat st;
	int fd = open(path, O_RDWR | O_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size < sizeof(*r)) {
		close(fd);
		return -EPROTO;
	}
	r = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r == MAP_FAILED) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rc = -EPROTO;
	if (r->magic == VFAB_REGION_MAGIC && r->version == VFAB_REGION_VERSION &&
	    r->hdr_size == sizeof(*r) && r->total_size == (uint64_t)st.st_size &&
	    (uint64_t)st.st_size > VFAB_POOL_OFF)
		rc = vfab_region_map_add(r, (uint64_t)st.st_size, fd); /* keeps fd: pool.c */
	if (rc) {
		munmap(r, (size_t)st.st_size);
		close(fd);
		return rc;
	}
	*out = r;
	return 0;
}

void vfab_region_close(struct vfab_region *r)
{
	struct vfab_region_map m;

	/* The size this process mapped: the region's total_size is anyone's to rewrite. */
	if (r && vfab_region_map_remove(r, &m) == 0) {
		munmap(r, m.bytes);
		if (m.fd >= 0)
			close(m.fd);
	}
}

int vfab_region_unlink(const char *fabric)
{
	char path[256];
	int rc = vfab_region_path(fabric, path, sizeof(path));

	if (rc)
		return rc;
	return unlink(path) < 0 ? -errno : 0;
}

/* ---- object slots ---- */

static uint32_t next_gen(struct vfab_region *r)
{
	return ++r->gen_counter; /* under r->lock */
}

/*
 * Counts an object against its owner's device (r->lock held): false when the
 * device has given all it gives. An owner outside the table counts nowhere.
 */
static bool dev_take(struct vfab_region *r, const struct vfab_owner *o, enum vfab_obj kind)
{
	if (o->hca >= VFAB_MAX_HCAS)
		return true;
	if (atomic_load(&r->hcas[o->hca].used[kind]) >= vfab_dev_limit(r, o->hca, kind))
		return false;
	atomic_fetch_add(&r->hcas[o->hca].used[kind], 1);
	return true;
}

static void dev_give(struct vfab_region *r, const struct vfab_owner *o, enum vfab_obj kind)
{
	if (o->hca < VFAB_MAX_HCAS)
		atomic_fetch_sub(&r->hcas[o->hca].used[kind], 1);
}

/* Each table's place in the region, its slots' size and where a slot's lock is (-1: none). */
static const struct {
	size_t off, stride;
	uint32_t size;
	long lock;
} tables[VFAB_OBJ_KINDS] = {
    [VFAB_OBJ_PD] = {offsetof(struct vfab_region, pds), sizeof(struct vfab_pd_slot), VFAB_MAX_PDS,
		     -1},
    [VFAB_OBJ_MR] = {offsetof(struct vfab_region, mrs), sizeof(struct vfab_mr_slot), VFAB_MAX_MRS,
		     -1},
    [VFAB_OBJ_CQ] = {offsetof(struct vfab_region, cqs), sizeof(struct vfab_cq_slot), VFAB_MAX_CQS,
		     offsetof(struct vfab_cq_slot, lock)},
    [VFAB_OBJ_SRQ] = {offsetof(struct vfab_region, srqs), sizeof(struct vfab_srq_slot),
		      VFAB_MAX_SRQS, offsetof(struct vfab_srq_slot, lock)},
    [VFAB_OBJ_QP] = {offsetof(struct vfab_region, qps), sizeof(struct vfab_qp_slot), VFAB_MAX_QPS,
		     offsetof(struct vfab_qp_slot, lock)},
};

/* Every slot begins with its state word. */
static _Atomic uint32_t *slot_state(struct vfab_region *r, enum vfab_obj kind, uint32_t i)
{
	return (_Atomic uint32_t *)((char *)r + tables[kind].off + (size_t)i * tables[kind].stride);
}

#define SLOT_RESERVE_BYTES (64u << 10) /* the tables' pages are reserved this much at a time */

/*
 * Makes slot top of a table usable (r->lock held): its pages reserved in
 * the file, its lock initialised, then top published past it.
 */
static int slot_grow(struct vfab_region *r, enum vfab_obj kind, uint32_t top)
{
	struct vfab_slot_table *t = &r->tab[kind];
	size_t base = tables[kind].off, stride = tables[kind].stride;
	struct vfab_region_map m;

	if (top >= tables[kind].size)
		return -ENOMEM;
	if (t->reserved <= top) {
		uint64_t from = (base + (uint64_t)top * stride) & ~4095ull;
		uint64_t to = (base + (uint64_t)(top + 1) * stride + SLOT_RESERVE_BYTES - 1) &
			      ~(uint64_t)(SLOT_RESERVE_BYTES - 1);
		uint64_t end = base + (uint64_t)tables[kind].size * stride;

		if (to > end)
			to = end;
		if (vfab_region_map_get(r, &m) == 0 && m.fd >= 0 &&
		    posix_fallocate(m.fd, (off_t)from, (off_t)(to - from)))
			return -ENOMEM;
		t->reserved = (uint32_t)((to - base) / stride);
	}
	if (tables[kind].lock >= 0)
		vfab_mutex_init_shared(
		    (pthread_mutex_t *)((char *)slot_state(r, kind, top) + tables[kind].lock));
	atomic_store(slot_state(r, kind, top), VFAB_SLOT_FREE);
	atomic_store_explicit(&t->top, top + 1, memory_order_release);
	return 0;
}

/* The next free slot below top from the cursor on (r->lock held); -ENOMEM: none. */
static int slot_reuse(struct vfab_region *r, enum vfab_obj kind, uint32_t top)
{
	struct vfab_slot_table *t = &r->tab[kind];
	uint32_t start = t->cursor < top ? t->cursor : 0;

	for (uint32_t n = 0; n < top; n++) {
		uint32_t i = start + n < top ? start + n : start + n - top;

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
 * A free slot of the table for o's device (r->lock held), counted against
 * that device: its index, or -ENOMEM. The caller fills it and marks it used.
 */
static int slot_claim(struct vfab_region *r, const struct vfab_owner *o, enum vfab_obj kind)
{
	uint32_t top = vfab_slot_top(r, kind);
	int idx = -ENOMEM;

	if (!dev_take(r, o, kind))
		return -ENOMEM;
	if (top >= VFAB_SLOT_REUSE_MIN && atomic_load(&r->tab[kind].nfree))
		idx = slot_reuse(r, kind, top);
	if (idx < 0 && slot_grow(r, kind, top) == 0)
		idx = (int)top;
	if (idx < 0)
		idx = slot_reuse(r, kind, top); /* no room to grow: take what was freed */
	if (idx < 0)
		dev_give(r, o, kind);
	return idx;
}

/*
 * Frees a slot once (USED -> FREE) and gives its count back to the owner's
 * device; a second free of the same slot (the reaper racing the owner) does
 * nothing.
 */
static void release_slot(struct vfab_region *r, _Atomic uint32_t *state, const struct vfab_owner *o,
			 enum vfab_obj kind)
{
	uint32_t used = VFAB_SLOT_USED;

	if (atomic_compare_exchange_strong(state, &used, VFAB_SLOT_FREE)) {
		dev_give(r, o, kind);
		atomic_fetch_add(&r->tab[kind].nfree, 1);
	}
}

int vfab_pd_alloc(struct vfab_region *r, const struct vfab_owner *o, uint32_t hca)
{
	int idx;

	vfab_lock(&r->lock);
	idx = slot_claim(r, o, VFAB_OBJ_PD);
	if (idx >= 0) {
		struct vfab_pd_slot *s = &r->pds[idx];

		s->gen = next_gen(r);
		s->owner = *o;
		s->hca = hca;
		atomic_store(&s->state, VFAB_SLOT_USED);
	}
	vfab_unlock(&r->lock);
	return idx;
}

int vfab_mr_alloc(struct vfab_region *r, const struct vfab_owner *o)
{
	int idx;

	vfab_lock(&r->lock);
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
	vfab_unlock(&r->lock);
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

static void rq_fini(struct vfab_region *r, struct vfab_rq *rq)
{
	if (rq->ring_off)
		vfab_pool_free(r, rq->ring_off, (uint64_t)rq->cap * rq->wqe_size);
	rq->ring_off = 0;
}

int vfab_cq_alloc(struct vfab_region *r, const struct vfab_owner *o, uint32_t cap)
{
	uint32_t c = 1;
	int64_t off;
	int idx;

	while (c < cap)
		c <<= 1;
	off = vfab_pool_alloc(r, (uint64_t)c * sizeof(struct vfab_cqe));
	if (off < 0)
		return (int)off;
	vfab_lock(&r->lock);
	idx = slot_claim(r, o, VFAB_OBJ_CQ);
	if (idx >= 0) {
		struct vfab_cq_slot *s = &r->cqs[idx];

		s->gen = next_gen(r);
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
	vfab_unlock(&r->lock);
	if (idx < 0)
		vfab_pool_free(r, (uint64_t)off, (uint64_t)c * sizeof(struct vfab_cqe));
	return idx;
}

int vfab_cq_resize(struct vfab_region *r, int slot, uint32_t cap)
{
	struct vfab_cq_slot *s = &r->cqs[slot];
	uint64_t head, tail, old_off, old_bytes;
	struct vfab_cqe *from, *to;
	uint32_t c = 1;
	int64_t off;

	while (c < cap)
		c <<= 1;
	off = vfab_pool_alloc(r, (uint64_t)c * sizeof(struct vfab_cqe));
	if (off < 0)
		return (int)off;
	to = vfab_at(r, (uint64_t)off);
	/* An entry is valid when its seq is its position + 1: none may be by chance. */
	memset(to, 0, (size_t)c * sizeof(*to));
	if (vfab_lock(&s->lock)) {
		vfab_pool_free(r, (uint64_t)off, (uint64_t)c * sizeof(struct vfab_cqe));
		return -EIO;
	}
	head = atomic_load(&s->head);
	tail = atomic_load(&s->tail);
	if (tail - head >= c) {
		vfab_unlock(&s->lock);
		vfab_pool_free(r, (uint64_t)off, (uint64_t)c * sizeof(struct vfab_cqe));
		return -EINVAL; /* fewer entries than are waiting */
	}
	from = vfab_at(r, s->ring_off);
	/* The waiting entries keep their positions (and so their seq). */
	for (uint64_t p = head; p < tail; p++)
		memcpy(&to[p & (c - 1)], &from[p & (s->cap - 1)], sizeof(*to));
	old_off = s->ring_off;
	old_bytes = (uint64_t)s->cap * sizeof(struct vfab_cqe);
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
			rq_fini(r, &rq);
			return (int)off;
		}
		tm.ring_off = (uint64_t)off;
		memset(vfab_at(r, tm.ring_off), 0, (size_t)tm.cap * tm.wqe_size);
	}
	vfab_lock(&r->lock);
	idx = slot_claim(r, o, VFAB_OBJ_SRQ);
	if (idx >= 0) {
		struct vfab_srq_slot *s = &r->srqs[idx];

		s->gen = next_gen(r);
		s->owner = *o;
		atomic_store(&s->limit, 0);
		rq_install(&s->rq, &rq);
		rq_install(&s->tm, &tm);
		s->tm_tags = tm_tags;
		atomic_store(&s->tm_unexpected, 0);
		s->tm_seq = 0;
		atomic_store(&s->state, VFAB_SLOT_USED);
	}
	vfab_unlock(&r->lock);
	if (idx < 0) {
		rq_fini(r, &rq);
		rq_fini(r, &tm);
	}
	return idx;
}

int vfab_qp_alloc(struct vfab_region *r, const struct vfab_owner *o, uint32_t rq_cap,
		  uint32_t rq_max_sge)
{
	struct vfab_rq rq;
	int idx, rc;

	rc = rq_init(r, &rq, rq_cap, rq_max_sge);
	if (rc)
		return rc;
	vfab_lock(&r->lock);
	idx = slot_claim(r, o, VFAB_OBJ_QP);
	if (idx >= 0) {
		struct vfab_qp_slot *s = &r->qps[idx];
		uint32_t qpn;

		/*
		 * The slot's own generation (its last QPN's high bits, plus one):
		 * an old QPN recurs only after 16 reuses of its slot, each of which
		 * waits for VFAB_SLOT_REUSE_MIN others. QPNs 0 and 1 are special
		 * (SMI/GSI) on real HCAs.
		 */
		qpn = s->qpn;
		do {
			qpn = (((qpn >> VFAB_QPN_SLOT_BITS) + 1) << VFAB_QPN_SLOT_BITS |
			       (uint32_t)idx) &
			      0xffffff;
		} while (qpn < 2);
		s->qpn = qpn;
		s->owner = *o;
		s->srq = -1;
		atomic_store(&s->qp_state, IBV_QPS_RESET);
		atomic_store(&s->epsn, 0);
		rq_install(&s->rq, &rq);
		atomic_store(&s->state, VFAB_SLOT_USED);
	}
	vfab_unlock(&r->lock);
	if (idx < 0)
		rq_fini(r, &rq);
	return idx;
}

void vfab_pd_free(struct vfab_region *r, int slot)
{
	release_slot(r, &r->pds[slot].state, &r->pds[slot].owner, VFAB_OBJ_PD);
}

void vfab_mr_revoke(struct vfab_region *r, int slot)
{
	struct vfab_mr_slot *s = &r->mrs[slot];
	long long deadline;

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
	vfab_mr_revoke(r, slot);
	release_slot(r, &r->mrs[slot].state, &r->mrs[slot].owner, VFAB_OBJ_MR);
}

void vfab_cq_free(struct vfab_region *r, int slot)
{
	struct vfab_cq_slot *s = &r->cqs[slot];
	uint64_t off, bytes;

	vfab_lock(&s->lock);
	release_slot(r, &s->state, &s->owner, VFAB_OBJ_CQ);
	off = s->ring_off;
	bytes = (uint64_t)s->cap * sizeof(struct vfab_cqe);
	s->ring_off = 0;
	vfab_unlock(&s->lock);
	vfab_pool_free(r, off, bytes);
}

void vfab_srq_free(struct vfab_region *r, int slot)
{
	struct vfab_srq_slot *s = &r->srqs[slot];

	vfab_lock(&s->lock);
	release_slot(r, &s->state, &s->owner, VFAB_OBJ_SRQ);
	rq_fini(r, &s->rq);
	rq_fini(r, &s->tm);
	s->tm_tags = 0;
	vfab_unlock(&s->lock);
}

void vfab_qp_free(struct vfab_region *r, int slot)
{
	struct vfab_qp_slot *s = &r->qps[slot];

	/* Its groups first (destroy_qp and the reaper alike): no copy reaches it after. */
	vfab_mcast_detach_qp(r, s->hca, s->qpn);
	vfab_lock(&s->lock);
	atomic_store(&s->qp_state, IBV_QPS_ERR);
	release_slot(r, &s->state, &s->owner, VFAB_OBJ_QP);
	rq_fini(r, &s->rq);
	vfab_unlock(&s->lock);
}

struct vfab_mr_slot *vfab_mr_lookup(struct vfab_region *r, uint32_t key)
{
	uint32_t idx = key >> 8;
	struct vfab_mr_slot *s;

	if (idx >= vfab_slot_top(r, VFAB_OBJ_MR))
		return NULL;
	s = &r->mrs[idx];
	if (atomic_load_explicit(&s->state, memory_order_acquire) != VFAB_SLOT_USED ||
	    s->key != key)
		return NULL;
	return s;
}

struct vfab_qp_slot *vfab_qp_lookup(struct vfab_region *r, uint32_t hca, uint32_t qpn)
{
	uint32_t idx = vfab_qpn_slot(qpn);
	struct vfab_qp_slot *s;

	if (idx >= vfab_slot_top(r, VFAB_OBJ_QP))
		return NULL;
	s = &r->qps[idx];
	if (atomic_load_explicit(&s->state, memory_order_acquire) != VFAB_SLOT_USED ||
	    s->qpn != qpn || s->hca != hca)
		return NULL;
	return s;
}

int vfab_region_reap_owner(struct vfab_region *r, int32_t pid, uint64_t start_ticks)
{
	uint32_t i, top;
	int n = 0;

#define OWNED_BY(o) ((o).pid == pid && (!start_ticks || (o).start_ticks == start_ticks))

	for (i = 0, top = vfab_slot_top(r, VFAB_OBJ_QP); i < top; i++)
		if (atomic_load(&r->qps[i].state) == VFAB_SLOT_USED && OWNED_BY(r->qps[i].owner)) {
			vfab_qp_free(r, i);
			n++;
		}
	for (i = 0, top = vfab_slot_top(r, VFAB_OBJ_SRQ); i < top; i++)
		if (atomic_load(&r->srqs[i].state) == VFAB_SLOT_USED &&
		    OWNED_BY(r->srqs[i].owner)) {
			vfab_srq_free(r, i);
			n++;
		}
	for (i = 0, top = vfab_slot_top(r, VFAB_OBJ_CQ); i < top; i++)
		if (atomic_load(&r->cqs[i].state) == VFAB_SLOT_USED && OWNED_BY(r->cqs[i].owner)) {
			vfab_cq_free(r, i);
			n++;
		}
	for (i = 0, top = vfab_slot_top(r, VFAB_OBJ_MR); i < top; i++)
		if (atomic_load(&r->mrs[i].state) == VFAB_SLOT_USED && OWNED_BY(r->mrs[i].owner)) {
			vfab_mr_free(r, i);
			n++;
		}
	for (i = 0, top = vfab_slot_top(r, VFAB_OBJ_PD); i < top; i++)
		if (atomic_load(&r->pds[i].state) == VFAB_SLOT_USED && OWNED_BY(r->pds[i].owner)) {
			vfab_pd_free(r, i);
			n++;
		}
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
