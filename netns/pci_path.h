/* SPDX-License-Identifier: MIT */
/*
 * Path arithmetic of the PCI view (pci_view.h): sysfs links are relative, and
 * the view's own links must resolve both below /sys in a node and below the
 * node dir of the run dir, so paths are kept relative to a sysfs root and
 * joined lexically (sysfs has no symlinked directories inside a device path).
 */
#ifndef VFAB_NETNS_PCI_PATH_H
#define VFAB_NETNS_PCI_PATH_H

#include <stddef.h>

#include "netns/pci_view.h"

/* "0000:1b:00.0" (the domain may have more than 4 digits) into *a. 0 or -EINVAL. */
int vfab_pci_parse_bdf(const char *name, struct vfab_pci_addr *a);

/*
 * `rel` (a link's text) seen from directory `base` (both relative to the
 * sysfs root), "." and ".." resolved: ("bus/pci/devices", "../../../devices/
 * pci0000:00/0000:00:01.0") -> "devices/pci0000:00/0000:00:01.0". An absolute
 * rel is copied. 0, -EINVAL (climbs above the root) or -ENAMETOOLONG.
 */
int vfab_pci_path_join(const char *base, const char *rel, char *out, size_t len);

/*
 * The link text that reaches `to` from directory `from` (both relative to the
 * sysfs root): one "../" per component of from, then to. 0 or -ENAMETOOLONG.
 */
int vfab_pci_rel_link(const char *from, const char *to, char *out, size_t len);

#endif /* VFAB_NETNS_PCI_PATH_H */
