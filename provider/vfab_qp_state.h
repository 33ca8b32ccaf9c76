/* SPDX-License-Identifier: MIT */
/*
 * The InfiniBand QP state machine (IBTA vol. 1, "QP state transitions"):
 * which transitions exist for RC and UD QPs and which attributes each one
 * requires and allows. Pure functions, unit-tested without libibverbs.
 */
#ifndef VFAB_QP_STATE_H
#define VFAB_QP_STATE_H

#include <infiniband/verbs.h>
#include <stdint.h>

/*
 * Whether modify_qp(mask) may move a QP of this type from cur to next
 * (next == cur when the mask has no IBV_QP_STATE). 0 when allowed, -EINVAL
 * when the transition does not exist, a required attribute is missing or
 * an attribute is not allowed; -EOPNOTSUPP for QP types vfab does not have.
 */
int vfab_qp_modify_ok(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next,
		      uint32_t mask);

/* Attributes a transition requires / allows (0 when it does not exist). */
uint32_t vfab_qp_required_attrs(enum ibv_qp_type type, enum ibv_qp_state cur,
				enum ibv_qp_state next);
uint32_t vfab_qp_optional_attrs(enum ibv_qp_type type, enum ibv_qp_state cur,
				enum ibv_qp_state next);

#endif /* VFAB_QP_STATE_H */
