/* SPDX-License-Identifier: MIT */
/*
 * The memory key checks an HCA makes, as pure functions of an MR slot (no
 * libibverbs calls, so unit tests drive them directly). Each returns the
 * completion status hardware reports, IBV_WC_SUCCESS when the access is
 * allowed, and then the address the bytes live at in the owner process.
 */
#ifndef VFAB_MR_CHECK_H
#define VFAB_MR_CHECK_H

#include "fabric/region.h"

#include <infiniband/verbs.h>
#include <stdint.h>

/*
 * A local SGE: lkey of this HCA and PD, [addr, addr+len) inside the MR's
 * address space (its iova), and need = IBV_ACCESS_LOCAL_WRITE when the HCA
 * writes into it (RDMA READ and atomic results, receive buffers).
 * mr is what the key lookup found (NULL: unknown or stale key).
 */
enum ibv_wc_status vfab_mr_check_local(const struct vfab_mr_slot *mr, uint32_t lkey, uint32_t hca,
				       uint32_t pd, uint64_t addr, uint64_t len, uint32_t need,
				       uint64_t *va);

/*
 * The responder's check of an incoming RDMA request: rkey of the
 * responder's HCA and of its QP's PD, range inside the MR, and the access
 * (REMOTE_WRITE / REMOTE_READ / REMOTE_ATOMIC) granted by both the MR and
 * the QP's qp_access_flags.
 */
enum ibv_wc_status vfab_mr_check_remote(const struct vfab_mr_slot *mr, uint32_t rkey, uint32_t hca,
					uint32_t pd, uint64_t addr, uint64_t len, uint32_t need,
					uint32_t qp_access, uint64_t *va);

/*
 * The same check through any R_Key: an MR's goes to vfab_mr_check_remote;
 * a window's (mw) must be bound, of the QP's PD and, for type 2, bound
 * through this QP (qpn); the range lies in the window and the access is
 * granted by the window and the QP. The window never reaches past its
 * parent: mr (the slot the window names) must still hold the key it was
 * bound to, be of the same HCA and PD, allow IBV_ACCESS_MW_BIND (and
 * LOCAL_WRITE for a remote write or atomic: the window's remote rights are
 * its own, as IB specifies) and hold the whole window.
 */
enum ibv_wc_status vfab_key_check_remote(const struct vfab_mr_slot *mw,
					 const struct vfab_mr_slot *mr, uint32_t rkey, uint32_t hca,
					 uint32_t pd, uint32_t qpn, uint64_t addr, uint64_t len,
					 uint32_t need, uint32_t qp_access, uint64_t *va);

/*
 * A bind of window mw (kind VFAB_MKEY_MW1/2, of PD pd) by a QP of PD qp_pd
 * to [addr, addr+len) of MR mr (NULL: an unbind, type 1 only) with rights
 * `access` and new key `rkey`: IBV_WC_SUCCESS or IBV_WC_MW_BIND_ERR.
 */
enum ibv_wc_status vfab_mw_check_bind(const struct vfab_mr_slot *mw, const struct vfab_mr_slot *mr,
				      uint32_t qp_pd, uint32_t rkey, uint64_t addr, uint64_t len,
				      uint32_t access);

/* Whether rkey names a type 2 window of QP qpn's PD, bound through that QP: invalidatable. */
int vfab_mw_check_invalidate(const struct vfab_mr_slot *mw, uint32_t rkey, uint32_t hca,
			     uint32_t pd, uint32_t qpn);

/* Atomics: the local result buffer holds exactly 8 bytes ... */
enum ibv_wc_status vfab_atomic_check_local(uint64_t len);
/* ... and the remote target is naturally aligned. */
enum ibv_wc_status vfab_atomic_check_remote(uint64_t remote_addr);

/* Registration access flags as the kernel checks them: 0, -EINVAL, -EOPNOTSUPP. */
int vfab_mr_access_valid(unsigned int access);

#endif /* VFAB_MR_CHECK_H */
