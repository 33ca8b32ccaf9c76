/* SPDX-License-Identifier: MIT */
/*
 * NETLINK_ROUTE for the address watcher (see vfabd_rtnl.h). Raw netlink:
 * vfabd links no libnl, and it needs two requests and one message family.
 * A socket stays in the network namespace it was created in, so vfabd
 * enters a node's namespace only around socket().
 */

#include "vfabd_rtnl.h"

#include <errno.h>
#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "vfabd_log.h"

#include "netns/netns_file.h"

#define RCVBUF (1 << 20) /* notifications queued before the kernel drops some (ENOBUFS) */
#define DUMP_TIMEOUT_S 1 /* a dump never blocks vfabd's loop for longer */

static bool parse_addr(const struct nlmsghdr *h, struct vfabd_rtnl_addr *out)
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

static bool parse_link(const struct nlmsghdr *h, struct vfabd_rtnl_link *out)
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

static void collect(const struct nlmsghdr *h, struct vfabd_rtnl_dump *dump)
{
	if (h->nlmsg_type == RTM_NEWADDR && dump->naddrs < VFABD_RTNL_ADDRS)
		dump->naddrs += parse_addr(h, &dump->addrs[dump->naddrs]);
	else if (h->nlmsg_type == RTM_NEWLINK && dump->nlinks < VFABD_RTNL_LINKS)
		dump->nlinks += parse_link(h, &dump->links[dump->nlinks]);
}

/* One dump request (RTM_GETLINK or RTM_GETADDR, all families) and its replies. */
static int dump_request(int fd, uint32_t *seqp, uint16_t type, struct vfabd_rtnl_dump *dump)
{
	union {
		struct nlmsghdr h;
		char buf[NLMSG_SPACE(sizeof(struct ifinfomsg))];
	} req;
	_Alignas(struct nlmsghdr) char buf[32768];
	size_t body = type == RTM_GETLINK ? sizeof(struct ifinfomsg) : sizeof(struct ifaddrmsg);
	uint32_t seq = ++*seqp;

	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = NLMSG_LENGTH(body);
	req.h.nlmsg_type = type;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.h.nlmsg_seq = seq;
	if (send(fd, &req, req.h.nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		ssize_t got = recv(fd, buf, sizeof(buf), 0);
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

				if (!e->error)
					continue; /* an acknowledgement, not an error */
				return e->error;
			}
			collect(h, dump);
		}
	}
}

static int nl_socket(uint32_t groups)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = groups};
	struct timeval tv = {.tv_sec = DUMP_TIMEOUT_S};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | (groups ? SOCK_NONBLOCK : 0),
			NETLINK_ROUTE);
	int size = RCVBUF;

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

int vfabd_rtnl_dump(int dump_fd, uint32_t *seq, struct vfabd_rtnl_dump *dump)
{
	int rc;

	memset(dump, 0, sizeof(*dump));
	rc = dump_request(dump_fd, seq, RTM_GETLINK, dump);
	return rc ? rc : dump_request(dump_fd, seq, RTM_GETADDR, dump);
}

struct open_arg {
	int *ev_fd, *dump_fd;
};

/* Runs inside the node's namespace: a netlink socket belongs to the one it was made in. */
static int open_sockets(void *arg)
{
	struct open_arg *a = arg;

	*a->ev_fd = nl_socket(RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_LINK);
	*a->dump_fd = *a->ev_fd < 0 ? -1 : nl_socket(0);
	return 0;
}

int vfabd_rtnl_open(int nsfd, int *ev_fd, int *dump_fd)
{
	struct open_arg a = {ev_fd, dump_fd};
	int rc = vfab_netns_run(nsfd, open_sockets, &a);

	if (rc)
		return rc;
	if (*ev_fd < 0 || *dump_fd < 0) {
		rc = *ev_fd < 0 ? *ev_fd : *dump_fd;
		if (*ev_fd >= 0)
			close(*ev_fd);
		*ev_fd = *dump_fd = -1;
	}
	return rc;
}

bool vfabd_rtnl_read(int ev_fd, struct vfabd_rtnl_addr *added, size_t *nadded, size_t max)
{
	_Alignas(struct nlmsghdr) char buf[32768];
	bool any = false;

	for (;;) {
		ssize_t got = recv(ev_fd, buf, sizeof(buf), MSG_DONTWAIT);
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
			if (h->nlmsg_type == RTM_NEWADDR && *nadded < max)
				*nadded += parse_addr(h, &added[*nadded]);
			any |= h->nlmsg_type == RTM_NEWADDR || h->nlmsg_type == RTM_DELADDR ||
			       h->nlmsg_type == RTM_NEWLINK || h->nlmsg_type == RTM_DELLINK;
		}
	}
}
