/* SPDX-License-Identifier: MIT */
/*
 * The provider's ground floor: the debug log and the busy-wait pause, and
 * vfab's one clock (base/clock.h: vfab_mono_ns, the time base of the link
 * model). Every other provider file may use these; they call nothing of the
 * provider.
 */
#ifndef VFAB_UTIL_H
#define VFAB_UTIL_H

#include <stdint.h>

#include "base/clock.h"

/* A line on stderr, only when VFAB_DEBUG is set in the environment. */
void vfab_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A pause in busy-wait loops: lets the sibling hyperthread and the VM breathe. */
static inline void vfab_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

#endif /* VFAB_UTIL_H */
