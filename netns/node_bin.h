/* SPDX-License-Identifier: MIT */
/*
 * Programs every node finds on its PATH although the host may lack them
 * (tools/show_gids, the vendor's GID table listing): written once per
 * fabric into <rundir>/node-bin, then layered in each node over the host's
 * /usr/local/bin (an overlay: the host's programs stay, what a node
 * installs there stays in the node's upper directory).
 */
#ifndef VFAB_NETNS_NODE_BIN_H
#define VFAB_NETNS_NODE_BIN_H

#include <stddef.h>

#define VFAB_NODE_BIN_DIR "node-bin"	     /* in the run dir */
#define VFAB_NODE_BIN_UPPER "bin-upper"	     /* in a node's dir */
#define VFAB_NODE_BIN_WORK "bin-work"	     /* in a node's dir */
#define VFAB_NODE_BIN_MOUNT "/usr/local/bin" /* on every PATH, sudo's secure_path too */

/* The embedded programs, built from tools/ (node_bin_files.c, generated). */
struct vfab_node_bin_file {
	const char *name;
	const char *text;
};
extern const struct vfab_node_bin_file vfab_node_bin_files[];

/* <rundir>/node-bin with every program (mode 0755). 0 or -errno. */
int vfab_node_bin_write(const char *rundir);

/* A node's upper and work directories in its node dir. 0 or -errno. */
int vfab_node_bin_node_dirs(const char *node_dir);

/*
 * Inside the holder's mount namespace: the overlay on /usr/local/bin. A host
 * without /usr/local/bin gets none (nothing is created on the host). 0 or
 * -errno with `err` saying what failed.
 */
int vfab_node_bin_mount(const char *rundir, const char *node_dir, char *err, size_t errlen);

#endif /* VFAB_NETNS_NODE_BIN_H */
