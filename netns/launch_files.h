/* SPDX-License-Identifier: MIT */
/*
 * What cluster launchers read, generated into a fabric's run dir from its
 * config: a DeepSpeed-style `hostfile`, an MPI/pdsh-style `hosts` list, and
 * for fabrics with sshd in the nodes the client `ssh_config` and each node's
 * sshd config. Pure writers: no process is started here (node_sshd.c does).
 */
#ifndef VFAB_NETNS_LAUNCH_FILES_H
#define VFAB_NETNS_LAUNCH_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

#define VFAB_HOSTFILE "hostfile"     /* "node0 slots=1" per node */
#define VFAB_HOSTS_LIST "hosts"	     /* one node id per line */
#define VFAB_SSH_CONFIG "ssh_config" /* ssh -F <rundir>/ssh_config node1 */
#define VFAB_SSH_DIR "ssh"	     /* keys, sshd configs, pid files and logs */
#define VFAB_SSH_PORT 22	     /* the nodes' sshd listens here */
#define VFAB_SSH_CLIENT_KEY "id_ed25519"
#define VFAB_SSH_HOST_KEY "ssh_host_ed25519_key"
#define VFAB_SSH_AUTHORIZED_KEYS "authorized_keys"

/*
 * The address a node is reached at: its eth0's first IPv4 address, else its
 * first address of any family, without the prefix length. 0 or -errno.
 */
int vfab_node_main_addr(const struct vfab_cfg_node *n, char *buf, size_t len);

/* <rundir>/hostfile and <rundir>/hosts, nodes in config order. */
int vfab_launch_files_write(const char *rundir, const struct vfab_config *cfg);

/* <rundir>/ssh_config: per node "Host <id> <id>.vfab <addr>" as root with the fabric's key. */
int vfab_ssh_client_config_write(const char *rundir, const struct vfab_config *cfg);

/*
 * <rundir>/ssh/sshd-<id>.conf for node `node` (config index): listening on
 * port 22 of its eth0 addresses, the fabric's host key and authorized keys,
 * root by key only, no PAM, pid file <rundir>/ssh/sshd-<id>.pid. The path
 * written goes to `path`.
 */
int vfab_sshd_config_write(const char *rundir, const struct vfab_config *cfg, uint32_t node,
			   char *path, size_t len);

#endif /* VFAB_NETNS_LAUNCH_FILES_H */
