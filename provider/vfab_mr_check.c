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

/* An MR's key: a window's is no lkey, and is checked as an rkey by its own rules. */
static int usable_mr(const struct vfab_mr_slot *mr, uint32_t key, uint32_t hca, uint32_t pd)
{
	return usable(mr, key, hca, pd) && mr->kind == VFAB_MKEY_MR;
}

enum ibv_wc_status vfab_mr_check_local(const struct vfab_mr_slot *mr, uint32_t lkey, uint32_t hca,
				       uint32_t pd, uint64_t addr, uint64_t len, uint32_t need,
				       uint64_t *va)
{
	if (!usable_mr(mr, lkey, hca, pd))
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
	if (!usable_mr(mr, rkey, hca, pd))
		return IBV_WC_REM_ACCESS_ERR;
	if ((mr->access & need) != need || (qp_access & need) != need)
		return IBV_WC_REM_ACCESS_ERR;
	if (!in_range(addr, len, mr->iova, mr->length))
		return IBV_WC_REM_ACCESS_ERR;
	*va = mr->addr + (addr - mr->iova);
	return IBV_WC_SUCCESS;
}

/* The remote rights a window may carry (ibv_bind_mw(3)). */
#define MW_RIGHTS                                                                                  \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |             \
	 IBV_ACCESS_LOCAL_WRITE)

static int is_window(const struct vfab_mr_slot *s)
{
	return s->kind == VFAB_MKEY_MW1 || s->kind == VFAB_MKEY_MW2;
}

enum ibv_wc_status vfab_key_check_remote(const struct vfab_mr_slot *mw,
					 const struct vfab_mr_slot *mr, uint32_t rkey, uint32_t hca,
					 uint32_t pd, uint32_t qpn, uint64_t addr, uint64_t len,
					 uint32_t need, uint32_t qp_access, uint64_t *va)
{
	if (mw && mw->kind == VFAB_MKEY_MR)
		return vfab_mr_check_remote(mw, rkey, hca, pd, addr, len, need, qp_access, va);
	if (!usable(mw, rkey, hca, pd) || !is_window(mw))
		return IBV_WC_REM_ACCESS_ERR;
	if (mw->kind == VFAB_MKEY_MW2 && mw->qpn != qpn)
		return IBV_WC_REM_ACCESS_ERR;
	if ((mw->access & need) != need || (qp_access & need) != need)
		return IBV_WC_REM_ACCESS_ERR;
	if (!in_range(addr, len, mw->iova, mw->length))
		return IBV_WC_REM_ACCESS_ERR;
	/* The parent as it is now, not as it was at the bind. */
	if (!usable_mr(mr, mw->parent_key, hca, pd))
		return IBV_WC_REM_ACCESS_ERR;
	/*
	 * The window's rights are its own (the MR needs no remote rights), but
	 * what a peer may write the MR must let the HCA write: as at the bind,
	 * checked again for an MR re-registered since.
	 */
	if (!(mr->access & IBV_ACCESS_MW_BIND))
		return IBV_WC_REM_ACCESS_ERR;
	if ((need & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return IBV_WC_REM_ACCESS_ERR;
	if (!in_range(mw->iova, mw->length, mr->iova, mr->length))
		return IBV_WC_REM_ACCESS_ERR;
	*va = mr->addr + (addr - mr->iova);
	return IBV_WC_SUCCESS;
}

enum ibv_wc_status vfab_mw_check_bind(const struct vfab_mr_slot *mw, const struct vfab_mr_slot *mr,
				      uint32_t qp_pd, uint32_t rkey, uint64_t addr, uint64_t len,
				      uint32_t access)
{
	if (!mw || !is_window(mw) || mw->pd != qp_pd)
		return IBV_WC_MW_BIND_ERR;
	/* The key's index part names the window; the low byte is the consumer's. */
	if ((rkey >> 8) != (mw->key >> 8))
		return IBV_WC_MW_BIND_ERR;
	if (access & ~MW_RIGHTS) /* IBV_ACCESS_ZERO_BASED windows are not offered */
		return IBV_WC_MW_BIND_ERR;
	if (!mr) /* an unbind: a type 1 window only (type 2 is invalidated) */
		return mw->kind == VFAB_MKEY_MW1 && !len ? IBV_WC_SUCCESS : IBV_WC_MW_BIND_ERR;
	/*
	 * A type 2 window is bound once, then invalidated before it binds
	 * again, and a zero length does not invalidate it (IB o10-37.2.30/40).
	 */
	if (mw->kind == VFAB_MKEY_MW2 && (mw->length || !len))
		return IBV_WC_MW_BIND_ERR;
	if (mr->kind != VFAB_MKEY_MR || !mr->length || mr->pd != qp_pd || mr->hca != mw->hca)
		return IBV_WC_MW_BIND_ERR;
	if (!(mr->access & IBV_ACCESS_MW_BIND))
		return IBV_WC_MW_BIND_ERR;
	/* Remote writes and atomics through a window need a locally writable MR. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return IBV_WC_MW_BIND_ERR;
	if (!in_range(addr, len, mr->iova, mr->length))
		return IBV_WC_MW_BIND_ERR;
	return IBV_WC_SUCCESS;
}

int vfab_mw_check_invalidate(const struct vfab_mr_slot *mw, uint32_t rkey, uint32_t hca,
			     uint32_t pd, uint32_t qpn)
{
	return mw && mw->key == rkey && mw->hca == hca && mw->pd == pd &&
	       mw->kind == VFAB_MKEY_MW2 && mw->length && mw->qpn == qpn;
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
