/* SPDX-License-Identifier: MIT */
/*
 * XRC domains (ibv_open_xrcd): what names a set of XRC SRQs and the
 * XRC_RECV QPs that deliver to them. The kernel gives every opener of one
 * inode the same domain; here the domain is an id derived from the file's
 * device and inode, so contexts of any process that open the same file
 * agree, and a fresh id where no file is given.
 */
#include "provider/vfab.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* Domains opened without a file: this process's pid and a count, below 2^31, never 0. */
static atomic_uint anon_ids;

static uint32_t anon_id(void)
{
	uint32_t n = atomic_fetch_add(&anon_ids, 1) & 0xfff;

	return (((uint32_t)getpid() << 12 | n) & 0x7fffffffu) | 1u << 30;
}

static uint32_t file_id(const struct stat *st)
{
	uint64_t h = (uint64_t)st->st_dev * 0x9e3779b97f4a7c15ull ^ (uint64_t)st->st_ino;

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (uint32_t)h | 0x80000000u;
}

struct ibv_xrcd *vfab_open_xrcd(struct ibv_context *ibctx, struct ibv_xrcd_init_attr *attr)
{
	const uint32_t known = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	struct vfab_xrcd *x;
	struct stat st;
	int fd = -1;

	if (!attr || (attr->comp_mask & ~known) || !(attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) ||
	    (attr->oflags & ~(O_CREAT | O_EXCL))) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->comp_mask & IBV_XRCD_INIT_ATTR_FD)
		fd = attr->fd;
	/* No file: a new domain, which O_CREAT asks for (the kernel's rule). */
	if (fd < 0 && !(attr->oflags & O_CREAT)) {
		errno = EINVAL;
		return NULL;
	}
	if (fd >= 0 && fstat(fd, &st))
		return NULL;
	x = calloc(1, sizeof(*x));
	if (!x) {
		errno = ENOMEM;
		return NULL;
	}
	x->ctx = to_vctx(ibctx);
	x->id = fd >= 0 ? file_id(&st) : anon_id();
	x->vxrcd.xrcd.context = ibctx;
	x->vxrcd.handle = x->id;
	return &x->vxrcd.xrcd;
}

int vfab_close_xrcd(struct ibv_xrcd *ibx)
{
	struct vfab_xrcd *x = to_vxrcd(ibx);

	if (atomic_load(&x->users))
		return EBUSY;
	free(x);
	return 0;
}
