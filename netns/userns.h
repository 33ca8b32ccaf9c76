/* SPDX-License-Identifier: MIT */
/*
 * Rootless fabrics: a user who is not root brings up a fabric inside a user
 * namespace that vfab makes, where that user is root and nowhere else.
 *
 * `vfab up` forks a keeper: a process that makes the user namespace (its
 * uid and gid mapped to 0, setgroups denied) and a mount and a network
 * namespace owned by it (the fabric's host), builds there a /dev of its own (the host's entries
 * bound one by one, an empty infiniband/ for the nodes' views, a private /dev/shm for the region)
 * and then only waits. The CLI joins both namespaces and brings the fabric up exactly as root does:
 * every namespace, mount, veth and process of the fabric belongs to that user namespace, so the
 * host sees none of them and another user's or root's fabric of the same name is another fabric.
 * Every later verb joins the keeper's namespaces first; `vfab down` ends the keeper last, and with
 * it everything the fabric mounted.
 *
 * The CLI joins the keeper's network namespace too.
 *
 * The keeper is found through the anchor file (base/paths.h
 * vfab_userns_anchor_path), in the user's own run root: its pid and start
 * time, trusted only for a process of the same user.
 */
#ifndef VFAB_NETNS_USERNS_H
#define VFAB_NETNS_USERNS_H

#include <stdbool.h>
#include <stddef.h>

/* The process name of a keeper (ps, /proc/PID/comm). */
#define VFAB_USERNS_KEEPER_COMM "vfab-userns"

/*
 * unshare(CLONE_NEWUSER | more_flags), the caller's uid and gid mapped to 0
 * in the new user namespace (setgroups denied, as an unprivileged map must
 * be). 0 or -errno.
 */
int vfab_userns_unshare(int more_flags);

/* Whether this process acts for a rootless fabric from outside it (not root: must join). */
bool vfab_userns_outside(void);

/*
 * Makes the run root (mode 0700 under /tmp: refused when it is not the
 * user's own), starts the keeper of fabric and joins its namespaces.
 * -EEXIST when the fabric has a live keeper; else 0 or -errno, with err
 * saying what failed.
 */
int vfab_userns_create(const char *fabric, char *err, size_t errlen);

/*
 * Joins the namespaces of fabric's keeper (the calling process must be
 * single-threaded) and returns to the same working directory there.
 * -ENOENT when the fabric has no live keeper.
 */
int vfab_userns_join(const char *fabric);

/*
 * From inside: ends the keeper (SIGKILL, by the anchor's pid and start
 * time), removes the anchor and the run root's netns/ if nothing else is
 * there. 0 also when there was none.
 */
int vfab_userns_end(const char *fabric);

#endif /* VFAB_NETNS_USERNS_H */
