/* SPDX-License-Identifier: MIT */
/*
 * Device memory (ibv_alloc_dm, ibv_memcpy_to_dm/from_dm, ibv_reg_dm_mr),
 * with a ConnectX-6's rules (libmlx5's MEMIC): at most max_dm_size in all,
 * copies of whole 4-byte words at 4-byte offsets inside the allocation,
 * MRs on it zero based. The memory is the allocating process's own (an
 * HCA's on-chip memory is where peers' RDMA lands without crossing PCIe;
 * here every buffer is host memory alike), so a DM MR is an MR of that
 * memory, reached by peers as any other.
 */
#include "provider/vfab.h"
#include "provider/vfab_mr_check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* What this process holds, bounded as a device's MEMIC is. */
static _Atomic uint64_t dm_held;

#define DM_ACCESS                                                                                  \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_OPTIONAL_RANGE)

static struct vfab_dm *to_vdm(struct ibv_dm *dm)
{
	return (struct vfab_dm *)dm;
}

/* The rule of both copies: inside the allocation (EFAULT), whole aligned words (EINVAL). */
static int check_copy(const struct vfab_dm *dm, uint64_t offset, size_t length)
{
	if (offset > dm->length || length > dm->length - offset)
		return EFAULT;
	if ((offset | length) & 3)
		return EINVAL;
	return 0;
}

static int copy_to(struct ibv_dm *ibdm, uint64_t offset, const void *host, size_t length)
{
	struct vfab_dm *dm = to_vdm(ibdm);
	int rc = check_copy(dm, offset, length);

	if (!rc && length)
		memcpy((char *)dm->buf + offset, host, length);
	return rc;
}

static int copy_from(void *host, struct ibv_dm *ibdm, uint64_t offset, size_t length)
{
	struct vfab_dm *dm = to_vdm(ibdm);
	int rc = check_copy(dm, offset, length);

	if (!rc && length)
		memcpy(host, (char *)dm->buf + offset, length);
	return rc;
}

struct ibv_dm *vfab_alloc_dm(struct ibv_context *ctx, struct ibv_alloc_dm_attr *attr)
{
	uint64_t held;
	struct vfab_dm *dm;
	size_t align;

	if (attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	if (!attr->length || attr->length > VFAB_CX_MAX_DM_BYTES || attr->log_align_req > 12) {
		errno = EINVAL;
		return NULL;
	}
	held = atomic_fetch_add(&dm_held, attr->length);
	if (held + attr->length > VFAB_CX_MAX_DM_BYTES) {
		atomic_fetch_sub(&dm_held, attr->length);
		errno = ENOMEM;
		return NULL;
	}
	dm = calloc(1, sizeof(*dm));
	align = (size_t)1 << (attr->log_align_req > 6 ? attr->log_align_req : 6);
	if (!dm || posix_memalign(&dm->buf, align, attr->length)) {
		free(dm);
		atomic_fetch_sub(&dm_held, attr->length);
		errno = ENOMEM;
		return NULL;
	}
	memset(dm->buf, 0, attr->length);
	dm->length = attr->length;
	dm->vdm.dm.context = ctx;
	dm->vdm.dm.memcpy_to_dm = copy_to;
	dm->vdm.dm.memcpy_from_dm = copy_from;
	return &dm->vdm.dm;
}

int vfab_free_dm(struct ibv_dm *ibdm)
{
	struct vfab_dm *dm = to_vdm(ibdm);

	if (atomic_load(&dm->users))
		return EBUSY;
	atomic_fetch_sub(&dm_held, dm->length);
	free(dm->buf);
	free(dm);
	return 0;
}

/* Zero based, as every DM MR (libibverbs refuses it otherwise): addresses are offsets in the MR. */
struct ibv_mr *vfab_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm, uint64_t offset,
			      size_t length, unsigned int access)
{
	struct vfab_dm *dm = to_vdm(ibdm);
	struct ibv_mr *mr;

	/* A zero length is taken, as mlx5 takes it: a key that reaches nothing. */
	if ((access & ~DM_ACCESS) || !(access & IBV_ACCESS_ZERO_BASED) || offset > dm->length ||
	    length > dm->length - offset ||
	    vfab_mr_access_valid(access & ~(unsigned int)IBV_ACCESS_ZERO_BASED)) {
		errno = EINVAL;
		return NULL;
	}
	mr = vfab_mr_register(pd, (char *)dm->buf + offset, length, 0,
			      (int)(access & ~(unsigned int)IBV_ACCESS_ZERO_BASED));
	if (!mr)
		return NULL;
	((struct vfab_mr *)mr)->dm = dm;
	((struct vfab_mr *)mr)->vmr.access = (int)access;
	atomic_fetch_add(&dm->users, 1);
	mr->context = pd->context;
	mr->pd = pd;
	mr->addr = NULL;
	mr->length = length;
	return mr;
}
