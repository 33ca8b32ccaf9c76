/* SPDX-License-Identifier: MIT */
/*
 * /sys/class/net/<netdev>/device in a node: the PCI function of the HCA on
 * that netdev (DESIGN.md "PCI view"), as a server's netdev has it. The
 * node's netdevs are veths, whose sysfs directory has no `device`; sysfs
 * takes no new entries, so the directory is covered by a tmpfs holding every
 * entry of the kernel's (bound from it: reads and writes stay live) plus the
 * link. /sys/class/net itself stays the kernel's, so netdevs made later
 * still appear.
 */
#ifndef VFAB_NETNS_NETDEV_DEVICE_H
#define VFAB_NETNS_NETDEV_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "fabric/region.h"
#include "netns/pci_view.h"

/*
 * For every netdev of node `node` that an HCA port of layout `l` is bound to
 * (vfab_pci_port_netdev), inside the running node (after its netdevs
 * exist): covers its sysfs directory as above, with device -> the HCA's
 * function. A directory that has a `device` already is left alone. Runs in
 * a child that joins the node. Returns 0 or -errno with err saying what.
 */
int vfab_netdev_device_links(const char *rundir, const struct vfab_region *r, uint32_t node,
			     const struct vfab_pci_layout *l, char *err, size_t errlen);

#endif /* VFAB_NETNS_NETDEV_DEVICE_H */
