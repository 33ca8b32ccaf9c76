/* SPDX-License-Identifier: MIT */
/* The REPORT document (docs/REPORT_SCHEMA.md). */
#ifndef VFAB_DAEMON_VFABD_REPORT_H
#define VFAB_DAEMON_VFABD_REPORT_H

struct vfabd;
struct vfabd_conn;

void vfabd_req_report(struct vfabd *d, struct vfabd_conn *c);

#endif /* VFAB_DAEMON_VFABD_REPORT_H */
