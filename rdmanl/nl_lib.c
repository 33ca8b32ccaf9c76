/* SPDX-License-Identifier: MIT */
/*
 * libvfab-nl.so: the answers of the RDMA netlink sockets the preload
 * library keeps (rdmanl/nl_shim.h), about the devices of the caller's own
 * /sys/class (its node's view).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "rdmanl/nl_cmd.h"
#include "rdmanl/nl_shim.h"

__attribute__((visibility("default"))) int
vfab_rdmanl_answer(const void *req, size_t len, uint32_t portid, struct vfab_nl_out *o)
{
	int class_fd = open("/sys/class", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ret;

	if (class_fd < 0)
		return -errno;
	ret = vfab_nl_answer(req, len, portid, class_fd, o);
	close(class_fd);
	return ret;
}
