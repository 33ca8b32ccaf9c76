/* SPDX-License-Identifier: MIT */
/*
 * Device and port attributes. The numbers are a ConnectX-6's where vfab
 * behaves like one, and the region's limits where it does not, so that
 * programs sizing themselves from the attributes never exceed what the
 * provider accepts. GIDs and P_Keys are read from sysfs by libibverbs.
 */
#include "provider/vfab.h"
#include "provider/vfab_flow.h"
#include "fabric/mcast.h"

#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#define VFAB_VENDOR_ID 0x02c9 /* Mellanox */
#define VFAB_VENDOR_PART 4123 /* ConnectX-6 */
#define VFAB_FW_VER "20.35.1012"

static void fill_device_attr(struct vfab_context *ctx, struct ibv_device_attr *a)
{
	const struct vfab_hca *h = ctx->hca;

	snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", VFAB_FW_VER);
	a->node_guid = htobe64(h->node_guid);
	a->sys_image_guid = htobe64(h->sys_image_guid);
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 0xfffffffffffff000ull;
	a->vendor_id = VFAB_VENDOR_ID;
	a->vendor_part_id = VFAB_VENDOR_PART;
	a->hw_ver = 0;
	a->max_qp = (int)vfab_dev_limit(ctx->r, ctx->hca_idx, VFAB_OBJ_QP);
	a->max_qp_wr = VFAB_MAX_QP_WR;
	/*
	 * What mlx5_ib_query_device sets on a ConnectX-6's RoCE port (never
	 * CURR_QP_STATE_MOD), less what vfab does not do: AUTO_PATH_MIG (no
	 * alternate paths) and MEM_MGT_EXTENSIONS (no fast registration
	 * WRs). A program checks these before it uses the feature. Netlink
	 * reports the same word (rdmanl/nl_cmd.c).
	 */
	_Static_assert(VFAB_DEVICE_CAP_FLAGS ==
			   (IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR |
			    IBV_DEVICE_CHANGE_PHY_PORT | IBV_DEVICE_PORT_ACTIVE_EVENT |
			    IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_RC_RNR_NAK_GEN |
			    IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_XRC | IBV_DEVICE_MEM_WINDOW_TYPE_2B |
			    IBV_DEVICE_RAW_IP_CSUM | IBV_DEVICE_MANAGED_FLOW_STEERING),
		       "device_cap_flags");
	a->device_cap_flags = VFAB_DEVICE_CAP_FLAGS;
	a->max_sge = VFAB_MAX_SGE;
	a->max_sge_rd = VFAB_MAX_SGE;
	a->max_cq = (int)vfab_dev_limit(ctx->r, ctx->hca_idx, VFAB_OBJ_CQ);
	a->max_cqe = VFAB_MAX_CQE;
	a->max_mr = (int)vfab_dev_limit(ctx->r, ctx->hca_idx, VFAB_OBJ_MR);
	/* Windows are keys of the MR table, as mkeys are on a ConnectX. */
	a->max_mw = a->max_mr;
	a->max_pd = (int)vfab_dev_limit(ctx->r, ctx->hca_idx, VFAB_OBJ_PD);
	a->max_qp_rd_atom = VFAB_MAX_RD_ATOM;
	a->max_res_rd_atom = VFAB_MAX_RD_ATOM * a->max_qp;
	a->max_qp_init_rd_atom = VFAB_MAX_RD_ATOM;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_mcast_grp = (int)VFAB_MCAST_MAX_GRP;
	a->max_mcast_qp_attach = (int)VFAB_MCAST_MAX_QP_ATTACH;
	a->max_total_mcast_qp_attach = (int)VFAB_MCAST_MAX_TOTAL_ATTACH;
	a->max_ah = INT_MAX;
	a->max_srq = (int)vfab_dev_limit(ctx->r, ctx->hca_idx, VFAB_OBJ_SRQ);
	a->max_srq_wr = VFAB_MAX_SRQ_WR;
	a->max_srq_sge = VFAB_MAX_SRQ_SGE;
	a->max_pkeys = VFAB_MAX_PKEYS;
	a->local_ca_ack_delay = 16;
	a->phys_port_cnt = (uint8_t)h->nports;
}

int vfab_query_device_ex(struct ibv_context *ibctx, const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct vfab_context *ctx = to_vctx(ibctx);
	struct ibv_device_attr_ex full;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	memset(&full, 0, sizeof(full));
	fill_device_attr(ctx, &full.orig_attr);
	/*
	 * On-demand paging as a ConnectX-6 reports it (vfab_odp.c); its device
	 * memory (vfab_dm.c); checksums and RSS of raw packet QPs' frames
	 * (vfab_raw.c); tag matching (vfab_tm.c), but no TSO; the device
	 * clock of vfab_util.h.
	 */
	full.device_cap_flags_ex = full.orig_attr.device_cap_flags;
	full.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	full.odp_caps.per_transport_caps.rc_odp_caps =
	    IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
	    IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
	full.odp_caps.per_transport_caps.ud_odp_caps =
	    IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_SRQ_RECV;
	/* XRC receives through SRQs only. */
	full.xrc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
			    IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
	full.raw_packet_caps = IBV_RAW_PACKET_CAP_IP_CSUM;
	vfab_tm_caps(&full.tm_caps);
	/* RSS (vfab_wq.c, vfab_raw.c): Toeplitz over addresses and ports. */
	full.rss_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
	full.rss_caps.max_rwq_indirection_tables = (uint32_t)full.orig_attr.max_qp;
	full.rss_caps.max_rwq_indirection_table_size = 1u << 16;
	full.rss_caps.rx_hash_fields_mask = VFAB_RSS_FIELDS;
	full.rss_caps.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
	full.max_wq_type_rq = full.orig_attr.max_srq;
	full.max_dm_size = VFAB_CX_MAX_DM_BYTES;
	full.completion_timestamp_mask = VFAB_TIMESTAMP_MASK;
	full.hca_core_clock = VFAB_HCA_CORE_CLOCK_KHZ;
	full.phys_port_cnt_ex = ctx->hca->nports;
	if (attr_size > sizeof(full))
		attr_size = sizeof(full);
	memcpy(attr, &full, attr_size);
	return 0;
}

int vfab_query_rt_values(struct ibv_context *ibctx, struct ibv_values_ex *values)
{
	(void)ibctx;
	if (values->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK)
		return EINVAL;
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		/* As libmlx5: the raw clock's ticks in tv_nsec. */
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec = (long)vfab_device_clock_ns();
	}
	return 0;
}

int vfab_query_port(struct ibv_context *ibctx, uint8_t port, struct ibv_port_attr *attr)
{
	struct vfab_context *ctx = to_vctx(ibctx);
	const struct vfab_port *p;
	uint32_t state;

	if (port < 1 || port > ctx->hca->nports)
		return EINVAL;
	p = &ctx->hca->ports[port - 1];
	state = atomic_load(&p->state);
	attr->state = (enum ibv_port_state)state;
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = (enum ibv_mtu)p->active_mtu;
	attr->gid_tbl_len = VFAB_SYSFS_GID_TBL_LEN;
	attr->port_cap_flags = VFAB_PORT_CAP_FLAGS;
	_Static_assert(VFAB_PORT_CAP_FLAGS == (IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS),
		       "the port's capabilities are CM_SUP and IP_BASED_GIDS");
	attr->max_msg_sz = VFAB_MAX_MSG_SZ;
	attr->pkey_tbl_len = VFAB_PKEY_TBL_LEN;
	attr->active_width = p->active_width;
	attr->active_speed = p->active_speed;
	/* 5 LinkUp, 3 Disabled: what the port's netdev carrier would give. */
	attr->phys_state = state == IBV_PORT_ACTIVE ? 5 : 3;
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

const struct vfab_gid *vfab_port_gid(const struct vfab_port *p, uint32_t index)
{
	uint32_t i, n = p->ngids < VFAB_PORT_GIDS ? p->ngids : VFAB_PORT_GIDS;

	for (i = 0; i < n; i++)
		if (p->gids[i].index == index && p->gids[i].type != VFAB_GID_EMPTY)
			return &p->gids[i];
	return NULL;
}
