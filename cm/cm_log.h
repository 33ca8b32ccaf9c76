/* SPDX-License-Identifier: MIT */
/*
 * The CM's ground floor: VFAB_DEBUG=1 in a program's environment makes the
 * CM agent say on stderr what it sends, receives and cannot do.
 */
#ifndef VFAB_CM_LOG_H
#define VFAB_CM_LOG_H

void vfab_cm_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* VFAB_CM_LOG_H */
