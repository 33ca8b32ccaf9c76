/* SPDX-License-Identifier: MIT */
/*
 * Contexts: the verbs operation table, the async event FIFO, the liveness
 * connection to vfabd, and the cleanup of whatever a program forgot to
 * destroy before closing the device.
 */
#include "provider/vfab_dest.h"
#include "provider/vfab_dma.h"
#include "provider/vfab_raw.h"
#include "base/fsutil.h"
#include "base/proc.h"
#include "fabric/ctl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <unistd.h>

static void vfab_free_context(struct ibv_context *ibctx);

static const struct vabi_context_ops vfab_ctx_ops = {
    .alloc_pd = vfab_alloc_pd,
    .dealloc_pd = vfab_dealloc_pd,
    .reg_mr = vfab_reg_mr,
    .advise_mr = vfab_advise_mr,
    .dereg_mr = vfab_dereg_mr,
    .alloc_mw = vfab_alloc_mw,
    .dealloc_mw = vfab_dealloc_mw,
    .bind_mw = vfab_bind_mw,
    .create_cq = vfab_create_cq,
    .resize_cq = vfab_resize_cq,
    .rereg_mr = vfab_rereg_mr,
    .alloc_parent_domain = vfab_alloc_parent_domain,
    .alloc_td = vfab_alloc_td,
    .dealloc_td = vfab_dealloc_td,
    .create_cq_ex = vfab_create_cq_ex,
    .destroy_cq = vfab_destroy_cq,
    .poll_cq = vfab_poll_cq,
    .req_notify_cq = vfab_req_notify_cq,
    .create_qp = vfab_create_qp,
    .create_qp_ex = vfab_create_qp_ex,
    .modify_qp = vfab_modify_qp,
    .query_qp = vfab_query_qp,
    .destroy_qp = vfab_destroy_qp,
    .attach_mcast = vfab_attach_mcast,
    .create_flow = vfab_create_flow,
    .create_wq = vfab_create_wq,
    .modify_wq = vfab_modify_wq,
    .destroy_wq = vfab_destroy_wq,
    .create_rwq_ind_table = vfab_create_rwq_ind_table,
    .destroy_rwq_ind_table = vfab_destroy_rwq_ind_table,
    .destroy_flow = vfab_destroy_flow,
    .detach_mcast = vfab_detach_mcast,
    .post_send = vfab_post_send,
    .post_recv = vfab_post_recv,
    .create_srq = vfab_create_srq,
    .create_srq_ex = vfab_create_srq_ex,
    .open_xrcd = vfab_open_xrcd,
    .alloc_dm = vfab_alloc_dm,
    .free_dm = vfab_free_dm,
    .reg_dm_mr = vfab_reg_dm_mr,
    .close_xrcd = vfab_close_xrcd,
    .modify_srq = vfab_modify_srq,
    .query_srq = vfab_query_srq,
    .destroy_srq = vfab_destroy_srq,
    .post_srq_recv = vfab_post_srq_recv,
    .post_srq_ops = vfab_post_srq_ops,
    .get_srq_num = vfab_get_srq_num,
    .create_ah = vfab_create_ah,
    .destroy_ah = vfab_destroy_ah,
    .query_device_ex = vfab_query_device_ex,
    .query_rt_values = vfab_query_rt_values,
    .query_port = vfab_query_port,
    .free_context = vfab_free_context,
};

/*
 * Peers of the same user copy into this process with process_vm_writev,
 * which Yama's ptrace_scope 1 allows only to ancestors or to a declared
 * tracer: declare any (the kernel still requires the same user, or root).
 * Scope 2 and 3 forbid it whatever we say; a peer then gets EPERM.
 */
static void allow_peer_copies(void)
{
	static atomic_bool done;
	char buf[8];

	if (atomic_exchange(&done, true))
		return;
	if (vfab_read_file("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)) > 0 &&
	    buf[0] == '1' && prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) < 0)
		vfab_dbg("PR_SET_PTRACER: %s: peers may not copy into this process",
			 strerror(errno));
}

struct verbs_context *vfab_alloc_context(struct ibv_device *ibdev, int cmd_fd, void *private_data)
{
	struct vfab_device *dev = (struct vfab_device *)ibdev;
	struct vfab_context *ctx;
	long ncpu;
	int fd;

	(void)private_data;
	ctx = _verbs_init_and_alloc_context(
	    ibdev, cmd_fd, sizeof(*ctx),
	    (struct verbs_context *)offsetof(struct vfab_context, vctx), 0);
	if (!ctx)
		return NULL;
	ctx->dev = dev;
	ctx->map = dev->map;
	ctx->r = dev->region;
	ctx->k = dev->map->k;
	ctx->map_bytes = dev->map->map_bytes;
	ctx->hca_idx = dev->hca;
	ctx->hca = &ctx->r->hcas[dev->hca];
	ctx->copy_engines = vfab_dma_configure(ctx->hca->copy_engines);
	/*
	 * Our pid and start time as the fabric sees them (vfab_owner.h). The run
	 * dir, here and for every file below, is the root-owned locator's: the
	 * region's may name anything (docs/TRUST.md).
	 */
	vfab_pidview_init(&ctx->pv, dev->rundir, &ctx->owner);
	ctx->owner.ctx_id = vfab_next_id();
	ctx->owner.hca = dev->hca; /* objects count against this device's limits */
	ctx->async_id = vfab_next_id();
	ctx->ctl_fd = -1;

	/* The path is for vfabd (HELLO's async=); the FIFO is made in the locator's directory. */
	fd = vfab_fifo_path(ctx->async_path, sizeof(ctx->async_path), dev->rundir, ctx->owner.pid,
			    ctx->async_id);
	fd = fd ? fd : vfab_fifo_create(ctx->r, ctx->owner.pid, ctx->async_id);
	if (fd < 0) {
		vfab_dbg("cannot create async event FIFO in %s: %s", dev->rundir, strerror(-fd));
		errno = -fd;
		goto fail;
	}
	ctx->vctx.context.async_fd = fd;

	verbs_set_ops(&ctx->vctx, &vfab_ctx_ops);
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	ctx->vctx.context.num_comp_vectors = ncpu < 1 ? 1 : ncpu > 64 ? 64 : (int)ncpu;
	allow_peer_copies();
	vfab_ctl_hello(ctx);
	return &ctx->vctx;
fail:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	return NULL;
}

/*
 * Frees the objects this context still holds, QPs first: those vfabd
 * sealed for this process and context (the region's owners are anyone's
 * to rewrite), its record withdrawn before the region slot is freed.
 */
static void free_leftovers(struct vfab_context *ctx)
{
	struct vfab_region *r = ctx->r;
	const struct vfab_ktab *k = ctx->k;
	uint32_t id = ctx->owner.ctx_id;
	int32_t pid = ctx->owner.pid;
	uint32_t i;

#define OWNED(kind, tbl, i)                                                                        \
	(atomic_load(&k->tbl[i].state) == VFAB_SLOT_USED && k->tbl[i].owner.pid == pid &&          \
	 k->tbl[i].owner.ctx_id == id && !vfab_ctl_unseal(ctx, kind, i))

	for (i = vfab_ktab_next(k, VFAB_OBJ_QP, 0); i != VFAB_SLOT_END;
	     i = vfab_ktab_next(k, VFAB_OBJ_QP, i + 1)) {
		if (!OWNED(VFAB_OBJ_QP, qps, i))
			continue;
		struct vfab_qp *qp = atomic_load(&ctx->map->qps[i]);

		if (qp) {
			vfab_engine_cancel(qp);
			vfab_dest_close(qp);
			atomic_store(&ctx->map->qps[i], NULL);
		}
		vfab_qp_free(r, i);
	}
	for (i = vfab_ktab_next(k, VFAB_OBJ_SRQ, 0); i != VFAB_SLOT_END;
	     i = vfab_ktab_next(k, VFAB_OBJ_SRQ, i + 1))
		if (OWNED(VFAB_OBJ_SRQ, srqs, i))
			vfab_srq_free(r, i);
	for (i = vfab_ktab_next(k, VFAB_OBJ_CQ, 0); i != VFAB_SLOT_END;
	     i = vfab_ktab_next(k, VFAB_OBJ_CQ, i + 1))
		if (OWNED(VFAB_OBJ_CQ, cqs, i))
			vfab_cq_free(r, i);
	for (i = vfab_ktab_next(k, VFAB_OBJ_MR, 0); i != VFAB_SLOT_END;
	     i = vfab_ktab_next(k, VFAB_OBJ_MR, i + 1))
		if (OWNED(VFAB_OBJ_MR, mrs, i))
			vfab_mr_free(r, i);
	for (i = vfab_ktab_next(k, VFAB_OBJ_PD, 0); i != VFAB_SLOT_END;
	     i = vfab_ktab_next(k, VFAB_OBJ_PD, i + 1))
		if (OWNED(VFAB_OBJ_PD, pds, i))
			vfab_pd_free(r, i);
#undef OWNED
}

static void vfab_free_context(struct ibv_context *ibctx)
{
	struct vfab_context *ctx = to_vctx(ibctx);

	free_leftovers(ctx);
	vfab_ctl_bye(ctx);
	vfab_fifo_remove(ctx->r, ctx->owner.pid, ctx->async_id);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}
