/* SPDX-License-Identifier: MIT */
/*
 * The uplink (uplink.h). The macvlan is made by a request sent in the
 * namespace `vfab up` runs in (where the uplink netdev is) that names the
 * fabric namespace as its home, so the device never appears among the
 * machine's own. Bridge mode: two fabrics' uplinks on one machine's netdev
 * reach each other too. The machine's addresses and routes stay as they are:
 * the fabric's addresses live on the macvlan, which has a MAC of its own.
 *
 * A spanning leaf: its bridge on each host gets a VXLAN port whose tunnels
 * run between the uplinks (one VNI per leaf, alike on every host), so its
 * nodes share one L2 segment. Every host's router is the leaf's gateway with
 * one address and one MAC (an anycast gateway, as EVPN fabrics have), so a
 * node's first hop stays on its host; what that router sends from the MAC is
 * dropped before the tunnel, and it reaches the leaf's nodes on other hosts
 * by their host routes through the uplink instead (config_machines.c).
 */
#include "netns/uplink.h"

#include <errno.h>
#include <fcntl.h>
#include <netlink/netlink.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "fabric/topology.h"
#include "netns/ip_shape.h"
#include "netns/netcfg.h"
#include "netns/netns_file.h"

struct uplink_args {
	const struct vfab_cfg_host *host;
	const struct vfab_config *cfg;
	const struct vfab_region *r;
	char *err;
	size_t errlen;
};

/* Every uplink has an IPv4 address (the loader's rule): the tunnels' ends. */
static const uint8_t *ipv4_of(const struct vfab_cfg_host *h)
{
	return vfab_config_uplink_addr(h, AF_INET)->addr;
}

/* Tunnels to every other host with a node on leaf k (file index vni - 1). */
static int flood_to_peers(const struct uplink_args *a, struct nl_sock *sk, int vx, uint32_t k)
{
	const struct vfab_config *cfg = a->cfg;
	const struct vfab_cfg_leaf *l = &cfg->leaves[k];
	uint32_t n;
	const struct vfab_cfg_node *all = vfab_config_cluster(cfg, &n);
	int ret = 0;

	for (uint32_t h = 0; ret == 0 && h < cfg->nhosts; h++) {
		bool member = false;

		for (uint32_t i = 0; i < n; i++)
			for (uint32_t d = 0; d < all[i].nnetdevs; d++)
				member |=
				    all[i].machine == h + 1 && all[i].netdevs[d].leaf == l->vni - 1;
		if (!member || (int32_t)h == cfg->local_host)
			continue;
		ret = vfab_nl_vxlan_flood_add(sk, vx, ipv4_of(&cfg->hosts[h]));
		if (ret)
			vfab_fail(a->err, a->errlen, ret, "tunnel of %s to host %s", l->name,
				  cfg->hosts[h].id);
	}
	return ret;
}

/* Leaf k (spanning, vni): the anycast gateway MAC, its VXLAN port and tunnels. */
static int span_leaf(const struct uplink_args *a, struct nl_sock *sk, uint32_t k)
{
	const struct vfab_cfg_leaf *cl = &a->cfg->leaves[k];
	const struct vfab_leaf *l = &a->r->leaves[k];
	char name[VFAB_IFNAME_MAX];
	uint8_t mac[6];
	int br, vx, ret;

	vfab_topology_gateway_mac(cl->vni, mac);
	snprintf(name, sizeof(name), VFAB_VXLAN_NETDEV, k);
	ret = vfab_nl_link_set_mac(sk, l->bridge, mac);
	br = ret ? ret : vfab_nl_ifindex(sk, l->bridge);
	ret = br < 0 ? br : vfab_nl_vxlan_add(sk, name, cl->vni, ipv4_of(a->host), l->mtu, br);
	vx = ret ? ret : vfab_nl_ifindex(sk, name);
	if (vx < 0)
		return vfab_fail(a->err, a->errlen, vx, "VXLAN %u of %s on %s", cl->vni, cl->name,
				 l->bridge);
	ret = vfab_ip_drop_source_bpf(sk, vx, mac);
	if (ret)
		return vfab_fail(a->err, a->errlen, ret, "keep the gateway of %s off %s", cl->name,
				 name);
	return flood_to_peers(a, sk, vx, k);
}

/* In the fabric namespace: addresses, up, a route per other host's leaf, the spanning leaves. */
static int uplink_body(void *arg)
{
	const struct uplink_args *a = arg;
	const struct vfab_config *cfg = a->cfg;
	struct nl_sock *sk = NULL;
	int ifindex, ret;

	ret = vfab_nl_open(&sk);
	if (ret)
		return vfab_fail(a->err, a->errlen, ret, "route netlink socket in the fabric");
	ifindex = vfab_nl_ifindex(sk, VFAB_UPLINK_NETDEV);
	ret = ifindex < 0 ? ifindex : 0;
	for (uint32_t k = 0; ret == 0 && k < a->host->nuplink_addrs; k++) {
		const struct vfab_cfg_addr *ad = &a->host->uplink_addrs[k];

		ret = vfab_nl_addr_add(sk, ifindex, ad->family, ad->addr, ad->prefix);
		if (ret)
			vfab_fail(a->err, a->errlen, ret, "address %s on the uplink", ad->text);
	}
	if (ret == 0) {
		ret = vfab_nl_link_set_up(sk, ifindex, true);
		if (ret)
			vfab_fail(a->err, a->errlen, ret, "bring the uplink up");
	}
	for (uint32_t r = 0; ret == 0 && r < cfg->nroutes; r++) {
		const struct vfab_cfg_route *rt = &cfg->routes[r];

		ret = vfab_nl_route_add(sk, ifindex, rt->dst.family, rt->dst.addr, rt->dst.prefix,
					rt->via.addr);
		if (ret)
			vfab_fail(a->err, a->errlen, ret, "route %s (host %s) via %s", rt->dst.text,
				  cfg->hosts[rt->host].id, rt->via.text);
	}
	for (uint32_t k = 0; ret == 0 && k < cfg->nleaves; k++)
		ret = cfg->leaves[k].vni ? span_leaf(a, sk, k) : 0;
	nl_socket_free(sk);
	return ret;
}

/*
 * A spanning leaf's frames cross whole or not at all: the kernel drops a
 * tunnel packet over the uplink's MTU when its inner packet says DF, as RoCE
 * packets do, so the uplink must carry the leaf's MTU plus the tunnel's
 * headers (VXLAN fabrics run on a jumbo underlay for the same reason).
 */
static int check_mtu(const struct uplink_args *a, struct nl_sock *sk, int lower)
{
	int mtu = vfab_nl_link_mtu(sk, lower);

	if (mtu < 0)
		return vfab_fail(a->err, a->errlen, mtu, "MTU of %s", a->host->uplink_netdev);
	for (uint32_t k = 0; k < a->cfg->nleaves; k++) {
		const struct vfab_cfg_leaf *l = &a->cfg->leaves[k];

		if (l->vni && l->mtu + VFAB_VXLAN_OVERHEAD > (uint32_t)mtu)
			return vfab_fail(a->err, a->errlen, -EMSGSIZE,
					 "%s spans hosts over the uplink: its MTU %u needs %u on "
					 "%s (it has %d); raise that, or give fabric.mtu %u",
					 l->name, l->mtu, l->mtu + VFAB_VXLAN_OVERHEAD,
					 a->host->uplink_netdev, mtu, mtu - VFAB_VXLAN_OVERHEAD);
	}
	return 0;
}

int vfab_net_uplink_create(const char *fabric, const struct vfab_config *cfg,
			   const struct vfab_region *r, char *err, size_t errlen)
{
	struct uplink_args a = {.cfg = cfg, .r = r, .err = err, .errlen = errlen};
	struct nl_sock *sk = NULL;
	int lower, nsfd, ret;

	if (cfg->local_host < 0)
		return 0;
	a.host = &cfg->hosts[cfg->local_host];
	ret = vfab_nl_open(&sk);
	if (ret)
		return vfab_fail(err, errlen, ret, "route netlink socket");
	lower = vfab_nl_ifindex(sk, a.host->uplink_netdev);
	if (lower < 0) {
		nl_socket_free(sk);
		return vfab_fail(err, errlen, lower,
				 "uplink netdev %s (hosts[%d].uplink.netdev) is not in this "
				 "network namespace",
				 a.host->uplink_netdev, cfg->local_host);
	}
	ret = check_mtu(&a, sk, lower);
	if (ret) {
		nl_socket_free(sk);
		return ret;
	}
	nsfd = vfab_netns_open(fabric, VFAB_FABRIC_NS_SUFFIX);
	if (nsfd < 0) {
		nl_socket_free(sk);
		return vfab_fail(err, errlen, nsfd, "open the fabric namespace");
	}
	ret = vfab_nl_macvlan_add(sk, VFAB_UPLINK_NETDEV, lower, nsfd);
	nl_socket_free(sk);
	if (ret)
		vfab_fail(err, errlen, ret, "macvlan of %s in the fabric namespace",
			  a.host->uplink_netdev);
	else
		ret = vfab_netns_run(nsfd, uplink_body, &a);
	close(nsfd);
	return ret;
}
