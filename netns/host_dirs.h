/* SPDX-License-Identifier: MIT */
/*
 * Directories a node needs on the host's file systems that the host may lack
 * (/dev/infiniband as a mount point, /run/sshd for sshd's privilege
 * separation). A fabric that finds one missing creates it and leaves a
 * marker in its run dir; so does every fabric that uses it while another
 * one's marker says the directory is vfab's. The last one down removes it.
 */
#ifndef VFAB_NETNS_HOST_DIRS_H
#define VFAB_NETNS_HOST_DIRS_H

#include <sys/types.h>

/* Make sure `path` exists (mode `mode` when created). 0 or -errno. */
int vfab_host_dir_claim(const char *rundir, const char *path, const char *marker, mode_t mode);

/*
 * Remove `path` when this fabric holds the marker and no other fabric needs
 * it: with `any_fabric`, no other fabric may be up at all (a mount point:
 * a fabric half-way through `up` may be about to use it before its marker
 * exists); else no other fabric may hold the marker (every fabric that uses
 * the directory claims it).
 */
int vfab_host_dir_release(const char *rundir, const char *path, const char *marker, int any_fabric);

#endif /* VFAB_NETNS_HOST_DIRS_H */
