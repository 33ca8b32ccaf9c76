/* SPDX-License-Identifier: MIT */
/*
 * SEAL and UNSEAL: vfabd's part in making and destroying verbs objects, the
 * kernel's part on a real host (fabric/ktab.h). A process made the object
 * in a region slot; vfabd checks that slot against what only the kernel
 * and vfabd know (who is on the other end of the socket, what vfabd sealed
 * before) and copies it into its object table with that process as owner.
 */

#include "vfabd_seal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vfabd.h"
#include "vfabd_conn.h"

/*
 * Whether shard s is the caller's: the one vfabd made for its uid, or
 * shard 0 for the fabric's owner and root (the kernel's credentials).
 */
static bool caller_shard(const struct vfabd *d, const struct vfabd_conn *c, uint32_t s)
{
	if (s == 0)
		return c->privileged;
	return s < VFAB_SHARDS && atomic_load(&d->r->shard_on[s]) &&
	       d->r->shard_uid[s] == (uint32_t)c->peer_uid;
}

/* The caller's PD: sealed, and by the same process. */
static bool own_pd(const struct vfab_ktab *k, uint32_t pd, const struct vfab_owner *o)
{
	return vfab_ktab_live(k, VFAB_OBJ_PD, pd) && vfab_ktab_used(&k->pds[pd].state) &&
	       vfab_owner_same(&k->pds[pd].owner, o);
}

/*
 * The checks of what a slot says against what vfabd knows: -EPERM when it
 * names something not the caller's, -EINVAL when it is not sound.
 */
static int check_mr(const struct vfab_ktab *k, const struct vfab_mr_slot *m, uint32_t slot,
		    const struct vfab_owner *o)
{
	if (!m->key || m->key >> 8 != slot || !own_pd(k, m->pd, o))
		return -EPERM;
	if (m->kind == VFAB_MKEY_MR)
		return m->addr + m->length < m->addr && m->length != UINT64_MAX ? -EINVAL : 0;
	if (m->kind != VFAB_MKEY_MW1 && m->kind != VFAB_MKEY_MW2)
		return -EINVAL;
	if (m->length) { /* bound: inside an MR of the caller's */
		const struct vfab_mr_slot *p = vfab_kmr(k, m->parent_key);

		if (!p || p->kind != VFAB_MKEY_MR || !vfab_owner_same(&p->owner, o))
			return -EPERM;
	}
	return 0;
}

/*
 * An XRC_RECV QP has no PD, CQ or queue of its own: it delivers to the SRQs
 * of its domain, which every delivery checks (they must be its owner's).
 */
static int check_qp(const struct vfab_ktab *k, const struct vfab_qp_slot *q, uint32_t slot,
		    const struct vfab_owner *o)
{
	if (vfab_qpn_slot(q->qpn) != slot || q->qpn < 2)
		return -EPERM;
	if (q->qp_type == VFAB_QPT_XRC_RECV)
		return q->xrcd && q->pd == VFAB_SLOT_NONE && q->send_cq == VFAB_SLOT_NONE &&
			       q->recv_cq == VFAB_SLOT_NONE && q->srq < 0
			   ? 0
			   : -EINVAL;
	/* An RSS QP (raw packet): a PD, no CQ or queue (its owner's WQs receive). */
	if (q->qp_type == VFAB_QPT_RAW_PACKET && q->send_cq == VFAB_SLOT_NONE &&
	    q->recv_cq == VFAB_SLOT_NONE && q->srq < 0)
		return !q->xrcd && own_pd(k, q->pd, o) ? 0 : -EPERM;
	if (q->xrcd || !own_pd(k, q->pd, o) || !vfab_kcq(k, q->send_cq, o) ||
	    !vfab_kcq(k, q->recv_cq, o))
		return -EPERM;
	return q->srq < 0 || vfab_ksrq(k, (uint32_t)q->srq, o) ? 0 : -EPERM;
}

static int check_hca(const struct vfabd *d, const struct vfabd_conn *c, uint32_t hca)
{
	if (hca >= d->t->nhcas || !d->t->hcas[hca].in_use)
		return -EINVAL;
	return c->hca < 0 || (uint32_t)c->hca == hca ? 0 : -EPERM;
}

/* Publishes an MR record so that a reader's copy is whole (struct vfab_mr_slot seal_seq). */
static void put_mr(struct vfab_mr_slot *dst, const struct vfab_mr_slot *src)
{
	uint32_t seq = atomic_load_explicit(&dst->seal_seq, memory_order_relaxed);

	atomic_store_explicit(&dst->seal_seq, seq | 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	dst->key = src->key;
	dst->owner = src->owner;
	dst->hca = src->hca;
	dst->pd = src->pd;
	dst->access = src->access;
	dst->addr = src->addr;
	dst->length = src->length;
	dst->iova = src->iova;
	dst->kind = src->kind;
	dst->parent_key = src->parent_key;
	dst->qpn = src->qpn;
	atomic_store_explicit(&dst->state, VFAB_SLOT_USED, memory_order_relaxed);
	atomic_store_explicit(&dst->seal_seq, (seq | 1) + 1, memory_order_release);
}

static _Atomic uint32_t *kstate(struct vfab_ktab *k, enum vfab_obj kind, uint32_t i,
				const struct vfab_owner **owner)
{
	switch (kind) {
	case VFAB_OBJ_PD:
		*owner = &k->pds[i].owner;
		return &k->pds[i].state;
	case VFAB_OBJ_MR:
		*owner = &k->mrs[i].owner;
		return &k->mrs[i].state;
	case VFAB_OBJ_CQ:
		*owner = &k->cqs[i].owner;
		return &k->cqs[i].state;
	case VFAB_OBJ_SRQ:
		*owner = &k->srqs[i].owner;
		return &k->srqs[i].state;
	default:
		*owner = &k->qps[i].owner;
		return &k->qps[i].state;
	}
}

/*
 * The values of "name=value ..." for names[0..n), each exactly once (a
 * number: decimal or 0x hex; -1 reads as all ones). 0 or -EINVAL.
 */
static int take(char *arg, const char *const *names, size_t n, uint64_t *v)
{
	uint32_t seen = 0;
	char *save = NULL, *tok;

	for (tok = strtok_r(arg, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '='), *end;
		size_t f;

		if (!eq)
			return -EINVAL;
		*eq = '\0';
		for (f = 0; f < n && strcmp(tok, names[f]); f++)
			;
		if (f == n || (seen & (1u << f)))
			return -EINVAL;
		errno = 0;
		v[f] = strtoull(eq + 1, &end, 0);
		if (end == eq + 1 || *end || errno)
			return -EINVAL;
		seen |= 1u << f;
	}
	return seen == (1u << n) - 1 ? 0 : -EINVAL;
}

/* What a SEAL line names for each kind, in the order seal() reads them. */
static const struct {
	const char *const *names;
	size_t n;
} seal_fields[VFAB_OBJ_KINDS] = {
#define FIELDS(...)                                                                                \
	{                                                                                          \
		(const char *const[]){__VA_ARGS__},                                                \
		    sizeof((const char *[]){__VA_ARGS__}) / sizeof(char *)                         \
	}
    [VFAB_OBJ_PD] = FIELDS("ctx", "hca"),
    [VFAB_OBJ_MR] =
	FIELDS("ctx", "hca", "key", "pd", "access", "addr", "len", "iova", "kind", "parent", "qpn"),
    [VFAB_OBJ_CQ] = FIELDS("ctx", "hca", "cookie", "chan", "async", "stamp"),
    [VFAB_OBJ_SRQ] = FIELDS("ctx", "hca", "pd", "cookie", "async", "cq", "xrcd", "tm"),
    [VFAB_OBJ_QP] =
	FIELDS("ctx", "hca", "qpn", "type", "pd", "scq", "rcq", "srq", "cookie", "async", "xrcd"),
#undef FIELDS
};

/*
 * The object as the caller describes it on the line (never as the region's
 * slot says: any user may be rewriting that), checked and stored, with the
 * caller as owner. A slot sealed for another process stays theirs.
 */
static int seal(struct vfabd *d, const struct vfabd_conn *c, enum vfab_obj kind, uint32_t i,
		char *arg)
{
	struct vfab_ktab *k = d->k;
	struct vfab_owner me = {.pid = c->peer_pid, .start_ticks = c->peer_start};
	const struct vfab_owner *held;
	uint64_t v[11];
	int rc;

	rc = take(arg, seal_fields[kind].names, seal_fields[kind].n, v);
	if (rc || v[0] > UINT32_MAX || v[1] > UINT32_MAX)
		return -EINVAL;
	me.ctx_id = (uint32_t)v[0];
	me.hca = (uint32_t)v[1];
	rc = check_hca(d, c, me.hca);
	if (rc)
		return rc;
	rc = vfab_ktab_reserve(k, kind, i);
	if (rc)
		return rc;
	if (vfab_ktab_used(kstate(k, kind, i, &held)) && !vfab_owner_same(held, &me))
		return -EBUSY;

	switch (kind) {
	case VFAB_OBJ_PD:
		k->pds[i].owner = me;
		k->pds[i].hca = me.hca;
		atomic_store(&k->pds[i].state, VFAB_SLOT_USED);
		return 0;
	case VFAB_OBJ_MR: {
		struct vfab_mr_slot m = {.owner = me, .hca = me.hca};

		if (v[2] > UINT32_MAX || v[3] > UINT32_MAX || v[4] > UINT32_MAX || v[8] > 2 ||
		    v[9] > UINT32_MAX || v[10] > UINT32_MAX)
			return -EINVAL;
		m.key = (uint32_t)v[2];
		m.pd = (uint32_t)v[3];
		m.access = (uint32_t)v[4];
		m.addr = v[5];
		m.length = v[6];
		m.iova = v[7];
		m.kind = (uint32_t)v[8];
		m.parent_key = (uint32_t)v[9];
		m.qpn = (uint32_t)v[10];
		rc = check_mr(k, &m, i, &me);
		if (!rc)
			put_mr(&k->mrs[i], &m);
		return rc;
	}
	case VFAB_OBJ_CQ: {
		struct vfab_cq_slot *q = &k->cqs[i];

		if (v[3] > UINT32_MAX || v[4] > UINT32_MAX || v[5] > 1)
			return -EINVAL;
		/* Its FIFOs are named by its pid: a wake-up reaches the owner only. */
		q->owner = me;
		q->hca = me.hca;
		q->user_cq = v[2];
		q->chan_pid = me.pid;
		q->chan_id = (uint32_t)v[3];
		q->async_pid = me.pid;
		q->async_id = (uint32_t)v[4];
		q->stamp = (uint32_t)v[5];
		atomic_store(&q->state, VFAB_SLOT_USED);
		return 0;
	}
	case VFAB_OBJ_SRQ: {
		struct vfab_srq_slot *q = &k->srqs[i];

		if (v[2] > UINT32_MAX || v[4] > UINT32_MAX || v[5] > UINT32_MAX ||
		    v[6] > UINT32_MAX || v[7] > VFAB_TM_MAX_TAGS || (v[6] && v[7]))
			return -EINVAL;
		if (!own_pd(k, (uint32_t)v[2], &me))
			return -EPERM;
		/*
		 * An XRC or a tag matching SRQ completes into a CQ of its
		 * owner's; a basic one names none.
		 */
		if (v[6] || v[7] ? !vfab_kcq(k, (uint32_t)v[5], &me) : v[5] != VFAB_SLOT_NONE)
			return v[6] || v[7] ? -EPERM : -EINVAL;
		q->owner = me;
		q->hca = me.hca;
		q->pd = (uint32_t)v[2];
		q->user_srq = v[3];
		q->async_pid = me.pid;
		q->async_id = (uint32_t)v[4];
		q->cq = (uint32_t)v[5];
		q->xrcd = (uint32_t)v[6];
		q->tm_tags = (uint32_t)v[7];
		atomic_store(&q->state, VFAB_SLOT_USED);
		return 0;
	}
	default: {
		struct vfab_qp_slot *q = &k->qps[i];
		struct vfab_qp_slot n = {.owner = me, .hca = me.hca};

		for (int f = 2; f < 11; f++)
			if (f != 7 && f != 8 && v[f] > UINT32_MAX)
				return -EINVAL;
		if (v[7] != UINT64_MAX && v[7] >= VFAB_MAX_SRQS)
			return -EINVAL;
		n.qpn = (uint32_t)v[2];
		n.qp_type = (uint32_t)v[3];
		n.pd = (uint32_t)v[4];
		n.send_cq = (uint32_t)v[5];
		n.recv_cq = (uint32_t)v[6];
		n.srq = v[7] == UINT64_MAX ? -1 : (int32_t)v[7];
		n.xrcd = (uint32_t)v[10];
		rc = check_qp(k, &n, i, &me);
		if (rc)
			return rc;
		q->qpn = n.qpn;
		q->owner = me;
		q->hca = me.hca;
		q->pd = n.pd;
		q->qp_type = n.qp_type;
		q->send_cq = n.send_cq;
		q->recv_cq = n.recv_cq;
		q->srq = n.srq;
		q->xrcd = n.xrcd;
		q->user_qp = v[8];
		q->async_pid = me.pid;
		q->async_id = (uint32_t)v[9];
		atomic_store(&q->state, VFAB_SLOT_USED);
		return 0;
	}
	}
}

static void clear(struct vfab_ktab *k, enum vfab_obj kind, uint32_t i)
{
	const struct vfab_owner *o;

	if (kind == VFAB_OBJ_MR) {
		struct vfab_mr_slot *m = &k->mrs[i];
		uint32_t seq = atomic_load_explicit(&m->seal_seq, memory_order_relaxed);

		atomic_store(&m->seal_seq, seq | 1);
		atomic_store(&m->state, VFAB_SLOT_FREE);
		m->key = 0;
		atomic_store(&m->seal_seq, (seq | 1) + 1);
		return;
	}
	atomic_store(kstate(k, kind, i, &o), VFAB_SLOT_FREE);
}

/* The region's slot i of a kind, freed (a slot already free stays so). */
static void region_free(struct vfab_region *r, enum vfab_obj kind, uint32_t i)
{
	switch (kind) {
	case VFAB_OBJ_QP:
		vfab_qp_free(r, (int)i);
		break;
	case VFAB_OBJ_SRQ:
		vfab_srq_free(r, (int)i);
		break;
	case VFAB_OBJ_CQ:
		vfab_cq_free(r, (int)i);
		break;
	case VFAB_OBJ_MR:
		vfab_mr_free(r, (int)i);
		break;
	default:
		vfab_pd_free(r, (int)i);
	}
}

int vfabd_seal_reap_owner(struct vfab_region *r, struct vfab_ktab *k, int32_t pid,
			  uint64_t start_ticks)
{
	/* QPs first, as a process destroys them: then what they use. */
	static const enum vfab_obj order[] = {VFAB_OBJ_QP, VFAB_OBJ_SRQ, VFAB_OBJ_CQ, VFAB_OBJ_MR,
					      VFAB_OBJ_PD};
	int n = 0;

	if (!k)
		return 0;
	for (size_t j = 0; j < sizeof(order) / sizeof(order[0]); j++) {
		enum vfab_obj kind = order[j];

		for (uint32_t i = vfab_ktab_next(k, kind, 0); i != VFAB_SLOT_END;
		     i = vfab_ktab_next(k, kind, i + 1)) {
			const struct vfab_owner *o;
			_Atomic uint32_t *st = kstate(k, kind, i, &o);

			if (atomic_load(st) != VFAB_SLOT_USED || o->pid != pid ||
			    (start_ticks && o->start_ticks != start_ticks))
				continue;
			/*
			 * Nobody else can have sealed slot i meanwhile, so the
			 * region's slot is still this process's, whatever owner it
			 * names now.
			 */
			clear(k, kind, i);
			if (vfab_slot_live(r, kind, i))
				region_free(r, kind, i);
			n++;
		}
	}
	return n;
}

void vfabd_req_seal(struct vfabd *d, struct vfabd_conn *c, char *arg, bool on)
{
	const struct vfab_owner me = {.pid = c->peer_pid, .start_ticks = c->peer_start};
	static const uint32_t size[VFAB_OBJ_KINDS] = {VFAB_MAX_PDS, VFAB_MAX_MRS, VFAB_MAX_CQS,
						      VFAB_MAX_SRQS, VFAB_MAX_QPS};
	const char *what = on ? "SEAL" : "UNSEAL";
	char *sp = strchr(arg, ' '), *end, *fields = NULL;
	const struct vfab_owner *o;
	unsigned long slot;
	int kind, rc;

	if (!d->k) {
		vfabd_reply_err(c, -ENOTSUP, "%s: vfabd keeps no object table", what);
		return;
	}
	if (!c->pid || !c->peer_start) {
		vfabd_reply_err(c, -EPERM, "%s needs a HELLO from a process whose start is known",
				what);
		return;
	}
	if (sp) {
		*sp++ = '\0';
		fields = strchr(sp, ' ');
		if (fields)
			*fields++ = '\0';
	}
	for (kind = 0;
	     kind < VFAB_OBJ_KINDS && strcmp(arg, vfab_ktab_kind_name((enum vfab_obj)kind)); kind++)
		;
	errno = 0;
	slot = sp ? strtoul(sp, &end, 10) : 0;
	if (kind == VFAB_OBJ_KINDS || !sp || end == sp || *end || errno || slot >= size[kind] ||
	    !vfab_slot_live(d->r, (enum vfab_obj)kind, (uint32_t)slot) || on != (fields != NULL)) {
		vfabd_reply_err(c, -EINVAL,
				on ? "usage: SEAL pd|mr|cq|srq|qp <slot in use> <name>=<value>..."
				   : "usage: UNSEAL pd|mr|cq|srq|qp <slot>");
		return;
	}
	if (on && !caller_shard(d, c, vfab_shard_of((enum vfab_obj)kind, (uint32_t)slot))) {
		vfabd_reply_err(c, -EPERM, "%s %s %lu: a slot of another user's shard", what, arg,
				slot);
		return;
	}
	if (on) {
		rc = seal(d, c, (enum vfab_obj)kind, (uint32_t)slot, fields);
		if (rc) {
			vfabd_reply_err(c, rc, "%s %s %lu: %s", what, arg, slot,
					rc == -EBUSY   ? "another process's object"
					: rc == -EPERM ? "names what is not the caller's"
						       : "not a sound object");
			return;
		}
	} else if (vfab_ktab_live(d->k, (enum vfab_obj)kind, (uint32_t)slot)) {
		_Atomic uint32_t *st = kstate(d->k, (enum vfab_obj)kind, (uint32_t)slot, &o);

		if (atomic_load(st) == VFAB_SLOT_USED) {
			if (!vfab_owner_same(o, &me)) {
				vfabd_reply_err(c, -EBUSY, "%s %s %lu: another process's object",
						what, arg, slot);
				return;
			}
			clear(d->k, (enum vfab_obj)kind, (uint32_t)slot);
		}
	}
	vfabd_reply(c, "OK");
}
