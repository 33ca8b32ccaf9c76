/* SPDX-License-Identifier: MIT */
/*
 * RoCE GID table rules, as the kernel builds them from a port's netdev:
 * index 0/1 the default GID fe80::EUI-64(MAC) as RoCE v1 then v2, then one
 * v1/v2 pair per address: IPv4 as ::ffff:a.b.c.d, IPv6 as is. The kernel
 * appends a pair whenever an address is added, so the order is the order the
 * addresses were added (vfab_gid_table_build_ordered); when it enumerates the
 * addresses of an existing netdev it takes IPv4 first, then IPv6
 * (vfab_gid_table_build). Addresses of a VLAN upper of the netdev
 * (<netdev>.<vlan>) enter the same table, tagged with the VLAN: the kernel's
 * cache tells entries apart by GID, type and netdev, so the upper's
 * link-local address, equal to the default GID (same MAC), is a pair of its
 * own. Pure functions: no region, no I/O.
 */
#ifndef VFAB_GID_H
#define VFAB_GID_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric/region.h"

#define VFAB_GID_STR_LEN 40 /* "xxxx:" x 7 + "xxxx" + NUL */

/* An interface address: IPv4 in the first 4 bytes, network byte order. */
struct vfab_gid_addr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	uint8_t prefix; /* kept in the entry (vfab_gid.prefix) for the routing rules */
	uint16_t vlan;	/* 0: an address of the port's netdev; else of its VLAN upper */
	uint8_t pod;	/* 0, or the pod (node + 1) whose upper of a shared HCA's netdev has it */
};

/* fe80::EUI-64(mac): the U/L bit flipped, ff:fe inserted in the middle. */
void vfab_gid_default(const uint8_t mac[6], uint8_t gid[16]);

/*
 * The port's table in kernel order. Addresses that would repeat an entry
 * already present with the same netdev (an IPv6 equal to the default GID, a
 * duplicate) are skipped. Returns the number of entries written (index set to the entry's
 * position) or -ENOSPC when max is too small.
 */
int vfab_gid_table_build(const uint8_t mac[6], const struct in_addr *v4, size_t n4,
			 const struct in6_addr *v6, size_t n6, struct vfab_gid *out, size_t max);
/* The same with the addresses in the given order, families mixed. */
int vfab_gid_table_build_ordered(const uint8_t mac[6], const struct vfab_gid_addr *addrs, size_t n,
				 struct vfab_gid *out, size_t max);

/* ::ffff:a.b.c.d */
static inline int vfab_gid_is_v4mapped(const uint8_t g[16])
{
	static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !__builtin_memcmp(g, pfx, sizeof(pfx));
}

/* fe80::/10: never leaves its L2 segment. */
static inline int vfab_gid_is_link_local(const uint8_t g[16])
{
	return g[0] == 0xfe && (g[1] & 0xc0) == 0x80;
}

/* "fe80:0000:0000:0000:0276:66ff:fe00:0100", as sysfs gids/N prints it. */
void vfab_gid_format(const uint8_t raw[16], char buf[VFAB_GID_STR_LEN]);
/* Parses the sysfs form or any inet_pton IPv6 form. 0 or -EINVAL. */
int vfab_gid_parse(const char *s, uint8_t raw[16]);

/* gid_attrs/types/N text: "IB/RoCE v1" (also for empty entries) or "RoCE v2". */
const char *vfab_gid_type_name(uint8_t type);

#endif /* VFAB_GID_H */
