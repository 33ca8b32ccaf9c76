/* SPDX-License-Identifier: MIT */
/*
 * The device locator: the file device/vfab of an HCA's PCI function in a
 * node's sysfs view, "region PATH", "hca N" and "rundir DIR" one per line.
 * `vfab up` (root) writes it into the view, which only root can change, so
 * it is what every process of a node (root ones too) may take the run dir
 * and the fabric's files from, never the region. Written and read here only.
 */
#ifndef VFAB_LOCATOR_H
#define VFAB_LOCATOR_H

#include <stddef.h>
#include <stdint.h>

struct vfab_locator {
	char region[256]; /* the region file */
	uint32_t hca;	  /* the HCA's index in the region */
	char rundir[256]; /* the fabric's run dir, absolute */
};

/* The file's text for l into buf: 0 or -ENAMETOOLONG. */
int vfab_locator_format(char *buf, size_t len, const struct vfab_locator *l);
/*
 * Parses a locator's text: 0, or -EINVAL when a field is missing or out of
 * range (an HCA index of max_hcas or more, a run dir that is not absolute).
 */
int vfab_locator_parse(const char *text, uint32_t max_hcas, struct vfab_locator *out);

#endif /* VFAB_LOCATOR_H */
