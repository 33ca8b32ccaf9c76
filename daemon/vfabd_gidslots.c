/* SPDX-License-Identifier: MIT */
/*
 * Which index each GID of a port gets when the addresses of its netdev change
 * at run time: the allocation the kernel's GID cache makes
 * (drivers/infiniband/core/cache.c, fed by roce_gid_mgmt.c), as a pure
 * function of the current table and the netdev's current addresses.
 *
 * What the kernel does, and so what this reproduces:
 *  - Indices 0 and 1 are reserved for the default GID fe80::EUI-64(MAC), one
 *    per GID type (RoCE v1, then v2); no address ever takes them.
 *  - An address added to the netdev (inetaddr/inet6addr notifier, NETDEV_UP)
 *    is added once per GID type, RoCE v1 first, then v2; each add takes the
 *    LOWEST FREE index (find_gid remembers the first empty slot). A GID that
 *    is already in the table with that type (same netdev) is not added again,
 *    which is why an IPv6 link-local equal to the default GID adds nothing.
 *  - A removed address (NETDEV_DOWN) frees its entries; they read as empty
 *    (zero GID) and the next address takes them. Nothing ever moves: the
 *    other entries keep their index, so the table can have holes.
 *  Since every address takes two slots and frees two, the free slots come in
 *  aligned pairs and a new address takes the lowest free pair (2k, 2k+1).
 *
 * Differences from the kernel, on purpose: the kernel keeps a deleted entry
 * reserved while a QP or AH still references it (it is freed when the last
 * reference goes); vfab does not count references, so the slot is free at
 * once. The region holds VFAB_PORT_GIDS entries per port where the kernel's
 * table has 256: an address that finds no free slot below VFAB_PORT_GIDS is
 * left out and counted (only a netdev with more than 15 addresses gets there).
 */

#include "vfabd_gidslots.h"

#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "fabric/gid.h"

#define DEFAULT_SLOTS 2 /* indices 0 (RoCE v1) and 1 (RoCE v2) */

/* The address as a GID (IPv4 mapped) and the prefix the entry keeps. */
static void addr_gid(const struct vfab_gid_addr *a, uint8_t raw[16], uint8_t *prefix)
{
	if (a->family == AF_INET) {
		memset(raw, 0, 10);
		raw[10] = 0xff;
		raw[11] = 0xff;
		memcpy(raw + 12, a->addr, 4);
		/* As an IPv6 prefix: the mapped range plus the IPv4 prefix (as gid.c). */
		*prefix = (uint8_t)(96 + (a->prefix > 32 ? 32 : a->prefix));
	} else {
		memcpy(raw, a->addr, 16);
		*prefix = a->prefix > 128 ? 128 : a->prefix;
	}
}

static int lowest_free(const struct vfab_gid *out)
{
	for (int i = DEFAULT_SLOTS; i < VFAB_PORT_GIDS; i++)
		if (out[i].type == VFAB_GID_EMPTY)
			return i;
	return -1;
}

/*
 * Index in cur of raw with type from the netdev `vlan` names (0: the port's
 * own, else its VLAN upper), -1 when absent (cur is in region layout).
 */
static int find_entry(const struct vfab_gid *cur, size_t ncur, const uint8_t raw[16], uint8_t type,
		      uint16_t vlan)
{
	for (size_t i = 0; i < ncur; i++)
		if (cur[i].type == type && cur[i].vlan == vlan && cur[i].index >= DEFAULT_SLOTS &&
		    cur[i].index < VFAB_PORT_GIDS && !memcmp(cur[i].raw, raw, 16))
			return (int)cur[i].index;
	return -1;
}

static void set_entry(struct vfab_gid *out, int idx, const uint8_t raw[16], uint8_t type,
		      uint8_t prefix, uint16_t vlan)
{
	memset(&out[idx], 0, sizeof(out[idx]));
	memcpy(out[idx].raw, raw, 16);
	out[idx].type = type;
	out[idx].prefix = prefix;
	out[idx].vlan = vlan;
	out[idx].index = (uint32_t)idx;
}

/*
 * An earlier address of want that maps to the same GID on the same netdev,
 * or the default GID on the port's own netdev: the kernel adds a GID once.
 */
static bool skipped(const struct vfab_gid_addr *want, size_t k, const uint8_t raw[16],
		    const uint8_t def[16])
{
	uint8_t other[16], prefix;

	if (!want[k].vlan && !memcmp(raw, def, 16))
		return true;
	for (size_t j = 0; j < k; j++) {
		addr_gid(&want[j], other, &prefix);
		if (want[j].vlan == want[k].vlan && !memcmp(other, raw, 16))
			return true;
	}
	return false;
}

int vfabd_gid_slots(const uint8_t mac[6], const struct vfab_gid *cur, size_t ncur,
		    const struct vfab_gid_addr *want, size_t nwant,
		    struct vfab_gid out[VFAB_PORT_GIDS], size_t *dropped)
{
	uint8_t def[16], raw[16], prefix;
	int len = DEFAULT_SLOTS;
	size_t k;

	*dropped = 0;
	memset(out, 0, VFAB_PORT_GIDS * sizeof(out[0]));
	vfab_gid_default(mac, def);
	set_entry(out, 0, def, VFAB_GID_ROCE_V1, 64, 0);
	set_entry(out, 1, def, VFAB_GID_ROCE_V2, 64, 0);

	/* First what stays: an entry whose address is still there keeps its index. */
	for (k = 0; k < nwant; k++) {
		addr_gid(&want[k], raw, &prefix);
		if (skipped(want, k, raw, def))
			continue;
		for (uint8_t type = VFAB_GID_ROCE_V1; type <= VFAB_GID_ROCE_V2; type++) {
			int idx = find_entry(cur, ncur, raw, type, want[k].vlan);

			if (idx >= 0 && out[idx].type == VFAB_GID_EMPTY)
				set_entry(out, idx, raw, type, prefix, want[k].vlan);
		}
	}
	/* Then what is new, in the order given: v1 then v2, each the lowest free index. */
	for (k = 0; k < nwant; k++) {
		bool lost = false;

		addr_gid(&want[k], raw, &prefix);
		if (skipped(want, k, raw, def))
			continue;
		for (uint8_t type = VFAB_GID_ROCE_V1; type <= VFAB_GID_ROCE_V2; type++) {
			int idx = find_entry(out, VFAB_PORT_GIDS, raw, type, want[k].vlan);

			if (idx >= 0)
				continue;
			idx = lowest_free(out);
			if (idx < 0) {
				lost = true;
				continue;
			}
			set_entry(out, idx, raw, type, prefix, want[k].vlan);
		}
		*dropped += lost;
	}
	for (int i = DEFAULT_SLOTS; i < VFAB_PORT_GIDS; i++)
		if (out[i].type != VFAB_GID_EMPTY)
			len = i + 1;
	return len;
}
