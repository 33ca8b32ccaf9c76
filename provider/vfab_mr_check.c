/* SPDX-License-Identifier: MIT */
/* Memory key, bounds and access checks (see vfab_mr_check.h). */
#include "provider/vfab_mr_check.h"

#include <errno.h>

/* Bits a v44-era kernel accepts at registration besides the optional range. */
#define MR_ACCESS_MANDATORY ((1u << 10) - 1)

/* [addr, addr+len) inside [base, base+size), without overflow. */
static int in_range(uint64_t addr, uint64_t len, uint64_t base, uint64_t size)
{
	if (addr < base)
		return 0;
	if (addr - base > size)
		return 0;
	return len <= size - (addr - base);
}

/* A slot being filled or revoked has length 0 and matches nothing. */
static int usable(const struct vfab_mr_slot *mr, uint32_t key, uint32_t hca, uint32_t pd)
{
	return mr && mr->key == key && mr->hca == hca && mr->pd == pd && mr->length != 0;
}

enum ibv_wc_status vfab_mr_check_local(const struct vfab_mr_slot *mr, uint32_t lkey, uint32_t hca,
				       uint32_t pd, uint64_t addr, uint64_t len, uint32_t need,
				       uint64_t *va)
{
	if (!usable(mr, lkey, hca, pd))
		return IBV_WC_LOC_PROT_ERR;
	if ((mr->access & need) != need)
		return IBV_WC_LOC_PROT_ERR;
	if (!in_range(addr, len, mr->iova, mr->length))
		return IBV_WC_LOC_PROT_ERR;
	*va = mr->addr + (addr - mr->iova);
	return IBV_WC_SUCCESS;
}

enum ibv_wc_status vfab_mr_check_remote(const struct vfab_mr_slot *mr, uint32_t rkey, uint32_t hca,
					uint32_t pd, uint64_t addr, uint64_t len, uint32_t need,
					uint32_t qp_access, uint64_t *va)
{
	if (!usable(mr, rkey, hca, pd))
		return IBV_WC_REM_ACCESS_ERR;
	if ((mr->access & need) != need || (qp_access & need) != need)
		return IBV_WC_REM_ACCESS_ERR;
	if (!in_range(addr, len, mr->iova, mr->length))
		return IBV_WC_REM_ACCESS_ERR;
	*va = mr->addr + (addr - mr->iova);
	return IBV_WC_SUCCESS;
}

enum ibv_wc_status vfab_atomic_check_local(uint64_t len)
{
	return len == 8 ? IBV_WC_SUCCESS : IBV_WC_LOC_LEN_ERR;
}

enum ibv_wc_status vfab_atomic_check_remote(uint64_t remote_addr)
{
	return (remote_addr & 7) ? IBV_WC_REM_INV_REQ_ERR : IBV_WC_SUCCESS;
}

int vfab_mr_access_valid(unsigned int access)
{
	if (access & ~(MR_ACCESS_MANDATORY | IBV_ACCESS_OPTIONAL_RANGE))
		return -EINVAL;
	/* The HCA must be allowed to write locally whatever a peer may write. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}
