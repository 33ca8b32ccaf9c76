/* SPDX-License-Identifier: MIT */
/*
 * The IP side of a link (docs/LINK_MODEL.md "One wire"): the kernel's own
 * queueing disciplines on the netdev that carries a link direction's IP
 * traffic, set from the same rate, latency and loss as the RDMA side.
 *
 *   rate     HTB root 1: with one class 1:1 at the rate (ceil = rate);
 *   latency  netem 10: under 1:1 (or as the root when unshaped);
 *   loss     netem's loss where the kernel has netem, else a classifier
 *            program on the clsact *ingress* hook of the netdev at the
 *            link's far end that drops with the same probability
 *            (ip_loss_bpf.c). Not on the sender's egress: a packet dropped
 *            there is reported to the sending socket (NET_XMIT_DROP), which
 *            TCP and ping take as local congestion and resend without
 *            counting a loss; a wire loses packets silently.
 *
 * A kernel without netem models no latency on IP (vfab doctor says so).
 */
#ifndef VFAB_NETNS_IP_SHAPE_H
#define VFAB_NETNS_IP_SHAPE_H

#include <stdbool.h>
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
 * never less than half the rate while RDMA wants more than its half.
 * rdma_bps is RDMA's measured rate over the last period.
 */
uint64_t vfab_ip_shared_rate(uint64_t rate_bps, uint64_t rdma_bps);

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
 * carries what the router forwards into the leaf: its rate only (the nodes'
 * links carry latency and loss). The uplink would need ingress shaping,
 * which the kernel lacks without ifb: every flow across the spine crosses
 * a downlink too.
 */
int vfab_ip_leaf_apply(struct nl_sock *sk, int bridge_ifindex, const struct vfab_link *downlink);

/* A link direction's rate, latency and loss as the IP side takes them. */
void vfab_ip_shape_of_link(const struct vfab_link *l, struct vfab_ip_shape *s);

/* Changes only the HTB class rate of an applied, rate-shaped netdev. */
int vfab_ip_shape_set_rate(struct nl_sock *sk, int ifindex, uint64_t rate_bps);

/*
 * ip_loss_bpf.c: drops packets arriving at ifindex when a random u32 is
 * below threshold (plan.bpf_loss); 0 removes the program.
 */
int vfab_ip_loss_bpf(struct nl_sock *sk, int ifindex, uint32_t threshold);

#endif /* VFAB_NETNS_IP_SHAPE_H */
