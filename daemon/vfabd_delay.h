/* SPDX-License-Identifier: MIT */
/*
 * The delay line: a link's latency on the IP side where the kernel has no
 * netem (docs/LINK_MODEL.md "One wire"). Each node wire gets a tap in the
 * fabric namespace; classifier programs (netns/ip_shape.h
 * vfab_ip_delay_bpf) hand the tap every frame the fabric forwards towards
 * the node, and send what is written back into the tap on out of the
 * wire's host end, under the wire's HTB as before. A thread of vfabd reads
 * the tap, holds each frame for the path's one-way latency and writes it
 * back:
 *
 *   delay = the destination wire's down latency
 *         + the up latency of the wire that sent it (known by the frame's
 *           source MAC on the leaf, else by its source IPv4/IPv6 address;
 *           a frame from elsewhere gets the down latency only)
 *         + from another leaf: the sender's leaf uplink and the
 *           destination's leaf downlink (the spine's latency)
 *
 * A sender on another machine of a multi-host cluster (its address in one
 * of the remote prefixes) counts as a wire of another leaf with the
 * latencies its links start with there (the config's, as vfabd_delay_remote
 * was told): a `vfab shape` on that machine is not seen here.
 *
 * which is the path's latency as the RDMA side adds it up (netem, where the
 * kernel has it, gives the two node hops only), counted from the stamp the
 * kernel put on the frame when it handed it over (ip_shape.h
 * VFAB_IP_DELAY_STAMP_*). A wire's frames leave in the order they came: a
 * frame's release is never before the one ahead of it (a sender with less
 * latency than another waits behind the other's frames, as in one queue).
 * Frames keep their GSO and checksum state through the tap (virtio-net
 * header): a TSO burst is one frame. Each line holds at most
 * VFABD_DELAY_BYTES and VFABD_DELAY_FRAMES; beyond that frames are dropped
 * and counted, as netem drops beyond its limit.
 *
 * The tap is not in any node: nothing a node lists (ip link, NCCL's or
 * UCX's interface scan) shows it.
 */
#ifndef VFAB_DAEMON_VFABD_DELAY_H
#define VFAB_DAEMON_VFABD_DELAY_H

#include <stdint.h>

#include "vfabd_frame.h"

#define VFABD_DELAY_BYTES (8u << 20)
#define VFABD_DELAY_FRAMES 8192u
#define VFABD_DELAY_ADDRS 16u

struct vfabd_delay; /* vfabd_delay.c */

/* An address of a wire's netdev: family AF_INET (4 bytes) or AF_INET6. */
struct vfabd_delay_addr {
	int family;
	uint8_t a[16];
};

/* The line for nwires wires; its thread starts with the first tap. -errno. */
int vfabd_delay_init(struct vfabd_delay **out, uint32_t nwires);
/* Stops the thread, closes the taps (the kernel removes them). */
void vfabd_delay_free(struct vfabd_delay *dl);

/*
 * Wire `wire`'s tap, created in the network namespace nsfd the first time:
 * its ifindex there, or -errno.
 */
int vfabd_delay_tap(struct vfabd_delay *dl, uint32_t wire, int nsfd);

void vfabd_delay_set(struct vfabd_delay *dl, uint32_t wire, const struct vfabd_delay_lat *lat);

/* Who a wire is as a sender: its netdev's MAC and addresses (n at most VFABD_DELAY_ADDRS). */
void vfabd_delay_source(struct vfabd_delay *dl, uint32_t wire, const uint8_t mac[6],
			const struct vfabd_delay_addr *addrs, uint32_t n);

/* A leaf subnet of another machine: family AF_INET (4 bytes) or AF_INET6, prefix length. */
struct vfabd_delay_prefix {
	int family;
	uint8_t a[16];
	uint8_t len;
	/* A node of a spanning leaf: that leaf of this machine; UINT32_MAX: none. */
	uint32_t leaf;
};
#define VFABD_DELAY_PREFIXES 256u

/*
 * Senders on other machines: their leaves' subnets and their nodes on leaves
 * that span machines (n at most VFABD_DELAY_PREFIXES), and the latencies of
 * their wires and leaves (lat's leaf is ignored: a prefix names its own).
 */
void vfabd_delay_remote(struct vfabd_delay *dl, const struct vfabd_delay_prefix *p, uint32_t n,
			const struct vfabd_delay_lat *lat);

/* Frames a wire's line dropped for want of room, so far. */
uint64_t vfabd_delay_drops(const struct vfabd_delay *dl, uint32_t wire);

#endif /* VFAB_DAEMON_VFABD_DELAY_H */
