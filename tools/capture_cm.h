/* SPDX-License-Identifier: MIT */
/*
 * vfab capture's view of the RDMA CM: vfab's CM sends its messages in an
 * encoding of its own (cm/cm_wire.h) between UD QPs with the GSI's Q_Key;
 * on a wire they are CM MADs to QP1. These turn one into the other.
 */
#ifndef VFAB_TOOLS_CAPTURE_CM_H
#define VFAB_TOOLS_CAPTURE_CM_H

#include <stdbool.h>
#include <stdint.h>

#include "cm/cm_wire.h"

#define VFAB_MAD_BYTES 256

/*
 * Whether a UD datagram (Q_Key qkey, len bytes of payload) is a message of
 * vfab's CM, decoded into *m.
 */
bool vfab_capture_cm_decode(uint32_t qkey, const uint8_t *payload, uint32_t len,
			    struct vfab_cm_msg *m);

/*
 * The CM MAD (IBA 12.6: the MAD header, then the message's fields at their
 * offsets, RDMA CM's header in a REQ's private data) that message m is,
 * sent by an HCA whose node GUID is guid (host order) to an HCA at dgid.
 * Returns VFAB_MAD_BYTES, or 0 for a message type without a MAD here.
 */
int vfab_capture_cm_mad(const struct vfab_cm_msg *m, uint64_t guid, const uint8_t dgid[16],
			uint8_t mad[VFAB_MAD_BYTES]);

#endif /* VFAB_TOOLS_CAPTURE_CM_H */
