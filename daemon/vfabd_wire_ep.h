/* SPDX-License-Identifier: MIT */
/*
 * One HCA port's end of the RoCE wire (vfabd_wire.h): sockets inside the
 * network namespace of the port's node that receive the RoCE v2 frames
 * arriving on its netdev and send frames from it, and the netdev's
 * addresses as the kernel reports them (NETLINK_ROUTE, vfabd_rtnl.h).
 */
#ifndef VFAB_DAEMON_VFABD_WIRE_EP_H
#define VFAB_DAEMON_VFABD_WIRE_EP_H

#include <linux/if_packet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "fabric/region.h"
#include "vfabd_rtnl.h"
#include "vfabd_wirepkt.h"

struct vfabd_wire_ep {
	int pkt_fd;	      /* AF_PACKET on the netdev: UDP 4791 over IPv4/IPv6, incoming */
	int sink_fd;	      /* UDP 4791, takes nothing: no ICMP port unreachable; -1 taken */
	int raw4_fd, raw6_fd; /* IPPROTO_RAW, header included; raw6 -1 without IPv6 */
	int nl_ev_fd, nl_dump_fd;
	uint32_t nl_seq;
	char netdev[VFAB_IFNAME_MAX];
	uint16_t vlan;		   /* its upper <netdev>.<vlan> holds addresses too */
	int ifindex, vlan_ifindex; /* 0: not seen */
	uint16_t ip_id;		   /* the last IPv4 id sent; never 0 on the wire */
	size_t naddrs;		   /* addrs[]: the netdev's and its upper's, as GIDs */
	uint8_t addrs[VFABD_RTNL_ADDRS][16];
};

/*
 * Opens ep's sockets for netdev (with VLAN vlan, 0 none) inside the
 * network namespace nsfd and reads its addresses. 0, or -errno with
 * nothing left open (-ENOENT: no such netdev in the namespace).
 */
int vfabd_wire_ep_open(struct vfabd_wire_ep *ep, int nsfd, const char *netdev, uint16_t vlan);
void vfabd_wire_ep_close(struct vfabd_wire_ep *ep);

/* Reads the address notifications (nl_ev_fd) and, when something changed, the addresses. */
void vfabd_wire_ep_follow(struct vfabd_wire_ep *ep);

#define VFABD_WIRE_BATCH 32	/* frames per sendmmsg or recvmmsg */
#define VFABD_WIRE_RX_MAX 16384 /* a received frame, jumbo or not */

/*
 * Frames on their way out, sent by one sendmmsg per run of frames for one
 * socket: the wire thread's scratch. sent and refused count what left and
 * what the kernel would not take (a full queue: dropped, as by a NIC), for
 * the caller to take.
 */
struct vfabd_wire_out {
	int fd; /* the socket of the frames queued, -1 none */
	uint32_t n;
	uint64_t sent, refused;
	struct mmsghdr mh[VFABD_WIRE_BATCH];
	struct iovec iov[VFABD_WIRE_BATCH];
	struct sockaddr_storage dst[VFABD_WIRE_BATCH];
	_Alignas(
	    struct cmsghdr) char cbuf[VFABD_WIRE_BATCH][CMSG_SPACE(sizeof(struct in6_pktinfo))];
	uint8_t frame[VFABD_WIRE_BATCH][VFABD_WIRE_FRAME_MAX];
};

/* An empty out. */
void vfabd_wire_out_init(struct vfabd_wire_out *out);

/*
 * Queues the frame of a checked TX message (vfabd_wire_tx_check) to leave
 * by ep; what out holds for another socket, or a full batch, leaves first.
 * PASS, or why it cannot be built or sent.
 */
enum vfabd_wire_drop vfabd_wire_ep_queue(struct vfabd_wire_out *out, struct vfabd_wire_ep *ep,
					 const struct vfab_wire_msg *m, const void *payload);

/* Sends what out holds. */
void vfabd_wire_out_flush(struct vfabd_wire_out *out);

/* Frames read by one recvmmsg: the wire thread's scratch. */
struct vfabd_wire_in {
	struct mmsghdr mh[VFABD_WIRE_BATCH];
	struct iovec iov[VFABD_WIRE_BATCH];
	struct sockaddr_ll sll[VFABD_WIRE_BATCH];
	size_t len[VFABD_WIRE_BATCH]; /* 0: a frame to skip (one this host sent) */
	uint8_t frame[VFABD_WIRE_BATCH][VFABD_WIRE_RX_MAX];
};

/*
 * Reads up to VFABD_WIRE_BATCH frames of pkt_fd into in: how many (their
 * lengths in in->len, at most VFABD_WIRE_RX_MAX), -EAGAIN when none is
 * left, or -errno.
 */
int vfabd_wire_ep_recv(struct vfabd_wire_ep *ep, struct vfabd_wire_in *in);

#endif /* VFAB_DAEMON_VFABD_WIRE_EP_H */
