/* SPDX-License-Identifier: MIT */
#include "netns/host_dirs.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "netns/sandbox.h"

/*
 * Other fabrics' run dirs under the run root (base/paths.h); with `marker`, only those holding
 * it. Returns how many (at most 1: the callers only ask "any?").
 */
static int other_fabrics(const char *rundir, const char *marker)
{
	char root[4096], path[4096];
	struct dirent *de;
	DIR *d = vfab_run_root(root, sizeof(root)) ? NULL : opendir(root);
	int found = 0;

	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (vfab_pathf(path, sizeof(path), "%s/%s", root, de->d_name) ||
		    strcmp(path, rundir) == 0)
			continue;
		if (!marker)
			found = 1;
		else if (vfab_pathf(path, sizeof(path), "%s/%s/%s", root, de->d_name, marker) ==
			     0 &&
			 access(path, F_OK) == 0)
			found = 1;
	}
	closedir(d);
	return found;
}

int vfab_host_dir_claim(const char *rundir, const char *path, const char *marker, mode_t mode)
{
	char mark[4096];
	int record;

	if (vfab_pathf(mark, sizeof(mark), "%s/%s", rundir, marker))
		return -ENAMETOOLONG;
	if (mkdir(path, mode) == 0)
		record = 1;
	else if (errno != EEXIST)
		return -errno;
	else
		record = other_fabrics(rundir, marker);
	return record ? vfab_write_file(mark, "", 0, 0644) : 0;
}

int vfab_host_dir_release(const char *rundir, const char *path, const char *marker, int any_fabric)
{
	char mark[4096];

	if (vfab_pathf(mark, sizeof(mark), "%s/%s", rundir, marker) || access(mark, F_OK))
		return 0;
	if (other_fabrics(rundir, any_fabric ? NULL : marker))
		return 0;
	if (rmdir(path) && errno != ENOENT && errno != ENOTEMPTY)
		return -errno;
	return 0;
}
