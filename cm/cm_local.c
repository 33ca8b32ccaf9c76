/* SPDX-License-Identifier: MIT */
#include "cm/cm_local.h"

#include <errno.h>
#include <string.h>

#include "base/clock.h"
#include "cm/cm_addr.h"
#include "cm/cm_path.h"

#define MAX_ADDRS 128 /* GIDs kept; a node with more loses the rest */
#define MISS_RESCAN_NS                                                                             \
	200000000ull /* an address not found reads the tables again, at most this often */

static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static struct ibv_context *const *devs;
static int ndevs;
static struct vfab_cm_local addrs[MAX_ADDRS];
static int naddrs;
static int valid;	 /* 0: read the tables again */
static uint64_t scanned; /* when they were read */

void vfab_cm_local_set_devices(struct ibv_context *const *ctxs, int n)
{
	devs = ctxs;
	ndevs = n;
	valid = 0;
}

void vfab_cm_local_invalidate(void)
{
	valid = 0;
}

static void keep(const struct vfab_cm_local *loc, void *arg)
{
	(void)arg;
	for (int i = 0; i < naddrs; i++)
		if (!memcmp(addrs[i].gid, loc->gid, 16))
			return; /* the first port that has it wins, as a scan did */
	if (naddrs < MAX_ADDRS)
		addrs[naddrs++] = *loc;
}

void vfab_cm_local_refresh(void)
{
	if (valid)
		return;
	naddrs = 0;
	vfab_cm_route_scan(devs, ndevs, keep, NULL);
	valid = 1;
	scanned = vfab_mono_ns();
}

int vfab_cm_local_find(const struct sockaddr *addr, struct vfab_cm_local *out)
{
	uint8_t want[16];
	int ret = vfab_cm_gid_of(addr, want);

	if (ret)
		return ret;
	for (int tries = 0; tries < 2; tries++) {
		vfab_cm_local_refresh();
		for (int i = 0; i < naddrs; i++)
			if (!memcmp(addrs[i].gid, want, 16)) {
				*out = addrs[i];
				out->mtu =
				    vfab_cm_route_mtu(devs[out->dev], out->port, out->ifindex);
				return 0;
			}
		/* New since the last read, and its event not here (yet): look once more. */
		if (vfab_mono_ns() < scanned + MISS_RESCAN_NS)
			break;
		valid = 0;
	}
	return -EADDRNOTAVAIL;
}

static int family_of(const uint8_t gid[16])
{
	return memcmp(gid, v4_prefix, sizeof(v4_prefix)) ? AF_INET6 : AF_INET;
}

int vfab_cm_local_addr(int family, int i, struct sockaddr_storage *ss)
{
	vfab_cm_local_refresh();
	for (int k = 0; k < naddrs; k++) {
		if (family_of(addrs[k].gid) != family || i--)
			continue;
		vfab_cm_sa_make(ss, family, family == AF_INET ? addrs[k].gid + 12 : addrs[k].gid,
				0);
		return 0;
	}
	return -ENOENT;
}
