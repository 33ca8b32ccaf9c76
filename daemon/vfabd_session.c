/* SPDX-License-Identifier: MIT */
/*
 * HELLO (a client context registers itself, its pid checked against the
 * socket's credentials, and optionally where its async events go) and STATUS (a one-line summary of
 * the fabric).
 */

#include "vfabd_session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vfabd.h"
#include "vfabd_conn.h"
#include "vfabd_events.h"
#include "vfabd_log.h"

/* Slots in use of a table, every user's shard's (vfabd maps them all). */
#define COUNT_USED(r, tbl, kind, out)                                                              \
	do {                                                                                       \
		(out) = 0;                                                                         \
		for (uint32_t i_ = vfab_slot_next(r, kind, 0); i_ != VFAB_SLOT_END;                \
		     i_ = vfab_slot_next(r, kind, i_ + 1))                                         \
			(out) += atomic_load_explicit(&(r)->tbl[i_].state,                         \
						      memory_order_relaxed) == VFAB_SLOT_USED;     \
	} while (0)

void vfabd_req_status(struct vfabd *d, struct vfabd_conn *c)
{
	struct vfab_region *r = d->r;
	unsigned qps, mrs, cqs, pds, srqs,
	    clients = vfabd_conn_clients(d->srv.conns, d->srv.nconns);
	char line[VFABD_LINE_MAX * 2];

	COUNT_USED(r, qps, VFAB_OBJ_QP, qps);
	COUNT_USED(r, mrs, VFAB_OBJ_MR, mrs);
	COUNT_USED(r, cqs, VFAB_OBJ_CQ, cqs);
	COUNT_USED(r, pds, VFAB_OBJ_PD, pds);
	COUNT_USED(r, srqs, VFAB_OBJ_SRQ, srqs);
	/* The fabric name is restricted to [A-Za-z0-9_-]: no JSON escaping needed. */
	snprintf(line, sizeof(line),
		 "{\"fabric\":\"%s\",\"nodes\":%u,\"hcas\":%u,\"qps\":%u,\"mrs\":%u,\"cqs\":%u,"
		 "\"clients\":%u,\"pds\":%u,\"srqs\":%u,\"pid\":%d,\"ready\":%u}",
		 d->fabric, d->t->nnodes, d->t->nhcas, qps, mrs, cqs, clients, pds, srqs,
		 (int)getpid(), atomic_load(&r->ready));
	vfabd_reply(c, line);
}

void vfabd_req_hello(struct vfabd *d, struct vfabd_conn *c, char *arg)
{
	char *end, *opts = strchr(arg, ' ');
	long pid;
	int rc;

	if (c->pid) {
		vfabd_reply_err(c, -EALREADY, "HELLO was already sent on this connection");
		return;
	}
	if (opts)
		*opts++ = '\0';
	errno = 0;
	pid = strtol(arg, &end, 10);
	if (end == arg || *end || errno || pid <= 0 || pid > 0x3fffffff) {
		vfabd_reply_err(c, -EINVAL, "usage: HELLO <pid> [hca=<idx> async=<fifo path>]");
		return;
	}
	rc = opts ? vfabd_hello_parse_opts(d->t, c, opts) : 0;
	if (rc) {
		vfabd_reply_err(c, rc,
				"usage: HELLO <pid> [hca=<idx> async=<rundir>/fifo/<name>]: %s",
				rc == -ENOENT  ? "no such HCA"
				: rc == -EPERM ? "the FIFO must be in the run dir's fifo/"
					       : "bad options");
		return;
	}
	/*
	 * Who the client is comes from the kernel (SO_PEERCRED at accept), never
	 * from the line: the pid it sends (its own view, another namespace's or a
	 * lie) only passes the syntax check above.
	 */
	c->pid = c->peer_pid;
	/*
	 * A user other than the fabric's owner and root writes its objects into
	 * a shard of its own (fabric/region.h), made at its first HELLO.
	 */
	if (!c->privileged) {
		rc = vfab_shard_create(d->r, (uint32_t)c->peer_uid, (uint32_t)c->peer_gid);
		if (rc < 0)
			vfabd_log("no shard for uid %u: %s%s", (unsigned)c->peer_uid, strerror(-rc),
				  rc == -ENOSPC ? " (every shard is taken: 16 users at most)" : "");
	}
	vfabd_reply(c, "OK");
}
