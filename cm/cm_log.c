/* SPDX-License-Identifier: MIT */
#include "cm/cm_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void vfab_cm_dbg(const char *fmt, ...)
{
	static int on = -1;
	va_list ap;

	if (on < 0) {
		const char *v = getenv("VFAB_DEBUG");

		on = v && *v && *v != '0';
	}
	if (!on)
		return;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	fprintf(stderr, "vfab-cm[%d] %ld.%06ld: ", (int)getpid(), (long)ts.tv_sec,
		ts.tv_nsec / 1000);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
