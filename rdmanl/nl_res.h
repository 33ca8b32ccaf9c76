/* SPDX-License-Identifier: MIT */
/*
 * The resources (restrack) of an HCA, as `rdma resource` lists them: the
 * PDs, CQs, QPs, MRs and SRQs its processes hold. Who owns what comes from
 * vfabd's object table (fabric/ktab.h, written by vfabd only); what moves
 * (a QP's state, port, PSNs, its peer) from the region, mapped read-only.
 * Both are found through the HCA's locator (base/locator.h), never through
 * anything a user could have written.
 */
#ifndef VFAB_NL_RES_H
#define VFAB_NL_RES_H

#include <stdbool.h>
#include <stdint.h>

#include "fabric/ktab.h"
#include "fabric/region.h"

struct vfab_nl_res {
	const struct vfab_region *r;
	const struct vfab_ktab *k;
	uint32_t hca;
};

/* Maps what the locator's text names; 0 or -errno. */
int vfab_nl_res_open(const char *locator, struct vfab_nl_res *out);
void vfab_nl_res_close(struct vfab_nl_res *res);

/* Objects of each kind the HCA's processes hold. */
void vfab_nl_res_count(const struct vfab_nl_res *res, uint64_t count[VFAB_OBJ_KINDS]);

/* One QP as the kernel's restrack describes it. */
struct vfab_nl_qp {
	uint32_t qpn, port, pdn, type, state, pid;
	bool connected; /* RC or UC: rqpn and rq_psn are sent */
	uint32_t rqpn, rq_psn, sq_psn;
};
struct vfab_nl_cq {
	uint32_t cqn, cqe, pid;
	uint64_t users; /* QPs completing into it */
};
struct vfab_nl_mr {
	uint32_t mrn, key, pdn, pid;
	uint64_t length, iova;
};
struct vfab_nl_pd {
	uint32_t pdn, pid;
	uint64_t users; /* QPs, MRs and SRQs made with it */
};
struct vfab_nl_srq {
	uint32_t srqn, pdn, pid, cqn;
};

/* One object of any kind (the kind says which member). */
union vfab_nl_entry {
	struct vfab_nl_qp qp;
	struct vfab_nl_cq cq;
	struct vfab_nl_mr mr;
	struct vfab_nl_pd pd;
	struct vfab_nl_srq srq;
};

/*
 * The HCA's next object of `kind` (MRs: registrations, not windows) from
 * slot *cursor on: fills the kind's member of `one` and advances *cursor
 * past it; 0, or -ENOENT when there are no more.
 */
int vfab_nl_res_next(const struct vfab_nl_res *res, enum vfab_obj kind, uint32_t *cursor,
		     union vfab_nl_entry *one);

#endif /* VFAB_NL_RES_H */
