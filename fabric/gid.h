/* SPDX-License-Identifier: MIT */
/*
 * RoCE GID table rules, as the kernel builds them from a port's netdev:
 * index 0/1 the default GID fe80::EUI-64(MAC) as RoCE v1 then v2, then every
 * IPv4 address as ::ffff:a.b.c.d (v1, v2), then every IPv6 address (v1, v2).
 * Pure functions: no region, no I/O.
 */
#ifndef VFAB_GID_H
#define VFAB_GID_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric/region.h"

#define VFAB_GID_STR_LEN 40 /* "xxxx:" x 7 + "xxxx" + NUL */

/* fe80::EUI-64(mac): the U/L bit flipped, ff:fe inserted in the middle. */
void vfab_gid_default(const uint8_t mac[6], uint8_t gid[16]);

/*
 * The port's table in kernel order. Addresses that would repeat an entry
 * already present (an IPv6 equal to the default GID, a duplicate) are
 * skipped. Returns the number of entries written (index set to the entry's
 * position) or -ENOSPC when max is too small.
 */
int vfab_gid_table_build(const uint8_t mac[6], const struct in_addr *v4, size_t n4,
			 const struct in6_addr *v6, size_t n6, struct vfab_gid *out, size_t max);

/* "fe80:0000:0000:0000:0276:66ff:fe00:0100", as sysfs gids/N prints it. */
void vfab_gid_format(const uint8_t raw[16], char buf[VFAB_GID_STR_LEN]);
/* Parses the sysfs form or any inet_pton IPv6 form. 0 or -EINVAL. */
int vfab_gid_parse(const char *s, uint8_t raw[16]);

/* gid_attrs/types/N text: "IB/RoCE v1" (also for empty entries) or "RoCE v2". */
const char *vfab_gid_type_name(uint8_t type);

#endif /* VFAB_GID_H */
