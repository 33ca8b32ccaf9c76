/* SPDX-License-Identifier: MIT */
/*
 * Runtime address changes in the nodes → GID tables, as the kernel's
 * roce_gid_mgmt follows the netdev a RoCE port is bound to.
 *
 * Per node, two NETLINK_ROUTE sockets inside its network namespace
 * (/run/netns/vfab-<fabric>-<node>, vfabd_rtnl.c): notifications of the
 * address and link groups, and dumps. A node is attached as soon as `vfab
 * up` has published its namespace.
 *
 * A port follows its netdev from the moment that netdev is up: the node is
 * built (addresses in the configured order, then up) while the region
 * already holds the configured table, and a table rebuilt from a half-built
 * netdev would only flap. From then on every notification batch of the
 * node re-reads the netdev's current addresses (the dump is the truth: a
 * lost notification cannot leave the table wrong) and vfabd_gid_slots()
 * places the ones not yet in the table in the order their RTM_NEWADDR came,
 * which is the order the kernel's notifier added them; addresses that only
 * the dump shows (the first sync, an overflow) follow in dump order, which
 * is the order the kernel enumerates a netdev's addresses in. The port is
 * bound to the netdev by its ifindex, so a rename keeps it.
 *
 * IPv6 addresses count while still tentative (DAD running): the kernel adds
 * the GID from the inet6addr notifier that ipv6_add_addr() calls before DAD
 * starts, and keeps it when DAD fails.
 */

#include "vfabd_addrwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "vfabd.h"
#include "vfabd_gidpublish.h"
#include "vfabd_gidslots.h"
#include "vfabd_log.h"
#include "vfabd_rtnl.h"

#include "base/clock.h"
#include "netns/netns_file.h"

/*
 * `vfab up` returns as soon as its last node is built: a node attached only
 * on the next 250 ms tick would see address changes made right after that
 * in its first dump (dump order, not the order they were added). So while
 * nodes are still waiting, a 10 ms timer looks for their namespaces; after
 * a minute the tick alone goes on looking (a vfabd whose nodes are never
 * built must not spin).
 */
#define AW_FAST_NS (10 * 1000000L)
#define AW_FAST_FOR_MS 60000
#define AW_TIMER UINT32_MAX /* epoll data of the fast timer (node indices are smaller) */

enum aw_state { AW_WAITING, AW_ATTACHED, AW_FAILED };

struct aw_node {
	enum aw_state state;
	int ev_fd, dump_fd;
	uint32_t seq;
	bool pending; /* a port is not synced yet, or a dump failed: the tick tries again */
	size_t nadded;
	struct vfabd_rtnl_addr added[VFABD_RTNL_ADDRS]; /* this batch's RTM_NEWADDRs, in order */
};

struct vfabd_addrwatch {
	int epfd;
	int timer_fd;				    /* the fast timer, while nodes are waiting */
	uint64_t fast_until_ms;			    /* CLOCK_MONOTONIC */
	int ifindex[VFAB_MAX_HCAS][VFAB_MAX_PORTS]; /* 0: the port does not follow yet */
	struct aw_node nodes[VFAB_MAX_NODES];
};

static const struct vfabd_rtnl_link *link_by_name(const struct vfabd_rtnl_dump *d, const char *name)
{
	for (size_t i = 0; i < d->nlinks; i++)
		if (!strcmp(d->links[i].name, name))
			return &d->links[i];
	return NULL;
}

static bool link_exists(const struct vfabd_rtnl_dump *d, int ifindex)
{
	for (size_t i = 0; i < d->nlinks; i++)
		if (d->links[i].ifindex == ifindex)
			return true;
	return false;
}

static bool same_addr(const struct vfabd_rtnl_addr *x, const struct vfabd_rtnl_addr *y)
{
	return x->ifindex == y->ifindex && x->a.family == y->a.family &&
	       !memcmp(x->a.addr, y->a.addr, x->a.family == AF_INET ? 4 : 16);
}

/* The port's netdev (vlan 0) and its VLAN upper (vlan_ifindex, 0: none). */
struct aw_devs {
	int ifindex, vlan_ifindex;
	uint16_t vlan;
};

/* Does the address sit on one of the port's netdevs? It then carries that netdev's vlan. */
static bool on_devs(const struct aw_devs *devs, const struct vfabd_rtnl_addr *a, uint16_t *vlan)
{
	if (a->ifindex == devs->ifindex) {
		*vlan = 0;
		return true;
	}
	if (devs->vlan_ifindex && a->ifindex == devs->vlan_ifindex) {
		*vlan = devs->vlan;
		return true;
	}
	return false;
}

/*
 * The addresses of the port's netdev and of its VLAN upper (the kernel's
 * is_eth_port_of_netdev: the netdev and its uppers) for vfabd_gid_slots:
 * those announced in this batch first, in arrival order, then the rest in
 * dump order. Count.
 */
static size_t wanted(const struct aw_node *n, const struct vfabd_rtnl_dump *d,
		     const struct aw_devs *devs, struct vfab_gid_addr *out)
{
	bool used[VFABD_RTNL_ADDRS] = {false};
	size_t k = 0;
	uint16_t vlan;

	for (size_t i = 0; i < n->nadded; i++) {
		for (size_t j = 0; j < d->naddrs; j++) {
			if (!used[j] && on_devs(devs, &d->addrs[j], &vlan) &&
			    same_addr(&n->added[i], &d->addrs[j])) {
				used[j] = true;
				out[k] = d->addrs[j].a;
				out[k++].vlan = vlan;
			}
		}
	}
	for (size_t j = 0; j < d->naddrs; j++)
		if (!used[j] && on_devs(devs, &d->addrs[j], &vlan)) {
			out[k] = d->addrs[j].a;
			out[k++].vlan = vlan;
		}
	return k;
}

static void sync_port(struct vfabd *d, struct aw_node *n, const struct vfabd_rtnl_dump *dump,
		      uint32_t hca, uint32_t port)
{
	/* Netdev, VLAN and MAC from vfabd's own topology; the current table from the region. */
	const struct vfab_hca *h = &d->t->hcas[hca];
	const struct vfab_port *p = &h->ports[port - 1];
	const struct vfab_port *cur = &d->r->hcas[hca].ports[port - 1];
	uint32_t ncur = __atomic_load_n(&cur->ngids, __ATOMIC_ACQUIRE);
	int *ifindex = &d->aw->ifindex[hca][port - 1];
	struct vfab_gid_addr want[VFABD_RTNL_ADDRS];
	struct vfab_gid table[VFAB_PORT_GIDS];
	size_t nwant = 0, dropped;
	int len;

	if (!*ifindex) {
		const struct vfabd_rtnl_link *l = link_by_name(dump, p->netdev), *u = l;
		char upper[VFAB_IFNAME_MAX];

		/* With a VLAN the node is built when its upper is up too. */
		if (p->vlan) {
			vfab_vlan_ifname(upper, p->netdev, p->vlan);
			u = link_by_name(dump, upper);
		}
		if (!l || !l->up || !u || !u->up) {
			n->pending = true; /* still being built */
			return;
		}
		*ifindex = l->ifindex;
	}
	/* A netdev that is gone took its addresses (and its uppers) with it. */
	if (link_exists(dump, *ifindex)) {
		struct aw_devs devs = {.ifindex = *ifindex, .vlan = p->vlan};
		char upper[VFAB_IFNAME_MAX];
		const struct vfabd_rtnl_link *l = NULL;

		if (p->vlan) {
			vfab_vlan_ifname(upper, p->netdev, p->vlan);
			l = link_by_name(dump, upper);
		}
		devs.vlan_ifindex = l ? l->ifindex : 0;
		nwant = wanted(n, dump, &devs, want);
	}
	len = vfabd_gid_slots(p->mac, cur->gids, ncur < VFAB_PORT_GIDS ? ncur : VFAB_PORT_GIDS,
			      want, nwant, table, &dropped);
	if (dropped)
		vfabd_log("%s/%s port %u: %zu address(es) of %s left out of the GID table: only "
			  "%d entries per port",
			  d->t->nodes[h->node].id, h->name, port, dropped, p->netdev,
			  VFAB_PORT_GIDS);
	vfabd_gid_publish(d, hca, port, table, (uint32_t)len);
}

static void sync_node(struct vfabd *d, uint32_t node)
{
	struct aw_node *n = &d->aw->nodes[node];
	const struct vfab_node *rn = &d->t->nodes[node];
	struct vfabd_rtnl_dump *dump = malloc(sizeof(*dump));
	int rc = dump ? vfabd_rtnl_dump(n->dump_fd, &n->seq, dump) : -ENOMEM;

	n->pending = false;
	if (rc) {
		vfabd_log("node %s: reading its addresses failed (%s); trying again", rn->id,
			  strerror(-rc));
		n->pending = true;
		free(dump);
		return;
	}
	for (uint32_t i = 0; i < rn->nhcas && i < 8; i++) {
		uint32_t hca = rn->hcas[i];

		/*
		 * A shared HCA's port netdev is the host's PF, in no node, and its
		 * table is every pod's: it is not followed (docs/DESIGN.md).
		 */
		if (hca >= d->t->nhcas || hca >= VFAB_MAX_HCAS || d->t->hcas[hca].shared)
			continue;
		for (uint32_t p = 1; p <= d->t->hcas[hca].nports && p <= VFAB_MAX_PORTS; p++)
			if (d->t->hcas[hca].ports[p - 1].netdev[0])
				sync_port(d, n, dump, hca, p);
	}
	n->nadded = 0;
	free(dump);
}

static void attach(struct vfabd *d, uint32_t node)
{
	struct aw_node *n = &d->aw->nodes[node];
	const char *id = d->t->nodes[node].id;
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = node};
	int nsfd = vfab_netns_open(d->fabric, id), rc;

	if (nsfd == -ENOENT)
		return; /* not built yet */
	rc = nsfd < 0 ? nsfd : vfabd_rtnl_open(nsfd, &n->ev_fd, &n->dump_fd);
	if (nsfd >= 0)
		close(nsfd);
	/* EINVAL: the file exists but the namespace is not bound on it yet. */
	if (rc == -EINVAL)
		return;
	if (!rc && epoll_ctl(d->aw->epfd, EPOLL_CTL_ADD, n->ev_fd, &ev))
		rc = -errno;
	if (rc) {
		vfabd_log("node %s: cannot watch its addresses (%s): its GID tables stay as "
			  "configured",
			  id, strerror(-rc));
		if (n->ev_fd >= 0) {
			close(n->ev_fd);
			close(n->dump_fd);
		}
		n->ev_fd = n->dump_fd = -1;
		n->state = AW_FAILED;
		return;
	}
	n->state = AW_ATTACHED;
	/* Subscribed first, dumped second: no change falls between the two. */
	sync_node(d, node);
}

/* Attaches the nodes whose namespace appeared; true while some are still waiting. */
static bool attach_waiting(struct vfabd *d)
{
	bool waiting = false;

	for (uint32_t i = 0; i < d->t->nnodes && i < VFAB_MAX_NODES; i++) {
		if (!d->t->nodes[i].in_use || d->aw->nodes[i].state != AW_WAITING)
			continue;
		attach(d, i);
		waiting |= d->aw->nodes[i].state == AW_WAITING;
	}
	return waiting;
}

static void fast_timer(struct vfabd *d)
{
	struct vfabd_addrwatch *aw = d->aw;
	struct itimerspec off = {0};
	uint64_t expirations;

	if (read(aw->timer_fd, &expirations, sizeof(expirations)) < 0)
		return;
	if (!attach_waiting(d) || (uint64_t)vfab_now_ms() > aw->fast_until_ms)
		timerfd_settime(aw->timer_fd, 0, &off, NULL);
}

void vfabd_addrwatch_run(struct vfabd *d)
{
	struct epoll_event evs[16];
	int k;

	if (!d->aw)
		return;
	k = epoll_wait(d->aw->epfd, evs, 16, 0);
	for (int i = 0; i < k; i++) {
		uint32_t node = evs[i].data.u32;

		if (node == AW_TIMER)
			fast_timer(d);
		else if (node < VFAB_MAX_NODES && d->aw->nodes[node].state == AW_ATTACHED &&
			 vfabd_rtnl_read(d->aw->nodes[node].ev_fd, d->aw->nodes[node].added,
					 &d->aw->nodes[node].nadded, VFABD_RTNL_ADDRS))
			sync_node(d, node);
	}
}

void vfabd_addrwatch_tick(struct vfabd *d)
{
	if (!d->aw)
		return;
	attach_waiting(d);
	for (uint32_t i = 0; i < d->t->nnodes && i < VFAB_MAX_NODES; i++)
		if (d->aw->nodes[i].state == AW_ATTACHED && d->aw->nodes[i].pending)
			sync_node(d, i);
}

int vfabd_addrwatch_fd(const struct vfabd *d)
{
	return d->aw ? d->aw->epfd : -1;
}

/* The fast timer, armed and in the epoll set; -errno. */
static int fast_timer_start(struct vfabd_addrwatch *aw)
{
	struct itimerspec its = {.it_interval = {.tv_nsec = AW_FAST_NS},
				 .it_value = {.tv_nsec = AW_FAST_NS}};
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = AW_TIMER};

	aw->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (aw->timer_fd < 0)
		return -errno;
	aw->fast_until_ms = (uint64_t)vfab_now_ms() + AW_FAST_FOR_MS;
	if (timerfd_settime(aw->timer_fd, 0, &its, NULL) ||
	    epoll_ctl(aw->epfd, EPOLL_CTL_ADD, aw->timer_fd, &ev))
		return -errno;
	return 0;
}

int vfabd_addrwatch_init(struct vfabd *d)
{
	struct vfabd_addrwatch *aw = calloc(1, sizeof(*aw));
	int rc = 0;

	if (!aw)
		return -ENOMEM;
	for (size_t i = 0; i < VFAB_MAX_NODES; i++)
		aw->nodes[i].ev_fd = aw->nodes[i].dump_fd = -1;
	aw->timer_fd = -1;
	aw->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (aw->epfd < 0)
		rc = -errno;
	else
		rc = fast_timer_start(aw);
	d->aw = aw;
	if (rc)
		vfabd_addrwatch_free(d);
	return rc;
}

void vfabd_addrwatch_free(struct vfabd *d)
{
	struct vfabd_addrwatch *aw = d->aw;

	if (!aw)
		return;
	for (size_t i = 0; i < VFAB_MAX_NODES; i++) {
		if (aw->nodes[i].ev_fd >= 0)
			close(aw->nodes[i].ev_fd);
		if (aw->nodes[i].dump_fd >= 0)
			close(aw->nodes[i].dump_fd);
	}
	if (aw->timer_fd >= 0)
		close(aw->timer_fd);
	if (aw->epfd >= 0)
		close(aw->epfd);
	free(aw);
	d->aw = NULL;
}
