/* SPDX-License-Identifier: MIT */
#include "rdmanl/nl_res.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/locator.h"

/* The region, read-only: a reader never needs more, and cannot harm it. */
static int map_region(const char *path, struct vfab_nl_res *res)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	const struct vfab_region *r;
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < sizeof(*r)) {
		close(fd);
		return -EPROTO;
	}
	r = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (r == MAP_FAILED)
		return -errno;
	if (r->magic != VFAB_REGION_MAGIC || r->version != VFAB_REGION_VERSION) {
		munmap((void *)r, (size_t)st.st_size);
		return -EPROTO;
	}
	res->r = r;
	res->r_bytes = (uint64_t)st.st_size;
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
		munmap((void *)res->r, res->r_bytes);
	memset(res, 0, sizeof(*res));
}

/* A sealed slot of this HCA (the records' common head: state, then hca further on). */
#define SEALED_HERE(res, s) (vfab_ktab_used(&(s)->state) && (s)->hca == (res)->hca)

void vfab_nl_res_count(const struct vfab_nl_res *res, uint64_t count[VFAB_OBJ_KINDS])
{
	const struct vfab_ktab *k = res->k;

	memset(count, 0, sizeof(uint64_t) * VFAB_OBJ_KINDS);
	for (uint32_t i = 0; i < vfab_ktab_top(k, VFAB_OBJ_PD); i++)
		count[VFAB_OBJ_PD] += SEALED_HERE(res, &k->pds[i]);
	for (uint32_t i = 0; i < vfab_ktab_top(k, VFAB_OBJ_MR); i++)
		count[VFAB_OBJ_MR] +=
		    SEALED_HERE(res, &k->mrs[i]) && k->mrs[i].kind == VFAB_MKEY_MR;
	for (uint32_t i = 0; i < vfab_ktab_top(k, VFAB_OBJ_CQ); i++)
		count[VFAB_OBJ_CQ] += SEALED_HERE(res, &k->cqs[i]);
	for (uint32_t i = 0; i < vfab_ktab_top(k, VFAB_OBJ_SRQ); i++)
		count[VFAB_OBJ_SRQ] += SEALED_HERE(res, &k->srqs[i]);
	for (uint32_t i = 0; i < vfab_ktab_top(k, VFAB_OBJ_QP); i++)
		count[VFAB_OBJ_QP] += SEALED_HERE(res, &k->qps[i]);
}

/*
 * The PSN a QP's peer expects next: the requester's next PSN whenever none
 * of its messages is on its way (vfab delivers a message before it
 * completes it). The requester's own counter is in its process only.
 */
static uint32_t peer_epsn(const struct vfab_nl_res *res, uint32_t dest_qpn)
{
	uint32_t i = vfab_qpn_slot(dest_qpn);

	if (i >= vfab_ktab_top(res->k, VFAB_OBJ_QP) || !vfab_ktab_used(&res->k->qps[i].state) ||
	    res->k->qps[i].qpn != dest_qpn || res->r->qps[i].qpn != dest_qpn)
		return 0;
	return atomic_load_explicit(&res->r->qps[i].epsn, memory_order_relaxed) & 0xffffff;
}

int vfab_nl_res_next_qp(const struct vfab_nl_res *res, uint32_t *cursor, struct vfab_nl_qp *one)
{
	const struct vfab_ktab *k = res->k;

	for (uint32_t i = *cursor; i < vfab_ktab_top(k, VFAB_OBJ_QP); i++) {
		const struct vfab_qp_slot *s = &k->qps[i], *live = &res->r->qps[i];

		if (!SEALED_HERE(res, s) || live->qpn != s->qpn)
			continue;
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
			one->rq_psn =
			    atomic_load_explicit(&live->epsn, memory_order_relaxed) & 0xffffff;
			one->sq_psn = peer_epsn(res, one->rqpn);
		}
		*cursor = i + 1;
		return 0;
	}
	return -ENOENT;
}

/* QPs of this HCA that complete into CQ slot cq (either queue), or were made with PD slot pd. */
static uint64_t qp_users(const struct vfab_nl_res *res, int cq, int pd)
{
	const struct vfab_ktab *k = res->k;
	uint64_t n = 0;

	for (uint32_t i = 0; i < vfab_ktab_top(k, VFAB_OBJ_QP); i++) {
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

int vfab_nl_res_next_cq(const struct vfab_nl_res *res, uint32_t *cursor, struct vfab_nl_cq *one)
{
	const struct vfab_ktab *k = res->k;

	for (uint32_t i = *cursor; i < vfab_ktab_top(k, VFAB_OBJ_CQ); i++) {
		const struct vfab_cq_slot *s = &k->cqs[i];
		uint32_t cap;

		if (!SEALED_HERE(res, s))
			continue;
		one->cqn = i;
		/*
		 * Its size is the region's (resizes move it; vfabd does not
		 * record it): what ibv_create_cq reported, one short of the ring.
		 */
		cap = res->r->cqs[i].cap;
		one->cqe = cap && !(cap & (cap - 1)) ? cap - 1 : 0;
		one->pid = (uint32_t)s->owner.pid;
		one->users = qp_users(res, (int)i, -1);
		*cursor = i + 1;
		return 0;
	}
	return -ENOENT;
}

int vfab_nl_res_next_mr(const struct vfab_nl_res *res, uint32_t *cursor, struct vfab_nl_mr *one)
{
	const struct vfab_ktab *k = res->k;

	for (uint32_t i = *cursor; i < vfab_ktab_top(k, VFAB_OBJ_MR); i++) {
		const struct vfab_mr_slot *s = &k->mrs[i];

		if (!SEALED_HERE(res, s) || s->kind != VFAB_MKEY_MR)
			continue;
		one->mrn = i;
		one->key = s->key;
		one->pdn = s->pd;
		one->pid = (uint32_t)s->owner.pid;
		one->length = s->length;
		one->iova = s->iova;
		*cursor = i + 1;
		return 0;
	}
	return -ENOENT;
}

int vfab_nl_res_next_pd(const struct vfab_nl_res *res, uint32_t *cursor, struct vfab_nl_pd *one)
{
	const struct vfab_ktab *k = res->k;

	for (uint32_t i = *cursor; i < vfab_ktab_top(k, VFAB_OBJ_PD); i++) {
		const struct vfab_pd_slot *s = &k->pds[i];
		uint64_t users;

		if (!SEALED_HERE(res, s))
			continue;
		users = qp_users(res, -1, (int)i);
		for (uint32_t m = 0; m < vfab_ktab_top(k, VFAB_OBJ_MR); m++)
			users += vfab_ktab_used(&k->mrs[m].state) && k->mrs[m].pd == i;
		for (uint32_t q = 0; q < vfab_ktab_top(k, VFAB_OBJ_SRQ); q++)
			users += vfab_ktab_used(&k->srqs[q].state) && k->srqs[q].pd == i;
		one->pdn = i;
		one->pid = (uint32_t)s->owner.pid;
		one->users = users;
		*cursor = i + 1;
		return 0;
	}
	return -ENOENT;
}

int vfab_nl_res_next_srq(const struct vfab_nl_res *res, uint32_t *cursor, struct vfab_nl_srq *one)
{
	const struct vfab_ktab *k = res->k;

	for (uint32_t i = *cursor; i < vfab_ktab_top(k, VFAB_OBJ_SRQ); i++) {
		const struct vfab_srq_slot *s = &k->srqs[i];

		if (!SEALED_HERE(res, s))
			continue;
		one->srqn = i;
		one->pdn = s->pd;
		one->pid = (uint32_t)s->owner.pid;
		*cursor = i + 1;
		return 0;
	}
	return -ENOENT;
}
