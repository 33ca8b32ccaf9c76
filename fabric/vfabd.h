/* SPDX-License-Identifier: MIT */
/* vfabd internals: the control-socket server and the reaper. */
#ifndef VFAB_VFABD_H
#define VFAB_VFABD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "fabric/region.h"

#define VFABD_LINE_MAX 256
#define VFABD_REAP_INTERVAL_MS 500

struct vfabd_conn {
	int fd;
	pid_t pid; /* from HELLO; 0 before */
	bool bye;  /* closed cleanly: its objects were freed by their owner */
	size_t len;
	char buf[VFABD_LINE_MAX];
};

struct vfabd {
	struct vfab_region *r;
	const char *fabric;
	int listen_fd;
	int signal_fd;
	int timer_fd;
	struct vfabd_conn *conns;
	size_t nconns, cap;
	bool stop;
};

void vfabd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Runs until SIGTERM/SIGINT or SHUTDOWN. 0, or -errno on a fatal error. */
int vfabd_serve(struct vfabd *d);
void vfabd_close_all(struct vfabd *d);

/* Frees the objects of every owner pid that no longer runs. Returns objects freed. */
int vfabd_reap_dead(struct vfab_region *r);
/* True when pid is gone or a zombie (its memory, and so its objects, are gone). */
bool vfabd_pid_dead(pid_t pid);

#endif /* VFAB_VFABD_H */
