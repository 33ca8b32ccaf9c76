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
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vfabd.h"
#include "vfabd_delay.h"
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
/* How often the delay line learns the wires' addresses again. */
#define SOURCES_PERIOD_NS 1000000000ull

struct wire {
	uint32_t node, hca, port;	/* port from 1 */
	uint32_t up, down;		/* its port's links */
	const char *netdev;		/* in d->t */
	int node_ifindex, host_ifindex; /* 0: not found yet */
	bool seen;			/* host_rx/tx, rdma_* hold a sample */
	uint64_t host_rx, host_tx;	/* host end counters: the node's tx and rx */
	uint64_t rdma_up, rdma_down;	/* links[].bytes at the sample */
	uint64_t rate_up, rate_down;	/* HTB rates in force, bits per second */
	int hook; /* the delay line's hook on the host end: 1 on, 0 off, -1 not known */
};

struct vfabd_ipwire {
	int has_netem; /* -1: not probed yet */
	struct nl_sock *fab;
	struct nl_sock *node[VFAB_MAX_NODES];
	struct nl_cache *stats; /* the fabric namespace's links, refilled per step */
	uint32_t nwires;
	struct wire *w;
	uint64_t last_ns, next_ns;
	/*
	 * The delay line (no netem): on while any wire has a latency, then
	 * on every wire (a wire's frames wait for their sender's up latency
	 * too). `synced`: every wire's hook agrees with `delay_on`.
	 */
	struct vfabd_delay *delay;
	bool delay_on, synced;
	int delay_err;	     /* the last sync's error, said once */
	uint64_t sources_ns; /* when the sources were last learned */
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
	/*
	 * The first sync puts the config's latencies in place once the nodes
	 * are built, or takes away the hooks that a vfabd before this one
	 * left (their taps went with it).
	 */
	for (uint32_t i = 0; i < x->nwires; i++)
		x->w[i].hook = -1;
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
	vfabd_delay_free(x->delay);
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

bool vfabd_ipwire_unprivileged(struct vfabd *d)
{
	struct vfabd_ipwire *x = d->ipw;

	if (!x)
		return false;
	if (x->has_netem < 0 && !open_sock(d, VFAB_FABRIC_NS_SUFFIX, &x->fab))
		probe_netem(d);
	/* A rootless fabric's user namespace never grants CAP_BPF (base/paths.h). */
	return x->has_netem == 0 && (x->delay_err == -EPERM || vfab_fabric_owner_uid() >= 0);
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

/* A wire's netdev as a sender: its MAC and addresses, from its namespace. */
static void learn_source(struct vfabd *d, uint32_t i)
{
	struct vfabd_ipwire *x = d->ipw;
	struct wire *w = &x->w[i];
	struct nl_sock *sk = x->node[w->node];
	struct vfabd_delay_addr a[VFABD_DELAY_ADDRS];
	struct rtnl_link *link = NULL;
	struct nl_cache *addrs = NULL;
	uint8_t mac[6];
	bool has_mac = false;
	uint32_t n = 0;

	if (rtnl_link_get_kernel(sk, w->node_ifindex, NULL, &link) >= 0) {
		struct nl_addr *ll = rtnl_link_get_addr(link);

		if (ll && nl_addr_get_len(ll) == 6) {
			memcpy(mac, nl_addr_get_binary_addr(ll), 6);
			has_mac = true;
		}
		rtnl_link_put(link);
	}
	if (rtnl_addr_alloc_cache(sk, &addrs) >= 0) {
		for (struct nl_object *o = nl_cache_get_first(addrs); o && n < VFABD_DELAY_ADDRS;
		     o = nl_cache_get_next(o)) {
			struct rtnl_addr *ra = (struct rtnl_addr *)o;
			struct nl_addr *l = rtnl_addr_get_local(ra);
			int fam = rtnl_addr_get_family(ra);
			unsigned len = fam == AF_INET ? 4 : 16;

			if (rtnl_addr_get_ifindex(ra) != w->node_ifindex || !l ||
			    (fam != AF_INET && fam != AF_INET6) || nl_addr_get_len(l) != len)
				continue;
			a[n].family = fam;
			memcpy(a[n].a, nl_addr_get_binary_addr(l), len);
			n++;
		}
		nl_cache_free(addrs);
	}
	vfabd_delay_source(x->delay, i, has_mac ? mac : NULL, a, n);
}

/* Wire i's hook as delay_on asks: its tap and the host end's program. */
static int delay_hook(struct vfabd *d, uint32_t i, int nsfd)
{
	struct vfabd_ipwire *x = d->ipw;
	struct wire *w = &x->w[i];
	int tap = 0, rc;

	if (x->delay_on) {
		tap = vfabd_delay_tap(x->delay, i, nsfd);
		if (tap < 0)
			return tap;
	}
	rc = vfab_ip_delay_bpf(x->fab, w->host_ifindex, tap);
	if (!rc)
		w->hook = x->delay_on;
	return rc;
}

/* A wire's latencies, and its leaf's to and from the spine, as the links say now. */
static void wire_latency(const struct vfabd *d, const struct wire *w, struct vfabd_delay_lat *lat)
{
	const struct vfab_region *t = d->t;
	const struct vfab_link *links = d->r->links;
	uint32_t seg = t->hcas[w->hca].ports[w->port - 1].segment;

	*lat = (struct vfabd_delay_lat){
	    .up_ns = links[w->up].latency_ns, .down_ns = links[w->down].latency_ns, .leaf = seg};
	if (t->spine.present && seg < t->nleaves && seg < VFAB_MAX_LEAVES) {
		const struct vfab_leaf *l = &t->leaves[seg];

		if (l->uplink < t->nlinks)
			lat->leaf_up_ns = links[l->uplink].latency_ns;
		if (l->downlink < t->nlinks)
			lat->leaf_down_ns = links[l->downlink].latency_ns;
	}
}

/*
 * The delay line in step with the links (kernels without netem): every
 * wire's latencies, on or off, the hooks; wires whose node is not built
 * yet are tried again on the next step.
 */
static int delay_sync(struct vfabd *d)
{
	struct vfabd_ipwire *x = d->ipw;
	int rc = 0, nsfd = -1;
	bool all = true;

	if (!x->delay) {
		rc = vfabd_delay_init(&x->delay, x->nwires);
		if (rc)
			return rc;
		vfabd_delay_remote(x->delay, d->remote, d->nremote, &d->remote_lat);
	}
	x->delay_on = false;
	for (uint32_t i = 0; i < x->nwires; i++) {
		struct vfabd_delay_lat lat;

		wire_latency(d, &x->w[i], &lat);
		vfabd_delay_set(x->delay, i, &lat);
		x->delay_on |= lat.up_ns || lat.down_ns || lat.leaf_up_ns || lat.leaf_down_ns;
	}
	for (uint32_t i = 0; i < x->nwires; i++) {
		struct wire *w = &x->w[i];

		if (w->hook == (int)x->delay_on)
			continue;
		if (resolve(d, w)) {
			all = false;
			continue;
		}
		if (nsfd < 0 && (nsfd = vfab_netns_open(d->fabric, VFAB_FABRIC_NS_SUFFIX)) < 0)
			return nsfd;
		if (x->delay_on)
			learn_source(d, i);
		rc = delay_hook(d, i, nsfd);
		if (rc)
			break;
	}
	if (nsfd >= 0)
		close(nsfd);
	x->synced = all && !rc;
	x->sources_ns = vfab_mono_ns();
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
	/* The delay line's latencies: delay_sync, before the next poll. */
	if (!x->has_netem)
		x->synced = false;
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
		bool down = l->downlink < d->t->nlinks && listed(links, n, l->downlink);
		bool up = l->uplink < d->t->nlinks && listed(links, n, l->uplink);

		int rc, br;

		if (!down && !up)
			continue;
		rc = open_sock(d, VFAB_FABRIC_NS_SUFFIX, &x->fab);
		br = rc ? rc : vfab_nl_ifindex(x->fab, l->bridge);
		rc = br < 0 ? br : 0;
		if (!rc && down)
			rc = vfab_ip_leaf_apply(x->fab, br, &d->r->links[l->downlink]);
		if (!rc && up)
			rc = vfab_ip_leaf_up_apply(x->fab, k, br, &d->r->links[l->uplink]);
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

/* Milliseconds until the next coupling step, -1 none. */
static int coupling_due(struct vfabd *d)
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

int vfabd_ipwire_due(struct vfabd *d)
{
	struct vfabd_ipwire *x = d->ipw;
	int c = coupling_due(d), dl = -1;

	/* The delay line: netem to probe for or a sync to retry (soon), sources to learn again. */
	if (x && (x->has_netem < 0 || (!x->has_netem && !x->synced))) {
		dl = VFABD_IPWIRE_PERIOD_MS;
	} else if (x && x->delay_on) {
		uint64_t now = vfab_mono_ns(), at = x->sources_ns + SOURCES_PERIOD_NS;

		dl = now >= at ? 0 : (int)((at - now + 999999) / 1000000);
	}
	return c < 0 || (dl >= 0 && dl < c) ? dl : c;
}

/* RDMA bytes over a link so far, every user's. */
static uint64_t link_bytes(const struct vfab_region *r, uint32_t link)
{
	struct vfab_link_clock sum;

	vfab_link_stats_sum(r, link, &sum);
	return sum.bytes;
}

/*
 * One direction: the IP bytes that crossed it occupy the RDMA link, and the
 * IP rate becomes what RDMA's last period leaves (vfab_ip_shared_rate).
 * RDMA has messages queued when its clock still reaches QUEUED_NS past now
 * before this period's IP bytes are booked: the last period's, at most a
 * period of them, end within it.
 */
#define QUEUED_NS (VFABD_IPWIRE_PERIOD_MS * 100000ull)

static void couple(struct vfabd *d, uint32_t link, uint64_t ip_bytes, uint64_t *rdma_last,
		   uint64_t *rate_now, struct nl_sock *sk, int ifindex, uint64_t now, uint64_t dt)
{
	uint64_t rate = d->r->links[link].rate_bps, rdma, want;
	struct vfab_link_clock sum;

	vfab_link_stats_sum(d->r, link, &sum);
	rdma = sum.bytes >= *rdma_last ? sum.bytes - *rdma_last : 0;
	*rdma_last = sum.bytes;
	if (!rate)
		return;
	fabric_link_occupy(d->r, link, now, ip_bytes);
	want = vfab_ip_shared_rate(rate, (uint64_t)((double)rdma * 8e9 / (double)dt),
				   sum.busy_until_ns > now + QUEUED_NS);
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

	if (x && x->has_netem < 0 && !x->synced && !open_sock(d, VFAB_FABRIC_NS_SUFFIX, &x->fab))
		probe_netem(d);
	if (x && !x->has_netem && !x->synced) {
		int rc = delay_sync(d);

		/* Retried every step until it works; said once per cause. */
		if (rc && rc != -ENOENT && rc != -ENODEV && rc != x->delay_err)
			vfabd_log("the IP delay line is not in place: %s", strerror(-rc));
		x->delay_err = rc;
		/* Without the right to load its hooks (a rootless fabric) it never will. */
		if (rc == -EPERM)
			x->synced = true;
	} else if (x && x->delay_on && now >= x->sources_ns + SOURCES_PERIOD_NS) {
		for (uint32_t i = 0; i < x->nwires; i++)
			if (x->w[i].hook == 1)
				learn_source(d, i);
		x->sources_ns = now;
	}
	if (!x || now < x->next_ns || coupling_due(d) < 0)
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
			w->rdma_up = link_bytes(d->r, w->up);
			w->rdma_down = link_bytes(d->r, w->down);
			w->rate_up = w->rate_up ? w->rate_up : d->r->links[w->up].rate_bps;
			w->rate_down = w->rate_down ? w->rate_down : d->r->links[w->down].rate_bps;
		}
		w->host_rx = rx;
		w->host_tx = tx;
		w->seen = true;
	}
}
