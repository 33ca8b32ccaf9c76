/* SPDX-License-Identifier: MIT */
/*
 * A multi-host fabric's way to its other hosts (config hosts[].uplink): the
 * fabric namespace's router joins the machine's uplink netdev as a macvlan
 * named VFAB_UPLINK_NETDEV and routes the other hosts' leaves through it. A
 * leaf whose nodes are on several hosts is stretched over the uplinks by a
 * VXLAN device (VFAB_VXLAN_NETDEV) on its bridge, tunnels to those hosts.
 */
#ifndef VFAB_NETNS_UPLINK_H
#define VFAB_NETNS_UPLINK_H

#include <stddef.h>

#include "config/config.h"

#define VFAB_UPLINK_NETDEV "uplink" /* in the fabric namespace */
#define VFAB_VXLAN_NETDEV "vfvx%u"  /* of leaf k (region index), in the fabric namespace */

/*
 * For the host cfg was selected for (vfab_config_select_host): the macvlan of
 * its uplink netdev, found in the calling thread's network namespace, with
 * the host's uplink addresses and cfg->routes, and each spanning leaf's VXLAN
 * on its bridge (r: the topology of cfg); nothing without a selection. The
 * fabric namespace must exist; the devices go with it.
 */
int vfab_net_uplink_create(const char *fabric, const struct vfab_config *cfg,
			   const struct vfab_region *r, char *err, size_t errlen);

#endif /* VFAB_NETNS_UPLINK_H */
