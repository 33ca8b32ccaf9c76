/* SPDX-License-Identifier: MIT */
#include "cm/cm_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { QUIET, RESENDS, ALL };

static int level(void)
{
	static int l = -1;

	if (l < 0) {
		const char *v = getenv("VFAB_DEBUG");

		l = !v || !*v || !strcmp(v, "0") ? QUIET : !strcmp(v, "resend") ? RESENDS : ALL;
	}
	return l;
}

/* One line, written at once (stderr is unbuffered: one write, not three). */
static void say(const char *fmt, va_list ap)
{
	char line[512];
	struct timespec ts;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	n = snprintf(line, sizeof(line), "vfab-cm[%d] %ld.%06ld: ", (int)getpid(), (long)ts.tv_sec,
		     ts.tv_nsec / 1000);
	if (n > 0 && (size_t)n < sizeof(line))
		n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line) - 1)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	fwrite(line, 1, (size_t)n, stderr);
}

void vfab_cm_dbg(const char *fmt, ...)
{
	va_list ap;

	if (level() < ALL)
		return;
	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
}

void vfab_cm_log_resend(const char *fmt, ...)
{
	va_list ap;

	if (level() < RESENDS)
		return;
	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
}
