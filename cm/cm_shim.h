/* SPDX-License-Identifier: MIT */
/*
 * The preload library's part of the RDMA CM: it interposes open, open64,
 * write, close (which also ends an RDMA netlink socket, rdmanl/nl_shim.h) and fstat (and glibc's
 * older __fxstat), and hands the fds of /dev/infiniband/rdma_cm (only those) to libvfab-cm.so,
 * loaded on the first such open. Every other call goes straight on to libc after one path compare
 * (open) or one table look-up (write, close, fstat).
 */
#ifndef VFAB_CM_SHIM_H
#define VFAB_CM_SHIM_H

/* The node's ucma device, as librdmacm opens it (RDMA_CDEV_DIR "/rdma_cm"). */
#define VFAB_CM_DEV_PATH "/dev/infiniband/rdma_cm"
/* The CM library, next to the preload library. */
#define VFAB_CM_LIB "libvfab-cm.so"

#endif /* VFAB_CM_SHIM_H */
