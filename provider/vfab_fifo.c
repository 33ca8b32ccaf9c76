/* SPDX-License-Identifier: MIT */
/*
 * The FIFOs behind completion channels and async event fds. The owner reads
 * <rundir>/fifo/<pid>.<id>; whoever completes into its CQ or breaks its QP
 * (this process or a peer) writes a record of at most PIPE_BUF bytes, which
 * the kernel keeps whole. Ids come from the region's counter, so a name is
 * never reused during the fabric's life and a cached writer fd can never
 * reach the wrong reader.
 *
 * The writer may be a root process and the pid and id come from a CQ, QP or
 * SRQ slot of the region, which every local user can write. So the FIFO
 * directory is the run dir the HCA's root-owned device/vfab locator names
 * (opened once per region mapping, vfab_fifo_attach), never the region's;
 * the name is made of the two numbers only; the FIFO is opened
 * O_WRONLY|O_NONBLOCK|O_NOFOLLOW and written only when fstat says it is a
 * FIFO: a regular file, a device or anything else planted under that name is
 * closed untouched (docs/TRUST.md "Completion and async FIFOs").
 */
#include "base/fsutil.h"
#include "base/paths.h"
#include "provider/vfab.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WRITER_CACHE 64
#define FIFO_DIRS 4 /* regions one process maps at once (one per fabric) */

struct writer {
	const struct vfab_region *r;
	int32_t pid;
	uint32_t id;
	int fd1;       /* fd + 1; 0 = empty entry */
	uint64_t used; /* LRU stamp */
};

struct fifo_dir {
	const struct vfab_region *r; /* NULL: free entry */
	int fd;			     /* O_PATH descriptor of <rundir>/fifo */
};

/* Guards the writer cache and the directory table. */
static pthread_mutex_t fifo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct writer writers[WRITER_CACHE];
static uint64_t writers_clock;
static struct fifo_dir dirs[FIFO_DIRS];

/* "<pid>.<id>": numbers only, so no value of the region can name another file. */
static int fifo_name(char *buf, size_t len, int32_t pid, uint32_t id)
{
	int n;

	if (pid <= 0 || id == 0)
		return -EINVAL;
	n = snprintf(buf, len, "%d.%u", (int)pid, (unsigned)id);
	return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}

int vfab_fifo_path(char *buf, size_t len, const char *rundir, int32_t pid, uint32_t id)
{
	char dir[300], name[32];
	int rc = fifo_name(name, sizeof(name), pid, id);

	if (!rc)
		rc = vfab_fifo_dir(dir, sizeof(dir), rundir);
	return rc ? rc : vfab_pathf(buf, len, "%s/%s", dir, name);
}

int vfab_fifo_attach(const struct vfab_region *r, const char *rundir)
{
	char dir[300];
	int fd, rc = vfab_fifo_dir(dir, sizeof(dir), rundir);

	if (rc)
		return rc;
	/* `vfab up` makes it; sticky and world-writable like /tmp, FIFOs of any user. */
	if (mkdir(dir, 01777) == 0)
		chmod(dir, 01777);
	fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	pthread_mutex_lock(&fifo_lock);
	rc = -ENOSPC;
	for (int i = 0; i < FIFO_DIRS; i++) {
		if (dirs[i].r)
			continue;
		dirs[i] = (struct fifo_dir){r, fd};
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&fifo_lock);
	if (rc)
		close(fd);
	return rc;
}

void vfab_fifo_detach(const struct vfab_region *r)
{
	pthread_mutex_lock(&fifo_lock);
	for (int i = 0; i < WRITER_CACHE; i++)
		if (writers[i].fd1 && writers[i].r == r) {
			close(writers[i].fd1 - 1);
			writers[i] = (struct writer){0};
		}
	for (int i = 0; i < FIFO_DIRS; i++)
		if (dirs[i].r == r) {
			close(dirs[i].fd);
			dirs[i] = (struct fifo_dir){NULL, -1};
		}
	pthread_mutex_unlock(&fifo_lock);
}

/* The FIFO directory of region r; caller holds fifo_lock. -ENOENT if none. */
static int dir_of(const struct vfab_region *r)
{
	for (int i = 0; i < FIFO_DIRS; i++)
		if (dirs[i].r == r)
			return dirs[i].fd;
	return -ENOENT;
}

static int locked_dir_of(const struct vfab_region *r)
{
	int fd;

	pthread_mutex_lock(&fifo_lock);
	fd = dir_of(r);
	pthread_mutex_unlock(&fifo_lock);
	return fd;
}

/*
 * Creates the FIFO and opens its read end. O_RDWR keeps a writer open on our
 * side, so reads block instead of returning EOF while no peer holds it.
 */
int vfab_fifo_create(const struct vfab_region *r, int32_t pid, uint32_t id)
{
	char name[32];
	struct stat st;
	int dfd = locked_dir_of(r), fd, rc;

	if (dfd < 0)
		return dfd;
	rc = fifo_name(name, sizeof(name), pid, id);
	if (rc)
		return rc;
	unlinkat(dfd, name, 0);
	/*
	 * Owner only: a reader of another user could steal our events (we would
	 * wait forever) and learn heap addresses. Peers that complete into our
	 * CQs write here, so they must be our user (or root), as they must be
	 * anyway to copy into this process.
	 */
	if (mkfifoat(dfd, name, 0600) < 0)
		return -errno;
	fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || !S_ISFIFO(st.st_mode)) {
		rc = fd < 0 ? -errno : -EEXIST;
		if (fd >= 0)
			close(fd);
		unlinkat(dfd, name, 0);
		return rc;
	}
	return fd;
}

void vfab_fifo_remove(const struct vfab_region *r, int32_t pid, uint32_t id)
{
	char name[32];
	int dfd = locked_dir_of(r);

	if (dfd >= 0 && fifo_name(name, sizeof(name), pid, id) == 0)
		unlinkat(dfd, name, 0);
}

/*
 * Opens <fifo dir>/<pid>.<id> for writing, a FIFO only; caller holds
 * fifo_lock. -1 when there is none (no reader: ENXIO) or it is something else.
 */
static int open_writer(const struct vfab_region *r, int32_t pid, uint32_t id)
{
	int dfd = dir_of(r), fd;
	char name[32];
	struct stat st;

	if (dfd < 0 || fifo_name(name, sizeof(name), pid, id))
		return -1;
	fd = openat(dfd, name, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISFIFO(st.st_mode)) {
		vfab_dbg("%d.%u is not a FIFO: nothing written", (int)pid, (unsigned)id);
		close(fd);
		return -1;
	}
	return fd;
}

/* Caller holds fifo_lock. */
static struct writer *writer_of(const struct vfab_region *r, int32_t pid, uint32_t id)
{
	struct writer *w, *victim = &writers[0];
	int fd;

	for (int i = 0; i < WRITER_CACHE; i++) {
		w = &writers[i];
		if (w->fd1 && w->r == r && w->pid == pid && w->id == id) {
			w->used = ++writers_clock;
			return w;
		}
		if (w->used < victim->used)
			victim = w;
	}
	fd = open_writer(r, pid, id);
	if (fd < 0)
		return NULL;
	if (victim->fd1)
		close(victim->fd1 - 1);
	*victim = (struct writer){r, pid, id, fd + 1, ++writers_clock};
	return victim;
}

/*
 * A write into a FIFO whose reader has gone fails with EPIPE and raises
 * SIGPIPE, which must not kill the application that happened to complete
 * into a dead process's CQ: blocked around the write, and the one this
 * write raised is taken back (unless the thread had it blocked already, so
 * that one pending before stays).
 */
static ssize_t write_quiet(int fd, const void *buf, size_t len)
{
	sigset_t pipe_set, old;
	ssize_t n;
	int err;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	n = write(fd, buf, len);
	err = errno;
	if (n < 0 && err == EPIPE && !sigismember(&old, SIGPIPE)) {
		const struct timespec zero = {0, 0};

		sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = err;
	return n;
}

void vfab_fifo_send(const struct vfab_region *r, int32_t pid, uint32_t id, const void *buf,
		    size_t len)
{
	struct writer *w;

	if (!id)
		return;
	pthread_mutex_lock(&fifo_lock);
	w = writer_of(r, pid, id);
	/* A lost event on a full or vanished FIFO is what a dead reader gets. */
	if (w && write_quiet(w->fd1 - 1, buf, len) < 0) {
		vfab_dbg("event to %d.%u dropped: %s", (int)pid, (unsigned)id, strerror(errno));
		if (errno == EPIPE) { /* its reader is gone for good */
			close(w->fd1 - 1);
			*w = (struct writer){0};
		}
	}
	pthread_mutex_unlock(&fifo_lock);
}

void vfab_async_event(struct vfab_region *r, int32_t pid, uint32_t id, uint64_t element,
		      uint32_t event_type)
{
	/* The record ibv_get_async_event reads: element, event type, reserved. */
	struct {
		uint64_t element;
		uint32_t event_type;
		uint32_t reserved;
	} ev = {element, event_type, 0};

	vfab_fifo_send(r, pid, id, &ev, sizeof(ev));
}
