/* SPDX-License-Identifier: MIT */
/*
 * The object table vfabd keeps, as the kernel keeps it on a real host:
 * which process owns each PD, MR (and memory window), CQ, SRQ and QP, an
 * MR's bounds, key and rights, which PD, CQs and SRQ a QP was made with,
 * and where an object's events go. The file is <rundir>/objects (VFAB_KTAB_NAME), made by vfabd,
 * owned by it, mode 0644: vfabd alone writes it, every process maps it
 * read-only.
 *
 * A process still makes its objects in the region (fabric/region.h), which
 * every user may write, and then asks vfabd to SEAL the slot over its
 * control connection: vfabd checks the slot against the kernel's word on
 * the caller (SO_PEERCRED, its start time) and what it already sealed (the
 * PD, the CQs, the SRQ, a window's parent MR and the FIFOs must be the
 * caller's), then copies it here with the caller as owner. Whatever a
 * process acts on for an object (the process it copies into, the
 * addresses and rights it checks, the CQ it completes into, the FIFO it
 * wakes and the cookie it writes there) comes from here. The region keeps
 * what moves on the data path (locks, rings and their positions, QP
 * states, PSNs): every ring is bounded by the pool of the reader's own
 * mapping before it is touched, so a forgery there costs service, never a
 * copy elsewhere.
 *
 * The sealed records are the region's slot types: in each only the fields
 * fixed when the object was made (or an MR registered or re-registered, a
 * window bound, each a new SEAL) are meaningful, and `state` is
 * VFAB_SLOT_USED while sealed.
 */
#ifndef VFAB_KTAB_H
#define VFAB_KTAB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fabric/region.h"

#define VFAB_KTAB_NAME "objects"	      /* in the run dir */
#define VFAB_KTAB_MAGIC 0x766661626b746231ull /* "vfabktb1" */
#define VFAB_KTAB_VERSION 3

struct vfab_ktab {
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size;
	/*
	 * Per shard and kind, one past the slots whose pages vfabd reserved in
	 * the file (a shard's slots start at vfab_shard_lo): lookups stop there
	 * (reading a page tmpfs never allocated would allocate it).
	 */
	_Atomic uint32_t top[VFAB_SHARDS][VFAB_OBJ_KINDS];
	_Alignas(4096) struct vfab_pd_slot pds[VFAB_MAX_PDS];
	struct vfab_mr_slot mrs[VFAB_MAX_MRS];
	struct vfab_cq_slot cqs[VFAB_MAX_CQS];
	struct vfab_srq_slot srqs[VFAB_MAX_SRQS];
	struct vfab_qp_slot qps[VFAB_MAX_QPS];
};

/* A kind's name on a SEAL or UNSEAL line: pd, mr, cq, srq, qp. */
static inline const char *vfab_ktab_kind_name(enum vfab_obj kind)
{
	static const char *const names[VFAB_OBJ_KINDS] = {
	    [VFAB_OBJ_PD] = "pd",   [VFAB_OBJ_MR] = "mr", [VFAB_OBJ_CQ] = "cq",
	    [VFAB_OBJ_SRQ] = "srq", [VFAB_OBJ_QP] = "qp",
	};

	return names[kind];
}

/* ---- ktab.c ---- */

/*
 * vfabd: makes <rundir>/objects afresh below the run dir's descriptor (a
 * file or link left there is removed first, never followed) and maps it
 * read-write. 0 or -errno.
 */
int vfab_ktab_create(int rundir_fd, struct vfab_ktab **out);
/*
 * Every other process: maps <rundir>/objects read-only, if it is a regular
 * file of the run dir's owner that nobody else may write (the run dir comes
 * from the HCA's locator, root's). 0 or -errno.
 */
int vfab_ktab_open(const char *rundir, const struct vfab_ktab **out);
void vfab_ktab_close(const struct vfab_ktab *k);
/* vfabd: reserves the pages up to slot `slot` of kind's table; 0 or -ENOMEM. */
int vfab_ktab_reserve(struct vfab_ktab *k, enum vfab_obj kind, uint32_t slot);
/* Whether vfabd records no object in shard s (before it drops the shard). */
bool vfab_ktab_shard_empty(const struct vfab_ktab *k, uint32_t s);

/* The records that may be read (their pages reserved), per shard (struct vfab_tops). */
static inline struct vfab_tops vfab_ktab_tops(const struct vfab_ktab *k, enum vfab_obj kind)
{
	return (struct vfab_tops){&k->top[0][kind], sizeof(k->top[0])};
}

/* One past the reserved records of shard sh. */
static inline uint32_t vfab_ktab_top(const struct vfab_ktab *k, enum vfab_obj kind, uint32_t sh)
{
	return vfab_tops_get(vfab_ktab_tops(k, kind), kind, sh);
}

/* Whether slot i's record may be read. */
static inline bool vfab_ktab_live(const struct vfab_ktab *k, enum vfab_obj kind, uint32_t i)
{
	return vfab_tops_live(vfab_ktab_tops(k, kind), kind, i);
}

/* A scan: the first readable record at or after i, or VFAB_SLOT_END (as vfab_slot_next). */
static inline uint32_t vfab_ktab_next(const struct vfab_ktab *k, enum vfab_obj kind, uint32_t i)
{
	return vfab_tops_next(vfab_ktab_tops(k, kind), kind, i);
}

static inline bool vfab_ktab_used(const _Atomic uint32_t *state)
{
	return atomic_load_explicit(state, memory_order_acquire) == VFAB_SLOT_USED;
}

/* Two owners name the same process (pid and start time). */
static inline bool vfab_owner_same(const struct vfab_owner *a, const struct vfab_owner *b)
{
	return a->pid == b->pid && a->start_ticks == b->start_ticks;
}

/* The sealed MR or window of a key; NULL when none is sealed under it. */
static inline const struct vfab_mr_slot *vfab_kmr(const struct vfab_ktab *k, uint32_t key)
{
	uint32_t i = key >> 8;
	const struct vfab_mr_slot *s;

	if (!k || !vfab_ktab_live(k, VFAB_OBJ_MR, i))
		return NULL;
	s = &k->mrs[i];
	return vfab_ktab_used(&s->state) && s->key == key ? s : NULL;
}

/*
 * A whole copy of the sealed MR or window of key into *out (vfabd may be
 * rewriting it: seal_seq): out, or NULL when none is sealed under key.
 */
static inline const struct vfab_mr_slot *vfab_kmr_copy(const struct vfab_ktab *k, uint32_t key,
						       struct vfab_mr_slot *out)
{
	uint32_t i = key >> 8;

	if (!k || !vfab_ktab_live(k, VFAB_OBJ_MR, i))
		return NULL;
	for (int tries = 0; tries < 8; tries++) {
		const struct vfab_mr_slot *s = &k->mrs[i];
		uint32_t seq = atomic_load_explicit(&s->seal_seq, memory_order_acquire);

		if (seq & 1)
			continue;
		__builtin_memcpy((void *)out, (const void *)s, sizeof(*out));
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&s->seal_seq, memory_order_relaxed) != seq)
			continue;
		return out->state == VFAB_SLOT_USED && out->key == key ? out : NULL;
	}
	return NULL;
}

/* The sealed QP of a QPN on device hca; NULL when none. */
static inline const struct vfab_qp_slot *vfab_kqp(const struct vfab_ktab *k, uint32_t hca,
						  uint32_t qpn)
{
	uint32_t i = vfab_qpn_slot(qpn);
	const struct vfab_qp_slot *s;

	if (!k || !vfab_ktab_live(k, VFAB_OBJ_QP, i))
		return NULL;
	s = &k->qps[i];
	return vfab_ktab_used(&s->state) && s->qpn == qpn && s->hca == hca ? s : NULL;
}

/*
 * A copy of the sealed QP of qpn on hca into *out, checked again once
 * copied (a destroy and a new QP in its slot change the QPN): out, or NULL.
 */
static inline const struct vfab_qp_slot *vfab_kqp_copy(const struct vfab_ktab *k, uint32_t hca,
						       uint32_t qpn, struct vfab_qp_slot *out)
{
	const struct vfab_qp_slot *s = vfab_kqp(k, hca, qpn);

	if (!s)
		return NULL;
	__builtin_memcpy((void *)out, (const void *)s, sizeof(*out));
	atomic_thread_fence(memory_order_acquire);
	return vfab_kqp(k, hca, qpn) && out->qpn == qpn && out->hca == hca ? out : NULL;
}

/*
 * The sealed CQ of slot i if `owner` owns it (a QP's CQs are its owner's;
 * NULL: any, for a slot this process took from its own sealed QP); else NULL.
 */
static inline const struct vfab_cq_slot *vfab_kcq(const struct vfab_ktab *k, uint32_t i,
						  const struct vfab_owner *owner)
{
	const struct vfab_cq_slot *s;

	if (!k || !vfab_ktab_live(k, VFAB_OBJ_CQ, i))
		return NULL;
	s = &k->cqs[i];
	return vfab_ktab_used(&s->state) && (!owner || vfab_owner_same(&s->owner, owner)) ? s
											  : NULL;
}

/* The sealed SRQ of slot i if `owner` owns it (NULL: any, as above); else NULL. */
static inline const struct vfab_srq_slot *vfab_ksrq(const struct vfab_ktab *k, uint32_t i,
						    const struct vfab_owner *owner)
{
	const struct vfab_srq_slot *s;

	if (!k || !vfab_ktab_live(k, VFAB_OBJ_SRQ, i))
		return NULL;
	s = &k->srqs[i];
	return vfab_ktab_used(&s->state) && (!owner || vfab_owner_same(&s->owner, owner)) ? s
											  : NULL;
}

/*
 * The sealed SRQ srqn that XRC_RECV QP kq delivers a message to: an XRC SRQ
 * of its domain, and of its owner (the bytes go to the QP owner's memory);
 * else NULL.
 */
static inline const struct vfab_srq_slot *vfab_xrc_srq(const struct vfab_ktab *k,
						       const struct vfab_qp_slot *kq, uint32_t srqn)
{
	const struct vfab_srq_slot *s;

	if (srqn >= VFAB_MAX_SRQS || !kq->xrcd)
		return NULL;
	s = vfab_ksrq(k, srqn, &kq->owner);
	return s && s->xrcd == kq->xrcd ? s : NULL;
}

#endif /* VFAB_KTAB_H */
