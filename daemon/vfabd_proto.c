/* SPDX-License-Identifier: MIT */
/*
 * The control socket's line protocol (docs/DESIGN.md): one request line of a
 * connection's buffer dispatched to the module that serves it. Separate from
 * the loop (vfabd_server.c), which decides when a connection is read, so
 * that the protocol can be driven without sockets (tests/fuzz/).
 */

#include "vfabd_proto.h"

#include <errno.h>
#include <string.h>

#include "vfabd.h"
#include "vfabd_cmfree.h"
#include "vfabd_conn.h"
#include "vfabd_faults.h"
#include "vfabd_history.h"
#include "vfabd_link.h"
#include "vfabd_log.h"
#include "vfabd_report.h"
#include "vfabd_seal.h"
#include "vfabd_session.h"

/* Requests that change the fabric or signal processes need a trusted peer. */
static bool allowed(struct vfabd_conn *c, const char *what)
{
	if (c->privileged)
		return true;
	vfabd_reply_err(c, -EPERM, "%s needs root or vfabd's own user", what);
	return false;
}

static void handle_line(struct vfabd *d, struct vfabd_conn *c, char *line)
{
	size_t n = strlen(line);

	if (n && line[n - 1] == '\r')
		line[--n] = '\0';
	if (!strncmp(line, "HELLO ", 6)) {
		vfabd_req_hello(d, c, line + 6);
	} else if (!strcmp(line, "BYE")) {
		c->bye = true;
		vfabd_reply(c, "OK");
	} else if (!strcmp(line, "STATUS")) {
		vfabd_req_status(d, c);
	} else if (!strcmp(line, "REPORT")) {
		vfabd_req_report(d, c);
	} else if (!strcmp(line, "HISTORY")) {
		vfabd_req_history(d, c);
	} else if (!strncmp(line, "LINK ", 5)) {
		if (allowed(c, "LINK"))
			vfabd_req_link(d, c, line + 5);
	} else if (!strncmp(line, "SHAPE ", 6)) {
		if (allowed(c, "SHAPE"))
			vfabd_req_shape(d, c, line + 6);
	} else if (!strncmp(line, "FAULT ", 6)) {
		if (allowed(c, "FAULT"))
			vfabd_req_fault(d, c, line + 6);
	} else if (!strncmp(line, "SEAL ", 5)) {
		vfabd_req_seal(d, c, line + 5, true); /* the caller's own objects only */
	} else if (!strncmp(line, "UNSEAL ", 7)) {
		vfabd_req_seal(d, c, line + 7, false);
	} else if (!strncmp(line, "CMFREE ", 7)) {
		vfabd_req_cmfree(d, c, line + 7); /* removes only what no live listener holds */
	} else if (!strcmp(line, "SHUTDOWN")) {
		if (!allowed(c, "SHUTDOWN"))
			return;
		vfabd_reply(c, "OK");
		vfabd_log("SHUTDOWN requested");
		d->srv.stop = true;
	} else {
		vfabd_reply_err(c, -EINVAL,
				"unknown request (HELLO, BYE, STATUS, REPORT, HISTORY, SEAL, "
				"UNSEAL, LINK, SHAPE, FAULT, CMFREE, SHUTDOWN)");
	}
}

bool vfabd_proto_take(struct vfabd *d, struct vfabd_conn *c)
{
	char *nl = memchr(c->buf, '\n', c->len);
	size_t used;

	if (!nl)
		return false;
	used = (size_t)(nl - c->buf) + 1;
	*nl = '\0';
	handle_line(d, c, c->buf);
	memmove(c->buf, c->buf + used, c->len - used);
	c->len -= used;
	c->buf[c->len] = '\0';
	return true;
}
