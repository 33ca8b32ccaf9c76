/* SPDX-License-Identifier: MIT */
#include "netns/mountinfo.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* mountinfo escapes blanks and backslashes as \ooo. */
static void unescape_mountinfo(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] && r[3]) {
			*w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

static int seen(char (*out)[VFAB_MOUNTPOINT_MAX], int n, const char *mp)
{
	for (int i = 0; i < n; i++)
		if (strcmp(out[i], mp) == 0)
			return 1;
	return 0;
}

int vfab_mount_children(const char *mp, char (*out)[VFAB_MOUNTPOINT_MAX], int max)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	size_t len = strlen(mp);
	char line[4096];
	int top = -1, n = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		int id, parent;
		char at[1024];

		if (sscanf(line, "%d %d %*s %*s %1023s", &id, &parent, at) != 3)
			continue;
		unescape_mountinfo(at);
		if (strcmp(at, mp) == 0)
			top = id; /* the last one listed is the visible one */
	}
	rewind(f);
	while (top >= 0 && fgets(line, sizeof(line), f) && n < max) {
		int id, parent;
		char at[1024];

		if (sscanf(line, "%d %d %*s %*s %1023s", &id, &parent, at) != 3)
			continue;
		unescape_mountinfo(at);
		/* Stacked mounts share a mount point: the path reaches the top one. */
		if (parent != top || strncmp(at, mp, len) != 0 || at[len] != '/' ||
		    strlen(at) >= VFAB_MOUNTPOINT_MAX || seen(out, n, at))
			continue;
		strcpy(out[n++], at);
	}
	fclose(f);
	return n;
}
