/* SPDX-License-Identifier: MIT */
/* The QP state transition table for RC and UD (see vfab_qp_state.h). */
#include "provider/vfab_qp_state.h"

#include <errno.h>
#include <stdbool.h>

enum { T_RC, T_UD, T_COUNT };
#define NSTATES (IBV_QPS_ERR + 1)

struct transition {
	bool valid;
	uint32_t req[T_COUNT];
	uint32_t opt[T_COUNT];
};

#define RC_PATH_OPT (IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE)

static const struct transition table[NSTATES][NSTATES] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = {.valid = true},
		[IBV_QPS_INIT] = {
			.valid = true,
			.req = {
				[T_RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
			},
		},
		[IBV_QPS_ERR] = {.valid = true},
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = {.valid = true},
		[IBV_QPS_ERR] = {.valid = true},
		[IBV_QPS_INIT] = {
			.valid = true,
			.opt = {
				[T_RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
			},
		},
		[IBV_QPS_RTR] = {
			.valid = true,
			.req = {
				[T_RC] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
			},
			.opt = {
				[T_RC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
			},
		},
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = {.valid = true},
		[IBV_QPS_ERR] = {.valid = true},
		[IBV_QPS_RTS] = {
			.valid = true,
			.req = {
				[T_RC] = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
				[T_UD] = IBV_QP_SQ_PSN,
			},
			.opt = {
				[T_RC] = IBV_QP_CUR_STATE | RC_PATH_OPT,
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
			},
		},
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = {.valid = true},
		[IBV_QPS_ERR] = {.valid = true},
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_RC] = IBV_QP_CUR_STATE | RC_PATH_OPT,
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
			},
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.opt = {
				[T_RC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[T_UD] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
			},
		},
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = {.valid = true},
		[IBV_QPS_ERR] = {.valid = true},
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_RC] = IBV_QP_CUR_STATE | RC_PATH_OPT,
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
			},
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.opt = {
				[T_RC] = IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
					 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_PKEY_INDEX | RC_PATH_OPT,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
			},
		},
	},
	/* SQE exists only for unreliable services: an RC QP never reaches it. */
	[IBV_QPS_SQE] = {
		[IBV_QPS_RESET] = {.valid = true},
		[IBV_QPS_ERR] = {.valid = true},
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
			},
		},
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = {.valid = true},
		[IBV_QPS_ERR] = {.valid = true},
	},
};

static int type_index(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
		return T_RC;
	case IBV_QPT_UD:
		return T_UD;
	default:
		return -1;
	}
}

static const struct transition *lookup(enum ibv_qp_type type, enum ibv_qp_state cur,
				       enum ibv_qp_state next, int *t)
{
	*t = type_index(type);
	if (*t < 0 || (unsigned int)cur >= NSTATES || (unsigned int)next >= NSTATES)
		return NULL;
	if (type == IBV_QPT_RC && (cur == IBV_QPS_SQE || next == IBV_QPS_SQE))
		return NULL;
	return table[cur][next].valid ? &table[cur][next] : NULL;
}

uint32_t vfab_qp_required_attrs(enum ibv_qp_type type, enum ibv_qp_state cur,
				enum ibv_qp_state next)
{
	int t;
	const struct transition *tr = lookup(type, cur, next, &t);

	return tr ? tr->req[t] : 0;
}

uint32_t vfab_qp_optional_attrs(enum ibv_qp_type type, enum ibv_qp_state cur,
				enum ibv_qp_state next)
{
	int t;
	const struct transition *tr = lookup(type, cur, next, &t);

	return tr ? tr->opt[t] : 0;
}

int vfab_qp_modify_ok(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next,
		      uint32_t mask)
{
	const struct transition *tr;
	int t;

	if (type_index(type) < 0)
		return -EOPNOTSUPP;
	/* The current state may only be asserted where the QP is operational. */
	if ((mask & IBV_QP_CUR_STATE) && cur != IBV_QPS_RTR && cur != IBV_QPS_RTS &&
	    cur != IBV_QPS_SQD && cur != IBV_QPS_SQE)
		return -EINVAL;
	tr = lookup(type, cur, next, &t);
	if (!tr)
		return -EINVAL;
	if ((mask & tr->req[t]) != tr->req[t])
		return -EINVAL;
	if (mask & ~(tr->req[t] | tr->opt[t] | IBV_QP_STATE))
		return -EINVAL;
	return 0;
}
