/* SPDX-License-Identifier: MIT */
/* UD multicast attachments (see mcast.h). */
#include "fabric/mcast.h"
#include "fabric/gid.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <string.h>

bool vfab_mcast_gid_is_mc(const uint8_t gid[16])
{
	if (gid[0] == 0xff)
		return true;
	return vfab_gid_is_v4mapped(gid) && (gid[12] & 0xf0) == 0xe0;
}

int vfab_mcast_check(uint32_t qp_type, const uint8_t gid[16])
{
	return qp_type == IBV_QPT_UD && vfab_mcast_gid_is_mc(gid) ? 0 : -EINVAL;
}

/* The table's bound as a reader may trust it: its user can write mcast_top. */
static uint32_t top_of(struct vfab_shard *r)
{
	uint32_t top = atomic_load_explicit(&r->mcast_top, memory_order_acquire);

	return top < VFAB_MAX_MCAST_ATTACH ? top : VFAB_MAX_MCAST_ATTACH;
}

static bool used(uint32_t state)
{
	return state & 1u;
}

static bool names(const struct vfab_mcast_slot *s, uint32_t hca, uint32_t qpn,
		  const uint8_t gid[16])
{
	return used(atomic_load(&s->state)) && s->hca == hca && s->qpn == qpn &&
	       (!gid || !memcmp(s->gid, gid, 16));
}

/*
 * The table a QP's attachments are in: its shard's (NULL when that shard is
 * not mapped here: another user's).
 */
static struct vfab_shard *shard_of_qp(struct vfab_region *r, uint32_t qpn)
{
	uint32_t s = vfab_shard_of(VFAB_OBJ_QP, vfab_qpn_slot(qpn));

	return r->local.mapped & (1u << s) ? &r->shard[s] : NULL;
}

/* Frees slot i (the shard's lock held) and lowers the bound past free slots at the top. */
static void release(struct vfab_shard *r, uint32_t i)
{
	struct vfab_mcast_slot *s = &r->mcast[i];
	uint32_t top = top_of(r);

	atomic_store_explicit(&s->state, (atomic_load(&s->state) + 1u) & ~1u, memory_order_release);
	while (top && !used(atomic_load(&r->mcast[top - 1].state)))
		top--;
	atomic_store_explicit(&r->mcast_top, top, memory_order_release);
}

int vfab_mcast_attach(struct vfab_region *reg, uint32_t hca, uint32_t qpn, const uint8_t gid[16])
{
	uint32_t i, top, members = 0, free_idx = VFAB_MAX_MCAST_ATTACH;
	struct vfab_shard *r = shard_of_qp(reg, qpn);
	struct vfab_mcast_slot *s;
	int rc = 0;

	if (!r)
		return -EPERM;
	if (vfab_lock(&r->lock))
		return -EIO;
	top = top_of(r);
	for (i = 0; i < top; i++) {
		s = &r->mcast[i];
		if (!used(atomic_load(&s->state))) {
			if (free_idx == VFAB_MAX_MCAST_ATTACH)
				free_idx = i;
			continue;
		}
		if (memcmp(s->gid, gid, 16))
			continue;
		if (s->hca != hca)
			continue; /* another device's group table */
		if (s->qpn == qpn)
			goto out; /* already attached */
		members++;
	}
	if (free_idx == VFAB_MAX_MCAST_ATTACH && top < VFAB_MAX_MCAST_ATTACH)
		free_idx = top;
	if (members >= VFAB_MCAST_MAX_QP_ATTACH || free_idx == VFAB_MAX_MCAST_ATTACH) {
		rc = -ENOMEM;
		goto out;
	}
	s = &r->mcast[free_idx];
	s->hca = hca;
	s->qpn = qpn;
	memcpy(s->gid, gid, 16);
	/* Even (free) to odd (used): the next generation. */
	atomic_store_explicit(&s->state, (atomic_load(&s->state) | 1u) + 2u, memory_order_release);
	if (free_idx >= top)
		atomic_store_explicit(&r->mcast_top, free_idx + 1, memory_order_release);
out:
	vfab_unlock(&r->lock);
	return rc;
}

int vfab_mcast_detach(struct vfab_region *reg, uint32_t hca, uint32_t qpn, const uint8_t gid[16])
{
	struct vfab_shard *r = shard_of_qp(reg, qpn);
	uint32_t i, top;
	int rc = -EINVAL;

	if (!r)
		return -EINVAL;
	if (vfab_lock(&r->lock))
		return -EIO;
	top = top_of(r);
	for (i = 0; i < top; i++)
		if (names(&r->mcast[i], hca, qpn, gid)) {
			release(r, i);
			rc = 0;
			break;
		}
	vfab_unlock(&r->lock);
	return rc;
}

int vfab_mcast_detach_qp(struct vfab_region *reg, uint32_t hca, uint32_t qpn)
{
	struct vfab_shard *r = shard_of_qp(reg, qpn);
	uint32_t i;
	int n = 0;

	if (!r || !top_of(r) || vfab_lock(&r->lock))
		return 0;
	for (i = top_of(r); i-- > 0;)
		if (names(&r->mcast[i], hca, qpn, NULL)) {
			release(r, i);
			n++;
		}
	vfab_unlock(&r->lock);
	return n;
}

int vfab_mcast_next(struct vfab_region *reg, const uint8_t gid[16], uint32_t *cursor, uint32_t *hca,
		    uint32_t *qpn)
{
	/*
	 * The cursor runs over the tables of every shard this process may write
	 * (root: every user's), one after the other.
	 */
	if (!*cursor)
		vfab_region_map_shards(reg);
	for (uint32_t sh = *cursor / VFAB_MAX_MCAST_ATTACH; sh < VFAB_SHARDS; sh++) {
		struct vfab_shard *r = &reg->shard[sh];
		uint32_t top = reg->local.mapped & (1u << sh) ? top_of(r) : 0;
		uint32_t i =
		    sh == *cursor / VFAB_MAX_MCAST_ATTACH ? *cursor % VFAB_MAX_MCAST_ATTACH : 0;

		for (; i < top; i++) {
			struct vfab_mcast_slot *s = &r->mcast[i];
			uint32_t st = atomic_load_explicit(&s->state, memory_order_acquire);
			uint32_t h, q;
			bool match;

			if (!used(st))
				continue;
			h = s->hca;
			q = s->qpn;
			match = !memcmp(s->gid, gid, 16);
			atomic_thread_fence(memory_order_acquire);
			if (!match || atomic_load_explicit(&s->state, memory_order_relaxed) != st)
				continue;
			*hca = h;
			*qpn = q;
			*cursor = sh * VFAB_MAX_MCAST_ATTACH + i + 1;
			return 0;
		}
	}
	*cursor = VFAB_SHARDS * VFAB_MAX_MCAST_ATTACH;
	return -ENOENT;
}
