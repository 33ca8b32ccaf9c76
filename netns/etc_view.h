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

#endif /* VFAB_NETNS_ETC_VIEW_H */
