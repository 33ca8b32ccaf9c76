/* SPDX-License-Identifier: MIT */
#include "netns/netcfg.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/bridge.h>
#include <netlink/route/link/macvlan.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/link/vlan.h>
#include <netlink/route/link/vxlan.h>
#include <linux/neighbour.h>
#include <netlink/route/route.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/fsutil.h"

/* libnl speaks its own error codes; the rest of vfab speaks errno. */
int vfab_nl_errno(int nlerr)
{
	switch (nlerr < 0 ? -nlerr : nlerr) {
	case NLE_EXIST:
		return -EEXIST;
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_PERM:
		return -EPERM;
	case NLE_NODEV:
	case NLE_OBJ_NOTFOUND:
		return -ENODEV;
	case NLE_INVAL:
		return -EINVAL;
	case NLE_OPNOTSUPP:
		return -EOPNOTSUPP;
	case NLE_BUSY:
		return -EBUSY;
	case NLE_RANGE:
		return -ERANGE;
	case NLE_AF_NOSUPPORT:
		return -EAFNOSUPPORT;
	case NLE_NOADDR:
		return -EADDRNOTAVAIL;
	default:
		return -EIO;
	}
}

int vfab_nl_open(struct nl_sock **sk)
{
	int ret;

	*sk = nl_socket_alloc();
	if (!*sk)
		return -ENOMEM;
	ret = nl_connect(*sk, NETLINK_ROUTE);
	if (ret < 0) {
		nl_socket_free(*sk);
		*sk = NULL;
		return vfab_nl_errno(ret);
	}
	return 0;
}

int vfab_nl_ifindex(struct nl_sock *sk, const char *name)
{
	struct rtnl_link *link = NULL;
	int ret = rtnl_link_get_kernel(sk, 0, name, &link);

	if (ret < 0)
		return vfab_nl_errno(ret);
	ret = rtnl_link_get_ifindex(link);
	rtnl_link_put(link);
	return ret > 0 ? ret : -ENODEV;
}

/* Applies `change` (flags, MTU) to the link called `name`. */
static int link_change(struct nl_sock *sk, const char *name, struct rtnl_link *change)
{
	struct rtnl_link *link = NULL;
	int ret = rtnl_link_get_kernel(sk, 0, name, &link);

	if (ret < 0)
		return vfab_nl_errno(ret);
	ret = rtnl_link_change(sk, link, change, 0);
	rtnl_link_put(link);
	return ret < 0 ? vfab_nl_errno(ret) : 0;
}

int vfab_nl_link_up(struct nl_sock *sk, const char *name)
{
	struct rtnl_link *change = rtnl_link_alloc();
	int ret;

	if (!change)
		return -ENOMEM;
	rtnl_link_set_flags(change, IFF_UP);
	ret = link_change(sk, name, change);
	rtnl_link_put(change);
	return ret;
}

int vfab_nl_link_set_up(struct nl_sock *sk, int ifindex, bool up)
{
	struct rtnl_link *link = NULL, *change = rtnl_link_alloc();
	int ret;

	if (!change)
		return -ENOMEM;
	ret = rtnl_link_get_kernel(sk, ifindex, NULL, &link);
	if (ret >= 0) {
		if (up)
			rtnl_link_set_flags(change, IFF_UP);
		else
			rtnl_link_unset_flags(change, IFF_UP);
		ret = rtnl_link_change(sk, link, change, 0);
		rtnl_link_put(link);
	}
	rtnl_link_put(change);
	return ret < 0 ? vfab_nl_errno(ret) : 0;
}

int vfab_nl_iflink(struct nl_sock *sk, int ifindex)
{
	struct rtnl_link *link = NULL;
	int ret = rtnl_link_get_kernel(sk, ifindex, NULL, &link);

	if (ret < 0)
		return vfab_nl_errno(ret);
	ret = rtnl_link_get_link(link);
	rtnl_link_put(link);
	return ret > 0 && ret != ifindex ? ret : -ENODEV;
}

int vfab_nl_vlan_add(struct nl_sock *sk, const char *name, int lower_ifindex, uint16_t vlan)
{
	struct rtnl_link *l = rtnl_link_vlan_alloc();
	int ret;

	if (!l)
		return -ENOMEM;
	rtnl_link_set_name(l, name);
	rtnl_link_set_link(l, lower_ifindex);
	ret = rtnl_link_vlan_set_id(l, vlan);
	if (ret == 0)
		ret = rtnl_link_add(sk, l, NLM_F_CREATE | NLM_F_EXCL);
	rtnl_link_put(l);
	return vfab_nl_errno(ret);
}

int vfab_nl_macvlan_add(struct nl_sock *sk, const char *name, int lower_ifindex, int nsfd)
{
	struct rtnl_link *l = rtnl_link_macvlan_alloc();
	int ret;

	if (!l)
		return -ENOMEM;
	rtnl_link_set_name(l, name);
	rtnl_link_set_link(l, lower_ifindex);
	rtnl_link_set_ns_fd(l, nsfd);
	ret = rtnl_link_macvlan_set_mode(l, rtnl_link_macvlan_str2mode("bridge"));
	if (ret == 0)
		ret = rtnl_link_add(sk, l, NLM_F_CREATE | NLM_F_EXCL);
	rtnl_link_put(l);
	return ret < 0 ? vfab_nl_errno(ret) : 0;
}

int vfab_nl_veth_add(struct nl_sock *sk, const char *name, const char *peer)
{
	int ret = rtnl_link_veth_add(sk, name, peer, getpid());

	return ret < 0 ? vfab_nl_errno(ret) : 0;
}

int vfab_nl_bridge_add(struct nl_sock *sk, const char *name, uint32_t mtu)
{
	struct rtnl_link *br = rtnl_link_bridge_alloc(), *change;
	int ret;

	if (!br)
		return -ENOMEM;
	rtnl_link_set_name(br, name);
	/*
	 * Only an MTU change marks a bridge's MTU as the user's (the kernel then
	 * stops lowering it to its smallest port's): born one byte larger, it
	 * gets its MTU by a change that is never a no-op.
	 */
	rtnl_link_set_mtu(br, mtu + 1);
	rtnl_link_set_flags(br, IFF_UP);
	ret = rtnl_link_add(sk, br, NLM_F_CREATE | NLM_F_EXCL);
	rtnl_link_put(br);
	if (ret < 0)
		return vfab_nl_errno(ret);
	change = rtnl_link_alloc();
	if (!change)
		return -ENOMEM;
	rtnl_link_set_mtu(change, mtu);
	ret = link_change(sk, name, change);
	rtnl_link_put(change);
	return ret;
}

#define VXLAN_PORT 4789 /* IANA's, as the kernel's "dstport 4789" */

int vfab_nl_vxlan_add(struct nl_sock *sk, const char *name, uint32_t vni, const uint8_t local4[4],
		      uint32_t mtu, int master_ifindex)
{
	struct rtnl_link *l = rtnl_link_vxlan_alloc();
	struct nl_addr *local = nl_addr_build(AF_INET, local4, 4);
	int ret = -ENOMEM;

	if (!l || !local)
		goto out;
	rtnl_link_set_name(l, name);
	rtnl_link_set_mtu(l, mtu);
	rtnl_link_set_master(l, master_ifindex);
	rtnl_link_set_flags(l, IFF_UP);
	ret = rtnl_link_vxlan_set_id(l, vni);
	if (ret >= 0)
		ret = rtnl_link_vxlan_set_local(l, local);
	if (ret >= 0)
		ret = rtnl_link_vxlan_set_port(l, VXLAN_PORT);
	if (ret >= 0)
		ret = rtnl_link_vxlan_set_learning(l, 1);
	if (ret >= 0)
		ret = rtnl_link_add(sk, l, NLM_F_CREATE | NLM_F_EXCL);
	ret = ret < 0 ? vfab_nl_errno(ret) : 0;
out:
	if (local)
		nl_addr_put(local);
	if (l)
		rtnl_link_put(l);
	return ret;
}

int vfab_nl_vxlan_flood_add(struct nl_sock *sk, int ifindex, const uint8_t remote4[4])
{
	/* libnl's neighbour requests carry no NDA_DST for AF_BRIDGE: built here. */
	static const uint8_t zero[6];
	struct ndmsg nd = {.ndm_family = AF_BRIDGE,
			   .ndm_ifindex = ifindex,
			   .ndm_state = NUD_NOARP | NUD_PERMANENT,
			   .ndm_flags = NTF_SELF};
	struct nl_msg *msg = nlmsg_alloc_simple(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_APPEND);
	int ret;

	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &nd, sizeof(nd), NLMSG_ALIGNTO) < 0 ||
	    nla_put(msg, NDA_LLADDR, sizeof(zero), zero) < 0 ||
	    nla_put(msg, NDA_DST, 4, remote4) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	ret = nl_send_sync(sk, msg); /* frees msg */
	return ret < 0 ? vfab_nl_errno(ret) : 0;
}

int vfab_nl_link_mtu(struct nl_sock *sk, int ifindex)
{
	struct rtnl_link *link = NULL;
	int ret = rtnl_link_get_kernel(sk, ifindex, NULL, &link);

	if (ret < 0)
		return vfab_nl_errno(ret);
	ret = (int)rtnl_link_get_mtu(link);
	rtnl_link_put(link);
	return ret;
}

int vfab_nl_link_set_mac(struct nl_sock *sk, const char *name, const uint8_t mac[6])
{
	struct rtnl_link *change = rtnl_link_alloc();
	struct nl_addr *a = nl_addr_build(AF_LLC, mac, 6);
	int ret = -ENOMEM;

	if (change && a) {
		rtnl_link_set_addr(change, a);
		ret = link_change(sk, name, change);
	}
	if (a)
		nl_addr_put(a);
	if (change)
		rtnl_link_put(change);
	return ret;
}

int vfab_nl_ifb_add(struct nl_sock *sk, const char *name)
{
	struct rtnl_link *l = rtnl_link_alloc();
	int ret;

	if (!l)
		return -ENOMEM;
	rtnl_link_set_name(l, name);
	ret = rtnl_link_set_type(l, "ifb");
	rtnl_link_set_flags(l, IFF_UP);
	if (ret >= 0)
		ret = rtnl_link_add(sk, l, NLM_F_CREATE | NLM_F_EXCL);
	rtnl_link_put(l);
	return ret < 0 ? vfab_nl_errno(ret) : 0;
}

static struct nl_addr *build_addr(int family, const uint8_t *raw, unsigned prefix)
{
	struct nl_addr *a = nl_addr_build(family, raw, family == AF_INET ? 4 : 16);

	if (a)
		nl_addr_set_prefixlen(a, (int)prefix);
	return a;
}

int vfab_nl_addr_add(struct nl_sock *sk, int ifindex, int family, const uint8_t *raw,
		     unsigned prefix)
{
	struct rtnl_addr *addr = rtnl_addr_alloc();
	struct nl_addr *local;
	int ret;

	if (!addr)
		return -ENOMEM;
	local = build_addr(family, raw, prefix);
	if (!local) {
		rtnl_addr_put(addr);
		return -ENOMEM;
	}
	rtnl_addr_set_ifindex(addr, ifindex);
	ret = rtnl_addr_set_local(addr, local);
	if (ret == 0) {
		rtnl_addr_set_prefixlen(addr, (int)prefix);
		if (family == AF_INET6)
			rtnl_addr_set_flags(addr, IFA_F_NODAD);
		ret = rtnl_addr_add(sk, addr, 0);
	}
	nl_addr_put(local);
	rtnl_addr_put(addr);
	return ret < 0 ? vfab_nl_errno(ret) : 0;
}

int vfab_nl_route_add(struct nl_sock *sk, int ifindex, int family, const uint8_t *dst,
		      unsigned prefix, const uint8_t *gw)
{
	struct rtnl_route *route = rtnl_route_alloc();
	struct nl_addr *d = NULL, *g = NULL;
	struct rtnl_nexthop *nh = NULL;
	int ret = -ENOMEM;

	if (!route)
		return -ENOMEM;
	d = build_addr(family, dst, prefix);
	g = build_addr(family, gw, family == AF_INET ? 32 : 128);
	nh = rtnl_route_nh_alloc();
	if (!d || !g || !nh)
		goto out;
	rtnl_route_set_family(route, (uint8_t)family);
	rtnl_route_set_table(route, RT_TABLE_MAIN);
	rtnl_route_set_protocol(route, RTPROT_STATIC);
	rtnl_route_set_scope(route, RT_SCOPE_UNIVERSE);
	rtnl_route_set_type(route, RTN_UNICAST);
	ret = rtnl_route_set_dst(route, d);
	if (ret < 0) {
		ret = vfab_nl_errno(ret);
		goto out;
	}
	rtnl_route_nh_set_ifindex(nh, ifindex);
	rtnl_route_nh_set_gateway(nh, g);
	rtnl_route_add_nexthop(route, nh);
	nh = NULL; /* the route owns it now */
	ret = rtnl_route_add(sk, route, NLM_F_CREATE | NLM_F_EXCL);
	ret = ret < 0 ? vfab_nl_errno(ret) : 0;
out:
	if (nh)
		rtnl_route_nh_free(nh);
	if (g)
		nl_addr_put(g);
	if (d)
		nl_addr_put(d);
	rtnl_route_put(route);
	return ret;
}

int vfab_net_sysctl(const char *key, const char *value)
{
	size_t len = strlen(value);
	char path[256];
	ssize_t w;
	int fd;

	if (vfab_pathf(path, sizeof(path), "/proc/sys/net/%s", key))
		return -ENAMETOOLONG;
	/* Never O_CREAT: a missing key must read as missing, not as a permission error. */
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	do
		w = write(fd, value, len);
	while (w < 0 && errno == EINTR);
	if (w < 0 || (size_t)w != len) {
		int ret = w < 0 ? -errno : -EIO;

		close(fd);
		return ret;
	}
	return close(fd) ? -errno : 0;
}
