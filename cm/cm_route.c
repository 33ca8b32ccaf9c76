/* SPDX-License-Identifier: MIT */
#include "cm/cm_route.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "cm/cm_addr.h"
#include "cm/cm_path.h"

#define DISCARD_PORT 9 /* where the neighbour probe goes (RFC 863) */
/*
 * GID slots are filled lowest first (two per address: RoCE v1 and v2), so a
 * run of this many empty slots ends the table's used part; scanning all 256
 * slots (three sysfs files each) made every bind and listen take milliseconds.
 */
#define GID_HOLE_MAX 32

static const uint8_t zero_gid[16];

int vfab_cm_route_src(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	struct sockaddr_storage to;
	socklen_t len = sizeof(*src);
	int fd, ret = 0;

	if (dst->sa_family != AF_INET && dst->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	vfab_cm_sa_copy(&to, dst);
	vfab_cm_sa_set_port(&to, DISCARD_PORT);
	fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&to, vfab_cm_sa_len(dst)) ||
	    getsockname(fd, (struct sockaddr *)src, &len))
		ret = -errno;
	close(fd);
	if (!ret)
		vfab_cm_sa_set_port(src, 0);
	return ret;
}

/* An address of this node binds; any other does not. */
static int is_local(const struct sockaddr *a)
{
	struct sockaddr_storage ss;
	int fd, ok;

	vfab_cm_sa_copy(&ss, a);
	vfab_cm_sa_set_port(&ss, 0);
	fd = socket(a->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	ok = bind(fd, (struct sockaddr *)&ss, vfab_cm_sa_len(a)) == 0;
	close(fd);
	return ok;
}

/* IPv4 next hop from the node's routing table (/proc/net/route, longest prefix). */
static uint32_t next_hop4(uint32_t dst)
{
	char line[256], ifn[32];
	unsigned d, g, flags, refs, use, metric, mask;
	uint32_t best_gw = dst;
	int best_len = -1;
	FILE *f = fopen("/proc/net/route", "re");

	if (!f)
		return dst;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%31s %x %x %x %u %u %u %x", ifn, &d, &g, &flags, &refs, &use,
			   &metric, &mask) != 8 ||
		    !(flags & 1) || (dst & mask) != d)
			continue;
		if (__builtin_popcount(mask) > best_len) {
			best_len = __builtin_popcount(mask);
			best_gw = (flags & 2) ? g : dst;
		}
	}
	fclose(f);
	return best_gw;
}

/* 1: complete entry, 0: none or incomplete (/proc/net/arp flags ATF_COM). */
static int arp_complete(uint32_t ip)
{
	char line[256], addr[64], hw[64], mask[64], dev[64];
	unsigned type, flags;
	struct in_addr a;
	int ok = 0;
	FILE *f = fopen("/proc/net/arp", "re");

	if (!f)
		return 0;
	while (!ok && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s 0x%x 0x%x %63s %63s %63s", addr, &type, &flags, hw, mask,
			   dev) != 6)
			continue;
		if (inet_pton(AF_INET, addr, &a) == 1 && a.s_addr == ip && (flags & 0x2))
			ok = 1;
	}
	fclose(f);
	return ok;
}

int vfab_cm_route_neigh(const struct sockaddr *dst, int timeout_ms)
{
	struct sockaddr_in probe;
	uint64_t end = vfab_mono_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 2000) * 1000000u;
	uint32_t hop;
	int fd;

	if (is_local(dst))
		return 0;
	if (dst->sa_family != AF_INET)
		return 0; /* IPv6: the route alone (see docs/DESIGN.md) */
	/* A group's MAC is its address's (ip_eth_mc_map): nothing to resolve. */
	if (IN_MULTICAST(ntohl(((const struct sockaddr_in *)dst)->sin_addr.s_addr)))
		return 0;
	hop = next_hop4(((const struct sockaddr_in *)dst)->sin_addr.s_addr);
	if (arp_complete(hop))
		return 0;
	/* A datagram makes the kernel resolve the next hop, as the kernel's CM does. */
	memcpy(&probe, dst, sizeof(probe));
	probe.sin_port = htons(DISCARD_PORT);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		(void)sendto(fd, "", 0, MSG_DONTWAIT, (struct sockaddr *)&probe, sizeof(probe));
		close(fd);
	}
	while (vfab_mono_ns() < end) {
		struct timespec ts = {0, 5 * 1000 * 1000};

		if (arp_complete(hop))
			return 0;
		nanosleep(&ts, NULL);
	}
	return -ETIMEDOUT;
}

static int netdev_mtu(int ifindex)
{
	struct ifreq ifr;
	int fd, mtu = 1500;

	memset(&ifr, 0, sizeof(ifr));
	if (!if_indextoname((unsigned)ifindex, ifr.ifr_name))
		return mtu;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return mtu;
	if (ioctl(fd, SIOCGIFMTU, &ifr) == 0)
		mtu = ifr.ifr_mtu;
	close(fd);
	return mtu;
}

int vfab_cm_route_mtu(struct ibv_context *ctx, uint8_t p, int ifindex)
{
	struct ibv_port_attr pa;
	int m = vfab_cm_mtu_of_netdev(netdev_mtu(ifindex));

	if (ibv_query_port(ctx, p, &pa))
		return m ? m : IBV_MTU_1024;
	return m && m < (int)pa.active_mtu ? m : (int)pa.active_mtu;
}

/*
 * Steps (*d, *p) to the next port of the n contexts and queries it: 1, or 0
 * when none is left. Start from *d = 0, *p = 0.
 */
static int next_port(struct ibv_context *const *ctxs, int n, int *d, uint8_t *p,
		     struct ibv_port_attr *pa)
{
	for (; *d < n; (*d)++, *p = 0) {
		struct ibv_device_attr da;

		if (!ctxs[*d] || ibv_query_device(ctxs[*d], &da))
			continue;
		while (++*p <= da.phys_port_cnt)
			if (!ibv_query_port(ctxs[*d], *p, pa))
				return 1;
	}
	return 0;
}

int vfab_cm_route_scan(struct ibv_context *const *ctxs, int n,
		       void (*fn)(const struct vfab_cm_local *loc, void *arg), void *arg)
{
	struct ibv_port_attr pa;
	uint8_t p = 0;
	int d = 0, found = 0;

	while (next_port(ctxs, n, &d, &p, &pa)) {
		for (int i = 0, zeros = 0; i < pa.gid_tbl_len && zeros < GID_HOLE_MAX; i++) {
			struct vfab_cm_local loc;
			struct ibv_gid_entry e;
			union ibv_gid g;

			/* One sysfs read per slot; type and netdev only for used ones. */
			if (ibv_query_gid(ctxs[d], p, i, &g) || !memcmp(g.raw, zero_gid, 16)) {
				zeros++;
				continue;
			}
			zeros = 0;
			if (ibv_query_gid_ex(ctxs[d], p, (uint32_t)i, &e, 0) ||
			    e.gid_type != IBV_GID_TYPE_ROCE_V2)
				continue;
			loc.dev = d;
			loc.port = p;
			loc.gid_index = (uint8_t)i;
			memcpy(loc.gid, e.gid.raw, 16);
			loc.ifindex = (int)e.ndev_ifindex;
			loc.mtu = vfab_cm_route_mtu(ctxs[d], p, loc.ifindex);
			fn(&loc, arg);
			found++;
		}
	}
	return found;
}

int vfab_cm_route_loopback(struct ibv_context *const *ctxs, int n, struct vfab_cm_local *out)
{
	struct ibv_port_attr pa;
	uint8_t p = 0;
	int d = 0, found = 0;

	while (next_port(ctxs, n, &d, &p, &pa)) {
		union ibv_gid g;

		if ((found && pa.state != IBV_PORT_ACTIVE) || ibv_query_gid(ctxs[d], p, 0, &g))
			continue;
		found = 1;
		*out = (struct vfab_cm_local){
		    .dev = d, .port = p, .gid_index = 0, .mtu = (int)pa.active_mtu};
		memcpy(out->gid, g.raw, 16);
		if (pa.state == IBV_PORT_ACTIVE)
			return 0;
	}
	return found ? 0 : -ENODEV;
}
