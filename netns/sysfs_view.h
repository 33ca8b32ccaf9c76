/* SPDX-License-Identifier: MIT */
/*
 * The files a node sees as /sys/class/infiniband*, and its /dev/infiniband,
 * written from the region (DESIGN.md "Sysfs view of an HCA"). A pure function
 * of (region, node, output directory) so it can be checked in a temp dir.
 */
#ifndef VFAB_NETNS_SYSFS_VIEW_H
#define VFAB_NETNS_SYSFS_VIEW_H

#include <stdint.h>

#include "fabric/region.h"

#define VFAB_SYSFS_PKEYS 128
#define VFAB_UVERBS_ABI_VERSION 1 /* class/infiniband_verbs/uverbsN/abi_version */
#define VFAB_VERBS_ABI_VERSION 6  /* class/infiniband_verbs/abi_version */
#define VFAB_UMAD_ABI_VERSION 5	  /* class/infiniband_mad/abi_version */

/*
 * Writes, for node `node` (index into r->nodes[]):
 *   <outdir>/class/infiniband/<hca>/...          (every file of the contract)
 *   <outdir>/class/infiniband_verbs/abi_version, uverbsN/{ibdev,abi_version,dev}
 *   <outdir>/class/infiniband_mad/abi_version     (no umad devices)
 *   <outdir>/dev/uverbsN                          (char device 1:7, mode 0666)
 * Directories are created as needed. Returns 0 or -errno.
 */
int vfab_sysfs_view_write(const struct vfab_region *r, uint32_t node, const char *outdir);

#endif /* VFAB_NETNS_SYSFS_VIEW_H */
