/* SPDX-License-Identifier: MIT */
/*
 * The ucma ABI (the commands librdmacm writes to /dev/infiniband/rdma_cm),
 * served in the process: libvfab-cm.so's three entry points, which the
 * preload library calls for the fds of that file only.
 */
#ifndef VFAB_CM_UCMA_H
#define VFAB_CM_UCMA_H

#include <stddef.h>
#include <sys/types.h>

/* fd was just opened on the node's rdma_cm device; 0 or -errno. */
int vfab_cm_file_open(int fd);
/* A command written to fd: len, or -errno (as write(2) fails). */
ssize_t vfab_cm_file_write(int fd, const void *buf, size_t len);
/* fd is being closed: its IDs go, as the kernel's do when the file is released. */
void vfab_cm_file_close(int fd);

#endif /* VFAB_CM_UCMA_H */
