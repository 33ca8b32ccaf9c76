/* SPDX-License-Identifier: MIT */
/*
 * Whether a destination GID is another machine's: no port of this host's
 * fabric holds it, and vfabd carries RoCE to other machines (its wire socket
 * is there). Its CM is reached as a NIC's is, with MADs to QP1 (cm_mad.h)
 * instead of through this host's listener directory (docs/DESIGN.md "RDMA
 * CM"). The fabric's region is mapped, read-only as the provider may, at the
 * first question of a fabric with a wire.
 */
#ifndef VFAB_CM_FAR_H
#define VFAB_CM_FAR_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>

bool vfab_cm_far(struct ibv_context *ctx, uint8_t port, uint8_t sgid_index, const uint8_t dgid[16]);

#endif /* VFAB_CM_FAR_H */
