/* SPDX-License-Identifier: MIT */
#include "rdmanl/nl_res.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/locator.h"

/*
 * The region as every process maps it (fabric/region.h), with the shards of
 * the users this process may write (its own; root's: all): it reads only.
 */
static int map_region(const char *path, struct vfab_nl_res *res)
{
	struct vfab_region *r;
	int rc = vfab_region_open(path, &r);

	if (rc)
		return rc;
	vfab_region_map_shards(r);
	res->r = r;
	return 0;
}

int vfab_nl_res_open(const char *locator, struct vfab_nl_res *out)
{
	struct vfab_locator loc;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = vfab_locator_parse(locator, VFAB_MAX_HCAS, &loc);
	if (ret)
		return ret;
	ret = map_region(loc.region, out);
	if (ret)
		return ret;
	ret = vfab_ktab_open(loc.rundir, &out->k);
	if (ret) {
		vfab_nl_res_close(out);
		return ret;
	}
	out->hca = loc.hca;
	return 0;
}

void vfab_nl_res_close(struct vfab_nl_res *res)
{
	if (res->k)
		vfab_ktab_close(res->k);
	if (res->r)
		vfab_region_close((struct vfab_region *)res->r);
	memset(res, 0, sizeof(*res));
}

/* A sealed slot of this HCA (the records' common head: state, then hca further on). */
#define SEALED_HERE(res, s) (vfab_ktab_used(&(s)->state) && (s)->hca == (res)->hca)

/* Whether slot i of kind is one of this HCA's objects (an MR: a registration, not a window). */
static bool here(const struct vfab_nl_res *res, enum vfab_obj kind, uint32_t i)
{
	const struct vfab_ktab *k = res->k;

	switch (kind) {
	case VFAB_OBJ_PD:
		return SEALED_HERE(res, &k->pds[i]);
	case VFAB_OBJ_MR:
		return SEALED_HERE(res, &k->mrs[i]) && k->mrs[i].kind == VFAB_MKEY_MR;
	case VFAB_OBJ_CQ:
		return SEALED_HERE(res, &k->cqs[i]);
	case VFAB_OBJ_SRQ:
		return SEALED_HERE(res, &k->srqs[i]);
	default:
		return SEALED_HERE(res, &k->qps[i]);
	}
}

void vfab_nl_res_count(const struct vfab_nl_res *res, uint64_t count[VFAB_OBJ_KINDS])
{
	for (int kind = 0; kind < VFAB_OBJ_KINDS; kind++) {
		count[kind] = 0;
		for (uint32_t i = vfab_ktab_next(res->k, (enum vfab_obj)kind, 0);
		     i != VFAB_SLOT_END; i = vfab_ktab_next(res->k, (enum vfab_obj)kind, i + 1))
			count[kind] += here(res, (enum vfab_obj)kind, i);
	}
}

/*
 * The PSN a QP's peer expects next: the requester's next PSN whenever none
 * of its messages is on its way (vfab delivers a message before it
 * completes it). The requester's own counter is in its process only.
 */
static uint32_t peer_epsn(const struct vfab_nl_res *res, uint32_t dest_qpn)
{
	uint32_t i = vfab_qpn_slot(dest_qpn);

	if (!vfab_ktab_live(res->k, VFAB_OBJ_QP, i) || !vfab_ktab_used(&res->k->qps[i].state) ||
	    res->k->qps[i].qpn != dest_qpn || res->r->qps[i].qpn != dest_qpn)
		return 0;
	return atomic_load_explicit(&res->r->qps[i].epsn, memory_order_relaxed) & 0xffffff;
}

static void fill_qp(const struct vfab_nl_res *res, uint32_t i, struct vfab_nl_qp *one)
{
	const struct vfab_qp_slot *s = &res->k->qps[i], *live = &res->r->qps[i];

	memset(one, 0, sizeof(*one));
	one->qpn = s->qpn;
	one->pdn = s->pd;
	one->type = s->qp_type;
	one->pid = (uint32_t)s->owner.pid;
	one->state = atomic_load_explicit(&live->qp_state, memory_order_relaxed);
	/* The port is the QP's from INIT on; a forged one names none. */
	one->port = one->state && live->port <= VFAB_MAX_PORTS ? live->port : 0;
	one->connected = s->qp_type == 2 /* RC */ || s->qp_type == 3 /* UC */;
	if (one->connected && one->state >= 2 /* RTR */) {
		one->rqpn = live->dest_qpn & 0xffffff;
		one->rq_psn = atomic_load_explicit(&live->epsn, memory_order_relaxed) & 0xffffff;
		one->sq_psn = peer_epsn(res, one->rqpn);
	}
}

/* QPs of this HCA that complete into CQ slot cq (either queue), or were made with PD slot pd. */
static uint64_t qp_users(const struct vfab_nl_res *res, int cq, int pd)
{
	const struct vfab_ktab *k = res->k;
	uint64_t n = 0;

	for (uint32_t i = vfab_ktab_next(k, VFAB_OBJ_QP, 0); i != VFAB_SLOT_END;
	     i = vfab_ktab_next(k, VFAB_OBJ_QP, i + 1)) {
		const struct vfab_qp_slot *s = &k->qps[i];

		if (!vfab_ktab_used(&s->state))
			continue;
		if (cq >= 0)
			n += (s->send_cq == (uint32_t)cq) + (s->recv_cq == (uint32_t)cq);
		if (pd >= 0)
			n += s->pd == (uint32_t)pd;
	}
	return n;
}

static void fill_cq(const struct vfab_nl_res *res, uint32_t i, struct vfab_nl_cq *one)
{
	/*
	 * Its size is the region's (resizes move it; vfabd does not record
	 * it): what ibv_create_cq reported, one short of the ring.
	 */
	uint32_t cap = res->r->cqs[i].cap;

	one->cqn = i;
	one->cqe = cap && !(cap & (cap - 1)) ? cap - 1 : 0;
	one->pid = (uint32_t)res->k->cqs[i].owner.pid;
	one->users = qp_users(res, (int)i, -1);
}

static void fill_mr(const struct vfab_nl_res *res, uint32_t i, struct vfab_nl_mr *one)
{
	const struct vfab_mr_slot *s = &res->k->mrs[i];

	one->mrn = i;
	one->key = s->key;
	one->pdn = s->pd;
	one->pid = (uint32_t)s->owner.pid;
	one->length = s->length;
	one->iova = s->iova;
}

/* A PD's users: the QPs, MRs and SRQs made with it. */
static void fill_pd(const struct vfab_nl_res *res, uint32_t i, struct vfab_nl_pd *one)
{
	const struct vfab_ktab *k = res->k;
	uint64_t users = qp_users(res, -1, (int)i);

	for (uint32_t m = vfab_ktab_next(k, VFAB_OBJ_MR, 0); m != VFAB_SLOT_END;
	     m = vfab_ktab_next(k, VFAB_OBJ_MR, m + 1))
		users += vfab_ktab_used(&k->mrs[m].state) && k->mrs[m].pd == i;
	for (uint32_t q = vfab_ktab_next(k, VFAB_OBJ_SRQ, 0); q != VFAB_SLOT_END;
	     q = vfab_ktab_next(k, VFAB_OBJ_SRQ, q + 1))
		users += vfab_ktab_used(&k->srqs[q].state) && k->srqs[q].pd == i;
	one->pdn = i;
	one->pid = (uint32_t)k->pds[i].owner.pid;
	one->users = users;
}

static void fill_srq(const struct vfab_nl_res *res, uint32_t i, struct vfab_nl_srq *one)
{
	const struct vfab_srq_slot *s = &res->k->srqs[i];

	one->srqn = i;
	one->pdn = s->pd;
	one->pid = (uint32_t)s->owner.pid;
}

int vfab_nl_res_next(const struct vfab_nl_res *res, enum vfab_obj kind, uint32_t *cursor,
		     union vfab_nl_entry *one)
{
	for (uint32_t i = vfab_ktab_next(res->k, kind, *cursor); i != VFAB_SLOT_END;
	     i = vfab_ktab_next(res->k, kind, i + 1)) {
		/* A QP's live slot must still be the sealed one (a new QP changes the QPN). */
		if (!here(res, kind, i) ||
		    (kind == VFAB_OBJ_QP && res->r->qps[i].qpn != res->k->qps[i].qpn))
			continue;
		switch (kind) {
		case VFAB_OBJ_PD:
			fill_pd(res, i, &one->pd);
			break;
		case VFAB_OBJ_MR:
			fill_mr(res, i, &one->mr);
			break;
		case VFAB_OBJ_CQ:
			fill_cq(res, i, &one->cq);
			break;
		case VFAB_OBJ_SRQ:
			fill_srq(res, i, &one->srq);
			break;
		default:
			fill_qp(res, i, &one->qp);
			break;
		}
		*cursor = i + 1;
		return 0;
	}
	return -ENOENT;
}
