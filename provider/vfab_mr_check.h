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

/* Atomics: the local result buffer holds exactly 8 bytes ... */
enum ibv_wc_status vfab_atomic_check_local(uint64_t len);
/* ... and the remote target is naturally aligned. */
enum ibv_wc_status vfab_atomic_check_remote(uint64_t remote_addr);

/* Registration access flags as the kernel checks them: 0, -EINVAL, -EOPNOTSUPP. */
int vfab_mr_access_valid(unsigned int access);

#endif /* VFAB_MR_CHECK_H */
