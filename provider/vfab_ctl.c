/* SPDX-License-Identifier: MIT */
/*
 * A context's connection to vfabd: HELLO (liveness: vfabd frees our objects
 * once this process is gone, knowing us by the socket's credentials and a
 * pidfd, never by the pid we send; the HCA and the async FIFO register the
 * context for port events), SEAL and UNSEAL (our objects enter and leave
 * vfabd's object table, fabric/ktab.h, as they enter and leave the kernel
 * on a real host), BYE.
 */
#include "provider/vfab.h"
#include "fabric/ctl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 0 or -errno; the fd is closed on failure. */
static int hello_once(struct vfab_context *ctx)
{
	char line[sizeof(ctx->async_path) + 64], reply[256];
	int fd, rc;

	fd = vfab_ctl_connect(ctx->dev->rundir);
	if (fd < 0)
		return fd;
	snprintf(line, sizeof(line), "HELLO %d hca=%u async=%s", ctx->owner.pid, ctx->hca_idx,
		 ctx->async_path);
	rc = vfab_ctl_request(fd, line, reply, sizeof(reply));
	if (rc >= 0 && strcmp(reply, "OK") != 0)
		rc = -EPROTO;
	if (rc < 0) {
		close(fd);
		return rc;
	}
	ctx->ctl_fd = fd;
	/*
	 * vfabd has made this user's shard by now (a user other than the
	 * fabric's owner): objects go there (fabric/region.h).
	 */
	rc = vfab_region_join(ctx->r);
	if (rc)
		vfab_dbg("no shard of uid %u in the region: %s", (unsigned)geteuid(),
			 strerror(-rc));
	return 0;
}

/*
 * A HELLO that timed out is tried once more on a fresh connection: vfabd
 * may be busy, and since it never frees a live process's objects, an
 * abandoned HELLO costs nothing. ctl_lock held, or the context is new.
 */
static int hello(struct vfab_context *ctx)
{
	static bool warned;
	int rc = hello_once(ctx);

	if (rc == -ETIMEDOUT)
		rc = hello_once(ctx);
	/* Said once per process, whatever VFAB_DEBUG says: no verbs object can be made. */
	if (rc && !warned) {
		warned = true;
		fprintf(stderr,
			"vfab: no vfabd in %s (vfabd.sock: %s): verbs objects cannot be made "
			"until it answers\n",
			ctx->dev->rundir, strerror(-rc));
	}
	return rc;
}

void vfab_ctl_hello(struct vfab_context *ctx)
{
	pthread_mutex_init(&ctx->ctl_lock, NULL);
	hello(ctx);
}

void vfab_ctl_bye(struct vfab_context *ctx)
{
	char reply[16];

	if (ctx->ctl_fd >= 0) {
		vfab_ctl_request(ctx->ctl_fd, "BYE", reply, sizeof(reply));
		close(ctx->ctl_fd);
		ctx->ctl_fd = -1;
	}
	pthread_mutex_destroy(&ctx->ctl_lock);
}

/* "ERR <ENAME> ...": the errno vfabd named, EIO for any other. */
static int reply_errno(const char *reply)
{
	static const struct {
		const char *name;
		int err;
	} names[] = {{"ERR EPERM ", EPERM},
		     {"ERR EBUSY ", EBUSY},
		     {"ERR EINVAL ", EINVAL},
		     {"ERR ENOMEM ", ENOMEM},
		     {"ERR ENOTSUP ", ENOTSUP}};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strncmp(reply, names[i].name, strlen(names[i].name)))
			return -names[i].err;
	return -EIO;
}

/* One SEAL or UNSEAL line; reply as vfab_ctl_seal. */
static int request(struct vfab_context *ctx, const char *line)
{
	char reply[256];
	int rc = -EIO; /* no answer: as a verb whose kernel driver is gone */

	pthread_mutex_lock(&ctx->ctl_lock);
	/*
	 * A connection that failed (a timeout leaves a late reply in it) is
	 * replaced, and the request sent again: both requests are idempotent.
	 */
	for (int tries = 0; tries < 2; tries++) {
		if (ctx->ctl_fd < 0 && hello(ctx))
			break;
		if (vfab_ctl_request(ctx->ctl_fd, line, reply, sizeof(reply)) >= 0) {
			rc = strcmp(reply, "OK") ? reply_errno(reply) : 0;
			if (rc)
				vfab_dbg("vfabd: %s: %s", line, reply);
			break;
		}
		close(ctx->ctl_fd);
		ctx->ctl_fd = -1;
	}
	pthread_mutex_unlock(&ctx->ctl_lock);
	return rc;
}

int vfab_ctl_seal(struct vfab_context *ctx, enum vfab_obj kind, uint32_t slot, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n = snprintf(line, sizeof(line), "SEAL %s %u ctx=%u hca=%u ", vfab_ktab_kind_name(kind),
			 slot, ctx->owner.ctx_id, ctx->hca_idx);

	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	return request(ctx, line);
}

int vfab_ctl_unseal(struct vfab_context *ctx, enum vfab_obj kind, uint32_t slot)
{
	char line[64];

	snprintf(line, sizeof(line), "UNSEAL %s %u", vfab_ktab_kind_name(kind), slot);
	return request(ctx, line);
}
