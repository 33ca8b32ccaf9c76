/* SPDX-License-Identifier: MIT */
/*
 * The CM's timers, run by the agent thread: a connect's first REQ while
 * its listener is not (yet) in the directory (cm_window.h), resends after the kernel's response
 * timeout and the final UNREACHABLE or DISCONNECTED, the liveness of the peers being waited for
 * (cm_gone.h), and TIMEWAIT_EXIT. The caller holds the agent's lock.
 */
#ifndef VFAB_CM_TIMER_H
#define VFAB_CM_TIMER_H

#include <stdint.h>

/* Run what is due at now; returns when something is due next (0: nothing). */
uint64_t vfab_cm_timers(uint64_t now);

#endif /* VFAB_CM_TIMER_H */
