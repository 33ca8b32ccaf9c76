/* SPDX-License-Identifier: MIT */
/*
 * Client side of vfabd's control socket (<rundir>/vfabd.sock): one request
 * line out, one reply line back (protocol in docs/DESIGN.md).
 */
#ifndef VFAB_CTL_H
#define VFAB_CTL_H

#include <stddef.h>

#include "base/paths.h"

#define VFAB_CTL_TIMEOUT_MS 2000 /* a wedged daemon must not hang a verbs call */
/* A reply is waited for awake (spinning) this long before poll() (vfab_ctl_request). */
#define VFAB_CTL_SPIN_NS 50000

/*
 * Connects to <rundir>/vfabd.sock; returns the fd (CLOEXEC, blocking) or
 * -errno (-ETIMEDOUT when the daemon's backlog stays full for
 * VFAB_CTL_TIMEOUT_MS).
 */
int vfab_ctl_connect(const char *rundir);

/*
 * Sends line (a trailing newline is added when missing) and reads one reply
 * line into reply without its newline. Returns the reply length or -errno
 * (-ETIMEDOUT, -ECONNRESET when the daemon closed, -EMSGSIZE when the reply
 * does not fit).
 */
int vfab_ctl_request(int fd, const char *line, char *reply, size_t len);

#endif /* VFAB_CTL_H */
