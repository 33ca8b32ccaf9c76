/* SPDX-License-Identifier: MIT */
/*
 * A port's end of the RoCE wire (see vfabd_wire_ep.h). A socket stays in
 * the network namespace it was made in, so vfabd enters the node's only
 * around socket(); binding, sending and receiving work from anywhere.
 *
 * Receiving: an AF_PACKET socket sees every frame of the netdev before the
 * IP stack, as a RoCE NIC takes UDP 4791 before the host does; a classic
 * BPF program keeps only incoming IPv4/IPv6 UDP to 4791, so nothing else
 * is copied to vfabd. The IP stack gets the same frames: a UDP socket on
 * 4791 that takes none (its filter drops all) keeps it from answering
 * each with an ICMP port unreachable.
 *
 * Sending: raw IP sockets with the header included, so that the IP header
 * the ICRC covers is the one on the wire; the route is chosen by the
 * packet's source address (IP_PKTINFO / IPV6_PKTINFO), as the node's own
 * traffic from that address is.
 */

#include "vfabd_wire_ep.h"
#include "netns/netns_file.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vfabd_log.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23 /* Linux 4.20 */
#endif

#define PKT_RCVBUF (8 << 20) /* frames queued while vfabd's thread is busy */
#define ACCEPT_LEN 0x40000u  /* a BPF return: keep the whole frame */

/*
 * Incoming (not OUTGOING, not OTHERHOST) IPv4 or IPv6 UDP to port 4791;
 * IPv4 fragments past the first carry no UDP header and are left out
 * (roce_pkt_parse refuses fragments anyway). Jump offsets count from the
 * next instruction: the numbers on the right are the instructions' indices.
 */
static const struct sock_filter rx_prog[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SKF_AD_OFF + SKF_AD_PKTTYPE), /* 0 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACKET_OUTGOING, 16, 0),     /* 1 -> 18 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACKET_OTHERHOST, 15, 0),    /* 2 -> 18 */
    BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),			     /* 3: ethertype */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IP, 0, 7),	     /* 4 -> 5, 12 */
    BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 14 + 9),			     /* 5: IPv4 protocol */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, 0, 11),	     /* 6 -> 7, 18 */
    BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 14 + 6),			     /* 7: fragment offset */
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x1fff, 9, 0),		     /* 8 -> 18, 9 */
    BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 14),			     /* 9: X = IPv4 hdr len */
    BPF_STMT(BPF_LD | BPF_H | BPF_IND, 14 + 2),			     /* 10: UDP dport */
    BPF_JUMP(BPF_JMP | BPF_JA, 4, 0, 0),			     /* 11 -> 16 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETH_P_IPV6, 0, 5),	     /* 12 -> 13, 18 */
    BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 14 + 6),			     /* 13: next header */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, 0, 3),	     /* 14 -> 15, 18 */
    BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 14 + 40 + 2),		     /* 15: UDP dport */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ROCE_V2_UDP_DPORT, 0, 1),    /* 16 -> 17, 18 */
    BPF_STMT(BPF_RET | BPF_K, ACCEPT_LEN),			     /* 17 */
    BPF_STMT(BPF_RET | BPF_K, 0),				     /* 18 */
};

static const struct sock_filter drop_prog[] = {BPF_STMT(BPF_RET | BPF_K, 0)};

static int set_filter(int fd, const struct sock_filter *prog, size_t n)
{
	struct sock_fprog fp = {.len = (unsigned short)n, .filter = (struct sock_filter *)prog};

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fp, sizeof(fp)) ? -errno : 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* A UDP socket on 4791 that takes nothing, dual-stack where IPv6 is there; -errno. */
static int sink_socket(void)
{
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6, .sin6_port = htons(ROCE_V2_UDP_DPORT)};
	struct sockaddr_in s4 = {.sin_family = AF_INET, .sin_port = htons(ROCE_V2_UDP_DPORT)};
	int off = 0, fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), rc;
	bool v6 = fd >= 0;

	if (!v6)
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	rc = set_filter(fd, drop_prog, 1);
	if (!rc && v6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)))
		rc = -errno;
	if (!rc && (v6 ? bind(fd, (struct sockaddr *)&s6, sizeof(s6))
		       : bind(fd, (struct sockaddr *)&s4, sizeof(s4))))
		rc = -errno;
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

/* Runs inside the node's namespace: every socket but the netlink ones. */
/* Inside the node's namespace (vfab_netns_run). */
static int open_sockets(void *arg)
{
	struct vfabd_wire_ep *ep = arg;
	int size = PKT_RCVBUF, one = 1;

	/* Protocol 0 takes nothing until bind: no frame gets in before the filter. */
	ep->pkt_fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (ep->pkt_fd < 0)
		return -errno;
	if (set_filter(ep->pkt_fd, rx_prog, sizeof(rx_prog) / sizeof(rx_prog[0])))
		return -errno;
	if (setsockopt(ep->pkt_fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		setsockopt(ep->pkt_fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	/* The filter drops them too; this spares the kernel the clone (Linux 4.20). */
	setsockopt(ep->pkt_fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	ep->sink_fd = sink_socket();
	/* Already taken (another port of this node, rxe): then the kernel sends no ICMP either. */
	if (ep->sink_fd == -EADDRINUSE)
		ep->sink_fd = -1;
	else if (ep->sink_fd < 0)
		return ep->sink_fd;
	ep->raw4_fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_RAW);
	if (ep->raw4_fd < 0)
		return -errno;
	/* IPV6_HDRINCL is implied for IPPROTO_RAW since Linux 4.5; a node without IPv6 has none. */
	ep->raw6_fd = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, IPPROTO_RAW);
	return 0;
}

static bool name_is(const struct vfabd_rtnl_dump *d, size_t i, const char *name)
{
	return !strcmp(d->links[i].name, name);
}

/* Re-reads the netdev's (and its upper's) ifindex and addresses; keeps the old ones on error. */
static int read_addrs(struct vfabd_wire_ep *ep)
{
	struct vfabd_rtnl_dump *d = malloc(sizeof(*d));
	char upper[VFAB_IFNAME_MAX];
	int rc = d ? vfabd_rtnl_dump(ep->nl_dump_fd, &ep->nl_seq, d) : -ENOMEM;
	bool seen = false;

	if (rc) {
		free(d);
		return rc;
	}
	if (ep->vlan)
		vfab_vlan_ifname(upper, ep->netdev, ep->vlan);
	/* Followed by ifindex once seen (a rename keeps it), as the address watcher does. */
	for (size_t i = 0; i < d->nlinks; i++) {
		if (ep->ifindex ? d->links[i].ifindex == ep->ifindex : name_is(d, i, ep->netdev)) {
			ep->ifindex = d->links[i].ifindex;
			seen = true;
		}
		if (ep->vlan && name_is(d, i, upper))
			ep->vlan_ifindex = d->links[i].ifindex;
	}
	ep->naddrs = 0;
	for (size_t i = 0; seen && i < d->naddrs; i++) {
		const struct vfabd_rtnl_addr *a = &d->addrs[i];
		uint8_t *g = ep->addrs[ep->naddrs];

		if (a->ifindex != ep->ifindex &&
		    (!ep->vlan_ifindex || a->ifindex != ep->vlan_ifindex))
			continue;
		if (a->a.family == AF_INET) {
			memset(g, 0, 10);
			g[10] = g[11] = 0xff;
			memcpy(g + 12, a->a.addr, 4);
		} else {
			memcpy(g, a->a.addr, 16);
		}
		ep->naddrs++;
	}
	free(d);
	return seen ? 0 : -ENOENT;
}

void vfabd_wire_ep_follow(struct vfabd_wire_ep *ep)
{
	struct vfabd_rtnl_addr added[VFABD_RTNL_ADDRS];
	size_t nadded = 0;
	int rc;

	if (!vfabd_rtnl_read(ep->nl_ev_fd, added, &nadded, VFABD_RTNL_ADDRS))
		return;
	rc = read_addrs(ep);
	if (rc)
		vfabd_log("wire: addresses of %s not re-read: %s (the last ones stay)", ep->netdev,
			  strerror(-rc));
}

int vfabd_wire_ep_open(struct vfabd_wire_ep *ep, int nsfd, const char *netdev, uint16_t vlan)
{
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL)};
	int rc;

	memset(ep, 0, sizeof(*ep));
	ep->pkt_fd = ep->sink_fd = ep->raw4_fd = ep->raw6_fd = -1;
	ep->nl_ev_fd = ep->nl_dump_fd = -1;
	snprintf(ep->netdev, sizeof(ep->netdev), "%s", netdev);
	ep->vlan = vlan;
	rc = vfab_netns_run(nsfd, open_sockets, ep);
	if (!rc)
		rc = vfabd_rtnl_open(nsfd, &ep->nl_ev_fd, &ep->nl_dump_fd);
	if (!rc)
		rc = read_addrs(ep);
	sll.sll_ifindex = ep->ifindex;
	if (!rc && bind(ep->pkt_fd, (struct sockaddr *)&sll, sizeof(sll)))
		rc = -errno;
	if (rc)
		vfabd_wire_ep_close(ep);
	return rc;
}

void vfabd_wire_ep_close(struct vfabd_wire_ep *ep)
{
	close_fd(&ep->pkt_fd);
	close_fd(&ep->sink_fd);
	close_fd(&ep->raw4_fd);
	close_fd(&ep->raw6_fd);
	close_fd(&ep->nl_ev_fd);
	close_fd(&ep->nl_dump_fd);
}

/* IP_PKTINFO / IPV6_PKTINFO naming the source: the route the node's own traffic from it takes. */
static void pktinfo(struct msghdr *mh, char *cbuf, size_t clen, const uint8_t sgid[16], int af)
{
	struct cmsghdr *c;

	memset(cbuf, 0, clen);
	mh->msg_control = cbuf;
	mh->msg_controllen = af == AF_INET ? CMSG_SPACE(sizeof(struct in_pktinfo))
					   : CMSG_SPACE(sizeof(struct in6_pktinfo));
	c = CMSG_FIRSTHDR(mh);
	if (af == AF_INET) {
		struct in_pktinfo pi = {0};

		memcpy(&pi.ipi_spec_dst, sgid + 12, 4);
		c->cmsg_level = IPPROTO_IP;
		c->cmsg_type = IP_PKTINFO;
		c->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(c), &pi, sizeof(pi));
	} else {
		struct in6_pktinfo pi = {0};

		memcpy(&pi.ipi6_addr, sgid, 16);
		c->cmsg_level = IPPROTO_IPV6;
		c->cmsg_type = IPV6_PKTINFO;
		c->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(c), &pi, sizeof(pi));
	}
}

void vfabd_wire_out_init(struct vfabd_wire_out *out)
{
	out->fd = -1;
	out->n = 0;
	out->sent = out->refused = 0;
}

void vfabd_wire_out_flush(struct vfabd_wire_out *out)
{
	/* A frame the kernel refuses is dropped, as a NIC's full queue would: RoCE retransmits. */
	for (uint32_t i = 0; i < out->n;) {
		int k = sendmmsg(out->fd, out->mh + i, out->n - i, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (k <= 0) {
			out->refused++;
			i++;
		} else {
			out->sent += (uint64_t)k;
			i += (uint32_t)k;
		}
	}
	out->n = 0;
	out->fd = -1;
}

enum vfabd_wire_drop vfabd_wire_ep_queue(struct vfabd_wire_out *out, struct vfabd_wire_ep *ep,
					 const struct vfab_wire_msg *m, const void *payload)
{
	struct sockaddr_storage dst;
	struct msghdr *mh;
	socklen_t dlen;
	int af, fd, len;
	uint32_t i;

	af =
	    vfabd_wire_dst(m->dgid, ep->vlan_ifindex ? ep->vlan_ifindex : ep->ifindex, &dst, &dlen);
	fd = af == AF_INET ? ep->raw4_fd : ep->raw6_fd;
	if (fd < 0)
		return VFABD_WIRE_DROP_SEND;
	if (out->n && (out->fd != fd || out->n == VFABD_WIRE_BATCH))
		vfabd_wire_out_flush(out);
	i = out->n;
	/* The kernel puts its own id into a 0 one, which the ICRC would then not match. */
	if (++ep->ip_id == 0)
		ep->ip_id = 1;
	len = vfabd_wire_tx_frame(m, payload, ep->ip_id, out->frame[i], sizeof(out->frame[i]));
	if (len < 0)
		return VFABD_WIRE_DROP_BUILD;
	out->dst[i] = dst;
	out->iov[i] = (struct iovec){out->frame[i] + ROCE_ETH_HLEN, (size_t)len - ROCE_ETH_HLEN};
	mh = &out->mh[i].msg_hdr;
	*mh = (struct msghdr){.msg_name = &out->dst[i],
			      .msg_namelen = dlen,
			      .msg_iov = &out->iov[i],
			      .msg_iovlen = 1};
	pktinfo(mh, out->cbuf[i], sizeof(out->cbuf[i]), m->sgid, af);
	out->fd = fd;
	out->n++;
	return VFABD_WIRE_PASS;
}

int vfabd_wire_ep_recv(struct vfabd_wire_ep *ep, struct vfabd_wire_in *in)
{
	int n;

	for (int i = 0; i < VFABD_WIRE_BATCH; i++) {
		in->iov[i] = (struct iovec){in->frame[i], sizeof(in->frame[i])};
		in->mh[i].msg_hdr = (struct msghdr){.msg_name = &in->sll[i],
						    .msg_namelen = sizeof(in->sll[i]),
						    .msg_iov = &in->iov[i],
						    .msg_iovlen = 1};
	}
	n = recvmmsg(ep->pkt_fd, in->mh, VFABD_WIRE_BATCH, MSG_DONTWAIT, NULL);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	for (int i = 0; i < n; i++) {
		uint8_t t = in->sll[i].sll_pkttype;

		/* The filter left these out already; a kernel without SKF_AD_PKTTYPE would not. */
		in->len[i] = t == PACKET_OUTGOING || t == PACKET_OTHERHOST ? 0 : in->mh[i].msg_len;
	}
	return n;
}
