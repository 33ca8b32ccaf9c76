/* SPDX-License-Identifier: MIT */
/*
 * The IP side of a link (docs/LINK_MODEL.md "One wire"): the kernel's own
 * queueing disciplines on the netdev that carries a link direction's IP
 * traffic, set from the same rate, latency and loss as the RDMA side.
 *
 *   rate     HTB root 1: with one class 1:1 at the rate (ceil = rate);
 *   latency  netem 10: under 1:1 (or as the root when unshaped); without
 *            netem, vfabd's delay line (daemon/vfabd_delay.h) through the
 *            hooks of vfab_ip_delay_bpf;
 *   loss     netem's loss where the kernel has netem, else a classifier
 *            program on the clsact *ingress* hook of the netdev at the
 *            link's far end that drops with the same probability
 *            (ip_bpf.c). Not on the sender's egress: a packet dropped
 *            there is reported to the sending socket (NET_XMIT_DROP), which
 *            TCP and ping take as local congestion and resend without
 *            counting a loss; a wire loses packets silently.
 */
#ifndef VFAB_NETNS_IP_SHAPE_H
#define VFAB_NETNS_IP_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric/region.h"

struct nl_sock;

/* What one link direction asks of its netdev's egress. */
struct vfab_ip_shape {
	uint64_t rate_bps; /* 0: unshaped */
	uint32_t delay_ns; /* one way, this direction's share */
	uint32_t loss_ppm; /* parts per million */
};

/* The disciplines that give it (pure: ip_shape_plan.c, unit-tested). */
struct vfab_ip_plan {
	bool htb;	      /* HTB root + class 1:1 */
	uint64_t rate_Bps;    /* class rate and ceil, bytes per second */
	uint32_t burst_bytes; /* class burst and cburst */
	bool netem;	      /* a netem (child of 1:1, or the root without HTB) */
	uint32_t delay_us;    /* netem delay, microseconds (netem's unit), rounded */
	uint32_t netem_loss;  /* netem loss: probability scaled to 2^32 - 1 */
	uint32_t bpf_loss;    /* without netem: drop threshold of a 32-bit random draw; 0 none */
};

/*
 * The plan for s on a kernel with (has_netem) or without netem. The burst
 * lets one GSO packet (64 KiB) and 200 us of the rate through at once:
 * smaller bursts make HTB undershoot TCP by 10-30 % above 1 Gb/s.
 */
void vfab_ip_shape_plan(const struct vfab_ip_shape *s, bool has_netem, struct vfab_ip_plan *p);

/*
 * The IP rate of a converged port (RoCE and IP on one wire, as ETS with two
 * equal-weight classes schedules them): IP may use what RDMA leaves, but
 * never less than half the rate while RDMA wants more than its half, and
 * no more than half while RDMA has messages queued for the wire
 * (rdma_queued: it wants more than IP leaves it). rdma_bps is RDMA's
 * measured rate over the last period.
 */
uint64_t vfab_ip_shared_rate(uint64_t rate_bps, uint64_t rdma_bps, bool rdma_queued);

/*
 * Whether the kernel has netem (1) or not (0), tried on ifindex (whose root
 * discipline it removes), or -errno.
 */
int vfab_ip_netem_probe(struct nl_sock *sk, int ifindex);

/*
 * Applies p's rate and netem to the egress of ifindex in the socket's
 * namespace, replacing what vfab put there before (a plan without either
 * removes it). p's bpf_loss goes to the far end: vfab_ip_loss_bpf.
 */
int vfab_ip_egress_apply(struct nl_sock *sk, int ifindex, const struct vfab_ip_plan *p);

/*
 * A node netdev's wire: the netdev in the node and the host end of its veth
 * in the fabric namespace, each with a socket in its namespace.
 */
struct vfab_ip_wire {
	struct nl_sock *node_sk;
	int node_ifindex;
	struct nl_sock *fab_sk;
	int host_ifindex;
};

/*
 * Both directions of a wire: `up` (node -> leaf: the netdev's egress, loss
 * at the host end's ingress) and `down` (leaf -> node: the host end's
 * egress, loss at the netdev's ingress).
 */
int vfab_ip_wire_apply(const struct vfab_ip_wire *w, const struct vfab_ip_shape *up,
		       const struct vfab_ip_shape *down, bool has_netem);

/*
 * A leaf's downlink (spine -> leaf) on the leaf bridge's own egress, which
 * carries what the router forwards into the leaf: its rate only (latency is
 * the delay line's, or not modelled with netem; loss is the nodes' links').
 */
int vfab_ip_leaf_apply(struct nl_sock *sk, int bridge_ifindex, const struct vfab_link *downlink);

/*
 * A leaf's uplink (leaf -> spine): what the bridge of leaf `leaf` passes up
 * to the router is redirected at the bridge's ingress into the leaf's ifb
 * (vfab_ip_ifb_name, made when first needed), whose egress holds the
 * uplink's HTB. An uplink without a rate takes the redirect away.
 */
int vfab_ip_leaf_up_apply(struct nl_sock *sk, uint32_t leaf, int bridge_ifindex,
			  const struct vfab_link *uplink);

/* The name of leaf `leaf`'s ifb in the fabric namespace ("vfifb<leaf>"). */
void vfab_ip_ifb_name(uint32_t leaf, char *name, size_t len);

/* ip_bpf.c: everything arriving at ifindex leaves by to_ifindex; 0 removes the program. */
int vfab_ip_redirect_bpf(struct nl_sock *sk, int ifindex, int to_ifindex);

/* A link direction's rate, latency and loss as the IP side takes them. */
void vfab_ip_shape_of_link(const struct vfab_link *l, struct vfab_ip_shape *s);

/* Changes only the HTB class rate of an applied, rate-shaped netdev. */
int vfab_ip_shape_set_rate(struct nl_sock *sk, int ifindex, uint64_t rate_bps);

/*
 * ip_bpf.c: drops packets arriving at ifindex when a random u32 is below
 * threshold (plan.bpf_loss); 0 removes the program.
 */
int vfab_ip_loss_bpf(struct nl_sock *sk, int ifindex, uint32_t threshold);

/*
 * ip_bpf.c: drops what leaves ifindex with Ethernet source mac (a spanning
 * leaf's tunnel keeps the routers' anycast gateway frames on their host).
 */
int vfab_ip_drop_source_bpf(struct nl_sock *sk, int ifindex, const uint8_t mac[6]);

/*
 * ip_bpf.c: the delay line's hooks (kernels without netem). What the fabric
 * forwards out of host_ifindex (a node wire's host end) goes to the tap
 * tap_ifindex instead, and what is written into that tap leaves by
 * host_ifindex. Both in the socket's namespace; tap_ifindex 0 removes the
 * host end's hook.
 */
int vfab_ip_delay_bpf(struct nl_sock *sk, int host_ifindex, int tap_ifindex);

/*
 * ip_tap.c: the delay line's tap number id (vfabdl<id>) in the current
 * namespace: up, without addresses or IPv6, with virtio-net headers and the
 * offloads that let GSO packets through whole. Its descriptor (non-blocking;
 * the tap goes when it is closed) and *ifindex, or -errno.
 */
int vfab_ip_delay_tap(unsigned id, int *ifindex);

/*
 * The stamp a frame reaches the delay line's tap with: an outer 802.1ad tag
 * whose 16-bit TCI is CLOCK_MONOTONIC >> SHIFT (1.024 us units, wrapping
 * every 67 ms), pushed when the kernel hands the frame over. The thread that
 * reads the tap may wake tens of microseconds later; the stamp says when
 * the frame's latency began. A frame without it (the push failed) counts
 * from when it is read.
 */
#define VFAB_IP_DELAY_STAMP_PROTO 0x88a8
#define VFAB_IP_DELAY_STAMP_SHIFT 10

#endif /* VFAB_NETNS_IP_SHAPE_H */
