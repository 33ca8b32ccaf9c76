/* SPDX-License-Identifier: MIT */
/*
 * A multi-host fabric's way to its other hosts (config hosts[].uplink): the
 * fabric namespace's router joins the machine's uplink netdev as a macvlan
 * named VFAB_UPLINK_NETDEV and routes the other hosts' leaves through it.
 */
#ifndef VFAB_NETNS_UPLINK_H
#define VFAB_NETNS_UPLINK_H

#include <stddef.h>

#include "config/config.h"

#define VFAB_UPLINK_NETDEV "uplink" /* in the fabric namespace */

/*
 * For the host cfg was selected for (vfab_config_select_host): the macvlan of
 * its uplink netdev, found in the calling thread's network namespace, with
 * the host's uplink addresses and cfg->routes; nothing without a selection.
 * The fabric namespace must exist; the macvlan goes with it.
 */
int vfab_net_uplink_create(const char *fabric, const struct vfab_config *cfg, char *err,
			   size_t errlen);

#endif /* VFAB_NETNS_UPLINK_H */
