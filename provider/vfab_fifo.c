/* SPDX-License-Identifier: MIT */
/*
 * The FIFOs behind completion channels and async event fds. The owner reads
 * <rundir>/fifo/<pid>.<id>; whoever completes into its CQ or breaks its QP
 * (this process or a peer) writes a record of at most PIPE_BUF bytes, which
 * the kernel keeps whole. Ids come from the region's counter, so a path is
 * never reused during the fabric's life and a cached writer fd can never
 * reach the wrong reader.
 */
#include "base/paths.h"
#include "provider/vfab.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WRITER_CACHE 64

struct writer {
	int32_t pid;
	uint32_t id;
	int fd1;       /* fd + 1; 0 = empty entry */
	uint64_t used; /* LRU stamp */
};

static pthread_mutex_t writers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct writer writers[WRITER_CACHE];
static uint64_t writers_clock;

static int fifo_path(const char *rundir, int32_t pid, uint32_t id, char *path, size_t len)
{
	char dir[300];
	int n;

	if (vfab_fifo_dir(dir, sizeof(dir), rundir))
		return -ENAMETOOLONG;
	n = snprintf(path, len, "%s/%d.%u", dir, pid, id);
	return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}

/*
 * Creates the FIFO and opens its read end. O_RDWR keeps a writer open on our
 * side, so reads block instead of returning EOF while no peer holds it.
 */
int vfab_fifo_create(const char *rundir, int32_t pid, uint32_t id, char *path, size_t len)
{
	char dir[300];
	int fd, rc;

	if (vfab_fifo_dir(dir, sizeof(dir), rundir))
		return -ENAMETOOLONG;
	/* Sticky and world-writable like /tmp: processes of any user own FIFOs. */
	if (mkdir(dir, 01777) == 0)
		chmod(dir, 01777);
	rc = fifo_path(rundir, pid, id, path, len);
	if (rc)
		return rc;
	unlink(path);
	/*
	 * Owner only: a reader of another user could steal our events (we would
	 * wait forever) and learn heap addresses. Peers that complete into our
	 * CQs write here, so they must be our user (or root), as they must be
	 * anyway to copy into this process.
	 */
	if (mkfifo(path, 0600) < 0)
		return -errno;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		unlink(path);
		return rc;
	}
	return fd;
}

/* Caller holds writers_lock. */
static int writer_fd(const char *rundir, int32_t pid, uint32_t id)
{
	struct writer *w, *victim = &writers[0];
	char path[320];
	int i, fd;

	for (i = 0; i < WRITER_CACHE; i++) {
		w = &writers[i];
		if (w->fd1 && w->pid == pid && w->id == id) {
			w->used = ++writers_clock;
			return w->fd1 - 1;
		}
		if (w->used < victim->used)
			victim = w;
	}
	if (fifo_path(rundir, pid, id, path, sizeof(path)))
		return -1;
	/*
	 * Read-write, non-blocking: a FIFO whose owner died then has a reader
	 * (us) and a full pipe answers EAGAIN, so no write ever raises SIGPIPE
	 * or blocks the data path.
	 */
	fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (victim->fd1)
		close(victim->fd1 - 1);
	victim->pid = pid;
	victim->id = id;
	victim->fd1 = fd + 1;
	victim->used = ++writers_clock;
	return fd;
}

void vfab_fifo_send(const char *rundir, int32_t pid, uint32_t id, const void *buf, size_t len)
{
	int fd;

	if (!id)
		return;
	pthread_mutex_lock(&writers_lock);
	fd = writer_fd(rundir, pid, id);
	/* A lost event on a full or vanished FIFO is what a dead reader gets. */
	if (fd >= 0 && write(fd, buf, len) < 0)
		vfab_dbg("event to %d.%u dropped: %s", pid, id, strerror(errno));
	pthread_mutex_unlock(&writers_lock);
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

	vfab_fifo_send(r->rundir, pid, id, &ev, sizeof(ev));
}
