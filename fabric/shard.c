/* SPDX-License-Identifier: MIT */
/*
 * Making and mapping the region and its users' shards (region.h "Shards"):
 * vfabd creates the region and each user's shard file; every process maps
 * the region as one address range, the topology and the shards it may
 * write from their files, zero pages elsewhere.
 */
#include "fabric/region.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "fabric/region_map.h"

/* Serialises mapping shards into this process's address ranges. */
static pthread_mutex_t shard_map_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * The region's address range: zero pages (read-only) throughout, the
 * topology from fd over them (writable only for vfabd), and this process's
 * private page and scratch shard.
 */
static int map_range(int fd, uint64_t size, bool rw, struct vfab_region **out)
{
	struct vfab_region *r;
	int rc;

	r = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED)
		return -errno;
	if (mmap(r, VFAB_REGION_TOPO_BYTES, PROT_READ | (rw ? PROT_WRITE : 0),
		 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED ||
	    mmap(&r->local, sizeof(r->local), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED ||
	    mmap(&r->shard[VFAB_SHARDS], sizeof(struct vfab_shard), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		rc = -errno;
		munmap(r, size);
		return rc;
	}
	r->local.own = VFAB_SHARDS;
	*out = r;
	return 0;
}

/* Shard s's parts of the range: its header, its slots of each table, its pool. */
#define SHARD_PARTS (2 + VFAB_OBJ_KINDS)
struct part {
	uint64_t off, len;
};

static void shard_parts(const struct vfab_region *r, uint32_t s, uint64_t size,
			struct part p[SHARD_PARTS])
{
	uint64_t per = vfab_pool_shard_bytes(size);

	p[0] = (struct part){(uint64_t)((const char *)&r->shard[s] - (const char *)r),
			     sizeof(struct vfab_shard)};
	p[1] = (struct part){VFAB_POOL_OFF + (uint64_t)s * per, per};
	for (int k = 0; k < VFAB_OBJ_KINDS; k++) {
		uint32_t lo = vfab_shard_lo((enum vfab_obj)k, s);
		uint64_t stride = vfab_table_stride((enum vfab_obj)k);

		p[2 + k].off = vfab_table_off((enum vfab_obj)k) + (uint64_t)lo * stride;
		p[2 + k].len = (uint64_t)(vfab_shard_lo((enum vfab_obj)k, s + 1) - lo) * stride;
	}
}

/* Shard s's parts from fd (the file of generation gen), or zero pages again (fd -1). */
static int map_shard(struct vfab_region *r, uint32_t s, int fd, uint64_t size, uint32_t gen)
{
	struct part p[SHARD_PARTS];

	shard_parts(r, s, size, p);
	for (size_t i = 0; i < SHARD_PARTS; i++)
		if ((fd >= 0 ? mmap((char *)r + p[i].off, p[i].len, PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_FIXED, fd, (off_t)p[i].off)
			     : mmap((char *)r + p[i].off, p[i].len, PROT_READ,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
				    0)) == MAP_FAILED)
			return -errno;
	if (fd >= 0) {
		r->local.gen[s] = gen;
		r->local.mapped |= 1u << s;
	} else {
		r->local.mapped &= ~(1u << s);
	}
	return 0;
}

/* A new shard's header (its creator): locks, empty tables, its pool laid out. */
static int init_shard(struct vfab_region *r, uint32_t s, int fd)
{
	struct vfab_shard *sh = &r->shard[s];
	off_t off = (off_t)((char *)sh - (char *)r);
	int rc = posix_fallocate(fd, off, sizeof(*sh));

	if (rc)
		return -rc;
	vfab_mutex_init_shared(&sh->lock);
	vfab_mutex_init_shared(&sh->atomic_lock);
	for (int k = 0; k < VFAB_OBJ_KINDS; k++)
		atomic_store(&sh->tab[k].top, vfab_shard_lo((enum vfab_obj)k, s));
	return vfab_pool_init(r, s, fd);
}

int vfab_region_create(const char *fabric, const char *rundir, struct vfab_region **out)
{
	return vfab_region_create_pool(fabric, rundir, VFAB_POOL_BYTES, out);
}

int vfab_region_create_pool(const char *fabric, const char *rundir, uint64_t pool_bytes,
			    struct vfab_region **out)
{
	char path[256], dir[256];
	struct vfab_region *r;
	uint64_t size = VFAB_POOL_OFF + VFAB_SHARDS * pool_bytes;
	int fd, rc;

	rc = vfab_region_path(fabric, path, sizeof(path));
	if (!rc)
		rc = vfab_shard_dir(path, dir, sizeof(dir));
	if (rc)
		return rc;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/*
	 * Every user of a node may open the HCAs, as /dev/infiniband/uverbs*
	 * (0666) allows on a real host: the topology is theirs to read, and
	 * their objects go into shards of their own (vfab_shard_create).
	 */
	if (fchmod(fd, 0644) < 0 || ftruncate(fd, (off_t)size) < 0 ||
	    (mkdir(dir, 0755) < 0 && errno != EEXIST) || chmod(dir, 0755) < 0) {
		rc = -errno;
		goto fail;
	}
	/*
	 * The file is sparse, and a page of it that /dev/shm has no room for
	 * kills whoever touches it with SIGBUS. The topology and shard 0's
	 * header are reserved now; the tables page by page as their slots are
	 * first handed out (slot_grow), the pool block by block (pool.c). A
	 * full /dev/shm is then -ENOSPC here, -ENOMEM later.
	 */
	rc = posix_fallocate(fd, 0, (off_t)VFAB_REGION_TOPO_BYTES);
	if (rc) {
		rc = -rc;
		goto fail;
	}
	rc = map_range(fd, size, true, &r);
	if (rc)
		goto fail;
	rc = map_shard(r, 0, fd, size, 0);
	if (!rc)
		rc = vfab_region_map_add(r, size, fd, path);
	if (rc) {
		munmap(r, size);
		goto fail;
	}
	r->local.own = 0;
	r->version = VFAB_REGION_VERSION;
	r->hdr_size = sizeof(*r);
	r->total_size = size;
	snprintf(r->fabric, sizeof(r->fabric), "%s", fabric);
	snprintf(r->rundir, sizeof(r->rundir), "%s", rundir);
	r->pool_off = VFAB_POOL_OFF;
	r->pool_size = pool_bytes;
	rc = init_shard(r, 0, fd);
	if (rc) {
		vfab_region_close(r);
		vfab_region_unlink(fabric);
		return rc == -ENOSPC || rc == -ENOMEM ? -ENOSPC : rc;
	}
	r->shard_uid[0] = (uint32_t)geteuid();
	atomic_store(&r->shard_on[0], 1);
	atomic_thread_fence(memory_order_release);
	r->magic = VFAB_REGION_MAGIC;
	*out = r;
	return 0;
fail:
	close(fd);
	vfab_region_unlink(fabric);
	return rc;
}

int vfab_region_open(const char *path, struct vfab_region **out)
{
	struct vfab_region *r;
	struct stat st;
	bool rw = true;
	int fd = open(path, O_RDWR | O_CLOEXEC), rc;

	/* The fabric's owner and root write shard 0, in this file; others only read it. */
	if (fd < 0 && errno == EACCES) {
		rw = false;
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size < VFAB_POOL_OFF + VFAB_SHARDS * 4096ull) {
		close(fd);
		return -EPROTO;
	}
	rc = map_range(fd, (uint64_t)st.st_size, rw, &r);
	if (rc) {
		close(fd);
		return rc;
	}
	rc = -EPROTO;
	if (r->magic == VFAB_REGION_MAGIC && r->version == VFAB_REGION_VERSION &&
	    r->hdr_size == sizeof(*r) && r->total_size == (uint64_t)st.st_size)
		rc = rw ? map_shard(r, 0, fd, (uint64_t)st.st_size, 0) : 0;
	if (!rc) {
		r->local.own = rw ? 0 : VFAB_SHARDS;
		rc = vfab_region_map_add(r, (uint64_t)st.st_size, rw ? fd : -1, path);
	}
	if (rc) {
		munmap(r, (size_t)st.st_size);
		close(fd);
		return rc;
	}
	if (!rw)
		close(fd);
	*out = r;
	return 0;
}

void vfab_region_close(struct vfab_region *r)
{
	struct vfab_region_map m;

	/* The size this process mapped: the region's total_size is not its to trust. */
	if (r && vfab_region_map_remove(r, &m) == 0) {
		munmap(r, m.bytes);
		if (m.fd >= 0)
			close(m.fd);
	}
}

int vfab_region_unlink(const char *fabric)
{
	char path[256], dir[256], shard[300];
	DIR *d;
	struct dirent *e;
	int rc = vfab_region_path(fabric, path, sizeof(path));

	if (!rc)
		rc = vfab_shard_dir(path, dir, sizeof(dir));
	if (rc)
		return rc;
	d = opendir(dir);
	if (d) {
		while ((e = readdir(d)))
			if (e->d_name[0] == 'u' && snprintf(shard, sizeof(shard), "%s/%s", dir,
							    e->d_name) < (int)sizeof(shard))
				unlink(shard);
		closedir(d);
		rmdir(dir);
	}
	return unlink(path) < 0 ? -errno : 0;
}

/* Whether this process's mapping of shard s is of a file vfabd has since dropped. */
static bool stale(const struct vfab_region *r, uint32_t s)
{
	return !atomic_load_explicit(&r->shard_on[s], memory_order_acquire) ||
	       r->local.gen[s] != atomic_load_explicit(&r->shard_gen[s], memory_order_acquire);
}

/*
 * Maps the current file of shard s (shard_lock held): vfabd's file for
 * shard_uid[s], checked as such (anything else there is not followed).
 * keep: its fd goes to *keep instead of being closed (this process's shard).
 */
static int map_current(struct vfab_region *r, uint32_t s, const struct vfab_region_map *m,
		       int *keep)
{
	uint32_t gen = atomic_load_explicit(&r->shard_gen[s], memory_order_acquire);
	char path[300];
	struct stat st;
	int fd, rc;

	if (!atomic_load_explicit(&r->shard_on[s], memory_order_acquire))
		return -ENOENT;
	rc = s ? vfab_shard_path(m->path, r->shard_uid[s], path, sizeof(path))
	       : vfab_pathf(path, sizeof(path), "%s", m->path);
	if (rc)
		return rc;
	if (r->local.mapped & (1u << s))
		map_shard(r, s, -1, m->bytes, 0); /* the file before: zero pages again */
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != m->bytes ||
	    (s && (st.st_uid != r->shard_uid[s] || (st.st_mode & 077))))
		rc = -EPERM;
	else
		rc = map_shard(r, s, fd, m->bytes, gen);
	if (!rc && keep)
		*keep = fd;
	else
		close(fd);
	return rc;
}

int vfab_region_map_shard(struct vfab_region *r, uint32_t s)
{
	struct vfab_region_map m;
	int rc;

	if (s >= VFAB_SHARDS)
		return -EINVAL;
	if ((r->local.mapped & (1u << s)) && !stale(r, s))
		return 0;
	/* Another user's: not tried again while shard s stays that user's file. */
	if ((r->local.refused & (1u << s)) &&
	    r->local.gen[s] == atomic_load_explicit(&r->shard_gen[s], memory_order_acquire))
		return -EACCES;
	if (!atomic_load_explicit(&r->shard_on[s], memory_order_acquire) &&
	    !(r->local.mapped & (1u << s)))
		return -ENOENT;
	rc = vfab_region_map_get(r, &m);
	if (rc)
		return rc;
	pthread_mutex_lock(&shard_map_lock);
	rc = 0;
	if (!(r->local.mapped & (1u << s)) || stale(r, s)) {
		uint32_t gen = atomic_load_explicit(&r->shard_gen[s], memory_order_acquire);

		rc = map_current(r, s, &m, NULL);
		r->local.refused &= ~(1u << s);
		if (rc == -EACCES || rc == -EPERM) {
			r->local.refused |= 1u << s;
			r->local.gen[s] = gen;
		}
	}
	pthread_mutex_unlock(&shard_map_lock);
	return rc;
}

void vfab_region_map_shards(struct vfab_region *r)
{
	for (uint32_t s = 0; s < VFAB_SHARDS; s++)
		vfab_region_map_shard(r, s);
}

int vfab_region_join(struct vfab_region *r)
{
	uint32_t uid = (uint32_t)geteuid(), own = r->local.own;
	struct vfab_region_map m;
	int fd = -1, rc;

	if (own < VFAB_SHARDS && (own == 0 || (!stale(r, own) && r->shard_uid[own] == uid)))
		return 0;
	rc = vfab_region_map_get(r, &m);
	if (rc)
		return rc;
	pthread_mutex_lock(&shard_map_lock);
	if (own < VFAB_SHARDS) { /* a file vfabd dropped while this process held no object */
		map_shard(r, own, -1, m.bytes, 0);
		r->local.own = VFAB_SHARDS;
	}
	rc = -ENOENT;
	for (uint32_t s = 1; s < VFAB_SHARDS; s++) {
		if (!atomic_load_explicit(&r->shard_on[s], memory_order_acquire) ||
		    r->shard_uid[s] != uid)
			continue;
		rc = map_current(r, s, &m, &fd);
		if (!rc) {
			r->local.refused &= ~(1u << s);
			/* The fd stays: pool.c and slot_grow reserve in this shard's file. */
			vfab_region_map_set_fd(r, fd);
			r->local.own = s;
		}
		break;
	}
	pthread_mutex_unlock(&shard_map_lock);
	return rc;
}

int vfab_shard_create(struct vfab_region *r, uint32_t uid, uint32_t gid)
{
	struct vfab_region_map m;
	uint32_t s, free_s = VFAB_SHARDS, gen;
	char path[300];
	int fd, rc;

	for (s = 0; s < VFAB_SHARDS; s++) {
		if (!atomic_load(&r->shard_on[s]))
			free_s = free_s < s ? free_s : s;
		else if (r->shard_uid[s] == uid)
			return (int)s;
	}
	if (free_s == VFAB_SHARDS)
		return -ENOSPC;
	s = free_s;
	rc = vfab_region_map_get(r, &m);
	if (!rc)
		rc = vfab_shard_path(m.path, uid, path, sizeof(path));
	if (rc)
		return rc;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	gen = atomic_load(&r->shard_gen[s]) + 1;
	rc = ftruncate(fd, (off_t)m.bytes) < 0 ? -errno : 0;
	if (!rc) {
		pthread_mutex_lock(&shard_map_lock);
		rc = map_shard(r, s, fd, m.bytes, gen);
		pthread_mutex_unlock(&shard_map_lock);
	}
	if (!rc)
		rc = init_shard(r, s, fd);
	if (!rc && fchown(fd, uid, gid) < 0)
		rc = -errno;
	close(fd);
	if (rc) {
		map_shard(r, s, -1, m.bytes, 0);
		unlink(path);
		return rc;
	}
	r->shard_uid[s] = uid;
	atomic_store_explicit(&r->shard_gen[s], gen, memory_order_release);
	atomic_store_explicit(&r->shard_on[s], 1, memory_order_release);
	return (int)s;
}

void vfab_shard_drop(struct vfab_region *r, uint32_t s)
{
	struct vfab_region_map m;
	char path[300];

	if (s == 0 || s >= VFAB_SHARDS || !atomic_load(&r->shard_on[s]) ||
	    vfab_region_map_get(r, &m) ||
	    vfab_shard_path(m.path, r->shard_uid[s], path, sizeof(path)))
		return;
	atomic_store_explicit(&r->shard_on[s], 0, memory_order_release);
	unlink(path);
	pthread_mutex_lock(&shard_map_lock);
	map_shard(r, s, -1, m.bytes, 0);
	pthread_mutex_unlock(&shard_map_lock);
}
