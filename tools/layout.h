/* SPDX-License-Identifier: MIT */
/*
 * Where vfab's parts are, from where the vfab CLI runs: a build tree
 * (bin/vfab next to bin/vfabd, the libraries in ../lib) or an installed
 * prefix (GNUInstallDirs: the daemon in <libexecdir>/vfab, the provider in
 * <libdir>/libibverbs, the preload and CM libraries in <libdir>/vfab), whose
 * directories relative to <bindir> CMake passes in (VFAB_REL_*).
 */
#ifndef VFAB_TOOLS_LAYOUT_H
#define VFAB_TOOLS_LAYOUT_H

#include <limits.h>
#include <stddef.h>

struct vfab_layout {
	char vfabd[PATH_MAX];	     /* the daemon */
	char provider_dir[PATH_MAX]; /* holds VFAB_PROVIDER_LIB: the nodes' vfab.driver */
	char preload[PATH_MAX];	     /* libvfab-preload.so (libvfab-cm.so next to it) */
};

/* The parts seen from exedir (the CLI's own directory); 0 or -errno. */
int vfab_layout_find(const char *exedir, struct vfab_layout *out);

#endif /* VFAB_TOOLS_LAYOUT_H */
