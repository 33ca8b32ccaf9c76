/* SPDX-License-Identifier: MIT */
/* A node's netdevs, addresses and routes (fabric_net.h vfab_net_node_setup). */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/paths.h"
#include "netns/fabric_net.h"
#include "netns/netcfg.h"
#include "netns/launch_files.h"
#include "netns/netns_file.h"

/*
 * The default GID is fe80::EUI-64(MAC): the node's link-local address must be
 * exactly that and usable at once, so EUI-64 generation, IPv6 on, no DAD.
 */
static int ipv6_conf(const char *dev)
{
	static const char *const keys[][2] = {
	    {"disable_ipv6", "0"}, {"addr_gen_mode", "0"}, {"accept_dad", "0"}};
	char key[128];
	int ret;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		/* addr_gen_mode of "all" does not exist on every kernel. */
		if (strcmp(dev, "all") == 0 && strcmp(keys[i][0], "addr_gen_mode") == 0)
			continue;
		if (vfab_pathf(key, sizeof(key), "ipv6/conf/%s/%s", dev, keys[i][0]))
			return -ENAMETOOLONG;
		ret = vfab_net_sysctl(key, keys[i][1]);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Namespace-wide settings, before the netdevs exist so that they inherit
 * the defaults. IPv4 settings come from the host's namespace: strict
 * reverse-path filtering there would drop the replies of a rail-optimised
 * node, which arrive on another netdev than the one its route leaves by.
 */
static int node_defaults(void)
{
	int ret = ipv6_conf("all");

	if (ret == 0)
		ret = ipv6_conf("default");
	if (ret == 0)
		ret = vfab_net_sysctl("ipv4/conf/all/rp_filter", "0");
	if (ret == 0)
		ret = vfab_net_sysctl("ipv4/conf/default/rp_filter", "0");
	/*
	 * A fabric without root: the nodes' sshd runs as the user (node_sshd.c)
	 * and must bind port 22. Every process of such a node is that user's.
	 */
	if (ret == 0 && vfab_fabric_owner_uid() >= 0)
		ret = vfab_net_sysctl("ipv4/ip_unprivileged_port_start", VFAB_STR(VFAB_SSH_PORT));
	return ret;
}

struct node_ns_args {
	const struct vfab_net_node *node;
	struct nl_sock *sk;
	int defaults; /* 1: namespace-wide, before the netdevs exist; 0: per netdev */
	char *err;
	size_t errlen;
};

static int node_sysctl_body(void *arg)
{
	struct node_ns_args *a = arg;
	int ret;

	if (a->defaults) {
		ret = node_defaults();
		if (ret)
			return vfab_fail(a->err, a->errlen, ret, "sysctls of node %s", a->node->id);
		ret = vfab_nl_open(&a->sk);
		return ret ? vfab_fail(a->err, a->errlen, ret, "route netlink socket in node %s",
				       a->node->id)
			   : 0;
	}
	for (uint32_t i = 0; i < a->node->niface; i++) {
		ret = ipv6_conf(a->node->iface[i].name);
		if (ret)
			return vfab_fail(a->err, a->errlen, ret, "IPv6 sysctls of %s in node %s",
					 a->node->iface[i].name, a->node->id);
	}
	return 0;
}

static int create_veth(struct nl_sock *fab, int bridge_ifindex, int node_nsfd,
		       const struct vfab_net_iface *ifc)
{
	struct rtnl_link *host = rtnl_link_veth_alloc(), *peer;
	struct nl_addr *mac;
	int ret;

	if (!host)
		return -ENOMEM;
	mac = nl_addr_build(AF_LLC, ifc->mac, sizeof(ifc->mac));
	if (!mac) {
		rtnl_link_put(host);
		return -ENOMEM;
	}
	rtnl_link_set_name(host, ifc->host_end);
	rtnl_link_set_mtu(host, ifc->mtu);
	rtnl_link_set_master(host, bridge_ifindex);
	rtnl_link_set_flags(host, IFF_UP);
	peer = rtnl_link_veth_get_peer(host);
	/* Born in the node under its final name: no rename, no clash here. */
	rtnl_link_set_name(peer, ifc->name);
	rtnl_link_set_ns_fd(peer, node_nsfd);
	rtnl_link_set_addr(peer, mac);
	rtnl_link_set_mtu(peer, ifc->mtu);
	ret = rtnl_link_add(fab, host, NLM_F_CREATE | NLM_F_EXCL);
	rtnl_link_put(peer);
	rtnl_link_put(host);
	nl_addr_put(mac);
	return ret < 0 ? vfab_nl_errno(ret) : 0;
}

static int create_veths(struct nl_sock *fab, int node_fd, const struct vfab_net_node *node,
			char *err, size_t errlen)
{
	for (uint32_t i = 0; i < node->niface; i++) {
		const struct vfab_net_iface *ifc = &node->iface[i];
		int br = vfab_nl_ifindex(fab, ifc->bridge), ret;

		if (br < 0)
			return vfab_fail(err, errlen, br, "find bridge %s for %s of node %s",
					 ifc->bridge, ifc->name, node->id);
		ret = create_veth(fab, br, node_fd, ifc);
		if (ret)
			return vfab_fail(err, errlen, ret, "create veth %s/%s of node %s",
					 ifc->host_end, ifc->name, node->id);
	}
	return 0;
}

static int add_routes(struct nl_sock *sk, const struct vfab_net_node *node, char *err,
		      size_t errlen)
{
	for (uint32_t i = 0; i < node->nroutes; i++) {
		const struct vfab_net_route *rt = &node->route[i];
		const char *dev = rt->iface < node->niface ? node->iface[rt->iface].name : "";
		char dst[INET6_ADDRSTRLEN] = "?", gw[INET6_ADDRSTRLEN] = "?";
		int ifindex = vfab_nl_ifindex(sk, dev), ret;

		ret = ifindex < 0
			  ? ifindex
			  : vfab_nl_route_add(sk, ifindex, rt->family, rt->dst, rt->prefix, rt->gw);
		if (ret) {
			inet_ntop(rt->family, rt->dst, dst, sizeof(dst));
			inet_ntop(rt->family, rt->gw, gw, sizeof(gw));
			return vfab_fail(err, errlen, ret, "route %s/%u via %s dev %s in node %s",
					 dst, rt->prefix, gw, dev, node->id);
		}
	}
	return 0;
}

/* One netdev: its addresses in the configured order, then up. */
static int configure_dev(struct nl_sock *sk, const char *node, const char *name,
			 const struct vfab_cfg_addr *addrs, uint32_t naddrs, char *err,
			 size_t errlen)
{
	int ifindex = vfab_nl_ifindex(sk, name), ret;

	if (ifindex < 0)
		return vfab_fail(err, errlen, ifindex, "find %s in node %s", name, node);
	for (uint32_t k = 0; k < naddrs; k++) {
		ret =
		    vfab_nl_addr_add(sk, ifindex, addrs[k].family, addrs[k].addr, addrs[k].prefix);
		if (ret)
			return vfab_fail(err, errlen, ret, "add %s to %s in node %s", addrs[k].text,
					 name, node);
	}
	ret = vfab_nl_link_up(sk, name);
	return ret ? vfab_fail(err, errlen, ret, "bring %s up in node %s", name, node) : 0;
}

/*
 * Addresses in the configured order, links up, then the routes (they need
 * both). A netdev with a VLAN comes up bare, then its upper <name>.<vlan>
 * is made on it and gets the addresses: the HCA's GID table takes them
 * from the upper, as the kernel's does (fabric/gid.h).
 */
static int configure_node(struct nl_sock *sk, const struct vfab_net_node *node, char *err,
			  size_t errlen)
{
	int ret = vfab_nl_link_up(sk, "lo");

	if (ret)
		return vfab_fail(err, errlen, ret, "bring lo up in node %s", node->id);
	for (uint32_t i = 0; i < node->niface && ret == 0; i++) {
		const struct vfab_net_iface *ifc = &node->iface[i];
		char upper[VFAB_IFNAME_MAX];

		if (!ifc->vlan) {
			ret = configure_dev(sk, node->id, ifc->name, ifc->addrs, ifc->naddrs, err,
					    errlen);
			continue;
		}
		ret = configure_dev(sk, node->id, ifc->name, NULL, 0, err, errlen);
		if (ret)
			break;
		vfab_vlan_ifname(upper, ifc->name, ifc->vlan);
		ret = vfab_nl_vlan_add(sk, upper, vfab_nl_ifindex(sk, ifc->name), ifc->vlan);
		if (ret)
			return vfab_fail(err, errlen, ret, "create %s in node %s%s", upper,
					 node->id,
					 ret == -EOPNOTSUPP ? " (this kernel has no 802.1Q VLANs: "
							      "CONFIG_VLAN_8021Q, module 8021q)"
							    : "");
		ret = configure_dev(sk, node->id, upper, ifc->addrs, ifc->naddrs, err, errlen);
	}
	return ret ? ret : add_routes(sk, node, err, errlen);
}

struct sock_args {
	struct nl_sock *sk;
};

static bool shaped(const struct vfab_ip_shape *s)
{
	return s->rate_bps || s->delay_ns || s->loss_ppm;
}

/*
 * The IP side of each netdev's wire from its port's links (ip_shape.h),
 * before the node's first process runs: its TCP is shaped from the start.
 */
static int shape_wires(struct nl_sock *fab, struct nl_sock *nsk, const struct vfab_net_node *node,
		       char *err, size_t errlen)
{
	int has_netem = -1, ret;

	for (uint32_t i = 0; i < node->niface; i++) {
		const struct vfab_net_iface *ifc = &node->iface[i];
		struct vfab_ip_wire w = {.node_sk = nsk, .fab_sk = fab};

		if (!shaped(&ifc->ip_up) && !shaped(&ifc->ip_down))
			continue;
		if (has_netem < 0) {
			int lo = vfab_nl_ifindex(fab, "lo");

			has_netem = lo < 0 ? lo : vfab_ip_netem_probe(fab, lo);
			if (has_netem < 0)
				return vfab_fail(err, errlen, has_netem,
						 "probe for netem in the fabric namespace");
		}
		w.node_ifindex = vfab_nl_ifindex(nsk, ifc->name);
		w.host_ifindex = vfab_nl_ifindex(fab, ifc->host_end);
		ret = w.node_ifindex < 0 ? w.node_ifindex : w.host_ifindex < 0 ? w.host_ifindex : 0;
		if (!ret)
			ret = vfab_ip_wire_apply(&w, &ifc->ip_up, &ifc->ip_down, has_netem > 0);
		if (ret)
			return vfab_fail(err, errlen, ret, "shape the IP side of %s of node %s",
					 ifc->name, node->id);
	}
	return 0;
}

static int sock_body(void *arg)
{
	return vfab_nl_open(&((struct sock_args *)arg)->sk);
}

int vfab_net_node_setup(const char *fabric, const struct vfab_net_node *node, char *err,
			size_t errlen)
{
	struct node_ns_args na = {.node = node, .defaults = 1, .err = err, .errlen = errlen};
	struct sock_args fa = {0};
	int node_fd, fab_fd, ret;

	node_fd = vfab_netns_open(fabric, node->id);
	if (node_fd < 0)
		return vfab_fail(err, errlen, node_fd, "open namespace of node %s", node->id);
	fab_fd = vfab_netns_open(fabric, VFAB_FABRIC_NS_SUFFIX);
	if (fab_fd < 0) {
		close(node_fd);
		return vfab_fail(err, errlen, fab_fd, "open the fabric namespace");
	}
	ret = vfab_netns_run(node_fd, node_sysctl_body, &na);
	if (ret)
		goto out;
	ret = vfab_netns_run(fab_fd, sock_body, &fa);
	if (ret) {
		vfab_fail(err, errlen, ret, "route netlink socket in the fabric namespace");
		goto out;
	}
	ret = create_veths(fa.sk, node_fd, node, err, errlen);
	if (ret)
		goto out;
	na.defaults = 0;
	ret = vfab_netns_run(node_fd, node_sysctl_body, &na);
	if (ret == 0)
		ret = shape_wires(fa.sk, na.sk, node, err, errlen);
	if (ret == 0)
		ret = configure_node(na.sk, node, err, errlen);
out:
	if (na.sk)
		nl_socket_free(na.sk);
	if (fa.sk)
		nl_socket_free(fa.sk);
	close(fab_fd);
	close(node_fd);
	return ret;
}

struct addr_list {
	int ifindex;
	char *out;
	size_t len, used;
};

static void collect_addr(struct nl_object *obj, void *arg)
{
	struct rtnl_addr *a = (struct rtnl_addr *)obj;
	struct addr_list *l = arg;
	struct nl_addr *local = rtnl_addr_get_local(a);
	char txt[INET6_ADDRSTRLEN + 8];
	const uint8_t *raw;
	int n;

	if (rtnl_addr_get_ifindex(a) != l->ifindex || !local)
		return;
	raw = nl_addr_get_binary_addr(local);
	if (rtnl_addr_get_family(a) == AF_INET6 && raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80)
		return;
	if (!inet_ntop(rtnl_addr_get_family(a), raw, txt, sizeof(txt)))
		return;
	n = snprintf(l->out + l->used, l->len - l->used, "%s%s/%d", l->used ? "," : "", txt,
		     rtnl_addr_get_prefixlen(a));
	if (n > 0 && (size_t)n < l->len - l->used)
		l->used += (size_t)n;
}

int vfab_net_node_addrs(const char *fabric, const char *node, const char *ifname, char *out,
			size_t len)
{
	struct sock_args sa = {0};
	struct nl_cache *cache = NULL;
	struct addr_list l = {.out = out, .len = len};
	int fd, ret;

	if (len == 0)
		return -EINVAL;
	out[0] = '\0';
	fd = vfab_netns_open(fabric, node);
	if (fd < 0)
		return fd;
	ret = vfab_netns_run(fd, sock_body, &sa);
	close(fd);
	if (ret)
		return ret;
	l.ifindex = vfab_nl_ifindex(sa.sk, ifname);
	if (l.ifindex < 0) {
		ret = l.ifindex;
		goto out;
	}
	ret = rtnl_addr_alloc_cache(sa.sk, &cache);
	if (ret < 0) {
		ret = vfab_nl_errno(ret);
		goto out;
	}
	nl_cache_foreach(cache, collect_addr, &l);
	nl_cache_free(cache);
	ret = 0;
out:
	nl_socket_free(sa.sk);
	return ret;
}
