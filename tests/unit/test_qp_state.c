/* SPDX-License-Identifier: MIT */
/*
 * The QP state machine of provider/vfab_qp_state.c against the IB spec's
 * transition table: every valid transition with exactly its required
 * attributes and with all its optional ones, every missing required
 * attribute, attributes a transition does not allow, and transitions that do
 * not exist.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "provider/vfab_qp_state.h"

#include <errno.h>
#include <stdbool.h>

struct valid {
	enum ibv_qp_type type;
	enum ibv_qp_state cur, next;
	uint32_t req, opt;
};

#define RC IBV_QPT_RC
#define UC IBV_QPT_UC
#define UD IBV_QPT_UD
#define XI IBV_QPT_XRC_SEND
#define XT IBV_QPT_XRC_RECV
#define RAW IBV_QPT_RAW_PACKET
#define UC_PATH (IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE)
#define RC_PATH                                                                                    \
	(IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE)

/* Written from the IBTA table, independently of the implementation's. */
static const struct valid valid_transitions[] = {
    {RC, IBV_QPS_RESET, IBV_QPS_RESET, 0, 0},
    {RC, IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0},
    {RC, IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
    {RC, IBV_QPS_INIT, IBV_QPS_RTR,
     IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
	 IBV_QP_MIN_RNR_TIMER,
     IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX},
    {RC, IBV_QPS_RTR, IBV_QPS_RTS,
     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
     IBV_QP_CUR_STATE | RC_PATH},
    {RC, IBV_QPS_RTS, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | RC_PATH},
    {RC, IBV_QPS_RTS, IBV_QPS_SQD, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY},
    {RC, IBV_QPS_SQD, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | RC_PATH},
    {RC, IBV_QPS_SQD, IBV_QPS_SQD, 0,
     IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
	 IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_PKEY_INDEX | RC_PATH},
    {UC, IBV_QPS_RESET, IBV_QPS_RESET, 0, 0},
    {UC, IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0},
    {UC, IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
    {UC, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
     IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX},
    {UC, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | UC_PATH},
    {UC, IBV_QPS_RTS, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | UC_PATH},
    {UC, IBV_QPS_RTS, IBV_QPS_SQD, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY},
    {UC, IBV_QPS_SQD, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | UC_PATH},
    {UC, IBV_QPS_SQD, IBV_QPS_SQD, 0, IBV_QP_PKEY_INDEX | IBV_QP_AV | UC_PATH},
    {UC, IBV_QPS_SQE, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS},
    {UD, IBV_QPS_RESET, IBV_QPS_RESET, 0, 0},
    {UD, IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0},
    {UD, IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY},
    {UD, IBV_QPS_INIT, IBV_QPS_RTR, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
    {UD, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY},
    {UD, IBV_QPS_RTS, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
    {UD, IBV_QPS_RTS, IBV_QPS_SQD, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY},
    {UD, IBV_QPS_SQD, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
    {UD, IBV_QPS_SQD, IBV_QPS_SQD, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY},
    {UD, IBV_QPS_SQE, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY},
    {XI, IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0},
    {XI, IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
    {XI, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
     IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX},
    {XI, IBV_QPS_RTR, IBV_QPS_RTS,
     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
     IBV_QP_CUR_STATE | UC_PATH},
    {XI, IBV_QPS_RTS, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | UC_PATH},
    {XI, IBV_QPS_RTS, IBV_QPS_SQD, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY},
    {XI, IBV_QPS_SQD, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | UC_PATH},
    {XI, IBV_QPS_SQD, IBV_QPS_SQD, 0,
     IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
	 IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_PKEY_INDEX | UC_PATH},
    {XT, IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0},
    {XT, IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
    {XT, IBV_QPS_INIT, IBV_QPS_RTR,
     IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
	 IBV_QP_MIN_RNR_TIMER,
     IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX},
    {XT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_TIMEOUT | IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | RC_PATH},
    {XT, IBV_QPS_RTS, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | RC_PATH},
    {XT, IBV_QPS_RTS, IBV_QPS_SQD, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY},
    {XT, IBV_QPS_SQD, IBV_QPS_RTS, 0, IBV_QP_CUR_STATE | RC_PATH},
    {XT, IBV_QPS_SQD, IBV_QPS_SQD, 0,
     IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_PKEY_INDEX |
	 RC_PATH},
    /* The kernel's qp_state_table: a raw packet QP takes only its port. */
    {RAW, IBV_QPS_RESET, IBV_QPS_RESET, 0, 0},
    {RAW, IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PORT, 0},
    {RAW, IBV_QPS_INIT, IBV_QPS_INIT, 0, IBV_QP_PORT},
    {RAW, IBV_QPS_INIT, IBV_QPS_RTR, 0, 0},
    {RAW, IBV_QPS_RTR, IBV_QPS_RTS, 0, 0},
    {RAW, IBV_QPS_RTS, IBV_QPS_RTS, 0, 0},
    {RAW, IBV_QPS_RTS, IBV_QPS_SQD, 0, 0},
    {RAW, IBV_QPS_SQD, IBV_QPS_RTS, 0, 0},
    {RAW, IBV_QPS_SQD, IBV_QPS_SQD, 0, 0},
};

static const enum ibv_qp_state all_states[] = {
    IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_SQE, IBV_QPS_ERR};

/* A state changing transition names IBV_QP_STATE; staying put need not. */
static uint32_t with_state(enum ibv_qp_state cur, enum ibv_qp_state next, uint32_t mask)
{
	return cur == next ? mask : mask | IBV_QP_STATE;
}

static void test_valid_with_required_only(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(valid_transitions) / sizeof(valid_transitions[0]); i++) {
		const struct valid *v = &valid_transitions[i];

		assert_int_equal(vfab_qp_modify_ok(v->type, v->cur, v->next,
						   with_state(v->cur, v->next, v->req)),
				 0);
		assert_int_equal(vfab_qp_required_attrs(v->type, v->cur, v->next), v->req);
		assert_int_equal(vfab_qp_optional_attrs(v->type, v->cur, v->next), v->opt);
	}
}

static void test_valid_with_all_optional(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(valid_transitions) / sizeof(valid_transitions[0]); i++) {
		const struct valid *v = &valid_transitions[i];

		assert_int_equal(
		    vfab_qp_modify_ok(v->type, v->cur, v->next, IBV_QP_STATE | v->req | v->opt), 0);
	}
}

static void test_missing_required_attr(void **state)
{
	size_t i;
	uint32_t bit;

	(void)state;
	for (i = 0; i < sizeof(valid_transitions) / sizeof(valid_transitions[0]); i++) {
		const struct valid *v = &valid_transitions[i];

		for (bit = 1; bit; bit <<= 1) {
			if (!(v->req & bit))
				continue;
			assert_int_equal(vfab_qp_modify_ok(v->type, v->cur, v->next,
							   IBV_QP_STATE | (v->req & ~bit)),
					 -EINVAL);
		}
	}
}

static void test_attr_not_allowed(void **state)
{
	(void)state;
	/* The QP number and PSNs are fixed at RTR/RTS, not at INIT. */
	assert_int_equal(vfab_qp_modify_ok(RC, IBV_QPS_RESET, IBV_QPS_INIT,
					   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_ACCESS_FLAGS | IBV_QP_DEST_QPN),
			 -EINVAL);
	/* A UD QP has a Q_Key, not access flags. */
	assert_int_equal(vfab_qp_modify_ok(UD, IBV_QPS_RESET, IBV_QPS_INIT,
					   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_QKEY | IBV_QP_ACCESS_FLAGS),
			 -EINVAL);
	/* The path cannot change at RTS, only at SQD. */
	assert_int_equal(vfab_qp_modify_ok(RC, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_AV), -EINVAL);
	assert_int_equal(vfab_qp_modify_ok(RC, IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_TIMEOUT), -EINVAL);
	/* Going to RESET or ERR takes no attributes. */
	assert_int_equal(
	    vfab_qp_modify_ok(RC, IBV_QPS_RTS, IBV_QPS_ERR, IBV_QP_STATE | IBV_QP_SQ_PSN), -EINVAL);
	assert_int_equal(
	    vfab_qp_modify_ok(RC, IBV_QPS_INIT, IBV_QPS_RESET, IBV_QP_STATE | IBV_QP_PORT),
	    -EINVAL);
	/* The current state may only be asserted on an operational QP. */
	assert_int_equal(vfab_qp_modify_ok(RC, IBV_QPS_RESET, IBV_QPS_INIT,
					   IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_PKEY_INDEX |
					       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
			 -EINVAL);
}

static bool listed(enum ibv_qp_type t, enum ibv_qp_state cur, enum ibv_qp_state next)
{
	size_t i;

	for (i = 0; i < sizeof(valid_transitions) / sizeof(valid_transitions[0]); i++)
		if (valid_transitions[i].type == t && valid_transitions[i].cur == cur &&
		    valid_transitions[i].next == next)
			return true;
	return false;
}

/* Everything else but "to RESET" and "to ERR" must be refused. */
static void test_invalid_transitions(void **state)
{
	static const enum ibv_qp_type types[] = {RC, UC, UD, XI, XT, RAW};
	size_t t, c, n;

	(void)state;
	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		for (c = 0; c < 7; c++) {
			for (n = 0; n < 7; n++) {
				enum ibv_qp_state cur = all_states[c], next = all_states[n];
				bool rc_sqe = types[t] != UC && types[t] != UD &&
					      (cur == IBV_QPS_SQE || next == IBV_QPS_SQE);
				bool expect_ok =
				    listed(types[t], cur, next) ||
				    (!rc_sqe && (next == IBV_QPS_RESET || next == IBV_QPS_ERR));
				int rc = vfab_qp_modify_ok(
				    types[t], cur, next,
				    IBV_QP_STATE | vfab_qp_required_attrs(types[t], cur, next));

				assert_int_equal(rc, expect_ok ? 0 : -EINVAL);
			}
		}
	}
	/* A few by name, for the reader. */
	assert_int_equal(vfab_qp_modify_ok(RC, IBV_QPS_RESET, IBV_QPS_RTR, IBV_QP_STATE), -EINVAL);
	assert_int_equal(vfab_qp_modify_ok(RC, IBV_QPS_INIT, IBV_QPS_RTS, IBV_QP_STATE), -EINVAL);
	assert_int_equal(
	    vfab_qp_modify_ok(RC, IBV_QPS_ERR, IBV_QPS_INIT,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
	    -EINVAL);
	assert_int_equal(vfab_qp_modify_ok(RC, IBV_QPS_SQE, IBV_QPS_RTS, IBV_QP_STATE), -EINVAL);
}

static void test_unsupported_types(void **state)
{
	(void)state;
	assert_int_equal(
	    vfab_qp_modify_ok(IBV_QPT_DRIVER, IBV_QPS_RESET, IBV_QPS_ERR, IBV_QP_STATE),
	    -EOPNOTSUPP);
	/* Nor do raw packet QPs, which have no Q_Key or PSN either. */
	assert_int_equal(vfab_qp_modify_ok(RAW, IBV_QPS_SQE, IBV_QPS_RTS, IBV_QP_STATE), -EINVAL);
	assert_int_equal(vfab_qp_modify_ok(RAW, IBV_QPS_RESET, IBV_QPS_INIT,
					   IBV_QP_STATE | IBV_QP_PORT | IBV_QP_QKEY),
			 -EINVAL);
	assert_int_equal(
	    vfab_qp_modify_ok(RAW, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_SQ_PSN),
	    -EINVAL);
	/* XRC's QPs never see SQE, as RC's. */
	assert_int_equal(
	    vfab_qp_modify_ok(IBV_QPT_XRC_RECV, IBV_QPS_SQE, IBV_QPS_RTS, IBV_QP_STATE), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid_with_required_only),
	    cmocka_unit_test(test_valid_with_all_optional),
	    cmocka_unit_test(test_missing_required_attr),
	    cmocka_unit_test(test_attr_not_allowed),
	    cmocka_unit_test(test_invalid_transitions),
	    cmocka_unit_test(test_unsupported_types),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
