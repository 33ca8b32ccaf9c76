/* SPDX-License-Identifier: MIT */
/*
 * The fabric namespace: the leaves' bridges and the spine router. The router
 * is the namespace itself (its gateway address on each leaf's bridge, IP
 * forwarding on): routing between bridges of one namespace is all a spine of
 * L3 leaves does, and it needs no further namespace or veth.
 */
#include "netns/fabric_net.h"

#include <errno.h>
#include <fcntl.h>
#include <netlink/netlink.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "netns/netcfg.h"
#include "netns/netns_file.h"

/*
 * IPv4 settings are copied from the host's namespace into new ones: a host
 * with strict reverse-path filtering would drop what the spine forwards
 * between leaves, so the fabric says what it needs. IPv6 forwarding turns
 * the namespace into a router; without DAD its bridges' link-local addresses
 * (the source of its ICMPv6) work as soon as the first node joins.
 */
static int router_sysctls(int spine)
{
	static const char *const always[][2] = {{"ipv4/conf/all/rp_filter", "0"},
						{"ipv4/conf/default/rp_filter", "0"}};
	static const char *const router[][2] = {{"ipv4/ip_forward", "1"},
						{"ipv6/conf/all/forwarding", "1"},
						{"ipv6/conf/default/accept_dad", "0"}};
	int ret;

	for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++) {
		ret = vfab_net_sysctl(always[i][0], always[i][1]);
		if (ret)
			return ret;
	}
	for (size_t i = 0; spine && i < sizeof(router) / sizeof(router[0]); i++) {
		ret = vfab_net_sysctl(router[i][0], router[i][1]);
		if (ret)
			return ret;
	}
	return 0;
}

/* The spine's addresses on one leaf: its gateway, the leaf's prefix length. */
static int add_gateways(struct nl_sock *sk, const struct vfab_leaf *l)
{
	int ifindex = vfab_nl_ifindex(sk, l->bridge), ret = 0;

	if (ifindex < 0)
		return ifindex;
	if (l->ipv4_gw)
		ret = vfab_nl_addr_add(sk, ifindex, AF_INET, (const uint8_t *)&l->ipv4_gw,
				       l->ipv4_prefix);
	if (ret == 0 && l->ipv6_prefix && !vfab_net_addr_is_zero(l->ipv6_gw, 16))
		ret = vfab_nl_addr_add(sk, ifindex, AF_INET6, l->ipv6_gw, l->ipv6_prefix);
	return ret;
}

struct fabric_ns_args {
	const char *path;
	const struct vfab_region *r;
	char *err;
	size_t errlen;
};

/* The IP side of leaf k's links to and from the spine: their rates. */
static int shape_spine_links(const struct vfab_region *r, struct nl_sock *sk, uint32_t k)
{
	const struct vfab_leaf *l = &r->leaves[k];
	bool down = l->downlink < r->nlinks && r->links[l->downlink].rate_bps;
	bool up = l->uplink < r->nlinks && r->links[l->uplink].rate_bps;
	int ifindex, ret = 0;

	if (!down && !up)
		return 0;
	ifindex = vfab_nl_ifindex(sk, l->bridge);
	if (ifindex < 0)
		return ifindex;
	if (down)
		ret = vfab_ip_leaf_apply(sk, ifindex, &r->links[l->downlink]);
	if (!ret && up)
		ret = vfab_ip_leaf_up_apply(sk, k, ifindex, &r->links[l->uplink]);
	return ret;
}

static int build_leaves(struct fabric_ns_args *a, struct nl_sock *sk)
{
	const struct vfab_region *r = a->r;
	int ret;

	for (uint32_t k = 0; k < r->nleaves && k < VFAB_MAX_LEAVES; k++) {
		const struct vfab_leaf *l = &r->leaves[k];

		ret = vfab_nl_bridge_add(sk, l->bridge, l->mtu);
		if (ret)
			return vfab_fail(a->err, a->errlen, ret, "create bridge %s of %s in %s",
					 l->bridge, l->name, a->path);
		ret = r->spine.present ? add_gateways(sk, l) : 0;
		if (ret)
			return vfab_fail(a->err, a->errlen, ret,
					 "give the spine its gateway addresses on %s (%s)",
					 l->bridge, l->name);
		ret = r->spine.present ? shape_spine_links(r, sk, k) : 0;
		if (ret)
			return vfab_fail(a->err, a->errlen, ret,
					 "shape the links of %s (%s) to and from the spine",
					 l->bridge, l->name);
	}
	return 0;
}

static int fabric_ns_body(void *arg)
{
	struct fabric_ns_args *a = arg;
	struct nl_sock *sk = NULL;
	int ret;

	if (unshare(CLONE_NEWNET))
		return vfab_fail(a->err, a->errlen, -errno, "unshare a network namespace");
	ret = vfab_netns_publish("/proc/self/ns/net", a->path);
	if (ret)
		return vfab_fail(a->err, a->errlen, ret, "publish %s", a->path);
	ret = router_sysctls(a->r->spine.present);
	if (ret)
		return vfab_fail(a->err, a->errlen, ret, "forwarding sysctls in %s", a->path);
	ret = vfab_nl_open(&sk);
	if (ret)
		return vfab_fail(a->err, a->errlen, ret, "route netlink socket in %s", a->path);
	ret = vfab_nl_link_up(sk, "lo");
	if (ret)
		vfab_fail(a->err, a->errlen, ret, "bring lo up in %s", a->path);
	else
		ret = build_leaves(a, sk);
	nl_socket_free(sk);
	return ret;
}

int vfab_net_fabric_create(const char *fabric, const struct vfab_region *r, char *err,
			   size_t errlen)
{
	char path[256];
	struct fabric_ns_args a = {.path = path, .r = r, .err = err, .errlen = errlen};
	int self, ret;

	if (r->nleaves == 0)
		return vfab_fail(err, errlen, -EINVAL, "the region has no leaves");
	if (vfab_netns_path(path, sizeof(path), fabric, VFAB_FABRIC_NS_SUFFIX))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "fabric name too long");
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return vfab_fail(err, errlen, -errno, "open /proc/self/ns/net");
	/* vfab_netns_run(self) returns here whatever the body unshared into. */
	ret = vfab_netns_run(self, fabric_ns_body, &a);
	close(self);
	return ret;
}
