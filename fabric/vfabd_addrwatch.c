/* SPDX-License-Identifier: MIT */
/*
 * Runtime address changes in the nodes → GID tables, as the kernel's
 * roce_gid_mgmt follows the netdev a RoCE port is bound to.
 *
 * Per node, two NETLINK_ROUTE sockets created inside its network namespace
 * (/run/netns/vfab-<fabric>-<node>; a socket stays in the namespace it was
 * created in, so vfabd enters it only for socket()): one subscribed to the
 * IPv4/IPv6 address and link groups, one for dumps. A node is attached on
 * the first tick after `vfab up` published its namespace.
 *
 * A port follows its netdev from the moment that netdev is up: the node is
 * built (addresses in the configured order, then up) while the region
 * already holds the configured table, and a table rebuilt from a half-built
 * netdev would only flap. From then on every notification batch of the
 * node re-reads the netdev's current addresses (the dump is the truth: a
 * lost notification cannot leave the table wrong) and vfabd_gid_slots()
 * places the ones not yet in the table in the order their RTM_NEWADDR came,
 * which is the order the kernel's notifier added them; addresses that only
 * the dump shows (the first sync, an overflow) follow in dump order. The
 * port is bound to the netdev by its ifindex, so a rename keeps it.
 *
 * IPv6 addresses count while still tentative (DAD running): the kernel adds
 * the GID from the inet6addr notifier that ipv6_add_addr() calls before DAD
 * starts, and keeps it when DAD fails.
 */
#include "vfabd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "fabric/gid.h"

#define AW_ADDRS 64	    /* addresses of a node considered per sync */
#define AW_LINKS 64	    /* netdevs of a node */
#define AW_RCVBUF (1 << 20) /* notifications queued before the kernel drops (ENOBUFS) */
#define AW_DUMP_TIMEOUT_S 1

enum aw_state { AW_WAITING, AW_ATTACHED, AW_FAILED };

struct aw_addr {
	int ifindex;
	struct vfab_gid_addr a;
};

struct aw_link {
	int ifindex;
	bool up;
	char name[IFNAMSIZ];
};

struct aw_node {
	enum aw_state state;
	int ev_fd, dump_fd;
	uint32_t seq;
	bool pending; /* a port is not synced yet, or a dump failed: the tick tries again */
	size_t nadded;
	struct aw_addr added[AW_ADDRS]; /* RTM_NEWADDR of the current batch, in arrival order */
};

struct vfabd_addrwatch {
	int epfd;
	int self_ns; /* vfabd's own network namespace, to come back to */
	int ifindex[VFAB_MAX_HCAS][VFAB_MAX_PORTS]; /* 0: the port does not follow yet */
	struct aw_node nodes[VFAB_MAX_NODES];
};

/* A dump's replies, collected by the callbacks below. */
struct aw_dump {
	size_t naddrs, nlinks;
	struct aw_addr addrs[AW_ADDRS];
	struct aw_link links[AW_LINKS];
};

static bool parse_addr(const struct nlmsghdr *h, struct aw_addr *out)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	const void *address = NULL, *local = NULL;
	const struct rtattr *rta;
	size_t alen;
	int len;

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)) ||
	    (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6))
		return false;
	alen = ifa->ifa_family == AF_INET ? 4 : 16;
	len = (int)IFA_PAYLOAD(h);
	for (rta = IFA_RTA(ifa); RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
		if (RTA_PAYLOAD(rta) != alen)
			continue;
		if (rta->rta_type == IFA_ADDRESS)
			address = RTA_DATA(rta);
		else if (rta->rta_type == IFA_LOCAL)
			local = RTA_DATA(rta);
	}
	/*
	 * The address the kernel turns into a GID: ifa_address for IPv4
	 * (IFA_ADDRESS), the interface's own address for IPv6 (IFA_LOCAL when
	 * a peer is set, else IFA_ADDRESS).
	 */
	if (ifa->ifa_family == AF_INET6 && local)
		address = local;
	if (!address)
		address = local;
	if (!address)
		return false;
	memset(out, 0, sizeof(*out));
	out->ifindex = (int)ifa->ifa_index;
	out->a.family = ifa->ifa_family;
	out->a.prefix = ifa->ifa_prefixlen;
	memcpy(out->a.addr, address, alen);
	return true;
}

static bool parse_link(const struct nlmsghdr *h, struct aw_link *out)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	const struct rtattr *rta;
	int len;

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
		return false;
	memset(out, 0, sizeof(*out));
	out->ifindex = ifi->ifi_index;
	out->up = ifi->ifi_flags & IFF_UP;
	len = (int)IFLA_PAYLOAD(h);
	for (rta = IFLA_RTA(ifi); RTA_OK(rta, len); rta = RTA_NEXT(rta, len))
		if (rta->rta_type == IFLA_IFNAME && RTA_PAYLOAD(rta) <= IFNAMSIZ)
			snprintf(out->name, sizeof(out->name), "%.*s", (int)RTA_PAYLOAD(rta),
				 (const char *)RTA_DATA(rta));
	return out->name[0] != '\0';
}

static void collect(const struct nlmsghdr *h, struct aw_dump *dump)
{
	if (h->nlmsg_type == RTM_NEWADDR && dump->naddrs < AW_ADDRS)
		dump->naddrs += parse_addr(h, &dump->addrs[dump->naddrs]);
	else if (h->nlmsg_type == RTM_NEWLINK && dump->nlinks < AW_LINKS)
		dump->nlinks += parse_link(h, &dump->links[dump->nlinks]);
}

/* One dump request (RTM_GETLINK or RTM_GETADDR, all families) and its replies. */
static int dump_request(struct aw_node *n, uint16_t type, struct aw_dump *dump)
{
	union {
		struct nlmsghdr h;
		char buf[NLMSG_SPACE(sizeof(struct ifinfomsg))];
	} req;
	_Alignas(struct nlmsghdr) char buf[32768];
	size_t body = type == RTM_GETLINK ? sizeof(struct ifinfomsg) : sizeof(struct ifaddrmsg);
	uint32_t seq = ++n->seq;

	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = NLMSG_LENGTH(body);
	req.h.nlmsg_type = type;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.h.nlmsg_seq = seq;
	if (send(n->dump_fd, &req, req.h.nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		ssize_t got = recv(n->dump_fd, buf, sizeof(buf), 0);
		int left = (int)got;
		const struct nlmsghdr *h;

		if (got < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		for (h = (const void *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_seq != seq)
				continue; /* the tail of an earlier dump that timed out */
			if (h->nlmsg_type == NLMSG_DONE)
				return (h->nlmsg_flags & NLM_F_DUMP_INTR) ? -EAGAIN : 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error ? e->error : -EIO;
			}
			collect(h, dump);
		}
	}
}

static const struct aw_link *link_by_name(const struct aw_dump *d, const char *name)
{
	for (size_t i = 0; i < d->nlinks; i++)
		if (!strcmp(d->links[i].name, name))
			return &d->links[i];
	return NULL;
}

static bool link_exists(const struct aw_dump *d, int ifindex)
{
	for (size_t i = 0; i < d->nlinks; i++)
		if (d->links[i].ifindex == ifindex)
			return true;
	return false;
}

static bool same_addr(const struct aw_addr *x, const struct aw_addr *y)
{
	return x->ifindex == y->ifindex && x->a.family == y->a.family &&
	       !memcmp(x->a.addr, y->a.addr, x->a.family == AF_INET ? 4 : 16);
}

/*
 * The netdev's addresses for vfabd_gid_slots: those announced in this batch
 * first, in arrival order, then the rest in dump order. Count.
 */
static size_t wanted(const struct aw_node *n, const struct aw_dump *d, int ifindex,
		     struct vfab_gid_addr *out)
{
	bool used[AW_ADDRS] = {false};
	size_t k = 0;

	for (size_t i = 0; i < n->nadded; i++) {
		for (size_t j = 0; j < d->naddrs; j++) {
			if (!used[j] && d->addrs[j].ifindex == ifindex &&
			    same_addr(&n->added[i], &d->addrs[j])) {
				used[j] = true;
				out[k++] = d->addrs[j].a;
			}
		}
	}
	for (size_t j = 0; j < d->naddrs; j++)
		if (!used[j] && d->addrs[j].ifindex == ifindex)
			out[k++] = d->addrs[j].a;
	return k;
}

static void sync_port(struct vfabd *d, struct aw_node *n, const struct aw_dump *dump, uint32_t hca,
		      uint32_t port)
{
	struct vfab_hca *h = &d->r->hcas[hca];
	struct vfab_port *p = &h->ports[port - 1];
	int *ifindex = &d->aw->ifindex[hca][port - 1];
	struct vfab_gid_addr want[AW_ADDRS];
	struct vfab_gid table[VFAB_PORT_GIDS];
	size_t nwant = 0, dropped;
	int len;

	if (!*ifindex) {
		const struct aw_link *l = link_by_name(dump, p->netdev);

		if (!l || !l->up) {
			n->pending = true; /* still being built */
			return;
		}
		*ifindex = l->ifindex;
	}
	/* A netdev that is gone took its addresses with it. */
	if (link_exists(dump, *ifindex))
		nwant = wanted(n, dump, *ifindex, want);
	len =
	    vfabd_gid_slots(p->mac, p->gids, p->ngids < VFAB_PORT_GIDS ? p->ngids : VFAB_PORT_GIDS,
			    want, nwant, table, &dropped);
	if (dropped)
		vfabd_log("%s/%s port %u: %zu address(es) of %s left out of the GID table: only "
			  "%d entries per port",
			  d->r->nodes[h->node].id, h->name, port, dropped, p->netdev,
			  VFAB_PORT_GIDS);
	vfabd_gid_publish(d, hca, port, table, (uint32_t)len);
}

static void sync_node(struct vfabd *d, uint32_t node)
{
	struct aw_node *n = &d->aw->nodes[node];
	const struct vfab_node *rn = &d->r->nodes[node];
	struct aw_dump *dump = calloc(1, sizeof(*dump));
	int rc = dump ? dump_request(n, RTM_GETLINK, dump) : -ENOMEM;

	if (!rc)
		rc = dump_request(n, RTM_GETADDR, dump);
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

		if (hca >= d->r->nhcas || hca >= VFAB_MAX_HCAS)
			continue;
		for (uint32_t p = 1; p <= d->r->hcas[hca].nports && p <= VFAB_MAX_PORTS; p++)
			if (d->r->hcas[hca].ports[p - 1].netdev[0])
				sync_port(d, n, dump, hca, p);
	}
	n->nadded = 0;
	free(dump);
}

static int nl_socket(uint32_t groups)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = groups};
	struct timeval tv = {.tv_sec = AW_DUMP_TIMEOUT_S};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | (groups ? SOCK_NONBLOCK : 0),
			NETLINK_ROUTE);
	int size = AW_RCVBUF;

	if (fd < 0)
		return -errno;
	if ((groups && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size))) ||
	    (!groups && setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

/* Both sockets inside the namespace nsfd. -EINVAL: nsfd is no namespace (yet). */
static int open_sockets(struct vfabd_addrwatch *aw, int nsfd, struct aw_node *n)
{
	int rc = 0;

	if (setns(nsfd, CLONE_NEWNET))
		return -errno;
	n->ev_fd = nl_socket(RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_LINK);
	n->dump_fd = n->ev_fd < 0 ? -1 : nl_socket(0);
	if (setns(aw->self_ns, CLONE_NEWNET)) {
		/* Going on in a node's namespace would bind nothing right ever again. */
		vfabd_log("cannot return to vfabd's own network namespace: %s", strerror(errno));
		abort();
	}
	if (n->ev_fd < 0 || n->dump_fd < 0) {
		rc = n->ev_fd < 0 ? n->ev_fd : n->dump_fd;
		if (n->ev_fd >= 0)
			close(n->ev_fd);
		n->ev_fd = n->dump_fd = -1;
	}
	return rc;
}

static void attach(struct vfabd *d, uint32_t node)
{
	struct aw_node *n = &d->aw->nodes[node];
	const char *id = d->r->nodes[node].id;
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = node};
	char path[PATH_MAX];
	int nsfd, rc;

	snprintf(path, sizeof(path), "/run/netns/vfab-%s-%s", d->fabric, id);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0 && errno == ENOENT)
		return; /* not built yet */
	rc = nsfd < 0 ? -errno : open_sockets(d->aw, nsfd, n);
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

/* Reads what arrived; true when the node's tables must be looked at. */
static bool read_events(struct aw_node *n)
{
	_Alignas(struct nlmsghdr) char buf[32768];
	bool any = false;

	for (;;) {
		ssize_t got = recv(n->ev_fd, buf, sizeof(buf), MSG_DONTWAIT);
		int left = (int)got;
		const struct nlmsghdr *h;

		if (got < 0) {
			if (errno == ENOBUFS) { /* notifications were lost: the dump tells all */
				any = true;
				continue;
			}
			if (errno != EAGAIN && errno != EINTR)
				vfabd_log("address notifications: %s", strerror(errno));
			return any;
		}
		for (h = (const void *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			if (h->nlmsg_type == RTM_NEWADDR && n->nadded < AW_ADDRS)
				n->nadded += parse_addr(h, &n->added[n->nadded]);
			any |= h->nlmsg_type == RTM_NEWADDR || h->nlmsg_type == RTM_DELADDR ||
			       h->nlmsg_type == RTM_NEWLINK || h->nlmsg_type == RTM_DELLINK;
		}
	}
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
		struct aw_node *n = &d->aw->nodes[node];

		if (node < VFAB_MAX_NODES && n->state == AW_ATTACHED && read_events(n))
			sync_node(d, node);
	}
}

void vfabd_addrwatch_tick(struct vfabd *d)
{
	if (!d->aw)
		return;
	for (uint32_t i = 0; i < d->r->nnodes && i < VFAB_MAX_NODES; i++) {
		struct aw_node *n = &d->aw->nodes[i];

		if (!d->r->nodes[i].in_use)
			continue;
		if (n->state == AW_WAITING)
			attach(d, i);
		else if (n->state == AW_ATTACHED && n->pending)
			sync_node(d, i);
	}
}

int vfabd_addrwatch_fd(const struct vfabd *d)
{
	return d->aw ? d->aw->epfd : -1;
}

int vfabd_addrwatch_init(struct vfabd *d)
{
	struct vfabd_addrwatch *aw = calloc(1, sizeof(*aw));
	int rc;

	if (!aw)
		return -ENOMEM;
	for (size_t i = 0; i < VFAB_MAX_NODES; i++)
		aw->nodes[i].ev_fd = aw->nodes[i].dump_fd = -1;
	aw->self_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	aw->epfd = aw->self_ns < 0 ? -1 : epoll_create1(EPOLL_CLOEXEC);
	if (aw->self_ns < 0 || aw->epfd < 0) {
		rc = -errno;
		if (aw->self_ns >= 0)
			close(aw->self_ns);
		free(aw);
		return rc;
	}
	d->aw = aw;
	return 0;
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
	close(aw->epfd);
	close(aw->self_ns);
	free(aw);
	d->aw = NULL;
}
