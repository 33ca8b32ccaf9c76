/* SPDX-License-Identifier: MIT */
/*
 * The preload library's part of RDMA netlink. A vfab node has no ib_core,
 * so socket(AF_NETLINK, *, NETLINK_RDMA) fails there and `rdma`,
 * libibverbs' and librdmacm's netlink paths see no devices. The preload
 * library (provider/vfab_preload.c, in every node's /etc/ld.so.preload)
 * answers such sockets itself: it interposes socket, bind, getsockname,
 * setsockopt, getsockopt, sendto, sendmsg, send, recvfrom, recvmsg, recv
 * and close, and has libvfab-nl.so (rdmanl/, loaded on the first such
 * socket) build the kernel's answers. Every other socket goes straight on
 * to libc after one bit test.
 */
#ifndef VFAB_NL_SHIM_H
#define VFAB_NL_SHIM_H

/* The netlink library, next to the preload library. */
#define VFAB_NL_LIB "libvfab-nl.so"
/* Its entry point: int (const void *req, size_t len, uint32_t portid, struct vfab_nl_out *o). */
#define VFAB_NL_LIB_ANSWER "vfab_rdmanl_answer"

/* The preload's close(): forgets fd if it was an RDMA netlink socket. */
void vfab_nl_shim_close(int fd);

#endif /* VFAB_NL_SHIM_H */
