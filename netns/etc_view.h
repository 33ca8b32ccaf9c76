/* SPDX-License-Identifier: MIT */
/*
 * What a node sees in /etc on top of the host's: written into the overlay's
 * upper directory before the overlay is mounted.
 */
#ifndef VFAB_NETNS_ETC_VIEW_H
#define VFAB_NETNS_ETC_VIEW_H

#include <stdint.h>

#include "config/config.h"

/* Every node is also known as <id>.vfab in the nodes' /etc/hosts. */
#define VFAB_HOSTS_DOMAIN ".vfab"
#define VFAB_LIBDIRS_CONF "vfab-libdirs.conf"
#define VFAB_SSH_CONF_INCLUDE "vfab.conf"

/*
 * Writes into `upper`: hostname (node id), hosts (localhost + the eth0
 * addresses of every node, named "<id> <id>.vfab"), ld.so.preload (only when `preload_lib` names an
 * existing file) and libibverbs.d/ hiding the host's drivers and holding only
 * vfab.driver = "driver <libdir>/libvfab". Returns 0 or -errno.
 */
int vfab_etc_view_write(const char *upper, const struct vfab_config *cfg, uint32_t node,
			const char *libdir, const char *preload_lib);

/*
 * ld.so.conf.d/vfab-libdirs.conf listing `dirs` (absolute, one per line), for
 * libraries the host lacks (rdma-core unpacked with dpkg -x). The node's
 * ld.so.cache is then rebuilt inside the node (sandbox.c). 0 or -errno.
 */
int vfab_etc_view_add_libdirs(const char *upper, const char *const *dirs, unsigned ndirs);

/* ssh/ssh_config.d/vfab.conf including the fabric's generated ssh config. */
int vfab_etc_view_add_ssh(const char *upper, const char *ssh_config);

/*
 * sshd without PAM refuses every login, keys included, to an account whose
 * password field starts with '!' (a locked root, as on many installs). The
 * node's shadow then says '*' for root instead: key logins work in the
 * node, password logins stay impossible, the host's file is untouched.
 * `shadow` is the host's (/etc/shadow). Writes <upper>/shadow only when
 * needed. 0 or -errno.
 */
#define VFAB_HOST_SHADOW "/etc/shadow"
int vfab_etc_view_unlock_root_keys(const char *upper, const char *shadow);

/*
 * nccl.conf: the host's lines (`host_conf`, if it exists), then
 * NCCL_GIN_TYPE=2. NCCL 2.28.7-2.28.9 dereference a GIN backend pointer of
 * -1 when IB devices exist but none is libmlx5's (NVIDIA/nccl#1881, fixed in
 * 2.29): every rank dies of SIGSEGV right after "Initialized NET plugin IB".
 * vfab's HCAs are served by vfab's provider, so NCCL reads provider=None,
 * as on rxe or bnxt_re. Type 2 (the proxy backend) is what NCCL >= 2.29
 * picks by itself for such devices. NCCL sets a conf line only where the
 * environment and ~/.nccl.conf did not, and the first line wins, so users
 * and the host's own file keep the last word. 0 or -errno.
 */
#define VFAB_HOST_NCCL_CONF "/etc/nccl.conf"
int vfab_etc_view_add_nccl_conf(const char *upper, const char *host_conf);

#endif /* VFAB_NETNS_ETC_VIEW_H */
