/* SPDX-License-Identifier: MIT */
#include "netns/node_addr.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "netns/netcfg.h"
#include "netns/netns_file.h"

int vfab_ifaddr_parse(const char *text, struct vfab_ifaddr *a)
{
	char host[INET6_ADDRSTRLEN];
	const char *slash = strchr(text, '/');
	size_t len = slash ? (size_t)(slash - text) : 0;
	unsigned long prefix;
	char *end;

	if (!slash || len == 0 || len >= sizeof(host) || !isdigit((unsigned char)slash[1]))
		return -EINVAL;
	memcpy(host, text, len);
	host[len] = '\0';
	errno = 0;
	prefix = strtoul(slash + 1, &end, 10);
	if (errno || *end || end - (slash + 1) > 3)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, host, a->addr) == 1)
		a->family = AF_INET;
	else if (inet_pton(AF_INET6, host, a->addr) == 1)
		a->family = AF_INET6;
	else
		return -EINVAL;
	if (prefix > (a->family == AF_INET ? 32u : 128u))
		return -EINVAL;
	a->prefix = (unsigned)prefix;
	return 0;
}

void vfab_ifaddr_format(const struct vfab_ifaddr *a, char *buf)
{
	char host[INET6_ADDRSTRLEN] = "?";

	inet_ntop(a->family, a->addr, host, sizeof(host));
	snprintf(buf, VFAB_IFADDR_STR_LEN, "%s/%u", host, a->prefix);
}

/* The namespace behind nsfd is the one this process lives in. */
static int is_own_netns(int nsfd)
{
	struct stat ns, self;

	if (fstat(nsfd, &ns) || stat("/proc/self/ns/net", &self))
		return 1; /* cannot tell: treat as the host's and refuse */
	return ns.st_dev == self.st_dev && ns.st_ino == self.st_ino;
}

/*
 * fn(arg) inside the node's network namespace (vfab_netns_run), refused
 * when the namespace file is the caller's own: a node that lost its
 * namespace must never turn into changes on the host.
 */
static int in_node_netns(const char *fabric, const char *node, int (*fn)(void *), void *arg)
{
	int nsfd = vfab_netns_open(fabric, node), ret;

	if (nsfd < 0)
		return nsfd;
	ret = is_own_netns(nsfd) ? -EXDEV : vfab_netns_run(nsfd, fn, arg);
	close(nsfd);
	return ret;
}

/* An rtnl_addr's local address as ours; -EAFNOSUPPORT for other families. */
static int from_rtnl(struct rtnl_addr *ra, struct vfab_ifaddr *a)
{
	struct nl_addr *local = rtnl_addr_get_local(ra);
	int family = local ? nl_addr_get_family(local) : AF_UNSPEC;
	unsigned len = local ? nl_addr_get_len(local) : 0;

	if (!((family == AF_INET && len == 4) || (family == AF_INET6 && len == 16)))
		return -EAFNOSUPPORT;
	memset(a, 0, sizeof(*a));
	a->family = family;
	memcpy(a->addr, nl_addr_get_binary_addr(local), len);
	a->prefix = (unsigned)rtnl_addr_get_prefixlen(ra);
	return 0;
}

/* Does the netdev still hold a's address (any prefix length)? 1, 0 or -errno. */
static int still_holds(struct nl_sock *sk, int ifindex, const struct vfab_ifaddr *a)
{
	struct nl_cache *cache = NULL;
	struct nl_object *o;
	int ret = rtnl_addr_alloc_cache(sk, &cache), found = 0;

	if (ret < 0)
		return vfab_nl_errno(ret);
	for (o = nl_cache_get_first(cache); o && !found; o = nl_cache_get_next(o)) {
		struct rtnl_addr *ra = (struct rtnl_addr *)o;
		struct vfab_ifaddr have;

		found = rtnl_addr_get_ifindex(ra) == ifindex && from_rtnl(ra, &have) == 0 &&
			have.family == a->family && !memcmp(have.addr, a->addr, 16);
	}
	nl_cache_free(cache);
	return found;
}

static int addr_delete(struct nl_sock *sk, int ifindex, const struct vfab_ifaddr *a)
{
	struct rtnl_addr *ra = rtnl_addr_alloc();
	struct nl_addr *local;
	int ret;

	if (!ra)
		return -ENOMEM;
	local = nl_addr_build(a->family, a->addr, a->family == AF_INET ? 4 : 16);
	if (!local) {
		rtnl_addr_put(ra);
		return -ENOMEM;
	}
	nl_addr_set_prefixlen(local, (int)a->prefix);
	rtnl_addr_set_ifindex(ra, ifindex);
	ret = rtnl_addr_set_local(ra, local);
	if (ret == 0) {
		rtnl_addr_set_prefixlen(ra, (int)a->prefix);
		ret = rtnl_addr_delete(sk, ra, 0);
	}
	nl_addr_put(local);
	rtnl_addr_put(ra);
	return ret < 0 ? vfab_nl_errno(ret) : 0;
}

struct change_req {
	const char *netdev;
	int add;
	const struct vfab_ifaddr *a;
};

static int change_in_node(void *arg)
{
	const struct change_req *req = arg;
	struct nl_sock *sk;
	int ifindex, ret;

	ret = vfab_nl_open(&sk);
	if (ret)
		return ret;
	ifindex = vfab_nl_ifindex(sk, req->netdev);
	if (ifindex < 0) {
		ret = ifindex;
	} else if (req->add) {
		ret = vfab_nl_addr_add(sk, ifindex, req->a->family, req->a->addr, req->a->prefix);
	} else {
		ret = addr_delete(sk, ifindex, req->a);
		if (ret == 0)
			ret = still_holds(sk, ifindex, req->a);
	}
	nl_socket_free(sk);
	return ret;
}

int vfab_node_addr_change(const char *fabric, const char *node, const char *netdev, int add,
			  const struct vfab_ifaddr *a)
{
	struct change_req req = {.netdev = netdev, .add = add, .a = a};

	if (strlen(netdev) >= IF_NAMESIZE || strchr(netdev, '/'))
		return -ENODEV;
	return in_node_netns(fabric, node, change_in_node, &req);
}

static void operstate_text(struct rtnl_link *l, char *buf, size_t len)
{
	rtnl_link_operstate2str(rtnl_link_get_operstate(l), buf, len);
	for (char *p = buf; *p; p++)
		*p = (char)toupper((unsigned char)*p);
}

/* Appends the link's addresses from `addrs` in the cache's (dump) order. */
static void collect_addrs(struct nl_cache *addrs, int ifindex, struct vfab_netdev_addrs *nd,
			  struct vfab_addr_list *out)
{
	for (struct nl_object *o = nl_cache_get_first(addrs); o; o = nl_cache_get_next(o)) {
		struct rtnl_addr *ra = (struct rtnl_addr *)o;

		if (rtnl_addr_get_ifindex(ra) != ifindex)
			continue;
		if (nd->naddrs == VFAB_ADDR_LIST_ADDRS) {
			out->truncated = 1;
			return;
		}
		if (from_rtnl(ra, &nd->addrs[nd->naddrs]) == 0)
			nd->naddrs++;
	}
}

static int list_in_node(void *arg)
{
	struct vfab_addr_list *out = arg;
	struct nl_cache *links = NULL, *addrs = NULL;
	struct nl_sock *sk;
	int ret;

	ret = vfab_nl_open(&sk);
	if (ret)
		return ret;
	ret = rtnl_link_alloc_cache(sk, AF_UNSPEC, &links);
	if (ret >= 0)
		ret = rtnl_addr_alloc_cache(sk, &addrs);
	if (ret < 0) {
		ret = vfab_nl_errno(ret);
		goto out;
	}
	for (struct nl_object *o = nl_cache_get_first(links); o; o = nl_cache_get_next(o)) {
		struct rtnl_link *l = (struct rtnl_link *)o;
		struct vfab_netdev_addrs *nd;

		if (out->nnetdevs == VFAB_ADDR_LIST_NETDEVS) {
			out->truncated = 1;
			break;
		}
		nd = &out->netdevs[out->nnetdevs++];
		snprintf(nd->name, sizeof(nd->name), "%s", rtnl_link_get_name(l));
		operstate_text(l, nd->state, sizeof(nd->state));
		collect_addrs(addrs, rtnl_link_get_ifindex(l), nd, out);
	}
	ret = 0;
out:
	if (addrs)
		nl_cache_free(addrs);
	if (links)
		nl_cache_free(links);
	nl_socket_free(sk);
	return ret;
}

int vfab_node_addr_list(const char *fabric, const char *node, struct vfab_addr_list *out)
{
	memset(out, 0, sizeof(*out));
	return in_node_netns(fabric, node, list_in_node, out);
}
