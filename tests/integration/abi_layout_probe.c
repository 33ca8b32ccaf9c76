/* SPDX-License-Identifier: MIT */
/*
 * abi_layout_probe: proves provider/verbs_abi.h (vfab's own declaration of
 * libibverbs' private provider ABI) against the libibverbs installed here.
 * It opens a vfab device through the public API and checks that the private
 * structures libibverbs made hold what the declaration says at the declared
 * offsets, that the public inline wrappers land in the provider, and that
 * verbs calls reach the provider's operations (their effects show up in the
 * fabric's shared region).
 *
 * Usage, inside a node:   vfab exec node0 -- abi_layout_probe [DEV]
 * Prints one "ok"/"FAIL" line per check; exits 0 when all pass, 1 when one
 * fails, 2 when there is no vfab device to probe.
 */
#include "base/paths.h"
#include "fabric/region.h"
#include "provider/verbs_abi.h"

#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROVIDER_SO VFAB_PROVIDER_LIB

static int failures;

static bool check(bool ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		printf("ok   %s\n", name);
		return true;
	}
	failures++;
	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return false;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && !strcmp(s + n - m, tail);
}

/* The shared object a function pointer points into. */
static const char *object_of(const void *fn)
{
	Dl_info info;

	if (!fn || !dladdr(fn, &info) || !info.dli_fname)
		return "?";
	return info.dli_fname;
}

static bool in_provider(const void *fn)
{
	return ends_with(object_of(fn), PROVIDER_SO);
}

/* Maps the region named by the device's locator; NULL when unreadable. */
static struct vfab_region *open_region(const char *ibdev_path, uint32_t *hca)
{
	char path[512], key[32], val[256], region[256] = "";
	struct vfab_region *r;
	FILE *f;

	snprintf(path, sizeof(path), "%s/device/vfab", ibdev_path);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	while (fscanf(f, "%31s %255s", key, val) == 2) {
		if (!strcmp(key, "region"))
			snprintf(region, sizeof(region), "%s", val);
		else if (!strcmp(key, "hca"))
			*hca = (uint32_t)strtoul(val, NULL, 10);
	}
	fclose(f);
	return region[0] && !vfab_region_open(region, &r) ? r : NULL;
}

static void probe_device(struct ibv_device *dev)
{
	struct vabi_device *vd = (struct vabi_device *)dev;
	const char *name = ibv_get_device_name(dev);
	char tail[80];
	__be64 guid;

	check(vd->ops && vd->ops->name && !strcmp(vd->ops->name, "vfab"),
	      "verbs_device.ops (offset 664) is the vfab driver", "ops name %s",
	      vd->ops && vd->ops->name ? vd->ops->name : "(null)");
	check(vd->ops && vd->ops->match_min_abi_version == 1 && vd->ops->match_max_abi_version == 1,
	      "verbs_device_ops ABI range fields", "wrong values");
	if (!check(vd->sysfs != NULL, "verbs_device.sysfs (offset 696) is set", "NULL"))
		return;
	check(!strcmp(vd->sysfs->ibdev_name, name), "verbs_sysfs_dev.ibdev_name (offset 112)",
	      "'%s' vs '%s'", vd->sysfs->ibdev_name, name);
	snprintf(tail, sizeof(tail), "/%s", name);
	check(ends_with(vd->sysfs->ibdev_path, tail) &&
		  !strcmp(vd->sysfs->ibdev_path, dev->ibdev_path),
	      "verbs_sysfs_dev.ibdev_path (offset 176)", "'%s'", vd->sysfs->ibdev_path);
	check(!strncmp(vd->sysfs->modalias, "pci:v000015b3d0000101bsv", 24),
	      "verbs_sysfs_dev.modalias (offset 432)", "'%s'", vd->sysfs->modalias);
	check(vd->sysfs->abi_ver == 1, "verbs_sysfs_dev.abi_ver (offset 968)", "%u",
	      vd->sysfs->abi_ver);
	check(!strcmp(vd->sysfs->sysfs_name, dev->dev_name),
	      "verbs_sysfs_dev.sysfs_name (offset 36)", "'%s' vs '%s'", vd->sysfs->sysfs_name,
	      dev->dev_name);
	guid = ibv_get_device_guid(dev);
	check(be64toh(guid) == vd->sysfs->node_guid, "verbs_sysfs_dev.node_guid (offset 944)",
	      "%llx vs %llx", (unsigned long long)be64toh(guid),
	      (unsigned long long)vd->sysfs->node_guid);
	check(atomic_load(&vd->refcount) >= 1, "verbs_device.refcount (offset 672)", "%d",
	      atomic_load(&vd->refcount));
}

static void probe_context(struct ibv_context *ctx)
{
	struct verbs_context *vctx = verbs_get_ctx(ctx);
	struct stat st;

	if (!check(vctx != NULL, "verbs_get_ctx() sees an extended context", "NULL"))
		return;
	check((char *)ctx - (char *)vctx == 320, "verbs_context.context at offset 320", "%td",
	      (char *)ctx - (char *)vctx);
	check(vctx->sz == sizeof(struct verbs_context), "verbs_context.sz is 648 bytes", "%zu",
	      vctx->sz);
	check(in_provider((void *)ctx->ops.post_send), "ibv_post_send lands in the provider", "%s",
	      object_of((void *)ctx->ops.post_send));
	check(in_provider((void *)ctx->ops.post_recv), "ibv_post_recv lands in the provider", "%s",
	      object_of((void *)ctx->ops.post_recv));
	check(in_provider((void *)ctx->ops.poll_cq), "ibv_poll_cq lands in the provider", "%s",
	      object_of((void *)ctx->ops.poll_cq));
	check(in_provider((void *)ctx->ops.req_notify_cq),
	      "ibv_req_notify_cq lands in the provider", "%s",
	      object_of((void *)ctx->ops.req_notify_cq));
	check(in_provider((void *)vctx->query_device_ex),
	      "ibv_query_device_ex lands in the provider", "%s",
	      object_of((void *)vctx->query_device_ex));
	check(in_provider((void *)vctx->create_qp_ex), "ibv_create_qp_ex lands in the provider",
	      "%s", object_of((void *)vctx->create_qp_ex));
	check(fstat(ctx->async_fd, &st) == 0 && S_ISFIFO(st.st_mode),
	      "the async event fd is the provider's FIFO", "not a FIFO");
}

static void probe_objects(struct ibv_context *ctx, struct vfab_region *r, uint32_t hca)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	pid_t self = getpid();
	char *buf = calloc(1, 8192);
	int n = 0;

	check(ibv_query_device(ctx, &da) == 0 && da.vendor_part_id == 4123 &&
		  be64toh(da.node_guid) == r->hcas[hca].node_guid,
	      "ibv_query_device reaches query_device_ex", "part %u", da.vendor_part_id);
	check(ibv_query_port(ctx, 1, &pa) == 0 &&
		  pa.active_mtu == (enum ibv_mtu)r->hcas[hca].ports[0].active_mtu &&
		  pa.gid_tbl_len == VFAB_SYSFS_GID_TBL_LEN &&
		  pa.link_layer == IBV_LINK_LAYER_ETHERNET,
	      "ibv_query_port reaches query_port", "mtu %d", pa.active_mtu);

	pd = ibv_alloc_pd(ctx);
	if (!check(pd && pd->handle < VFAB_MAX_PDS && r->pds[pd->handle].owner.pid == self,
		   "ibv_alloc_pd reaches alloc_pd (region PD slot is ours)", "%s", strerror(errno)))
		return;
	mr = ibv_reg_mr(pd, buf, 8192, access);
	if (check(mr && r->mrs[mr->lkey >> 8].key == mr->lkey &&
		      r->mrs[mr->lkey >> 8].addr == (uintptr_t)buf &&
		      r->mrs[mr->lkey >> 8].length == 8192,
		  "ibv_reg_mr reaches reg_mr (region MR slot holds the range)", "%s",
		  strerror(errno)))
		check(((struct vabi_mr *)mr)->mr_type == VABI_MR_TYPE_MR &&
			  ((struct vabi_mr *)mr)->access == access,
		      "verbs_mr.mr_type/access (offsets 48/52)", "%d %d",
		      ((struct vabi_mr *)mr)->mr_type, ((struct vabi_mr *)mr)->access);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	check(cq && r->cqs[cq->handle].owner.pid == self &&
		  r->cqs[cq->handle].user_cq == (uintptr_t)cq,
	      "ibv_create_cq reaches create_cq", "%s", strerror(errno));
	if (!mr || !cq)
		return;
	{
		struct ibv_qp_init_attr a = {
		    .send_cq = cq,
		    .recv_cq = cq,
		    .qp_type = IBV_QPT_RC,
		    .cap = {
			.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};

		qp = ibv_create_qp(pd, &a);
	}
	if (!check(qp && r->qps[qp->qp_num & (VFAB_MAX_QPS - 1)].qpn == qp->qp_num &&
		       r->qps[qp->qp_num & (VFAB_MAX_QPS - 1)].owner.pid == self,
		   "ibv_create_qp reaches create_qp", "%s", strerror(errno)))
		return;
	check(((struct vabi_qp *)qp)->comp_mask == 0 && ibv_qp_to_qp_ex(qp) == NULL,
	      "verbs_qp.comp_mask (offset 352) of a plain QP", "comp_mask %u",
	      ((struct vabi_qp *)qp)->comp_mask);
	{
		struct ibv_qp_init_attr_ex a = {.send_cq = cq,
						.recv_cq = cq,
						.qp_type = IBV_QPT_RC,
						.cap = {.max_send_wr = 4,
							.max_recv_wr = 4,
							.max_send_sge = 1,
							.max_recv_sge = 1},
						.comp_mask = IBV_QP_INIT_ATTR_PD |
							     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
						.pd = pd,
						.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE};
		struct ibv_qp *qx = ibv_create_qp_ex(ctx, &a);

		check(qx && ibv_qp_to_qp_ex(qx) == (struct ibv_qp_ex *)qx,
		      "libibverbs reads verbs_qp.comp_mask (ibv_qp_to_qp_ex)", "%s",
		      strerror(errno));
		if (qx)
			ibv_destroy_qp(qx);
	}

	/* Loop the QP to itself and move bytes through the public inlines. */
	{
		struct ibv_qp_attr a = {
		    .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = access};
		union ibv_gid gid;
		int gidx = 3;

		for (gidx = 0; gidx < 256; gidx++) {
			struct ibv_gid_entry e;

			if (!ibv_query_gid_ex(ctx, 1, (uint32_t)gidx, &e, 0) &&
			    e.gid_type == IBV_GID_TYPE_ROCE_V2) {
				gid = e.gid;
				break;
			}
		}
		ibv_modify_qp(qp, &a,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = qp->qp_num;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 12;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = gid;
		a.ah_attr.grh.sgid_index = (uint8_t)gidx;
		a.ah_attr.port_num = 1;
		ibv_modify_qp(qp, &a,
			      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		check(ibv_modify_qp(qp, &a,
				    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					IBV_QP_MAX_QP_RD_ATOMIC) == 0 &&
			  qp->state == IBV_QPS_RTS,
		      "ibv_modify_qp reaches modify_qp", "%s", strerror(errno));
	}
	{
		struct ibv_sge src = {.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey};
		struct ibv_sge dst = {
		    .addr = (uintptr_t)buf + 4096, .length = 64, .lkey = mr->lkey};
		struct ibv_recv_wr rwr = {.wr_id = 2, .sg_list = &dst, .num_sge = 1}, *rbad;
		struct ibv_send_wr wr = {.wr_id = 1,
					 .sg_list = &src,
					 .num_sge = 1,
					 .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED},
				   *bad;

		memcpy(buf, "through the public inline wrappers", 35);
		check(ibv_post_recv(qp, &rwr, &rbad) == 0, "ibv_post_recv accepted", "failed");
		check(ibv_post_send(qp, &wr, &bad) == 0, "ibv_post_send accepted", "failed");
		for (int i = 0; i < 1000000 && n < 2; i++)
			n += ibv_poll_cq(cq, 1, &wc) > 0;
		check(n == 2 && !memcmp(buf + 4096, buf, 35), "loopback SEND moved the bytes",
		      "%d completions", n);
	}
	{
		uint32_t slot = qp->qp_num & (VFAB_MAX_QPS - 1);
		uint32_t mslot = mr->lkey >> 8;

		ibv_destroy_qp(qp);
		ibv_dereg_mr(mr);
		check(atomic_load(&r->qps[slot].state) == VFAB_SLOT_FREE &&
			  atomic_load(&r->mrs[mslot].state) == VFAB_SLOT_FREE,
		      "destroy_qp / dereg_mr free their region slots", "still used");
	}
	{
		struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
		struct ibv_srq *srq = ibv_create_srq(pd, &sa);
		uint32_t num = 0;

		check(srq && ((struct vabi_srq *)srq)->srq_type == IBV_SRQT_BASIC &&
			  ibv_get_srq_num(srq, &num) == 0 &&
			  num == ((struct vabi_srq *)srq)->srq_num,
		      "verbs_srq.srq_type/srq_num (offsets 128/152)", "%s", strerror(errno));
		if (srq)
			ibv_destroy_srq(srq);
	}
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	free(buf);
}

int main(int argc, char **argv)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;
	struct ibv_context *ctx;
	struct vfab_region *r;
	uint32_t hca = 0;
	int i;

	for (i = 0; list && list[i]; i++)
		if (argc < 2 || !strcmp(ibv_get_device_name(list[i]), argv[1]))
			dev = dev ? dev : list[i];
	if (!dev) {
		fprintf(stderr, "abi_layout_probe: no RDMA device%s%s\n", argc > 1 ? " " : "",
			argc > 1 ? argv[1] : "");
		return 2;
	}
	printf("# probing %s with libibverbs private ABI %d\n", ibv_get_device_name(dev),
	       VFAB_PABI);
	probe_device(dev);
	r = open_region(dev->ibdev_path, &hca);
	if (!check(r != NULL, "device/vfab locator names a mappable region", "cannot map"))
		return 1;
	ctx = ibv_open_device(dev);
	if (!check(ctx != NULL, "ibv_open_device", "%s", strerror(errno)))
		return 1;
	probe_context(ctx);
	probe_objects(ctx, r, hca);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("# %s\n", failures ? "FAILED" : "all checks passed");
	return failures ? 1 : 0;
}
