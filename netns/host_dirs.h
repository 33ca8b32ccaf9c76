/* SPDX-License-Identifier: MIT */
/*
 * Directories a node needs on the host's file systems that the host may lack
 * (/dev/infiniband as a mount point, /run/sshd for sshd's privilege
 * separation). A fabric that finds one missing creates it and leaves a
 * marker in its run dir; so does every fabric brought up while another one's
 * marker says the directory is vfab's. The last fabric down removes it.
 */
#ifndef VFAB_NETNS_HOST_DIRS_H
#define VFAB_NETNS_HOST_DIRS_H

#include <sys/types.h>

/* Make sure `path` exists (mode `mode` when created). 0 or -errno. */
int vfab_host_dir_claim(const char *rundir, const char *path, const char *marker, mode_t mode);

/* Remove `path` when this fabric holds the marker and no other fabric is up. */
int vfab_host_dir_release(const char *rundir, const char *path, const char *marker);

#endif /* VFAB_NETNS_HOST_DIRS_H */
