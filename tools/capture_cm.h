/* SPDX-License-Identifier: MIT */
/*
 * vfab capture's view of the RDMA CM: vfab's CM sends its messages in an
 * encoding of its own (cm/cm_wire.h) between UD QPs with the GSI's Q_Key;
 * on a wire they are CM MADs to QP1 (cm/cm_mad.h, what goes to other
 * machines): this tells the one kind from other datagrams.
 */
#ifndef VFAB_TOOLS_CAPTURE_CM_H
#define VFAB_TOOLS_CAPTURE_CM_H

#include <stdbool.h>
#include <stdint.h>

#include "cm/cm_wire.h"

/*
 * Whether a UD datagram (Q_Key qkey, len bytes of payload) is a message of
 * vfab's CM, decoded into *m.
 */
bool vfab_capture_cm_decode(uint32_t qkey, const uint8_t *payload, uint32_t len,
			    struct vfab_cm_msg *m);

#endif /* VFAB_TOOLS_CAPTURE_CM_H */
