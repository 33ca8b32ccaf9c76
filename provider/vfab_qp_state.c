/* SPDX-License-Identifier: MIT */
/* The QP state transition table for RC, UC, UD, XRC and raw packet QPs (see vfab_qp_state.h). */
#include "provider/vfab_qp_state.h"

#include <errno.h>
#include <stdbool.h>

#define RC_PATH                                                                                    \
	(IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE)
#define RC_INIT (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define UD_INIT (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)
#define RC_RTR                                                                                     \
	(IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |                           \
	 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define RC_RTS                                                                                     \
	(IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |                    \
	 IBV_QP_MAX_QP_RD_ATOMIC)
#define RC_SQD_SQD                                                                                 \
	(IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |          \
	 IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_PKEY_INDEX | RC_PATH)
/* UC: RC without the ACK machinery (timers, retries, RNR, RDMA READ and atomics). */
#define UC_PATH (IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE)
#define UC_INIT RC_INIT
#define UC_RTR (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)
#define UC_SQD_SQD (IBV_QP_PKEY_INDEX | IBV_QP_AV | UC_PATH)
#define NONE 0xffffffffu /* the transition does not exist for this type */

/* One row per transition: required and optional attributes for RC, UC and UD. */
struct rule {
	enum ibv_qp_state cur, next;
	uint32_t rc_req, rc_opt, uc_req, uc_opt, ud_req, ud_opt;
};

/*
 * Any state may go to RESET or ERR without attributes (not handled here);
 * SQE exists only for unreliable services, so RC never reaches or leaves it.
 */
static const struct rule rules[] = {
    {IBV_QPS_RESET, IBV_QPS_INIT, RC_INIT, 0, UC_INIT, 0, UD_INIT, 0},
    {IBV_QPS_INIT, IBV_QPS_INIT, 0, RC_INIT, 0, UC_INIT, 0, UD_INIT},
    {IBV_QPS_INIT, IBV_QPS_RTR, RC_RTR, IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
     UC_RTR, IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX, 0,
     IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
    {IBV_QPS_RTR, IBV_QPS_RTS, RC_RTS, IBV_QP_CUR_STATE | RC_PATH, IBV_QP_SQ_PSN,
     IBV_QP_CUR_STATE | UC_PATH, IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY},
    {IBV_QPS_RTS, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | RC_PATH, 0, IBV_QP_CUR_STATE | UC_PATH, 0,
     IBV_QP_CUR_STATE | IBV_QP_QKEY},
    {IBV_QPS_RTS, IBV_QPS_SQD, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY, 0,
     IBV_QP_EN_SQD_ASYNC_NOTIFY},
    {IBV_QPS_SQD, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | RC_PATH, 0, IBV_QP_CUR_STATE | UC_PATH, 0,
     IBV_QP_CUR_STATE | IBV_QP_QKEY},
    {IBV_QPS_SQD, IBV_QPS_SQD, 0, RC_SQD_SQD, 0, UC_SQD_SQD, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
    {IBV_QPS_SQE, IBV_QPS_RTS, NONE, NONE, 0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS, 0,
     IBV_QP_CUR_STATE | IBV_QP_QKEY},
};

static bool known_type(enum ibv_qp_type type)
{
	return type == IBV_QPT_RC || type == IBV_QPT_UC || type == IBV_QPT_UD ||
	       type == IBV_QPT_XRC_SEND || type == IBV_QPT_XRC_RECV || type == IBV_QPT_RAW_PACKET;
}

/*
 * A raw packet QP has UD's transitions with none of its attributes but the
 * port, which RESET->INIT requires and INIT->INIT allows (the kernel's
 * qp_state_table; its rate limit is not offered).
 */
static void raw_adjust(enum ibv_qp_type type, uint32_t *req, uint32_t *opt)
{
	if (type != IBV_QPT_RAW_PACKET)
		return;
	*req &= IBV_QP_PORT;
	*opt &= IBV_QP_PORT;
}

/*
 * XRC's QPs take RC's rules but for what each half lacks (the kernel's
 * qp_state_table): the initiator answers nothing (no responder resources
 * or RNR timer to set at RTR), the target sends nothing (only its ACK
 * timeout and first PSN at RTS, its RNR timer settable from then on).
 */
static void xrc_adjust(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next,
		       uint32_t *req, uint32_t *opt)
{
	if (type == IBV_QPT_XRC_SEND && cur == IBV_QPS_INIT && next == IBV_QPS_RTR)
		*req &= ~(uint32_t)(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (type == IBV_QPT_XRC_SEND && next == IBV_QPS_RTS)
		*opt &= ~(uint32_t)IBV_QP_MIN_RNR_TIMER;
	if (type == IBV_QPT_XRC_RECV && cur == IBV_QPS_RTR && next == IBV_QPS_RTS)
		*req = IBV_QP_TIMEOUT | IBV_QP_SQ_PSN;
	if (type == IBV_QPT_XRC_RECV && next == IBV_QPS_RTS)
		*opt |= IBV_QP_MIN_RNR_TIMER;
	if (type == IBV_QPT_XRC_SEND && cur == IBV_QPS_SQD && next == IBV_QPS_SQD)
		*opt &= ~(uint32_t)(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (type == IBV_QPT_XRC_RECV && cur == IBV_QPS_SQD && next == IBV_QPS_SQD)
		*opt &= ~(uint32_t)(IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static bool known_state(enum ibv_qp_state s)
{
	return s >= IBV_QPS_RESET && s <= IBV_QPS_ERR;
}

/* Required/optional attributes of a transition; false when it does not exist. */
static bool lookup(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next,
		   uint32_t *req, uint32_t *opt)
{
	size_t i;

	*req = *opt = 0;
	if (!known_type(type) || !known_state(cur) || !known_state(next))
		return false;
	if (type != IBV_QPT_UC && type != IBV_QPT_UD && (cur == IBV_QPS_SQE || next == IBV_QPS_SQE))
		return false;
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		return true;
	for (i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		const struct rule *r = &rules[i];

		if (r->cur != cur || r->next != next)
			continue;
		bool ud = type == IBV_QPT_UD || type == IBV_QPT_RAW_PACKET;

		*req = type == IBV_QPT_UC ? r->uc_req : ud ? r->ud_req : r->rc_req;
		*opt = type == IBV_QPT_UC ? r->uc_opt : ud ? r->ud_opt : r->rc_opt;
		if (*req == NONE) {
			*req = *opt = 0;
			return false;
		}
		xrc_adjust(type, cur, next, req, opt);
		raw_adjust(type, req, opt);
		return true;
	}
	return false;
}

uint32_t vfab_qp_required_attrs(enum ibv_qp_type type, enum ibv_qp_state cur,
				enum ibv_qp_state next)
{
	uint32_t req, opt;

	return lookup(type, cur, next, &req, &opt) ? req : 0;
}

uint32_t vfab_qp_optional_attrs(enum ibv_qp_type type, enum ibv_qp_state cur,
				enum ibv_qp_state next)
{
	uint32_t req, opt;

	return lookup(type, cur, next, &req, &opt) ? opt : 0;
}

int vfab_qp_modify_ok(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next,
		      uint32_t mask)
{
	uint32_t req, opt;

	if (!known_type(type))
		return -EOPNOTSUPP;
	/* The current state may only be asserted where the QP is operational. */
	if ((mask & IBV_QP_CUR_STATE) && cur != IBV_QPS_RTR && cur != IBV_QPS_RTS &&
	    cur != IBV_QPS_SQD && cur != IBV_QPS_SQE)
		return -EINVAL;
	if (!lookup(type, cur, next, &req, &opt))
		return -EINVAL;
	if ((mask & req) != req || (mask & ~(req | opt | IBV_QP_STATE)))
		return -EINVAL;
	return 0;
}
