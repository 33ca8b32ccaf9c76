/* SPDX-License-Identifier: MIT */
/* vfabd's log: one line per event on stderr (vfab up sends it to vfabd.log). */
#ifndef VFAB_DAEMON_VFABD_LOG_H
#define VFAB_DAEMON_VFABD_LOG_H

/* "HH:MM:SS.mmm vfabd[pid]: message". */
void vfabd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* VFAB_DAEMON_VFABD_LOG_H */
