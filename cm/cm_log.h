/* SPDX-License-Identifier: MIT */
/*
 * The CM's ground floor: VFAB_DEBUG in a program's environment makes the
 * CM agent say on stderr what it does. VFAB_DEBUG=1 (any value but 0 and
 * "resend"): every command, message and decision; VFAB_DEBUG=resend: only
 * the messages resent after a timeout (a counter a test can grep without
 * slowing every message down).
 */
#ifndef VFAB_CM_LOG_H
#define VFAB_CM_LOG_H

void vfab_cm_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A resend: said under VFAB_DEBUG=1 and VFAB_DEBUG=resend. */
void vfab_cm_log_resend(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* VFAB_CM_LOG_H */
