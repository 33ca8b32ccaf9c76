/* SPDX-License-Identifier: MIT */
/*
 * Prefix arithmetic on raw addresses in network byte order (4 bytes for IPv4,
 * 16 for IPv6), shared by the config's leaf planning and the reachability
 * rules. Header-only: both the libyaml-free fabric library and the config
 * parser use it.
 */
#ifndef VFAB_IPNET_H
#define VFAB_IPNET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Does net/prefix contain addr? (len bytes; prefix in bits, <= 8 * len) */
static inline bool vfab_ipnet_contains(const uint8_t *net, unsigned prefix, const uint8_t *addr,
				       size_t len)
{
	size_t full = prefix / 8;
	unsigned rest = prefix % 8;

	if (prefix > 8 * len)
		return false;
	if (memcmp(net, addr, full))
		return false;
	if (rest) {
		uint8_t m = (uint8_t)(0xff << (8 - rest));

		return (net[full] & m) == (addr[full] & m);
	}
	return true;
}

/* Clears the host bits of addr beyond prefix. */
static inline void vfab_ipnet_mask(uint8_t *addr, unsigned prefix, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned keep = prefix > 8 * i ? prefix - 8 * i : 0;

		if (keep < 8)
			addr[i] &= (uint8_t)(keep ? 0xff << (8 - keep) : 0);
	}
}

/* Two networks overlap when the shorter prefix contains the other network. */
static inline bool vfab_ipnet_overlap(const uint8_t *a, unsigned pa, const uint8_t *b, unsigned pb,
				      size_t len)
{
	return pa <= pb ? vfab_ipnet_contains(a, pa, b, len) : vfab_ipnet_contains(b, pb, a, len);
}

/* Adds v to the address as a big-endian number (host parts, block numbers). */
static inline void vfab_ipnet_add(uint8_t *addr, size_t len, uint64_t v)
{
	for (size_t i = len; i-- > 0 && v;) {
		uint64_t sum = addr[i] + (v & 0xff);

		addr[i] = (uint8_t)sum;
		v = (v >> 8) + (sum >> 8);
	}
}

/* Length of the prefix a and b share. */
static inline unsigned vfab_ipnet_common(const uint8_t *a, const uint8_t *b, size_t len)
{
	unsigned n = 0;

	for (size_t i = 0; i < len; i++) {
		uint8_t x = a[i] ^ b[i];

		if (!x) {
			n += 8;
			continue;
		}
		while (!(x & 0x80)) {
			x <<= 1;
			n++;
		}
		break;
	}
	return n;
}

#endif /* VFAB_IPNET_H */
