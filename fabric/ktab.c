/* SPDX-License-Identifier: MIT */
/* vfabd's object table: making, mapping and growing it (see ktab.h). */
#include "fabric/ktab.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define KTAB_RESERVE_BYTES (64u << 10) /* pages reserved this much at a time */

/* Where each table starts and its element size and length. */
static const struct {
	size_t off, stride;
	uint32_t size;
} tables[VFAB_OBJ_KINDS] = {
    [VFAB_OBJ_PD] = {offsetof(struct vfab_ktab, pds), sizeof(struct vfab_pd_slot), VFAB_MAX_PDS},
    [VFAB_OBJ_MR] = {offsetof(struct vfab_ktab, mrs), sizeof(struct vfab_mr_slot), VFAB_MAX_MRS},
    [VFAB_OBJ_CQ] = {offsetof(struct vfab_ktab, cqs), sizeof(struct vfab_cq_slot), VFAB_MAX_CQS},
    [VFAB_OBJ_SRQ] = {offsetof(struct vfab_ktab, srqs), sizeof(struct vfab_srq_slot),
		      VFAB_MAX_SRQS},
    [VFAB_OBJ_QP] = {offsetof(struct vfab_ktab, qps), sizeof(struct vfab_qp_slot), VFAB_MAX_QPS},
};

/*
 * The file's descriptor travels with the mapping for vfab_ktab_reserve:
 * vfabd maps one table, so one static is enough.
 */
static int ktab_fd = -1;

int vfab_ktab_create(int rundir_fd, struct vfab_ktab **out)
{
	struct vfab_ktab *k;
	int fd, rc;

	if (unlinkat(rundir_fd, VFAB_KTAB_NAME, 0) < 0 && errno != ENOENT)
		return -errno;
	fd = openat(rundir_fd, VFAB_KTAB_NAME, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    0644);
	if (fd < 0)
		return -errno;
	/* Whatever the umask: everyone reads, vfabd alone writes. */
	if (fchmod(fd, 0644) < 0 || ftruncate(fd, (off_t)sizeof(*k)) < 0) {
		rc = -errno;
		goto fail;
	}
	rc = posix_fallocate(fd, 0, (off_t)offsetof(struct vfab_ktab, pds));
	if (rc) {
		rc = -rc;
		goto fail;
	}
	k = mmap(NULL, sizeof(*k), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (k == MAP_FAILED) {
		rc = -errno;
		goto fail;
	}
	k->version = VFAB_KTAB_VERSION;
	k->hdr_size = (uint32_t)offsetof(struct vfab_ktab, pds);
	atomic_thread_fence(memory_order_release);
	k->magic = VFAB_KTAB_MAGIC;
	ktab_fd = fd;
	*out = k;
	return 0;
fail:
	close(fd);
	unlinkat(rundir_fd, VFAB_KTAB_NAME, 0);
	return rc;
}

int vfab_ktab_open(const char *rundir, const struct vfab_ktab **out)
{
	struct stat dst, st;
	const struct vfab_ktab *k;
	int dfd, fd, rc;

	dfd = open(rundir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	fd = openat(dfd, VFAB_KTAB_NAME, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	rc = fd < 0 ? -errno : 0;
	if (!rc && (fstat(dfd, &dst) < 0 || fstat(fd, &st) < 0))
		rc = -errno;
	close(dfd);
	if (rc) {
		if (fd >= 0)
			close(fd);
		return rc;
	}
	/* The run dir's owner (vfabd's user) made it, and nobody else may write it. */
	if (!S_ISREG(st.st_mode) || st.st_uid != dst.st_uid || (st.st_mode & 022) ||
	    (uint64_t)st.st_size != sizeof(*k)) {
		close(fd);
		return -EPERM;
	}
	k = mmap(NULL, sizeof(*k), PROT_READ, MAP_SHARED, fd, 0);
	rc = k == MAP_FAILED ? -errno : 0;
	close(fd);
	if (rc)
		return rc;
	if (k->magic != VFAB_KTAB_MAGIC || k->version != VFAB_KTAB_VERSION) {
		munmap((void *)k, sizeof(*k));
		return -EPROTO;
	}
	*out = k;
	return 0;
}

void vfab_ktab_close(const struct vfab_ktab *k)
{
	if (k)
		munmap((void *)k, sizeof(*k));
}

int vfab_ktab_reserve(struct vfab_ktab *k, enum vfab_obj kind, uint32_t slot)
{
	uint32_t sh, top;
	size_t base = tables[kind].off, stride = tables[kind].stride;
	uint64_t from, to, end;

	if (slot >= tables[kind].size)
		return -EINVAL;
	sh = vfab_shard_of(kind, slot);
	top = vfab_ktab_top(k, kind, sh);
	if (slot < top)
		return 0;
	from = (base + (uint64_t)top * stride) & ~4095ull;
	to = (base + (uint64_t)(slot + 1) * stride + KTAB_RESERVE_BYTES - 1) &
	     ~(uint64_t)(KTAB_RESERVE_BYTES - 1);
	end = base + (uint64_t)vfab_shard_lo(kind, sh + 1) * stride;
	if (to > end)
		to = end;
	if (ktab_fd >= 0 && posix_fallocate(ktab_fd, (off_t)from, (off_t)(to - from)))
		return -ENOMEM;
	atomic_store_explicit(&k->top[sh][kind], (uint32_t)((to - base) / stride),
			      memory_order_release);
	return 0;
}

bool vfab_ktab_shard_empty(const struct vfab_ktab *k, uint32_t s)
{
	for (int j = 0; j < VFAB_OBJ_KINDS; j++) {
		enum vfab_obj kind = (enum vfab_obj)j;

		for (uint32_t i = vfab_ktab_next(k, kind, vfab_shard_lo(kind, s));
		     i < vfab_shard_lo(kind, s + 1); i = vfab_ktab_next(k, kind, i + 1))
			if (vfab_ktab_used(
				(const _Atomic uint32_t *)((const char *)k + tables[j].off +
							   (size_t)i * tables[j].stride)))
				return false;
	}
	return true;
}
