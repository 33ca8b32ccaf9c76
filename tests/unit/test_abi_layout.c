/* SPDX-License-Identifier: MIT */
/*
 * Run-time checks of the libibverbs facts the provider is built on that the
 * static asserts of provider/verbs_abi.h cannot express: enum values the
 * region stores as numbers (and that other processes and vfabd read back),
 * the records written into event FIFOs, and the contract offsets between the
 * provider and the preload library. tests/integration/abi_layout_probe.c
 * proves the private structures against the installed libibverbs itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "provider/vfab.h"

static void test_struct_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct vabi_sysfs_dev), 992);
	assert_int_equal(offsetof(struct vabi_sysfs_dev, ibdev_path), 176);
	assert_int_equal(sizeof(struct vabi_device), 712);
	assert_int_equal(offsetof(struct vabi_device, ops), 664);
	assert_int_equal(sizeof(struct vabi_context_ops), 76 * sizeof(void *));
	assert_int_equal(offsetof(struct vabi_qp, comp_mask), sizeof(struct ibv_qp_ex));
	assert_int_equal(offsetof(struct vabi_mr, mr_type), sizeof(struct ibv_mr));
	assert_int_equal(offsetof(struct verbs_context, context), 320);
	/* Our wrappers start with libibverbs' objects: it casts between them. */
	assert_int_equal(offsetof(struct vfab_qp, vqp), 0);
	assert_int_equal(offsetof(struct vfab_cq, vcq), 0);
	assert_int_equal(offsetof(struct vfab_mr, vmr), 0);
	assert_int_equal(offsetof(struct vfab_srq, vsrq), 0);
	assert_int_equal(offsetof(struct vfab_pd, ibv), 0);
	assert_int_equal(offsetof(struct vfab_ah, ibv), 0);
}

static void test_preload_contract(void **state)
{
	(void)state;
	assert_int_equal(offsetof(struct vfab_device, vdev), 0);
	assert_int_equal(offsetof(struct vfab_device, create_channel),
			 VFAB_DEVICE_CREATE_CHANNEL_OFF);
	assert_int_equal(offsetof(struct vfab_device, destroy_channel),
			 VFAB_DEVICE_DESTROY_CHANNEL_OFF);
	assert_int_equal(offsetof(struct vfab_channel_head, ch), 8);
}

/* What ibv_get_cq_event and ibv_get_async_event read from their fds. */
static void test_event_records(void **state)
{
	struct async_record {
		uint64_t element;
		uint32_t event_type;
		uint32_t reserved;
	};

	(void)state;
	assert_int_equal(sizeof(struct async_record), 16);
	assert_int_equal(sizeof(uint64_t), sizeof(struct ibv_cq *));
	assert_int_equal(IBV_EVENT_CQ_ERR, 0);
	assert_int_equal(IBV_EVENT_QP_FATAL, 1);
	assert_int_equal(IBV_EVENT_QP_REQ_ERR, 2);
	assert_int_equal(IBV_EVENT_QP_ACCESS_ERR, 3);
	assert_int_equal(IBV_EVENT_SQ_DRAINED, 5);
	assert_int_equal(IBV_EVENT_SRQ_LIMIT_REACHED, 15);
	assert_int_equal(IBV_EVENT_QP_LAST_WQE_REACHED, 16);
}

/* Values stored as plain numbers in the shared region. */
static void test_region_encodings(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct vfab_cqe), 64);
	assert_int_equal(IBV_QPS_RESET, 0);
	assert_int_equal(IBV_QPS_INIT, 1);
	assert_int_equal(IBV_QPS_RTR, 2);
	assert_int_equal(IBV_QPS_RTS, 3);
	assert_int_equal(IBV_QPS_SQD, 4);
	assert_int_equal(IBV_QPS_SQE, 5);
	assert_int_equal(IBV_QPS_ERR, 6);
	assert_int_equal(IBV_PORT_DOWN, 1);
	assert_int_equal(IBV_PORT_ACTIVE, 4);
	assert_int_equal(IBV_MTU_256, 1);
	assert_int_equal(IBV_MTU_4096, 5);
	assert_int_equal(128 << IBV_MTU_1024, 1024);
	assert_int_equal(IBV_QPT_RC, 2);
	assert_int_equal(IBV_QPT_UD, 4);
	assert_int_equal(IBV_LINK_LAYER_ETHERNET, 2);
	assert_int_equal(IBV_ACCESS_LOCAL_WRITE, 1);
	assert_int_equal(IBV_ACCESS_REMOTE_WRITE, 2);
	assert_int_equal(IBV_ACCESS_REMOTE_READ, 4);
	assert_int_equal(IBV_ACCESS_REMOTE_ATOMIC, 8);
}

/* poll_cq tells send completions (which retire send WQEs) by opcode. */
static void test_wc_opcodes(void **state)
{
	(void)state;
	assert_int_equal(IBV_WC_RECV, 128);
	assert_true(IBV_WC_SEND < IBV_WC_RECV);
	assert_true(IBV_WC_RDMA_WRITE < IBV_WC_RECV);
	assert_true(IBV_WC_RDMA_READ < IBV_WC_RECV);
	assert_true(IBV_WC_COMP_SWAP < IBV_WC_RECV);
	assert_true(IBV_WC_FETCH_ADD < IBV_WC_RECV);
	assert_true(IBV_WC_RECV_RDMA_WITH_IMM >= IBV_WC_RECV);
	assert_int_equal(IBV_ACCESS_RELAXED_ORDERING, IBV_ACCESS_OPTIONAL_FIRST);
	assert_true(IBV_ACCESS_OPTIONAL_RANGE & IBV_ACCESS_RELAXED_ORDERING);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_struct_layout), cmocka_unit_test(test_preload_contract),
	    cmocka_unit_test(test_event_records), cmocka_unit_test(test_region_encodings),
	    cmocka_unit_test(test_wc_opcodes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
