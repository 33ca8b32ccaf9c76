/* SPDX-License-Identifier: MIT */
#include "netns/fabric_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/bridge.h>
#include <netlink/route/link/veth.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "netns/fsutil.h"
#include "netns/netns_file.h"

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return ret;
}

/* libnl speaks its own error codes; the rest of vfab speaks errno. */
static int nl_to_errno(int nlerr)
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
	default:
		return -EIO;
	}
}

int vfab_net_host_end_name(char *buf, size_t len, const char *node, uint32_t node_index, uint32_t k)
{
	char name[64];

	if (k == 0)
		snprintf(name, sizeof(name), "%s-v", node);
	else
		snprintf(name, sizeof(name), "%s-v%u", node, k);
	if (strlen(name) >= IFNAMSIZ)
		snprintf(name, sizeof(name), "vfn%u-%u", node_index, k);
	return vfab_pathf(buf, len, "%s", name);
}

/* A route netlink socket bound to the namespace the caller is in now. */
static int open_route_socket(void *arg)
{
	struct nl_sock **sk = arg;
	int ret;

	*sk = nl_socket_alloc();
	if (!*sk)
		return -ENOMEM;
	ret = nl_connect(*sk, NETLINK_ROUTE);
	if (ret < 0) {
		nl_socket_free(*sk);
		*sk = NULL;
		return nl_to_errno(ret);
	}
	return 0;
}

static int set_link_up(struct nl_sock *sk, const char *name)
{
	struct rtnl_link *link = NULL, *change;
	int ret;

	ret = rtnl_link_get_kernel(sk, 0, name, &link);
	if (ret < 0)
		return nl_to_errno(ret);
	change = rtnl_link_alloc();
	if (!change) {
		rtnl_link_put(link);
		return -ENOMEM;
	}
	rtnl_link_set_flags(change, IFF_UP);
	ret = rtnl_link_change(sk, link, change, 0);
	rtnl_link_put(change);
	rtnl_link_put(link);
	return ret < 0 ? nl_to_errno(ret) : 0;
}

static int create_bridge(struct nl_sock *sk, uint32_t mtu)
{
	struct rtnl_link *br = rtnl_link_bridge_alloc();
	int ret;

	if (!br)
		return -ENOMEM;
	rtnl_link_set_name(br, VFAB_BRIDGE_NAME);
	rtnl_link_set_mtu(br, mtu);
	rtnl_link_set_flags(br, IFF_UP);
	ret = rtnl_link_add(sk, br, NLM_F_CREATE | NLM_F_EXCL);
	rtnl_link_put(br);
	return ret < 0 ? nl_to_errno(ret) : 0;
}

struct fabric_ns_args {
	const char *path;
	uint32_t mtu;
	char *err;
	size_t errlen;
};

static int fabric_ns_body(void *arg)
{
	struct fabric_ns_args *a = arg;
	struct nl_sock *sk = NULL;
	int ret;

	if (unshare(CLONE_NEWNET))
		return fail(a->err, a->errlen, -errno, "unshare a network namespace");
	ret = vfab_netns_publish("/proc/self/ns/net", a->path);
	if (ret)
		return fail(a->err, a->errlen, ret, "publish %s", a->path);
	ret = open_route_socket(&sk);
	if (ret)
		return fail(a->err, a->errlen, ret, "route netlink socket in %s", a->path);
	ret = set_link_up(sk, "lo");
	if (ret)
		fail(a->err, a->errlen, ret, "bring lo up in %s", a->path);
	else if ((ret = create_bridge(sk, a->mtu)))
		fail(a->err, a->errlen, ret, "create bridge " VFAB_BRIDGE_NAME " in %s", a->path);
	nl_socket_free(sk);
	return ret;
}

int vfab_net_fabric_create(const char *fabric, uint32_t mtu, char *err, size_t errlen)
{
	char path[256];
	struct fabric_ns_args a = {.path = path, .mtu = mtu, .err = err, .errlen = errlen};
	int self, ret;

	if (vfab_netns_path(path, sizeof(path), fabric, VFAB_FABRIC_NS_SUFFIX))
		return fail(err, errlen, -ENAMETOOLONG, "fabric name too long");
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return fail(err, errlen, -errno, "open /proc/self/ns/net");
	/* vfab_netns_run(self) returns here whatever the body unshared into. */
	ret = vfab_netns_run(self, fabric_ns_body, &a);
	close(self);
	return ret;
}

static int write_sysctl(const char *path, const char *value)
{
	int ret = vfab_write_file(path, value, strlen(value), 0644);

	/* A kernel without IPv6 has no such files: nothing to configure then. */
	return ret == -ENOENT ? 0 : ret;
}

/*
 * The default GID is fe80::EUI-64(MAC): the node's link-local address must be
 * exactly that and usable at once, so EUI-64 generation, IPv6 on, no DAD.
 */
static int ipv6_conf(const char *dev)
{
	static const char *const keys[][2] = {
	    {"disable_ipv6", "0"}, {"addr_gen_mode", "0"}, {"accept_dad", "0"}};
	char path[256];
	int ret;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		/* addr_gen_mode of "all" does not exist on every kernel. */
		if (strcmp(dev, "all") == 0 && strcmp(keys[i][0], "addr_gen_mode") == 0)
			continue;
		if (vfab_pathf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/%s", dev,
			       keys[i][0]))
			return -ENAMETOOLONG;
		ret = write_sysctl(path, keys[i][1]);
		if (ret)
			return ret;
	}
	return 0;
}

struct node_ns_args {
	const struct vfab_net_node *node;
	struct nl_sock *sk;
	int defaults; /* 1: all/default before the netdevs exist; 0: per netdev */
	char *err;
	size_t errlen;
};

static int node_sysctl_body(void *arg)
{
	struct node_ns_args *a = arg;
	int ret;

	if (a->defaults) {
		ret = ipv6_conf("all");
		if (ret == 0)
			ret = ipv6_conf("default");
		if (ret)
			return fail(a->err, a->errlen, ret, "IPv6 sysctls of node %s", a->node->id);
		ret = open_route_socket(&a->sk);
		return ret ? fail(a->err, a->errlen, ret, "route netlink socket in node %s",
				  a->node->id)
			   : 0;
	}
	for (uint32_t i = 0; i < a->node->niface; i++) {
		ret = ipv6_conf(a->node->iface[i].name);
		if (ret)
			return fail(a->err, a->errlen, ret, "IPv6 sysctls of %s in node %s",
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
	return ret < 0 ? nl_to_errno(ret) : 0;
}

static int add_address(struct nl_sock *sk, int ifindex, const struct vfab_cfg_addr *ca)
{
	struct rtnl_addr *addr = rtnl_addr_alloc();
	struct nl_addr *local;
	int ret;

	if (!addr)
		return -ENOMEM;
	local = nl_addr_build(ca->family, ca->addr, ca->family == AF_INET ? 4 : 16);
	if (!local) {
		rtnl_addr_put(addr);
		return -ENOMEM;
	}
	nl_addr_set_prefixlen(local, ca->prefix);
	rtnl_addr_set_ifindex(addr, ifindex);
	ret = rtnl_addr_set_local(addr, local);
	if (ret == 0) {
		rtnl_addr_set_prefixlen(addr, ca->prefix);
		/* GIDs from IPv6 addresses must be usable right away, as on a NIC. */
		if (ca->family == AF_INET6)
			rtnl_addr_set_flags(addr, IFA_F_NODAD);
		ret = rtnl_addr_add(sk, addr, 0);
	}
	nl_addr_put(local);
	rtnl_addr_put(addr);
	return ret < 0 ? nl_to_errno(ret) : 0;
}

static int configure_node_ifaces(struct nl_sock *sk, const struct vfab_net_node *node, char *err,
				 size_t errlen)
{
	int ret = set_link_up(sk, "lo");

	if (ret)
		return fail(err, errlen, ret, "bring lo up in node %s", node->id);
	for (uint32_t i = 0; i < node->niface; i++) {
		const struct vfab_net_iface *ifc = &node->iface[i];
		struct rtnl_link *link = NULL;
		int ifindex;

		ret = rtnl_link_get_kernel(sk, 0, ifc->name, &link);
		if (ret < 0)
			return fail(err, errlen, nl_to_errno(ret), "find %s in node %s", ifc->name,
				    node->id);
		ifindex = rtnl_link_get_ifindex(link);
		rtnl_link_put(link);
		for (uint32_t k = 0; k < ifc->naddrs; k++) {
			ret = add_address(sk, ifindex, &ifc->addrs[k]);
			if (ret)
				return fail(err, errlen, ret, "add %s to %s in node %s",
					    ifc->addrs[k].text, ifc->name, node->id);
		}
		ret = set_link_up(sk, ifc->name);
		if (ret)
			return fail(err, errlen, ret, "bring %s up in node %s", ifc->name,
				    node->id);
	}
	return 0;
}

struct fab_sock_args {
	struct nl_sock *sk;
};

static int fab_sock_body(void *arg)
{
	return open_route_socket(&((struct fab_sock_args *)arg)->sk);
}

int vfab_net_node_setup(const char *fabric, const struct vfab_net_node *node, char *err,
			size_t errlen)
{
	struct node_ns_args na = {.node = node, .defaults = 1, .err = err, .errlen = errlen};
	struct fab_sock_args fa = {0};
	struct rtnl_link *br = NULL;
	int node_fd, fab_fd, ret, br_index;

	node_fd = vfab_netns_open(fabric, node->id);
	if (node_fd < 0)
		return fail(err, errlen, node_fd, "open namespace of node %s", node->id);
	fab_fd = vfab_netns_open(fabric, VFAB_FABRIC_NS_SUFFIX);
	if (fab_fd < 0) {
		close(node_fd);
		return fail(err, errlen, fab_fd, "open the fabric namespace");
	}
	ret = vfab_netns_run(node_fd, node_sysctl_body, &na);
	if (ret)
		goto out;
	ret = vfab_netns_run(fab_fd, fab_sock_body, &fa);
	if (ret) {
		fail(err, errlen, ret, "route netlink socket in the fabric namespace");
		goto out;
	}
	ret = rtnl_link_get_kernel(fa.sk, 0, VFAB_BRIDGE_NAME, &br);
	if (ret < 0) {
		ret = fail(err, errlen, nl_to_errno(ret), "find bridge " VFAB_BRIDGE_NAME);
		goto out;
	}
	br_index = rtnl_link_get_ifindex(br);
	rtnl_link_put(br);
	for (uint32_t i = 0; i < node->niface; i++) {
		ret = create_veth(fa.sk, br_index, node_fd, &node->iface[i]);
		if (ret) {
			fail(err, errlen, ret, "create veth %s/%s of node %s",
			     node->iface[i].host_end, node->iface[i].name, node->id);
			goto out;
		}
	}
	na.defaults = 0;
	ret = vfab_netns_run(node_fd, node_sysctl_body, &na);
	if (ret == 0)
		ret = configure_node_ifaces(na.sk, node, err, errlen);
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
	struct fab_sock_args sa = {0};
	struct rtnl_link *link = NULL;
	struct nl_cache *cache = NULL;
	struct addr_list l = {.out = out, .len = len};
	int fd, ret;

	if (len == 0)
		return -EINVAL;
	out[0] = '\0';
	fd = vfab_netns_open(fabric, node);
	if (fd < 0)
		return fd;
	ret = vfab_netns_run(fd, fab_sock_body, &sa);
	close(fd);
	if (ret)
		return ret;
	ret = rtnl_link_get_kernel(sa.sk, 0, ifname, &link);
	if (ret < 0) {
		ret = nl_to_errno(ret);
		goto out;
	}
	l.ifindex = rtnl_link_get_ifindex(link);
	rtnl_link_put(link);
	ret = rtnl_addr_alloc_cache(sa.sk, &cache);
	if (ret < 0) {
		ret = nl_to_errno(ret);
		goto out;
	}
	nl_cache_foreach(cache, collect_addr, &l);
	nl_cache_free(cache);
	ret = 0;
out:
	nl_socket_free(sa.sk);
	return ret;
}
