/* SPDX-License-Identifier: MIT */
/* The provider's ground floor (see vfab_util.h). */
#include "provider/vfab_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void vfab_dbg(const char *fmt, ...)
{
	static int enabled = -1;
	va_list ap;

	if (enabled < 0)
		enabled = getenv("VFAB_DEBUG") != NULL;
	if (!enabled)
		return;
	va_start(ap, fmt);
	fputs("vfab: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
