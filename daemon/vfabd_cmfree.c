/* SPDX-License-Identifier: MIT */
#include "vfabd_cmfree.h"

#include <errno.h>

#include "vfabd.h"
#include "vfabd_conn.h"
#include "vfabd_log.h"

#include "base/paths.h"
#include "cm/cm_dir.h"

void vfabd_req_cmfree(struct vfabd *d, struct vfabd_conn *c, const char *name)
{
	char dir[4096];
	int ret;

	if (!vfab_cm_dir_name_ok(name)) {
		vfabd_reply_err(c, -EINVAL, "usage: CMFREE <entry name in the run dir's cm/>");
		return;
	}
	if (!d->rundir || vfab_cm_dir(dir, sizeof(dir), d->rundir)) {
		vfabd_reply_err(c, -ENAMETOOLONG, "run dir path too long");
		return;
	}
	ret = vfab_cm_dir_free_stale(dir, name);
	if (ret == -EADDRINUSE) {
		vfabd_reply_err(c, ret, "%s: a live listener holds it", name);
		return;
	}
	if (ret) {
		vfabd_reply_err(c, ret, "%s: cannot remove it", name);
		return;
	}
	vfabd_log("CMFREE %s: no live listener", name);
	vfabd_reply(c, "OK");
}
