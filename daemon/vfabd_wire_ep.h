/* SPDX-License-Identifier: MIT */
/*
 * One HCA port's end of the RoCE wire (vfabd_wire.h): sockets inside the
 * network namespace of the port's node that receive the RoCE v2 frames
 * arriving on its netdev and send frames from it, and the netdev's
 * addresses as the kernel reports them (NETLINK_ROUTE, vfabd_rtnl.h).
 */
#ifndef VFAB_DAEMON_VFABD_WIRE_EP_H
#define VFAB_DAEMON_VFABD_WIRE_EP_H

#include <stddef.h>
#include <stdint.h>
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

/* Sends the frame of a checked TX message (vfabd_wire_tx_check). PASS, or why not. */
enum vfabd_wire_drop vfabd_wire_ep_send(struct vfabd_wire_ep *ep, const struct vfab_wire_msg *m,
					const void *payload);

/*
 * Reads one frame of pkt_fd into buf[0..cap): its length (at most cap),
 * 0 for a frame to skip (one this host sent), -EAGAIN when none is left,
 * or -errno.
 */
ssize_t vfabd_wire_ep_recv(struct vfabd_wire_ep *ep, uint8_t *buf, size_t cap);

#endif /* VFAB_DAEMON_VFABD_WIRE_EP_H */
