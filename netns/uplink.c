/* SPDX-License-Identifier: MIT */
/*
 * The uplink (uplink.h). The macvlan is made by a request sent in the
 * namespace `vfab up` runs in (where the uplink netdev is) that names the
 * fabric namespace as its home, so the device never appears among the
 * machine's own. Bridge mode: two fabrics' uplinks on one machine's netdev
 * reach each other too. The machine's addresses and routes stay as they are:
 * the fabric's addresses live on the macvlan, which has a MAC of its own.
 */
#include "netns/uplink.h"

#include <errno.h>
#include <fcntl.h>
#include <netlink/netlink.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "netns/netcfg.h"
#include "netns/netns_file.h"

struct uplink_args {
	const struct vfab_cfg_host *host;
	const struct vfab_config *cfg;
	char *err;
	size_t errlen;
};

/* In the fabric namespace: addresses, up, then a route per other host's leaf. */
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
	nl_socket_free(sk);
	return ret;
}

int vfab_net_uplink_create(const char *fabric, const struct vfab_config *cfg, char *err,
			   size_t errlen)
{
	struct uplink_args a = {.cfg = cfg, .err = err, .errlen = errlen};
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
