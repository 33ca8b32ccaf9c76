/* SPDX-License-Identifier: MIT */
/*
 * Async events that come from the fabric rather than from a peer: a port
 * going down or up. A context registers its HCA and async event FIFO in its
 * HELLO (`hca=<idx> async=<path>`); vfabd writes the record
 * ibv_get_async_event reads (u64 element, u32 event type, u32 0) into the
 * FIFO of every registered context of that HCA.
 *
 * vfabd runs as root and the socket is open to every local user, so the
 * path must name a FIFO directly under <rundir>/fifo/, owned by the user the
 * kernel says is on the other end of the socket (SO_PEERCRED), and it is
 * opened without following links and checked again (same inode, same owner)
 * at every write: a client cannot make the daemon write anywhere else, nor
 * into the FIFO of another user's process (whose reader would take the
 * record for a pointer of its own).
 */

#include "vfabd_events.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vfabd.h"
#include "vfabd_conn.h"
#include "vfabd_log.h"

/* r: vfabd's own topology, whose rundir nobody else can rewrite. */
static bool fifo_path_ok(const struct vfab_region *r, const char *path)
{
	size_t n = strlen(r->rundir);
	const char *name;

	if (strncmp(path, r->rundir, n) != 0 || strncmp(path + n, "/fifo/", 6) != 0)
		return false;
	name = path + n + 6;
	return *name && !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

int vfabd_hello_parse_opts(const struct vfab_region *r, struct vfabd_conn *c, char *opts)
{
	const char *hca = NULL, *async = NULL;
	char *save = NULL, *tok, *end;
	struct stat st;
	unsigned long idx;

	for (tok = strtok_r(opts, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (!strncmp(tok, "hca=", 4) && !hca)
			hca = tok + 4;
		else if (!strncmp(tok, "async=", 6) && !async)
			async = tok + 6;
		else
			return -EINVAL;
	}
	if (!hca && !async)
		return 0;
	if (!hca || !async)
		return -EINVAL; /* one without the other names no event target */
	errno = 0;
	idx = strtoul(hca, &end, 10);
	if (!*hca || *end || errno || idx >= VFAB_MAX_HCAS || idx >= r->nhcas ||
	    !r->hcas[idx].in_use)
		return -ENOENT;
	if (!fifo_path_ok(r, async))
		return -EPERM;
	if (lstat(async, &st) < 0 || !S_ISFIFO(st.st_mode) || st.st_uid != c->peer_uid)
		return -EPERM;
	c->async_dev = st.st_dev;
	c->async_ino = st.st_ino;
	c->async = strdup(async);
	if (!c->async)
		return -ENOMEM;
	c->hca = (int32_t)idx;
	return 0;
}

/* 0 delivered, or -errno (-ENXIO: nobody reads it any more). */
static int send_event(const struct vfabd_conn *c, uint64_t element, uint32_t type)
{
	struct {
		uint64_t element;
		uint32_t event_type;
		uint32_t reserved;
	} ev = {element, type, 0};
	struct stat st;
	int fd, rc = 0;

	fd = open(c->async, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Still the FIFO the client registered: replaced files are not written. */
	if (fstat(fd, &st) || !S_ISFIFO(st.st_mode) || st.st_uid != c->peer_uid ||
	    st.st_dev != c->async_dev || st.st_ino != c->async_ino)
		rc = -EPERM;
	/* 16 bytes < PIPE_BUF: the record arrives whole or not at all. */
	else if (write(fd, &ev, sizeof(ev)) != (ssize_t)sizeof(ev))
		rc = errno ? -errno : -EIO;
	close(fd);
	return rc;
}

int vfabd_raise_port_event(struct vfabd *d, uint32_t hca, uint32_t port, uint32_t event_type)
{
	int delivered = 0;

	for (size_t i = 0; i < d->srv.nconns; i++) {
		struct vfabd_conn *c = &d->srv.conns[i];
		int rc;

		if (c->bye || !c->async || c->hca != (int32_t)hca)
			continue;
		rc = send_event(c, port, event_type);
		if (rc == 0)
			delivered++;
		else if (rc != -ENXIO && rc != -ENOENT)
			vfabd_log("async event %u for pid %d (%s) not delivered: %s", event_type,
				  (int)c->pid, c->async, strerror(-rc));
	}
	return delivered;
}
