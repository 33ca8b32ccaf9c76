/* SPDX-License-Identifier: MIT */
/*
 * The ring pool: a binary buddy allocator over the pool part of the region
 * (region.h "Ring pool"). Blocks are 2^k bytes, VFAB_POOL_MIN_ORDER <= k,
 * aligned to their size from the pool's start; a free block carries its
 * header (tag, list links) in its first bytes and sits on the free list of
 * its order. A freed block merges with its buddy (offset ^ 2^k) while the
 * buddy is free and of the same order, so memory that comes back always
 * serves every size again: after any sequence of allocations and frees that
 * ends with everything freed, the pool is again the blocks it started as.
 *
 * Every process runs this code on its shard's pool, which its user can
 * write, and vfabd (root) on every shard's when it frees a dead process's rings. So no offset
 * read from the region (a list link, a slot's ring offset) is followed
 * before it is checked against the pool's bounds as this process mapped it
 * (region_map.h), never the region's own pool_off/pool_size: a corrupt pool
 * costs its users memory or a failed allocation, and nobody writes outside
 * the pool.
 *
 * The region file is sparse and lives in /dev/shm: a page /dev/shm has no
 * room for kills whoever touches it with SIGBUS. So every page is reserved
 * in the file (posix_fallocate) before the allocator or a block's user
 * touches it: a block before it is handed out, a free block's header before
 * it is written; what cannot be reserved is a clean -ENOMEM.
 */
#include "fabric/region.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>

#include "fabric/region_map.h"

/* In the first bytes of a free block. */
struct pool_free_hdr {
	uint64_t tag;  /* free_tag(offset, order) while the block is free */
	uint64_t next; /* region offset of the next free block of the order; 0: none */
	uint64_t prev; /* ... and of the previous one; 0: this is the list head */
};

/* Where this process's mapping says the pool is (region offsets). */
struct pool_bounds {
	uint64_t start, bytes;
	uint32_t max_order;    /* largest order a block of this pool can have */
	int fd;		       /* the shard's file, for reservations; -1: none */
	struct vfab_shard *sh; /* its free lists and lock */
};

#define FREE_TAG 0x76666162706f6f6cull /* "vfabpool" */

uint64_t vfab_pool_bytes(uint32_t nhcas, uint32_t override_mib)
{
	uint64_t b =
	    override_mib ? (uint64_t)override_mib << 20 : (uint64_t)nhcas * VFAB_POOL_BYTES_PER_HCA;

	if (!override_mib && b < VFAB_POOL_BYTES_MIN)
		b = VFAB_POOL_BYTES_MIN;
	return b < VFAB_POOL_BYTES_MAX ? b : VFAB_POOL_BYTES_MAX;
}

/* A free block's tag names its offset and order: a stale or copied header never matches. */
static uint64_t free_tag(uint64_t off, uint32_t order)
{
	return FREE_TAG ^ off ^ ((uint64_t)order << 56);
}

/*
 * Shard s's pool as this process mapped it, reserving in fd (-2: this
 * process's shard file); -ENOMEM when the shard is not mapped here from
 * its file (another user's: it reads as zero pages).
 */
static int bounds_fd(const struct vfab_region *r, uint32_t s, int fd, struct pool_bounds *b)
{
	struct vfab_region_map m;

	if (s >= VFAB_SHARDS || !(r->local.mapped & (1u << s)) || vfab_region_map_get(r, &m) ||
	    !vfab_pool_shard_bytes(m.bytes))
		return -ENOMEM;
	b->bytes = vfab_pool_shard_bytes(m.bytes);
	b->start = VFAB_POOL_OFF + (uint64_t)s * b->bytes;
	b->fd = fd == -2 ? m.fd : fd;
	b->sh = (struct vfab_shard *)&r->shard[s];
	b->max_order = VFAB_POOL_MIN_ORDER;
	while (b->max_order + 1 < VFAB_POOL_CLASSES && (2ull << b->max_order) <= b->bytes)
		b->max_order++;
	return 0;
}

static int bounds_of(const struct vfab_region *r, uint32_t s, struct pool_bounds *b)
{
	return bounds_fd(r, s, s == r->local.own ? -2 : -1, b);
}

/* The shard whose pool holds region offset off (VFAB_SHARDS: none). */
static uint32_t shard_at(const struct vfab_region *r, uint64_t off)
{
	struct vfab_region_map m;
	uint64_t per;

	if (off < VFAB_POOL_OFF || vfab_region_map_get(r, &m))
		return VFAB_SHARDS;
	per = vfab_pool_shard_bytes(m.bytes);
	return per && (off - VFAB_POOL_OFF) / per < VFAB_SHARDS
		   ? (uint32_t)((off - VFAB_POOL_OFF) / per)
		   : VFAB_SHARDS;
}

/* Reserves [off, off + len) of the region file (whole pages); -ENOMEM when /dev/shm is full. */
static int reserve(const struct pool_bounds *b, uint64_t off, uint64_t len)
{
	int rc;

	if (b->fd < 0)
		return 0;
	do
		rc = posix_fallocate(b->fd, (off_t)off, (off_t)len);
	while (rc == EINTR);
	return rc ? -ENOMEM : 0;
}

/* Is [off, off + 2^order) a block of the pool (inside, aligned to its size)? */
static bool block_ok(const struct pool_bounds *b, uint64_t off, uint32_t order)
{
	uint64_t size, rel;

	if (order < VFAB_POOL_MIN_ORDER || order > b->max_order || off < b->start)
		return false;
	size = 1ull << order;
	rel = off - b->start;
	return (rel & (size - 1)) == 0 && rel <= b->bytes && size <= b->bytes - rel;
}

static struct pool_free_hdr *hdr(struct vfab_region *r, uint64_t off)
{
	return (struct pool_free_hdr *)vfab_at(r, off);
}

static bool is_free(struct vfab_region *r, const struct pool_bounds *b, uint64_t off,
		    uint32_t order)
{
	return block_ok(b, off, order) && hdr(r, off)->tag == free_tag(off, order);
}

/* Puts a block on its free list (the shard's lock held). */
static void push_free(struct vfab_region *r, const struct pool_bounds *b, uint64_t off,
		      uint32_t order)
{
	struct pool_free_hdr *h = hdr(r, off);
	uint64_t head = b->sh->pool_free[order];

	if (!is_free(r, b, head, order))
		head = 0; /* a corrupt list is dropped, not followed */
	h->next = head;
	h->prev = 0;
	h->tag = free_tag(off, order);
	if (head)
		hdr(r, head)->prev = off;
	b->sh->pool_free[order] = off;
}

/*
 * Takes a free block off its list (the shard's lock held). false, and nothing
 * changed, when the links around it do not hold together.
 */
static bool unlink_free(struct vfab_region *r, const struct pool_bounds *b, uint64_t off,
			uint32_t order)
{
	struct pool_free_hdr *h = hdr(r, off);
	uint64_t next = h->next, prev = h->prev;

	if ((next && !is_free(r, b, next, order)) || (prev && !is_free(r, b, prev, order)) ||
	    (prev ? hdr(r, prev)->next != off : b->sh->pool_free[order] != off))
		return false;
	if (prev)
		hdr(r, prev)->next = next;
	else
		b->sh->pool_free[order] = next;
	if (next)
		hdr(r, next)->prev = prev;
	h->tag = 0; /* no longer free: a later buddy check must not take it */
	return true;
}

/* The order of a request of `bytes`: the smallest power of two that holds it. */
static uint32_t order_of(uint64_t bytes)
{
	uint32_t k = VFAB_POOL_MIN_ORDER;

	while (k < 63 && (1ull << k) < bytes)
		k++;
	return k;
}

/*
 * A large free block gives its memory back to the host (all but its first
 * page, which holds the header): the pool file is sparse again where nothing
 * is allocated. The shard's lock held, so nobody can take the block meanwhile.
 */
static void give_back(struct vfab_region *r, uint64_t off, uint32_t order)
{
	uint64_t size = 1ull << order;

	if (size >= VFAB_POOL_GIVE_BACK)
		madvise(vfab_at(r, off + 4096), size - 4096, MADV_REMOVE);
}

int vfab_pool_init(struct vfab_region *r, uint32_t s, int fd)
{
	struct pool_bounds b;
	uint64_t off;

	if (bounds_fd(r, s, fd, &b))
		return -EINVAL;
	memset(b.sh->pool_free, 0, sizeof(b.sh->pool_free));
	/*
	 * The largest aligned blocks that fit, largest first: each one starts
	 * where the bigger ones before it ended, so it is aligned to its size.
	 */
	off = b.start;
	for (uint32_t k = b.max_order + 1; k-- > VFAB_POOL_MIN_ORDER;) {
		if (off - b.start + (1ull << k) > b.bytes)
			continue;
		if (reserve(&b, off, sizeof(struct pool_free_hdr)))
			return -ENOSPC;
		push_free(r, &b, off, k);
		off += 1ull << k;
	}
	return 0;
}

int64_t vfab_pool_alloc(struct vfab_region *r, uint64_t bytes)
{
	uint32_t k = order_of(bytes ? bytes : 1), j;
	struct pool_bounds b;
	uint64_t off = 0;

	if (bounds_of(r, r->local.own, &b) || k > b.max_order)
		return -ENOMEM;
	vfab_lock(&b.sh->lock);
	for (j = k; j <= b.max_order; j++) {
		off = b.sh->pool_free[j];
		if (!off)
			continue;
		if (is_free(r, &b, off, j) && unlink_free(r, &b, off, j))
			break;
		b.sh->pool_free[j] = 0; /* corrupt: the list is dropped */
		off = 0;
	}
	if (!off) {
		vfab_unlock(&b.sh->lock);
		return -ENOMEM;
	}
	/*
	 * Split down to the order asked for; the upper halves go on their
	 * lists. Their headers may lie in pages a free block gave back: those
	 * are reserved first, and the block goes back whole if one cannot be.
	 */
	for (uint32_t i = j; i > k; i--)
		if (reserve(&b, off + (1ull << (i - 1)), sizeof(struct pool_free_hdr))) {
			push_free(r, &b, off, j);
			vfab_unlock(&b.sh->lock);
			return -ENOMEM;
		}
	while (j > k) {
		j--;
		push_free(r, &b, off + (1ull << j), j);
	}
	vfab_unlock(&b.sh->lock);
	if (reserve(&b, off, 1ull << k)) {
		vfab_pool_free(r, off, 1ull << k);
		return -ENOMEM;
	}
	memset(vfab_at(r, off), 0, 1ull << k);
	return (int64_t)off;
}

void vfab_pool_free(struct vfab_region *r, uint64_t off, uint64_t bytes)
{
	vfab_pool_free_shard(r, shard_at(r, off), off, bytes);
}

void vfab_pool_free_shard(struct vfab_region *r, uint32_t s, uint64_t off, uint64_t bytes)
{
	uint32_t k = order_of(bytes ? bytes : 1);
	struct pool_bounds b;

	if (!off || bounds_of(r, s, &b) || !block_ok(&b, off, k))
		return; /* not a block of a pool mapped here: a forged ring offset frees nothing */
	vfab_lock(&b.sh->lock);
	if (is_free(r, &b, off, k)) { /* freed twice (the reaper racing the owner) */
		vfab_unlock(&b.sh->lock);
		return;
	}
	while (k < b.max_order) {
		uint64_t buddy = b.start + ((off - b.start) ^ (1ull << k));

		if (!is_free(r, &b, buddy, k) || !unlink_free(r, &b, buddy, k))
			break;
		off = off < buddy ? off : buddy;
		k++;
	}
	give_back(r, off, k);
	push_free(r, &b, off, k);
	vfab_unlock(&b.sh->lock);
}

uint64_t vfab_pool_free_bytes(struct vfab_region *r)
{
	struct pool_bounds b;
	uint64_t total = 0;

	if (bounds_of(r, r->local.own, &b))
		return 0;
	vfab_lock(&b.sh->lock);
	for (uint32_t k = VFAB_POOL_MIN_ORDER; k <= b.max_order; k++) {
		/* At most as many blocks as the pool holds: a looping list ends too. */
		uint64_t n = 0, cap = b.bytes >> k;

		for (uint64_t off = b.sh->pool_free[k]; off && n <= cap && is_free(r, &b, off, k);
		     off = hdr(r, off)->next, n++)
			total += 1ull << k;
	}
	vfab_unlock(&b.sh->lock);
	return total;
}
