/* SPDX-License-Identifier: MIT */
/*
 * The ports' counters/ and hw_counters/ served on every read, as the kernel
 * asks the HCA on every read: a read-only FUSE file system at
 * <rundir>/counters (base/paths.h vfab_counters_fs_dir) whose files compute
 * their value from the region when read. Each node binds its own ports'
 * directories over its view's (netns/ctrfs_view.h). Where FUSE cannot be
 * mounted, vfabd_counters.c refreshes the view's files on the tick instead.
 */
#ifndef VFAB_DAEMON_VFABD_COUNTERSFS_H
#define VFAB_DAEMON_VFABD_COUNTERSFS_H

#include <stdbool.h>

struct vfabd;
struct fuse_session;

struct vfabd_countersfs {
	struct fuse_session *se; /* NULL: not served (the tick writer is) */
	int fd;			 /* the session's /dev/fuse descriptor, non-blocking */
	void *buf;		 /* one request (struct fuse_buf's memory, reused) */
	long long mounted_s;	 /* the files' times: when the fabric's counters began */
	bool in_use;		 /* mounted once: the nodes read it (served or not any more) */
};

/*
 * Mounts the file system (a stale mount of a vfabd that was killed is
 * detached first). 0, or -errno and nothing mounted: the caller falls back
 * to the tick writer.
 */
int vfabd_countersfs_init(struct vfabd *d);
/* Was it mounted? (Else vfabd_counters_tick keeps the views' files.) */
bool vfabd_countersfs_on(const struct vfabd *d);
/* The descriptor the event loop polls for requests, -1 when not served. */
int vfabd_countersfs_fd(const struct vfabd *d);
/* Answers the requests waiting (a bounded number: the loop stays fair). */
void vfabd_countersfs_run(struct vfabd *d);
/* Unmounts and closes; nodes still reading get ENOTCONN, as from a dead driver. */
void vfabd_countersfs_free(struct vfabd *d);

#endif /* VFAB_DAEMON_VFABD_COUNTERSFS_H */
