/* SPDX-License-Identifier: MIT */
/* vfab's CM messages in a capture (tools/capture_cm.h). */
#include "tools/capture_cm.h"
#include "cm/cm_path.h"

bool vfab_capture_cm_decode(uint32_t qkey, const uint8_t *payload, uint32_t len,
			    struct vfab_cm_msg *m)
{
	return qkey == VFAB_CM_QP1_QKEY && len == VFAB_CM_MSG_BYTES &&
	       !vfab_cm_msg_decode(m, payload, len);
}
