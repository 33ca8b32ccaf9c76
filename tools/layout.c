/* SPDX-License-Identifier: MIT */
/* Where vfab's parts are (layout.h). */
#include "tools/layout.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/paths.h"

#ifndef VFAB_REL_LIBEXECDIR
#error "VFAB_REL_LIBEXECDIR: set by tools/CMakeLists.txt"
#endif

/* dir/rel/name, made absolute and without "..": the nodes' files name it. */
static int resolve(char *out, size_t len, const char *dir, const char *rel, const char *name)
{
	char path[PATH_MAX], real[PATH_MAX];

	if (vfab_pathf(path, sizeof(path), "%s/%s", dir, rel))
		return -ENAMETOOLONG;
	if (!realpath(path, real))
		return -errno;
	return vfab_pathf(out, len, "%s%s%s", real, name[0] ? "/" : "", name);
}

int vfab_layout_find(const char *exedir, struct vfab_layout *out)
{
	char daemon[PATH_MAX];
	int ret;

	/* A build tree: bin/vfabd next to bin/vfab, every library in ../lib. */
	if (!vfab_pathf(daemon, sizeof(daemon), "%s/vfabd", exedir) && !access(daemon, X_OK)) {
		ret = vfab_pathf(out->vfabd, sizeof(out->vfabd), "%s", daemon);
		if (!ret)
			ret = resolve(out->provider_dir, sizeof(out->provider_dir), exedir,
				      "../lib", "");
		if (!ret)
			ret = resolve(out->preload, sizeof(out->preload), exedir, "../lib",
				      VFAB_PRELOAD_LIB);
		return ret;
	}
	ret = resolve(out->vfabd, sizeof(out->vfabd), exedir, VFAB_REL_LIBEXECDIR, "vfabd");
	if (!ret)
		ret = resolve(out->provider_dir, sizeof(out->provider_dir), exedir,
			      VFAB_REL_PROVIDERDIR, "");
	if (!ret)
		ret = resolve(out->preload, sizeof(out->preload), exedir, VFAB_REL_PRIVLIBDIR,
			      VFAB_PRELOAD_LIB);
	return ret;
}
