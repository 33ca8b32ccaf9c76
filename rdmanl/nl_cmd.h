/* SPDX-License-Identifier: MIT */
/*
 * The kernel's nldev commands, answered in the process: what a request
 * datagram on a NETLINK_RDMA socket gets back (device and port queries,
 * the system's modes, the uverbs character device, resource summaries and
 * lists), message for message as drivers/infiniband/core/nldev.c builds
 * them, including its errors and acknowledgements.
 */
#ifndef VFAB_NL_CMD_H
#define VFAB_NL_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "rdmanl/nl_msg.h"

/*
 * Answers every request message of one datagram into o. class_fd is the
 * caller's /sys/class (its node's view); portid the socket's port id.
 * 0, or -ENOMEM when the answer could not be held.
 */
int vfab_nl_answer(const void *req, size_t len, uint32_t portid, int class_fd,
		   struct vfab_nl_out *o);

#endif /* VFAB_NL_CMD_H */
