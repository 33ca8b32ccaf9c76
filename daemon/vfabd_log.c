/* SPDX-License-Identifier: MIT */
/* vfabd's log (see vfabd_log.h): wall-clock time, for people reading vfabd.log. */

#include "vfabd_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

void vfabd_log(const char *fmt, ...)
{
	struct timespec ts;
	struct tm tm;
	char msg[512];
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%02d:%02d:%02d.%03ld vfabd[%d]: %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
		ts.tv_nsec / 1000000, (int)getpid(), msg);
}
