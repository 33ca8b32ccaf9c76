/* SPDX-License-Identifier: MIT */
/* Names in requests: nodes, ports, links and numeric parameters. */
#ifndef VFAB_DAEMON_VFABD_TARGET_H
#define VFAB_DAEMON_VFABD_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "fabric/region.h"

/* "node/hca[/port]" -> HCA index and port (0: every port). -ENOENT unknown, -EINVAL syntax. */
int vfabd_parse_port(const struct vfab_region *r, const char *s, uint32_t *hca, uint32_t *port);
/*
 * A link name (links[].name) or "node/hca[/port]" (both directions of each
 * port). Fills up to max link indices; *port_hca and *port_no name the port when
 * the target was a port (port_hca = -1 for a named link). Count or -errno.
 */
int vfabd_parse_links(const struct vfab_region *r, const char *s, uint32_t *links, size_t max,
		      int32_t *port_hca, uint32_t *port_no);
/* The value of a key=value parameter: a decimal number in [lo, hi] (no hex, inf, nan), else -EINVAL. */
int vfabd_parse_number(const char *value, double lo, double hi, double *out);
/* Node index by id; -ENOENT. */
int vfabd_find_node(const struct vfab_region *r, const char *id);

#endif /* VFAB_DAEMON_VFABD_TARGET_H */
