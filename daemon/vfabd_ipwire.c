/* SPDX-License-Identifier: MIT */
/*
 * The IP side of the wires at run time (vfabd_ipwire.h). Names, indices and
 * namespaces come from vfabd's own topology (d->t); a wire's netdevs are
 * found by name in the node's namespace and, for the host end, as the
 * veth's peer (no name is built from anything another user can write).
 * Sockets are opened in a namespace once, when first needed.
 */
#include "vfabd_ipwire.h"

#include <errno.h>
#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vfabd.h"
#include "vfabd_log.h"

#include "base/clock.h"
#include "base/paths.h"
#include "fabric/link_model.h"
#include "netns/fabric_net.h"
#include "netns/ip_shape.h"
#include "netns/netcfg.h"
#include "netns/netns_file.h"

/* The coupled rate is re-set when it moves by more than 1/RATE_STEP. */
#define RATE_STEP 50

struct wire {
	uint32_t node, hca, port;	/* port from 1 */
	uint32_t up, down;		/* its port's links */
	const char *netdev;		/* in d->t */
	int node_ifindex, host_ifindex; /* 0: not found yet */
	bool seen;			/* host_rx/tx, rdma_* hold a sample */
	uint64_t host_rx, host_tx;	/* host end counters: the node's tx and rx */
	uint64_t rdma_up, rdma_down;	/* links[].bytes at the sample */
	uint64_t rate_up, rate_down;	/* HTB rates in force, bits per second */
};

struct vfabd_ipwire {
	int has_netem; /* -1: not probed yet */
	struct nl_sock *fab;
	struct nl_sock *node[VFAB_MAX_NODES];
	struct nl_cache *stats; /* the fabric namespace's links, refilled per step */
	uint32_t nwires;
	struct wire *w;
	uint64_t last_ns, next_ns;
};

static int sock_body(void *arg)
{
	return vfab_nl_open(arg);
}

static int open_sock(struct vfabd *d, const char *suffix, struct nl_sock **sk)
{
	int fd, rc;

	if (*sk)
		return 0;
	fd = vfab_netns_open(d->fabric, suffix);
	if (fd < 0)
		return fd;
	rc = vfab_netns_run(fd, sock_body, sk);
	close(fd);
	return rc;
}

int vfabd_ipwire_init(struct vfabd *d)
{
	const struct vfab_region *t = d->t;
	struct vfabd_ipwire *x = calloc(1, sizeof(*x));

	if (!x)
		return -ENOMEM;
	x->has_netem = -1;
	x->w = calloc((size_t)VFAB_MAX_NODES * VFAB_NODE_NETDEVS, sizeof(*x->w));
	if (!x->w) {
		free(x);
		return -ENOMEM;
	}
	for (uint32_t n = 0; n < t->nnodes && n < VFAB_MAX_NODES; n++)
		for (uint32_t k = 0; k < t->nodes[n].nnetdevs && k < VFAB_NODE_NETDEVS; k++) {
			struct wire *w = &x->w[x->nwires];
			const struct vfab_port *p;

			if (vfab_net_netdev_port(t, n, t->nodes[n].netdevs[k].name, &w->hca,
						 &w->port))
				continue;
			p = &t->hcas[w->hca].ports[w->port - 1];
			if (p->link_up >= t->nlinks || p->link_down >= t->nlinks)
				continue;
			w->node = n;
			w->up = p->link_up;
			w->down = p->link_down;
			w->netdev = t->nodes[n].netdevs[k].name;
			x->nwires++;
		}
	d->ipw = x;
	return 0;
}

void vfabd_ipwire_free(struct vfabd *d)
{
	struct vfabd_ipwire *x = d->ipw;

	if (!x)
		return;
	for (uint32_t n = 0; n < VFAB_MAX_NODES; n++)
		if (x->node[n])
			nl_socket_free(x->node[n]);
	if (x->stats)
		nl_cache_free(x->stats);
	if (x->fab)
		nl_socket_free(x->fab);
	free(x->w);
	free(x);
	d->ipw = NULL;
}

int vfabd_ipwire_has_netem(const struct vfabd *d)
{
	return d->ipw ? d->ipw->has_netem : -1;
}

/* The wire's sockets and netdevs; -errno while its node is not built yet. */
static int resolve(struct vfabd *d, struct wire *w)
{
	struct vfabd_ipwire *x = d->ipw;
	struct nl_sock **nsk = &x->node[w->node];
	int rc = open_sock(d, VFAB_FABRIC_NS_SUFFIX, &x->fab);

	if (!rc)
		rc = open_sock(d, d->t->nodes[w->node].id, nsk);
	if (rc || w->host_ifindex > 0)
		return rc;
	rc = vfab_nl_ifindex(*nsk, w->netdev);
	if (rc < 0)
		return rc;
	w->node_ifindex = rc;
	rc = vfab_nl_iflink(*nsk, w->node_ifindex);
	if (rc < 0)
		return rc;
	w->host_ifindex = rc;
	return 0;
}

static int probe_netem(struct vfabd *d)
{
	struct vfabd_ipwire *x = d->ipw;
	int lo;

	if (x->has_netem >= 0)
		return 0;
	lo = vfab_nl_ifindex(x->fab, "lo");
	x->has_netem = lo < 0 ? lo : vfab_ip_netem_probe(x->fab, lo);
	if (x->has_netem < 0) {
		int rc = x->has_netem;

		x->has_netem = -1;
		return rc;
	}
	return 0;
}

static int apply_wire(struct vfabd *d, struct wire *w)
{
	struct vfabd_ipwire *x = d->ipw;
	struct vfab_ip_shape up, down;
	struct vfab_ip_wire iw;
	int rc = resolve(d, w);

	if (!rc)
		rc = probe_netem(d);
	if (rc)
		return rc;
	vfab_ip_shape_of_link(&d->r->links[w->up], &up);
	vfab_ip_shape_of_link(&d->r->links[w->down], &down);
	iw = (struct vfab_ip_wire){.node_sk = x->node[w->node],
				   .node_ifindex = w->node_ifindex,
				   .fab_sk = x->fab,
				   .host_ifindex = w->host_ifindex};
	rc = vfab_ip_wire_apply(&iw, &up, &down, x->has_netem > 0);
	w->rate_up = up.rate_bps;
	w->rate_down = down.rate_bps;
	return rc;
}

static bool listed(const uint32_t *links, int n, uint32_t l)
{
	for (int i = 0; i < n; i++)
		if (links[i] == l)
			return true;
	return false;
}

int vfabd_ipwire_links_changed(struct vfabd *d, const uint32_t *links, int n)
{
	struct vfabd_ipwire *x = d->ipw;
	int first = 0;

	if (!x)
		return 0;
	for (uint32_t i = 0; i < x->nwires; i++) {
		struct wire *w = &x->w[i];
		int rc;

		if (!listed(links, n, w->up) && !listed(links, n, w->down))
			continue;
		rc = apply_wire(d, w);
		if (rc && !first)
			first = rc;
	}
	for (uint32_t k = 0; k < d->t->nleaves && k < VFAB_MAX_LEAVES; k++) {
		const struct vfab_leaf *l = &d->t->leaves[k];
		int rc = 0, br;

		if (l->downlink >= d->t->nlinks || !listed(links, n, l->downlink))
			continue;
		rc = open_sock(d, VFAB_FABRIC_NS_SUFFIX, &x->fab);
		br = rc ? rc : vfab_nl_ifindex(x->fab, l->bridge);
		rc = br < 0 ? br : vfab_ip_leaf_apply(x->fab, br, &d->r->links[l->downlink]);
		if (rc && !first)
			first = rc;
	}
	return first;
}

int vfabd_ipwire_carrier(struct vfabd *d, uint32_t hca, uint32_t port, bool up)
{
	struct vfabd_ipwire *x = d->ipw;

	for (uint32_t i = 0; x && i < x->nwires; i++) {
		struct wire *w = &x->w[i];
		int rc;

		if (w->hca != hca || w->port != port)
			continue;
		rc = resolve(d, w);
		/* The node's end loses its carrier when the host's end goes down. */
		return rc ? rc : vfab_nl_link_set_up(x->fab, w->host_ifindex, up);
	}
	return 0; /* a port without a netdev */
}

static bool coupled(const struct vfabd *d, const struct wire *w)
{
	return d->r->links[w->up].rate_bps || d->r->links[w->down].rate_bps;
}

int vfabd_ipwire_due(struct vfabd *d)
{
	struct vfabd_ipwire *x = d->ipw;
	uint64_t now;

	for (uint32_t i = 0; x && i < x->nwires; i++)
		if (coupled(d, &x->w[i])) {
			now = vfab_mono_ns();
			return now >= x->next_ns ? 0 : (int)((x->next_ns - now + 999999) / 1000000);
		}
	return -1;
}

/*
 * One direction: the IP bytes that crossed it occupy the RDMA link, and the
 * IP rate becomes what RDMA's last period leaves (vfab_ip_shared_rate).
 */
static void couple(struct vfabd *d, uint32_t link, uint64_t ip_bytes, uint64_t *rdma_last,
		   uint64_t *rate_now, struct nl_sock *sk, int ifindex, uint64_t now, uint64_t dt)
{
	struct vfab_link *l = &d->r->links[link];
	uint64_t rate = l->rate_bps, bytes = atomic_load(&l->bytes);
	uint64_t rdma = bytes >= *rdma_last ? bytes - *rdma_last : 0, want;

	*rdma_last = bytes;
	if (!rate)
		return;
	fabric_link_occupy(d->r, link, now, ip_bytes);
	want = vfab_ip_shared_rate(rate, (uint64_t)((double)rdma * 8e9 / (double)dt));
	if (*rate_now && (want > *rate_now + *rate_now / RATE_STEP ||
			  want + *rate_now / RATE_STEP < *rate_now)) {
		if (!vfab_ip_shape_set_rate(sk, ifindex, want))
			*rate_now = want;
	}
}

void vfabd_ipwire_run(struct vfabd *d)
{
	struct vfabd_ipwire *x = d->ipw;
	uint64_t now = vfab_mono_ns(), dt;

	if (!x || now < x->next_ns || vfabd_ipwire_due(d) < 0)
		return;
	dt = x->last_ns ? now - x->last_ns : 0;
	x->last_ns = now;
	x->next_ns = now + VFABD_IPWIRE_PERIOD_MS * 1000000ull;
	if (open_sock(d, VFAB_FABRIC_NS_SUFFIX, &x->fab))
		return;
	if (!x->stats ? rtnl_link_alloc_cache(x->fab, AF_UNSPEC, &x->stats) < 0
		      : nl_cache_refill(x->fab, x->stats) < 0)
		return;
	for (uint32_t i = 0; i < x->nwires; i++) {
		struct wire *w = &x->w[i];
		struct rtnl_link *host;
		uint64_t rx, tx;

		if (!coupled(d, w) || resolve(d, w))
			continue;
		host = rtnl_link_get(x->stats, w->host_ifindex);
		if (!host)
			continue;
		rx = rtnl_link_get_stat(host, RTNL_LINK_RX_BYTES);
		tx = rtnl_link_get_stat(host, RTNL_LINK_TX_BYTES);
		rtnl_link_put(host);
		if (w->seen && dt) {
			couple(d, w->up, rx - w->host_rx, &w->rdma_up, &w->rate_up,
			       x->node[w->node], w->node_ifindex, now, dt);
			couple(d, w->down, tx - w->host_tx, &w->rdma_down, &w->rate_down, x->fab,
			       w->host_ifindex, now, dt);
		} else {
			/* `vfab up` shaped the wire at the links' rates. */
			w->rdma_up = atomic_load(&d->r->links[w->up].bytes);
			w->rdma_down = atomic_load(&d->r->links[w->down].bytes);
			w->rate_up = w->rate_up ? w->rate_up : d->r->links[w->up].rate_bps;
			w->rate_down = w->rate_down ? w->rate_down : d->r->links[w->down].rate_bps;
		}
		w->host_rx = rx;
		w->host_tx = tx;
		w->seen = true;
	}
}
