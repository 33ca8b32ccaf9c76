/* SPDX-License-Identifier: MIT */
/*
 * The shared fabric region: one POSIX shared-memory file per fabric
 * (/dev/shm/vfab-<fabric>), created by vfabd and mapped by every process that
 * opens a vfab HCA. Everything a peer must reach lives here: the topology
 * (nodes, HCAs, ports, GID tables, link clocks), and the verbs objects that a
 * remote requester checks or fills (MRs, QPs with their receive queues, SRQs,
 * CQ rings). The daemon is not on the data path: processes allocate and use
 * slots directly under their shard's robust locks. The topology is vfabd's
 * (the file is mode 0644); what processes write is in their user's shard
 * ("Shards" below), which root processes read when they talk to that user,
 * so who owns an object and what an MR covers are taken from vfabd's copy
 * of each slot (fabric/ktab.h), never from here.
 *
 * Every object slot is found by index; handles given to users (QPN, lkey/rkey)
 * carry the slot index plus a generation so that stale handles never hit a
 * reused slot.
 */
#ifndef VFAB_REGION_H
#define VFAB_REGION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/paths.h"
#include "fabric/capture.h"
#include "fabric/cpuset.h"

#define VFAB_REGION_MAGIC 0x7666616272656731ull /* "vfabreg1" */
/* Layout changes: 2 leaves, spine, node netdevs, GID prefixes; 3 duplicate_request;
 * 5 owner start time; 6 per-device object counts; 7 shared HCAs (GID pod, port pod_netdev);
 * 8 copy engines per HCA; 9 buddy ring pool (no pool_brk), no holder_pid; 10 error counters;
 * 11 completion timestamps; 12 multicast attachments (mcast[], fabric/mcast.h);
 * 13 object tables of ConnectX size, touched on demand (struct vfab_slot_table);
 * 14 memory windows in the MR table (vfab_mr_slot kind, parent_key, qpn);
 * 15 vfab_mr_slot seal_seq (vfabd's object table, fabric/ktab.h);
 * 16 XRC fields; 17 packet captures (captures[], captures_on; fabric/capture.h);
 * 18 tag matching (vfab_srq_slot tm, vfab_tm_tag, vfab_cqe tm_tag/tm_priv);
 * 19 vfab_rwqe seq, producers' and consumer's words of CQ and RQ on lines of their own;
 * 20 shards: what processes write (tables, pools, locks, counters, link clocks, multicast)
 * per user, the topology vfabd's alone;
 * 21 a CQ ring's scatter entries (vfab_cqe_scatter) after its CQEs. */
#define VFAB_REGION_VERSION 21

#define VFAB_NAME_MAX 64
#define VFAB_IFNAME_MAX 16
#define VFAB_MAX_NODES 64
#define VFAB_MAX_HCAS 256
#define VFAB_MAX_PORTS 2	   /* per HCA; ports are numbered from 1 */
#define VFAB_PORT_GIDS 32	   /* populated GID entries kept per port */
#define VFAB_SYSFS_GID_TBL_LEN 256 /* gid_tbl_len reported, as on ConnectX */
/*
 * P_Keys as mlx5 reports them for a RoCE port: the port's table holds the
 * default P_Key only (pkey_tbl_len 1, sysfs pkeys/0 = 0xffff), while the
 * device's max_pkeys is the firmware table's 128.
 */
#define VFAB_PKEY_TBL_LEN 1
#define VFAB_MAX_PKEYS 128
/* port_cap_flags (sysfs cap_mask): CM_SUP | IP_BASED_GIDS, as mlx5 reports a RoCE port. */
#define VFAB_PORT_CAP_FLAGS 0x04010000u
/*
 * device_cap_flags (ibv_query_device, netlink's CAP_FLAGS; the kernel's
 * bits are libibverbs' here): BAD_PKEY_CNTR, BAD_QKEY_CNTR, CHANGE_PHY_PORT,
 * PORT_ACTIVE_EVENT, SYS_IMAGE_GUID, RC_RNR_NAK_GEN, MEM_WINDOW, XRC,
 * MEM_WINDOW_TYPE_2B, RAW_IP_CSUM, MANAGED_FLOW_STEERING: what mlx5 sets on a
 * ConnectX-6's RoCE port (never CURR_QP_STATE_MOD), less what vfab does not
 * do (provider/vfab_query.c).
 */
#define VFAB_DEVICE_CAP_FLAGS                                                                      \
	((1u << 1) | (1u << 2) | (1u << 5) | (1u << 10) | (1u << 11) | (1u << 12) | (1u << 17) |   \
	 (1u << 20) | (1u << 24) | (1u << 26) | (1u << 29))
#define VFAB_MAX_LINKS 2048
#define VFAB_MAX_LEAVES 128
#define VFAB_NODE_NETDEVS 8
#define VFAB_LINK_NONE 0xffffffffu /* a link index that names no link */
#define VFAB_SLOT_NONE 0xffffffffu /* a PD or CQ slot index that names none (an XRC_RECV QP's) */
/*
 * The object tables of the whole fabric, in slots. They are sized for
 * ConnectX-scale limits on every HCA of any fabric and cost only what is
 * used: the file is sparse, and slots are handed out from the bottom of
 * each table (struct vfab_slot_table), their pages reserved as they are
 * first reached. QPNs hold a slot in their low VFAB_QPN_SLOT_BITS bits,
 * lkeys/rkeys in their high 24.
 */
#define VFAB_QPN_SLOT_BITS 20
#define VFAB_MAX_PDS (1u << 20)
#define VFAB_MAX_MRS (1u << 24)
#define VFAB_MAX_CQS (1u << 20)
#define VFAB_MAX_QPS (1u << VFAB_QPN_SLOT_BITS)
#define VFAB_MAX_SRQS (1u << 18)
/* An SRQ's slot is its number and a WQ's (vfab_wq.c): below every QPN (region.c). */
_Static_assert(VFAB_MAX_SRQS <= (1u << VFAB_QPN_SLOT_BITS), "WQ numbers below QPNs");
/* Tagged buffers of a TM SRQ: max_num_tags of ibv_query_device_ex's tm_caps. */
#define VFAB_TM_MAX_TAGS 255
/*
 * What one device gives of each kind (ibv_query_device's max_pd, max_mr,
 * max_cq, max_srq, max_qp) unless fabric.limits says otherwise: a
 * ConnectX-6's, on every HCA of every fabric. Memory (the tables above,
 * the ring pool) is the only other bound.
 */
#define VFAB_CX_MAX_PD (1u << 24)
#define VFAB_CX_MAX_MR (1u << 24)
/* Device memory (MEMIC) a ConnectX-6 reports as max_dm_size. */
#define VFAB_CX_MAX_DM_BYTES (128u << 10)
#define VFAB_CX_MAX_CQ (1u << 24)
#define VFAB_CX_MAX_SRQ (1u << 23)
#define VFAB_CX_MAX_QP (1u << 18)
#define VFAB_MAX_SGE 30
/* (QP, multicast group) attachments of the whole fabric (fabric/mcast.h). */
#define VFAB_MAX_MCAST_ATTACH 8192
#define VFAB_MAX_COPY_ENGINES 16	/* hcas[].copy_engines */
#define VFAB_DEFAULT_COPY_ENGINES_MAX 8 /* the default: the node's CPUs, at most this */
/*
 * A ring pool holds the rings (CQ, SQ, RQ, SRQ) of the processes of one
 * user: every shard has one of the same size, fixed when vfabd creates the
 * region, from the config:
 * fabric.ring_pool_mib when given, else VFAB_POOL_BYTES_PER_HCA for each HCA
 * the nodes list, at least VFAB_POOL_BYTES_MIN (vfab_pool_bytes). The file
 * is sparse: the header is reserved (posix_fallocate) when the region is
 * made, the pool block by block as it is handed out (pool.c), so the size
 * is a ceiling on what the fabric's rings may take, not a reservation, and
 * a /dev/shm too full for either gives -ENOSPC / -ENOMEM, never SIGBUS.
 */
#define VFAB_POOL_BYTES_PER_HCA (512ull << 20)
#define VFAB_POOL_BYTES_MIN (1ull << 30)
#define VFAB_POOL_BYTES_MAX (64ull << 30)   /* also the most ring_pool_mib may say */
#define VFAB_POOL_BYTES VFAB_POOL_BYTES_MIN /* what vfab_region_create gives */
#define VFAB_POOL_GIVE_BACK (64u << 10)	    /* freed chunks this large return their pages */

/* Slot life cycle (every object table). */
enum vfab_slot_state {
	VFAB_SLOT_FREE = 0,
	VFAB_SLOT_USED = 1,
};

enum vfab_gid_type {
	VFAB_GID_EMPTY = 0,
	VFAB_GID_ROCE_V1 = 1,
	VFAB_GID_ROCE_V2 = 2,
};

struct vfab_gid {
	uint8_t raw[16];
	uint8_t type;	/* enum vfab_gid_type */
	uint8_t prefix; /* prefix length of the address it came from; 0 unknown */
	/*
	 * 0: the address is the port's netdev's; else it came from the VLAN
	 * upper <netdev>.<vlan> of that netdev (gid_attrs/ndevs names it). The
	 * kernel's cache tells entries apart by GID, type and netdev.
	 */
	uint16_t vlan;
	/*
	 * 0: as above; else the HCA is shared by a host's pods (rdma_netns
	 * shared) and the address sits on the upper (macvlan) that pod
	 * nodes[pod - 1] holds: gid_attrs/ndevs names vfab_port.pod_netdev.
	 */
	uint8_t pod;
	uint8_t pad[3];
	uint32_t index; /* index in the port's (sysfs) GID table */
};

/*
 * One direction of a link, as vfabd configured it (fabric/link_model.h);
 * unshaped links have rate_bps == 0 and are only counted. Times are
 * CLOCK_MONOTONIC ns.
 */
struct vfab_link {
	uint32_t in_use;
	uint32_t kind; /* enum vfab_link_kind */
	char name[VFAB_NAME_MAX];
	uint64_t rate_bps;   /* 0 = unshaped */
	uint32_t latency_ns; /* one way */
	uint32_t loss_ppm;
};

/*
 * What requesters write for one link: its clock (the link model reserves
 * serialization time by advancing busy_until_ns) and its counters. Kept
 * per user (struct vfab_shard): a user's traffic is timed on that user's
 * clock of the link, and vfabd sums the counters (vfab_link_stats_sum).
 */
struct vfab_link_clock {
	_Atomic uint64_t busy_until_ns;
	_Atomic uint64_t bytes;
	_Atomic uint64_t msgs;
	_Atomic uint64_t queue_ns; /* total queueing delay seen */
	_Atomic uint64_t drops;
};

enum vfab_link_kind {
	VFAB_LINK_NODE_UP = 1,	 /* node port -> leaf */
	VFAB_LINK_NODE_DOWN = 2, /* leaf -> node port */
	VFAB_LINK_LEAF_UP = 3,	 /* leaf -> spine */
	VFAB_LINK_LEAF_DOWN = 4, /* spine -> leaf */
	VFAB_LINK_LOOPBACK = 5,	 /* between two ports of one node (intra_node) */
};

/*
 * Port counters, in the units sysfs reports them (data in 4-byte words).
 * The port's own requesters count the first group, the requesters of its
 * peers the second: separate cache lines keep every message from bouncing
 * one line between the two processes.
 */
struct vfab_port_counters {
	_Alignas(64) _Atomic uint64_t xmit_data_words;
	_Atomic uint64_t xmit_packets;
	_Atomic uint64_t local_ack_timeout_err;
	_Atomic uint64_t rnr_nak_retry_err;
	_Alignas(64) _Atomic uint64_t rcv_data_words;
	_Atomic uint64_t rcv_packets;
	_Atomic uint64_t out_of_sequence;
	_Atomic uint64_t duplicate_request;
	_Atomic uint64_t packet_seq_err;
	_Atomic uint64_t rx_write_requests;
	_Atomic uint64_t rx_read_requests;
	_Atomic uint64_t rx_atomic_requests;
	/*
	 * Error events, as mlx5's extended error counters name them (rare:
	 * counted where the completion or NAK is made, whoever's process that is).
	 */
	_Alignas(64) _Atomic uint64_t out_of_buffer; /* responder: RNR, no receive WQE */
	_Atomic uint64_t req_cqe_error;		     /* send completions in error, flushes apart */
	_Atomic uint64_t req_cqe_flush_error;
	_Atomic uint64_t req_remote_access_errors;	 /* the responder answered: access error */
	_Atomic uint64_t req_remote_invalid_request;	 /* ... invalid request */
	_Atomic uint64_t req_transport_retries_exceeded; /* IBV_WC_RETRY_EXC_ERR */
	_Atomic uint64_t req_rnr_retries_exceeded;	 /* IBV_WC_RNR_RETRY_EXC_ERR */
	_Atomic uint64_t resp_cqe_error;		 /* receive completions in error */
	_Atomic uint64_t resp_cqe_flush_error;
	_Atomic uint64_t resp_local_length_error;   /* a message longer than the receive WQE */
	_Atomic uint64_t resp_remote_access_errors; /* an RDMA/atomic request failed its rkey */
};

struct vfab_port {
	_Atomic uint32_t state; /* enum ibv_port_state: 4 ACTIVE, 1 DOWN */
	uint32_t netdev_mtu;	/* bytes, from the bound netdev */
	uint32_t active_mtu;	/* enum ibv_mtu, largest <= netdev_mtu */
	uint32_t speed_mbps;	/* configured link rate */
	uint8_t active_width;	/* ibv encoding: 1,2,4,8,16 */
	uint8_t active_speed;	/* ibv encoding */
	uint16_t vlan; /* the bound netdev's VLAN (its upper <netdev>.<vlan> holds the addresses); 0
			  none */
	uint32_t segment;   /* index into leaves[]: the L2 segment (bridge) of the netdev */
	uint32_t subnet;    /* that leaf's IPv4 network address (network byte order) */
	uint32_t link_up;   /* index into links[]: this port -> leaf */
	uint32_t link_down; /* index into links[]: leaf -> this port */
	char netdev[VFAB_IFNAME_MAX];
	/* A shared HCA: the name of the pods' uppers (macvlans) of netdev, "net1". */
	char pod_netdev[VFAB_IFNAME_MAX];
	uint8_t mac[6];
	uint16_t pad1;
	_Atomic uint32_t gid_gen; /* bumped whenever the GID table changes */
	uint32_t ngids;
	struct vfab_gid gids[VFAB_PORT_GIDS];
};

/* Object kinds counted per device (struct vfab_hca.used). */
enum vfab_obj { VFAB_OBJ_PD, VFAB_OBJ_MR, VFAB_OBJ_CQ, VFAB_OBJ_SRQ, VFAB_OBJ_QP, VFAB_OBJ_KINDS };

struct vfab_hca {
	uint32_t in_use;
	/* fabric.limits, as vfabd published them; 0: the ConnectX default (VFAB_CX_MAX_*). */
	uint32_t limit[VFAB_OBJ_KINDS];
	uint32_t node; /* index into nodes[]: the first node that lists it */
	/*
	 * 0: the node's own. Else the host's HCA in shared RDMA netns mode,
	 * listed by every pod (node) of that host: its QPs are found by QPN
	 * whichever pod made them, its ports' links are the host's, its GID
	 * table holds every pod's addresses (fabric/topology.c).
	 */
	uint32_t shared;
	/*
	 * A pod's HCA of a host in exclusive RDMA netns mode (config hosts[]
	 * rdma_netns: exclusive): what `rdma system` shows in that pod.
	 */
	uint32_t netns_exclusive;
	char name[VFAB_NAME_MAX];
	uint32_t uverbs_idx; /* N of the node's /dev/infiniband/uverbsN */
	uint32_t nports;
	/*
	 * Threads (1..VFAB_MAX_COPY_ENGINES) a process of this HCA may split
	 * one large copy over, as a NIC's DMA engines: hcas[].copy_engines,
	 * else the node's CPUs, at most VFAB_DEFAULT_COPY_ENGINES_MAX.
	 */
	uint32_t copy_engines;
	uint64_t node_guid; /* host byte order */
	uint64_t sys_image_guid;
	struct vfab_port ports[VFAB_MAX_PORTS];
};

/* A network interface of a node: its veth joins the bridge of its leaf. */
struct vfab_node_netdev {
	char name[VFAB_IFNAME_MAX];
	uint8_t mac[6];
	uint16_t vlan; /* nodes[].netdevs[].vlan: the node also has <name>.<vlan>, holding
			  the addresses; 0: none */
	uint32_t leaf; /* index into leaves[] */
	uint32_t mtu;
};

/* "eth1.100": the VLAN upper of `lower`, as `ip link add link eth1 name eth1.100` names it. */
static inline void vfab_vlan_ifname(char buf[VFAB_IFNAME_MAX], const char *lower, uint16_t vlan)
{
	/* 802.1Q ids are 12 bits: at most 4 digits, so 10 + 1 + 4 fit. */
	__builtin_snprintf(buf, VFAB_IFNAME_MAX, "%.10s.%u", lower, (unsigned)(vlan & 0xfff));
}

struct vfab_node {
	uint32_t in_use;
	uint32_t index;
	char id[VFAB_NAME_MAX];
	/*
	 * Unused. The holder's pid lives in nodes/<id>/holder.pid of the run
	 * dir, written by root: a pid in this region, which every user can
	 * write, must never be signalled.
	 */
	int32_t reserved;
	uint32_t nhcas;
	uint32_t hcas[8];  /* indices into hcas[] */
	uint32_t ipv4;	   /* first address of eth0, network byte order */
	uint32_t group;	   /* leaf group: config nodes[].leaf */
	uint32_t loopback; /* index into links[]: traffic between ports of this node */
	uint32_t nnetdevs;
	struct vfab_node_netdev netdevs[VFAB_NODE_NETDEVS]; /* eth0 first */
	struct vfab_cpus cpus; /* host CPUs the node's processes run on (its cpuset) */
};

/*
 * A leaf switch: one L2 segment, i.e. one bridge, one IPv4 subnet and at most
 * one routed IPv6 prefix. A leaf serves one node netdev name (its plane: eth0,
 * or eth3 of a rail-optimised fabric) for the nodes of one leaf group, so a
 * single-plane fabric has one leaf per group and a rail-optimised one a leaf
 * per rail per group. With more than one leaf a spine routes between them;
 * the spine's address on each leaf is the gateway. See configs/README.md.
 */
struct vfab_leaf {
	uint32_t in_use;
	uint32_t group;		      /* node group: config nodes[].leaf */
	char name[VFAB_NAME_MAX];     /* "leaf0", or "leaf0-eth3" with several planes */
	char netdev[VFAB_IFNAME_MAX]; /* the node netdev name it serves */
	char bridge[VFAB_IFNAME_MAX]; /* "vfbr<index>", in the fabric namespace */
	uint32_t mtu;		      /* largest MTU of its member netdevs */
	uint32_t nmembers;	      /* node netdevs attached */
	uint32_t ipv4_net;	      /* network byte order */
	uint32_t ipv4_gw;	      /* spine address on this leaf; 0 without a spine */
	uint8_t ipv4_prefix;
	uint8_t ipv6_prefix; /* 0: no IPv6 prefix */
	uint8_t pad[2];
	uint8_t ipv6_net[16];
	uint8_t ipv6_gw[16];	    /* all zero: none */
	uint32_t uplink;	    /* index into links[]: leaf -> spine (or VFAB_LINK_NONE) */
	uint32_t downlink;	    /* index into links[]: spine -> leaf (or VFAB_LINK_NONE) */
	uint64_t node_capacity_bps; /* sum of the rates of the HCA ports below it */
	uint32_t oversub_milli;	    /* node capacity / uplink capacity, x1000 */
	uint32_t pad2;
};

/* The router that joins the leaves (present when there is more than one). */
struct vfab_spine {
	uint32_t present;
	uint32_t ipv4_net;   /* every leaf subnet lies in it: 198.18.0.0 (NBO) */
	uint8_t ipv4_prefix; /* 15 */
	uint8_t has_ipv6;    /* some leaf has a routed IPv6 prefix */
	uint8_t ipv6_prefix; /* length of the prefix the leaves' IPv6 prefixes share */
	uint8_t pad;
	uint8_t ipv6_net[16];
};

/* A CQE as it sits in a shared ring (64 bytes). */
struct vfab_cqe {
	_Atomic uint64_t seq; /* == ring position + 1 once the entry is valid */
	uint64_t wr_id;
	uint32_t status; /* enum ibv_wc_status */
	uint32_t opcode; /* enum ibv_wc_opcode */
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data; /* network byte order, as in ibv_wc */
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags;
	/*
	 * A tag matching completion (IBV_WC_TM_*, of a TM SRQ's CQ) has no
	 * P_Key, LID, SL or timestamp: its tag and app_ctx (ibv_wc_tm_info) are
	 * in their place, so that an entry stays one cache line. A CQ takes
	 * either IBV_WC_EX_WITH_TM_INFO or a timestamp flag (vfab_cq.c).
	 */
	union {
		struct {
			uint16_t pkey_index;
			uint16_t slid;
		};
		uint32_t tm_priv;
	};
	union {
		struct {
			uint8_t sl;
			uint8_t dlid_path_bits;
			/*
			 * The device clock when the entry was written, its low 48
			 * bits (78 hours of ns: the reader restores the rest from
			 * the clock it reads), in CQs made with a timestamp flag only.
			 */
			uint8_t ts_lo48[6];
		};
		uint64_t tm_tag;
	};
};
_Static_assert(sizeof(struct vfab_cqe) == 64, "a CQE is one cache line");

/*
 * Scatter to CQE, as a ConnectX does for receives of at most 32 bytes into
 * 64-byte CQEs (the responder's cs_res = SCAT_DATA32 that mlx5 sets on RC
 * and UC QPs, SRQs included, not XRC targets): the payload travels in the
 * CQ and libmlx5 copies it into the receive buffer when it polls the
 * entry. Here it spares such a SEND the system call of a copy into another
 * process: the responder puts the bytes and their place (the receive
 * buffer it checked, an address of the CQ owner) into the ring's scatter
 * entry at the CQE's position and marks the CQE VFAB_WC_SCATTERED; the
 * poller copies them before it reports the completion, as libmlx5 does,
 * so they are in the buffer once the completion is seen (not before: also
 * as on a ConnectX). A CQ's ring is cap CQEs followed by cap scatter
 * entries (vfab_cq_ring_bytes).
 */
#define VFAB_CQE_SCATTER_BYTES 32
#define VFAB_WC_SCATTERED (1u << 31) /* in vfab_cqe.wc_flags only; never an ibv_wc flag */
struct vfab_cqe_scatter {
	uint64_t addr; /* in the CQ owner's address space */
	uint32_t len;  /* <= VFAB_CQE_SCATTER_BYTES */
	uint32_t pad;
	uint8_t data[VFAB_CQE_SCATTER_BYTES];
	uint8_t pad2[16];
};
_Static_assert(sizeof(struct vfab_cqe_scatter) == 64, "a scatter entry is one cache line");

/* Bytes of the ring of a CQ of cap entries: the CQEs, then their scatter entries. */
static inline uint64_t vfab_cq_ring_bytes(uint64_t cap)
{
	return cap * (sizeof(struct vfab_cqe) + sizeof(struct vfab_cqe_scatter));
}

/* The scatter entries of a ring of cap CQEs. */
static inline struct vfab_cqe_scatter *vfab_cq_scatter_of(struct vfab_cqe *ring, uint64_t cap)
{
	return (struct vfab_cqe_scatter *)(ring + cap);
}

/*
 * A receive WQE header; VFAB sges follow it (max_sge per queue). seq is the WQE's position + 1 (low
 * 32 bits), stored last by the owner: a requester takes the WQE at head when its seq says it was
 * posted there, without reading the owner's tail (one cache line fewer per message). The ring is
 * zeroed when allocated and at RESET, so no stale seq matches.
 */
struct vfab_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	_Atomic uint32_t seq;
};

struct vfab_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/*
 * Receive ring shared by the owner (producer: post_recv) and remote
 * requesters (consumers, under the owning QP's or SRQ's lock).
 */
struct vfab_rq {
	uint32_t cap; /* power of two */
	uint32_t max_sge;
	uint32_t wqe_size; /* sizeof(vfab_rwqe) + max_sge * sizeof(vfab_sge) */
	uint32_t pad;
	uint64_t ring_off;     /* offset of the ring in the pool */
	_Atomic uint64_t head; /* next WQE a requester consumes */
	/*
	 * The owner's line: its posts read neither this line's head (it keeps
	 * its own view, vfab_rq_own) nor is tail read by requesters on the
	 * data path (the WQE's seq says it was posted).
	 */
	_Alignas(64) _Atomic uint64_t tail; /* next free position the owner fills */
};

/*
 * Identifies who owns an object, for cleanup when that process dies. The pid
 * with its start time names one process across pid reuse: a requester copies
 * into the owner only through handles opened while both matched.
 */
struct vfab_owner {
	int32_t pid;
	uint32_t ctx_id;      /* the owning context, unique per fabric */
	uint64_t start_ticks; /* /proc/<pid>/stat field 22; 0 unknown */
	uint32_t hca;	      /* the context's device: whose limits the object counts against */
	uint32_t pad;
};

struct vfab_pd_slot {
	_Atomic uint32_t state;
	uint32_t gen;
	struct vfab_owner owner;
	uint32_t hca;
};

struct vfab_mr_slot {
	_Atomic uint32_t state;
	uint32_t key; /* lkey == rkey: (slot << 8) | (gen & 0xff) */
	struct vfab_owner owner;
	uint32_t hca;
	uint32_t pd;		   /* pd slot index */
	uint32_t access;	   /* enum ibv_access_flags */
	_Atomic uint32_t inflight; /* copies past the remote check, not done (vfab_mr_pin) */
	uint64_t addr;		   /* virtual address in the owner process */
	uint64_t length;
	uint64_t iova; /* address remote peers use (== addr unless iova2) */
	/*
	 * A memory window shares the key space of MRs (one rkey lookup finds
	 * either): kind says which. A bound window is [iova, iova+length) with
	 * rights `access` inside the MR whose key was parent_key at the bind,
	 * found by that key like any other (addr unused): a parent since
	 * deregistered, its slot reused, matches no window.
	 * length 0: unbound or invalidated. qpn: the QP a type 2 window was
	 * bound through, the only one it may be reached by (type 2B).
	 */
	uint32_t kind; /* enum vfab_mkey_kind */
	uint32_t parent_key;
	uint32_t qpn;
	/*
	 * In vfabd's table (fabric/ktab.h) only: odd while vfabd rewrites the
	 * record (a re-registration, a bind), so that a reader's copy is whole.
	 */
	_Atomic uint32_t seal_seq;
};

enum vfab_mkey_kind {
	VFAB_MKEY_MR = 0,
	VFAB_MKEY_MW1 = 1, /* IBV_MW_TYPE_1 */
	VFAB_MKEY_MW2 = 2, /* IBV_MW_TYPE_2 */
};

struct vfab_cq_slot {
	_Alignas(64) _Atomic uint32_t state; /* own cache lines: peers write slots */
	uint32_t gen;
	struct vfab_owner owner;
	uint32_t hca;
	uint32_t cap; /* ring entries, power of two */
	uint64_t ring_off;
	uint64_t user_cq;  /* the owner's struct ibv_cq *, the channel cookie */
	int32_t chan_pid;  /* completion channel FIFO: <rundir>/fifo/<pid>.<id> */
	uint32_t chan_id;  /* 0 = no channel */
	int32_t async_pid; /* async event FIFO of the owning context */
	uint32_t async_id;
	uint32_t stamp; /* entries carry ts_ns (ibv_create_cq_ex with a timestamp flag) */
	/* The producers' line. */
	_Alignas(64) pthread_mutex_t lock; /* producers; robust, process-shared */
	_Atomic uint64_t tail;		   /* producer position */
	uint64_t head_seen;		   /* head as last read: again when the ring looks full */
	_Atomic uint32_t armed;		   /* 0 no, 1 next completion, 2 solicited only */
	_Atomic uint32_t overflow;
	/* The consumer's line: its polls do not take the producers' line away. */
	_Alignas(64) _Atomic uint64_t head; /* consumer position (owner's poll_cq) */
};

/*
 * A tagged buffer of a tag matching SRQ (IBV_SRQT_TM), in its tag table
 * (struct vfab_srq_slot tm); num_sge sges follow. Written by the owner's
 * ibv_post_srq_ops, matched and consumed by requesters, under the SRQ's lock.
 */
struct vfab_tm_tag {
	uint32_t valid;
	uint32_t num_sge;
	/* The unexpected count it was added with: it matches only while the HW's is the same. */
	uint32_t phase;
	uint32_t pad;
	uint64_t seq; /* the order of adding: the oldest matching tag is taken */
	uint64_t wr_id;
	uint64_t tag, mask;
};

struct vfab_srq_slot {
	_Alignas(64) _Atomic uint32_t state; /* own cache lines: peers write slots */
	uint32_t gen;
	struct vfab_owner owner;
	uint32_t hca;
	uint32_t pd;
	_Atomic uint32_t limit; /* srq_limit; 0 = not armed */
	uint32_t cq;		/* XRC and TM: the CQ it completes into; VFAB_SLOT_NONE basic */
	uint64_t user_srq;	/* the owner's struct ibv_srq *, for async events */
	int32_t async_pid;
	uint32_t async_id;
	uint32_t xrcd;	  /* XRC: its domain (struct vfab_xrcd's id); 0 a basic SRQ */
	uint32_t tm_tags; /* TM: the entries of its tag table; 0 otherwise */
	pthread_mutex_t lock;
	struct vfab_rq rq;
	/*
	 * TM: the tag table's geometry (cap entries of wqe_size bytes, each a
	 * struct vfab_tm_tag and max_sge sges, at ring_off; head and tail
	 * unused), the unexpected messages counted (the HW's phase count) and
	 * the next tag's seq.
	 */
	struct vfab_rq tm;
	_Atomic uint32_t tm_unexpected;
	uint64_t tm_seq;
};

struct vfab_qp_slot {
	_Alignas(64) _Atomic uint32_t state; /* own cache lines: peers write slots */
	uint32_t qpn; /* gen << VFAB_QPN_SLOT_BITS | slot, 24 bits, never 0 or 1 */
	struct vfab_owner owner;
	uint32_t hca;
	uint32_t port;		   /* 1-based, set at INIT */
	uint32_t pd;		   /* pd slot index */
	uint32_t qp_type;	   /* enum ibv_qp_type */
	_Atomic uint32_t qp_state; /* enum ibv_qp_state */
	uint32_t send_cq;	   /* cq slot indices; VFAB_SLOT_NONE: none (XRC_RECV) */
	uint32_t recv_cq;	   /* XRC_SEND: its send CQ (it receives nothing) */
	int32_t srq;		   /* srq slot index, -1 none */
	uint32_t xrcd;	 /* XRC_RECV: its domain, which names the SRQs it delivers to; else 0 */
	uint32_t access; /* qp_access_flags */
	uint32_t qkey;
	uint32_t path_mtu; /* enum ibv_mtu */
	uint32_t dest_qpn;
	uint8_t dgid[16];
	uint32_t sgid_index;
	uint32_t min_rnr_timer;
	uint32_t max_dest_rd_atomic;
	uint32_t pkey_index;
	_Atomic uint32_t epsn; /* responder: next expected PSN (24 bit) */
	uint64_t user_qp;      /* owner's struct ibv_qp *, for async events */
	int32_t async_pid;
	uint32_t async_id;
	_Alignas(64) pthread_mutex_t lock; /* responder side: RQ consumption, epsn */
	struct vfab_rq rq;		   /* unused when srq >= 0 */
};

/*
 * One QP attached to one multicast group (ibv_attach_mcast). state is
 * (generation << 1) | 1 while used, even while free: a sender reads the
 * fields between two equal loads of it, so a slot reused meanwhile is
 * skipped (fabric/mcast.h). Nothing in it is followed but through
 * vfab_qp_lookup: the QP found is delivered to as a unicast datagram is.
 */
struct vfab_mcast_slot {
	_Atomic uint32_t state;
	uint32_t hca; /* the QP's device */
	uint32_t qpn;
	uint32_t pad;
	uint8_t gid[16]; /* the group's MGID */
};

/*
 * Free lists of the ring pool's buddy allocator (pool.c): pool_free[k] heads
 * the free blocks of 2^k bytes, VFAB_POOL_MIN_ORDER <= k < VFAB_POOL_CLASSES.
 */
#define VFAB_POOL_CLASSES 40
#define VFAB_POOL_MIN_ORDER 6 /* 64 bytes: one CQE, the smallest block */

/*
 * Where a table's slots stand. Slots at or above top were never handed out
 * and their pages may not exist: nobody reads them (a read of a page of
 * the file that was never written would make tmpfs allocate it). A new
 * slot is the next free one from cursor upwards (next fit: a freed slot,
 * and with it its QPN or key, comes back only after the others) once the
 * table holds VFAB_SLOT_REUSE_MIN slots; below that, and when none is
 * free, top grows, its pages reserved in the file first (posix_fallocate),
 * so a full /dev/shm is -ENOMEM, never a SIGBUS. Written under r->lock;
 * any user can rewrite it: every reader bounds top by the table's size,
 * and a forged one costs memory or allocations, never a write elsewhere.
 * nfree is kept without the lock (frees do not take it).
 */
#define VFAB_SLOT_REUSE_MIN 4096
struct vfab_slot_table {
	_Atomic uint32_t top;
	_Atomic uint32_t nfree; /* free slots below top */
	uint32_t cursor;	/* where the next search for a free slot starts */
	uint32_t reserved;	/* slots whose pages are reserved in the file */
};

/*
 * Shards: what the processes of one user write. Every user of the fabric
 * (by effective uid) has a shard of its own, in a file only that user (and
 * root) may write: the fabric's owner (vfabd's user, root's processes) has
 * shard 0, in the region file itself; any other user a shard that vfabd
 * makes at its first HELLO, /dev/shm/vfab-<fabric>.users/u<uid> (mode
 * 0600, that user's). Every process maps the region as one address range
 * (shard.c): the topology from the region file (read-only unless it may
 * write it), each shard it may write from that shard's file, and nothing
 * (zero pages, read-only) where a shard is another user's. So an object's
 * slot is found by its index in one table as before, and a slot in a shard
 * this process cannot write reads as free: it answers nothing, as the
 * kernel refuses a copy between users.
 *
 * The slots of each table are split among the shards: shard 0 has the
 * lower half, shard s >= 1 a 32nd of the table above it (vfab_shard_lo).
 * A slot's index says whose it is, so a QPN or a key names its shard and
 * vfabd seals a slot only in its caller's shard.
 */
#define VFAB_SHARDS 17
#define VFAB_SHARD_NONE 0xffffffffu
#define VFAB_SLOT_END 0xffffffffu /* the end of a scan (vfab_slot_next) */

struct vfab_shard {
	pthread_mutex_t lock;	     /* slot allocation, pool */
	pthread_mutex_t atomic_lock; /* RDMA atomics into this shard's MRs: atomic w.r.t. the HCA */
	uint32_t gen_counter;
	uint32_t pad;
	struct vfab_slot_table tab[VFAB_OBJ_KINDS]; /* top counts from vfab_shard_lo */
	uint64_t pool_free[VFAB_POOL_CLASSES]; /* region offset of a free block of 2^k; 0 none */
	/* Objects of each kind this user's contexts hold per device (vfab_dev_limit bounds them).
	 */
	_Atomic uint32_t used[VFAB_MAX_HCAS][VFAB_OBJ_KINDS];
	/* Datagrams a capture's socket could not take (struct vfab_capture). */
	_Atomic uint64_t cap_drops[VFAB_CAPTURES];
	/* Attachments; those at or above mcast_top are all free (a scan's bound). */
	_Atomic uint32_t mcast_top;
	struct vfab_mcast_slot mcast[VFAB_MAX_MCAST_ATTACH];
	/* What this user's requesters counted on each port and link (vfabd sums them). */
	struct vfab_port_counters cnt[VFAB_MAX_HCAS][VFAB_MAX_PORTS];
	_Alignas(64) struct vfab_link_clock clk[VFAB_MAX_LINKS];
} __attribute__((aligned(4096)));

/*
 * What this process alone knows of its mapping: a private page of the
 * address range (shard.c), never in a file.
 */
struct vfab_region_local {
	uint32_t own;	 /* the shard this process writes its objects into; VFAB_SHARDS: none yet */
	uint32_t mapped; /* bit s: shard s is mapped from its file */
	uint32_t refused;	   /* bit s: shard s is another user's (not tried again) */
	uint32_t gen[VFAB_SHARDS]; /* shard_gen[s] of the file mapped at shard s */
} __attribute__((aligned(4096)));

struct vfab_region {
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size; /* sizeof(struct vfab_region) */
	uint64_t total_size;
	char fabric[VFAB_NAME_MAX];
	char rundir[256];	/* /run/vfab/<fabric> */
	_Atomic uint32_t ready; /* set by vfabd once the topology is filled */

	uint32_t nnodes, nhcas, nlinks, nleaves;
	struct vfab_spine spine;
	struct vfab_node nodes[VFAB_MAX_NODES];
	struct vfab_hca hcas[VFAB_MAX_HCAS];
	struct vfab_link links[VFAB_MAX_LINKS];
	struct vfab_leaf leaves[VFAB_MAX_LEAVES];

	/*
	 * Informational (tools, tests): each process takes the pools' bounds
	 * from its own mapping (VFAB_POOL_OFF, the file's size).
	 */
	uint64_t pool_off; /* start of shard 0's ring pool, from the region start (VFAB_POOL_OFF) */
	uint64_t pool_size; /* bytes of each shard's pool, fixed at creation (vfab_pool_bytes) */
	/*
	 * The shards vfabd made: shard_uid[s] is valid once shard_on[s] is 1;
	 * shard_gen[s] counts the files shard s had (vfabd drops an unused one,
	 * vfab_shard_drop, and may give s to another user later).
	 */
	uint32_t shard_uid[VFAB_SHARDS];
	_Atomic uint32_t shard_on[VFAB_SHARDS];
	_Atomic uint32_t shard_gen[VFAB_SHARDS];
	/*
	 * Bumped (release) after any link's rate_bps, latency_ns or loss_ppm
	 * changes: requesters cache per destination whether its path is shaped
	 * and read the links again only when this moves. Own cache line: read
	 * on every post, written only by vfabd.
	 */
	_Alignas(64) _Atomic uint32_t link_gen;
	/*
	 * Captures running (vfab capture): requesters look at captures[]
	 * only when this is not 0. Beside link_gen: no line of its own to miss.
	 */
	_Atomic uint32_t captures_on;
	struct vfab_capture captures[VFAB_CAPTURES];

	/* Everything above is vfabd's (the topology); below, the shards' and this process's. */
	struct vfab_region_local local;
	struct vfab_shard shard[VFAB_SHARDS + 1]; /* the last: a scratch shard, this process's */

	/*
	 * The object tables, split among the shards (vfab_shard_lo): a
	 * shard's slots are reserved page by page as they are first handed out.
	 */
	_Alignas(4096) struct vfab_pd_slot pds[VFAB_MAX_PDS];
	_Alignas(4096) struct vfab_mr_slot mrs[VFAB_MAX_MRS];
	_Alignas(4096) struct vfab_cq_slot cqs[VFAB_MAX_CQS];
	_Alignas(4096) struct vfab_srq_slot srqs[VFAB_MAX_SRQS];
	_Alignas(4096) struct vfab_qp_slot qps[VFAB_MAX_QPS];
};

/* The topology: vfabd's, the part of the region file every process maps first. */
#define VFAB_REGION_TOPO_BYTES offsetof(struct vfab_region, local)

/* Where shard 0's ring pool starts in every region: after the tables, 2 MiB aligned. */
#define VFAB_POOL_OFF ((sizeof(struct vfab_region) + (1ull << 21) - 1) & ~((1ull << 21) - 1))

/* Where each object table starts in the region, and its slots' size. */
static inline size_t vfab_table_off(enum vfab_obj kind)
{
	static const size_t off[VFAB_OBJ_KINDS] = {
	    offsetof(struct vfab_region, pds), offsetof(struct vfab_region, mrs),
	    offsetof(struct vfab_region, cqs), offsetof(struct vfab_region, srqs),
	    offsetof(struct vfab_region, qps)};
	return off[kind];
}

static inline size_t vfab_table_stride(enum vfab_obj kind)
{
	static const size_t stride[VFAB_OBJ_KINDS] = {
	    sizeof(struct vfab_pd_slot), sizeof(struct vfab_mr_slot), sizeof(struct vfab_cq_slot),
	    sizeof(struct vfab_srq_slot), sizeof(struct vfab_qp_slot)};
	return stride[kind];
}

static inline uint32_t vfab_table_size(enum vfab_obj kind)
{
	static const uint32_t size[VFAB_OBJ_KINDS] = {VFAB_MAX_PDS, VFAB_MAX_MRS, VFAB_MAX_CQS,
						      VFAB_MAX_SRQS, VFAB_MAX_QPS};
	return size[kind];
}

/* The first slot of shard s in a table (s == VFAB_SHARDS: the table's end). */
static inline uint32_t vfab_shard_lo(enum vfab_obj kind, uint32_t s)
{
	uint32_t n = vfab_table_size(kind);

	return s == 0 ? 0 : n / 2 + (s - 1) * (n / 32);
}

static inline uint32_t vfab_shard_of(enum vfab_obj kind, uint32_t slot)
{
	uint32_t n = vfab_table_size(kind);

	return slot < n / 2 ? 0 : 1 + (slot - n / 2) / (n / 32);
}

/*
 * The shard of the slot that holds address p (a slot, or a ring header in
 * one): VFAB_SHARDS when p is in no table.
 */
static inline uint32_t vfab_shard_of_ptr(const struct vfab_region *r, const void *p)
{
	size_t at = (size_t)((const char *)p - (const char *)r);

	/* Comparisons only for shard 0's half (the data path's common case): no division. */
	for (int k = 0; k < VFAB_OBJ_KINDS; k++) {
		size_t off = vfab_table_off((enum vfab_obj)k),
		       stride = vfab_table_stride((enum vfab_obj)k),
		       n = vfab_table_size((enum vfab_obj)k), half = n / 2 * stride;

		if (at < off || at - off >= n * stride)
			continue;
		return at - off < half ? 0 : 1 + (uint32_t)((at - off - half) / (n / 32 * stride));
	}
	return VFAB_SHARDS;
}

/* The shard this process writes into (the scratch shard before it has one). */
static inline struct vfab_shard *vfab_own(struct vfab_region *r)
{
	uint32_t s = r->local.own;

	return &r->shard[s < VFAB_SHARDS ? s : VFAB_SHARDS];
}

/* Bytes of each shard's ring pool in a mapping of map_bytes (this process's own). */
static inline uint64_t vfab_pool_shard_bytes(uint64_t map_bytes)
{
	return map_bytes > VFAB_POOL_OFF ? (map_bytes - VFAB_POOL_OFF) / VFAB_SHARDS : 0;
}

/*
 * What one device gives of each kind (ibv_query_device's max_qp, max_mr,
 * ...): fabric.limits as vfabd published it into the HCA, else a
 * ConnectX-6's. The same on 2 nodes or 64: an HCA is not a share of the
 * fabric's tables.
 */
static inline uint32_t vfab_dev_limit(const struct vfab_region *r, uint32_t hca, enum vfab_obj kind)
{
	static const uint32_t cx[VFAB_OBJ_KINDS] = {VFAB_CX_MAX_PD, VFAB_CX_MAX_MR, VFAB_CX_MAX_CQ,
						    VFAB_CX_MAX_SRQ, VFAB_CX_MAX_QP};
	uint32_t l = hca < VFAB_MAX_HCAS ? r->hcas[hca].limit[kind] : 0;

	return l ? l : cx[kind];
}

/*
 * The transport of a QP type: XRC's initiator and target QPs are reliable
 * connections (an XRC_SEND QP requests as an RC QP does, an XRC_RECV QP
 * answers as one), every other type is its own. enum ibv_qp_type values.
 */
#define VFAB_QPT_RC 2
#define VFAB_QPT_XRC_SEND 9
#define VFAB_QPT_XRC_RECV 10
#define VFAB_QPT_RAW_PACKET 8 /* vfabd seals an RSS QP with no CQ (daemon/vfabd_seal.c) */
static inline uint32_t vfab_qp_transport(uint32_t qp_type)
{
	return qp_type == VFAB_QPT_XRC_SEND || qp_type == VFAB_QPT_XRC_RECV ? VFAB_QPT_RC : qp_type;
}

/* The slot a QPN names (its low VFAB_QPN_SLOT_BITS bits). */
static inline uint32_t vfab_qpn_slot(uint32_t qpn)
{
	return qpn & (VFAB_MAX_QPS - 1);
}

/*
 * The per-shard tops of one table, wherever they are kept (each shard's
 * slot table here, vfabd's reserved records in fabric/ktab.h): shard s's
 * top is at `at` plus s * stride bytes. A top says how far a shard's slots
 * exist; readers bound it by that shard's slots, whoever wrote it.
 */
struct vfab_tops {
	const _Atomic uint32_t *at;
	size_t stride;
};

/* One past shard s's last slot: within [vfab_shard_lo(s), vfab_shard_lo(s + 1)]. */
static inline uint32_t vfab_tops_get(struct vfab_tops t, enum vfab_obj kind, uint32_t s)
{
	uint32_t lo = vfab_shard_lo(kind, s), hi = vfab_shard_lo(kind, s + 1);
	uint32_t top = atomic_load_explicit(
	    (const _Atomic uint32_t *)((const char *)t.at + s * t.stride), memory_order_acquire);

	return top < lo ? lo : top > hi ? hi : top;
}

/* Whether slot i lies below its shard's top. */
static inline bool vfab_tops_live(struct vfab_tops t, enum vfab_obj kind, uint32_t i)
{
	return i < vfab_table_size(kind) && i < vfab_tops_get(t, kind, vfab_shard_of(kind, i));
}

/* A scan: the first slot at or after i below its shard's top, or VFAB_SLOT_END. */
static inline uint32_t vfab_tops_next(struct vfab_tops t, enum vfab_obj kind, uint32_t i)
{
	for (uint32_t s = i < vfab_table_size(kind) ? vfab_shard_of(kind, i) : VFAB_SHARDS;
	     s < VFAB_SHARDS; s++) {
		uint32_t lo = vfab_shard_lo(kind, s);

		if (i < lo)
			i = lo;
		if (i < vfab_tops_get(t, kind, s))
			return i;
	}
	return VFAB_SLOT_END;
}

/* The tops of the shards' slot tables: how far each shard has handed out slots. */
static inline struct vfab_tops vfab_slot_tops(const struct vfab_region *r, enum vfab_obj kind)
{
	return (struct vfab_tops){&r->shard[0].tab[kind].top, sizeof(struct vfab_shard)};
}

static inline uint32_t vfab_shard_top(const struct vfab_region *r, enum vfab_obj kind, uint32_t s)
{
	return vfab_tops_get(vfab_slot_tops(r, kind), kind, s);
}

/* Whether slot i of a table was handed out (a lookup reads it only then). */
static inline bool vfab_slot_live(const struct vfab_region *r, enum vfab_obj kind, uint32_t i)
{
	return vfab_tops_live(vfab_slot_tops(r, kind), kind, i);
}

/*
 * A scan of a table: for (i = vfab_slot_next(r, k, 0); i != VFAB_SLOT_END;
 * i = vfab_slot_next(r, k, i + 1)).
 */
static inline uint32_t vfab_slot_next(const struct vfab_region *r, enum vfab_obj kind, uint32_t i)
{
	return vfab_tops_next(vfab_slot_tops(r, kind), kind, i);
}

/* What this process's requesters count on port (1-based) of device hca: its shard's counters. */
static inline struct vfab_port_counters *vfab_cnt(struct vfab_region *r, uint32_t hca,
						  uint32_t port)
{
	return &vfab_own(r)->cnt[hca][port - 1];
}

/*
 * A counter block summed over the shards mapped here (vfabd and root's
 * tools map every user's, vfab_region_map_shards): a port's counters or a
 * link's, word by word (both are 64-bit counters only).
 */
static inline void vfab_sum_words(const struct vfab_region *r, size_t off, size_t bytes,
				  uint64_t *out)
{
	for (size_t w = 0; w < bytes / 8; w++)
		out[w] = 0;
	for (uint32_t s = 0; s < VFAB_SHARDS; s++) {
		const uint64_t *in = (const uint64_t *)((const char *)&r->shard[s] + off);

		if (!(r->local.mapped & (1u << s)))
			continue;
		for (size_t w = 0; w < bytes / 8; w++)
			out[w] += __atomic_load_n(&in[w], __ATOMIC_RELAXED);
	}
}

static inline void vfab_port_counters_sum(const struct vfab_region *r, uint32_t hca, uint32_t port,
					  struct vfab_port_counters *out)
{
	vfab_sum_words(r, offsetof(struct vfab_shard, cnt[hca][port - 1]), sizeof(*out),
		       (uint64_t *)out);
}

/*
 * A link's counters summed, and busy_until_ns the latest of the users'
 * clocks (how far its bookings reach), over the shards mapped here.
 */
static inline void vfab_link_stats_sum(const struct vfab_region *r, uint32_t link,
				       struct vfab_link_clock *out)
{
	vfab_sum_words(r, offsetof(struct vfab_shard, clk[link]), sizeof(*out), (uint64_t *)out);
	out->busy_until_ns = 0;
	for (uint32_t s = 0; s < VFAB_SHARDS; s++) {
		uint64_t b;

		if (!(r->local.mapped & (1u << s)))
			continue;
		b = atomic_load_explicit(&r->shard[s].clk[link].busy_until_ns,
					 memory_order_relaxed);
		out->busy_until_ns = b > out->busy_until_ns ? b : out->busy_until_ns;
	}
}

/* ---- shard.c: create and map the region and its shards ---- */

/*
 * Create (vfabd only): sizes, inits locks, empty tables; a ring pool of
 * pool_bytes (vfab_pool_bytes). -errno on failure.
 */
int vfab_region_create_pool(const char *fabric, const char *rundir, uint64_t pool_bytes,
			    struct vfab_region **out);
/* The same with a pool of VFAB_POOL_BYTES (tests, tools). */
int vfab_region_create(const char *fabric, const char *rundir, struct vfab_region **out);
/*
 * Map an existing region (provider, tools); checks magic and version. The
 * fabric's owner and root write shard 0 from then on; another user has no
 * shard until vfab_region_join.
 */
int vfab_region_open(const char *path, struct vfab_region **out);
void vfab_region_close(struct vfab_region *r);
/* Removes the region file and its users' shards. */
int vfab_region_unlink(const char *fabric);
/*
 * vfabd, at a user's first HELLO: the shard of uid (a new file of that
 * user's, mode 0600, mapped into vfabd's range): its index, or -ENOSPC
 * when VFAB_SHARDS users have one.
 */
int vfab_shard_create(struct vfab_region *r, uint32_t uid, uint32_t gid);
/*
 * This process (a user other than the fabric's owner) takes the shard
 * vfabd made for its effective uid: 0, -ENOENT (none yet), -EPERM (the
 * file is not that user's alone).
 */
int vfab_region_join(struct vfab_region *r);
/*
 * Maps shard s from its file where this process may write it (root: every
 * user's): 0, -EACCES (another user's: it stays zero pages), -ENOENT.
 * Lookups call it for a slot of a shard not mapped yet.
 */
int vfab_region_map_shard(struct vfab_region *r, uint32_t s);
/* Every shard there is (tools and vfabd, which read all users' counters and objects). */
void vfab_region_map_shards(struct vfab_region *r);
/*
 * vfabd: removes shard s (its file, and its parts of vfabd's range), which
 * no process of its user uses (no context, no object: vfab_shard_empty).
 * A process that still maps it maps the next file of s afresh (shard_gen).
 */
void vfab_shard_drop(struct vfab_region *r, uint32_t s);
/* Whether shard s holds no object (vfabd, before vfab_shard_drop). */
bool vfab_shard_empty(const struct vfab_region *r, uint32_t s);

/* ---- shmlock.c: robust-mutex helpers: recover a lock whose holder died. ---- */
int vfab_lock(pthread_mutex_t *m);
void vfab_unlock(pthread_mutex_t *m);
int vfab_mutex_init_shared(pthread_mutex_t *m);

/*
 * ---- region.c: object slots ----
 * Allocation, in this process's shard: returns slot index >= 0 or -errno
 * (-ENOMEM when full, or when this process has no shard).
 */
int vfab_pd_alloc(struct vfab_region *r, const struct vfab_owner *o, uint32_t hca);
int vfab_mr_alloc(struct vfab_region *r, const struct vfab_owner *o);
int vfab_cq_alloc(struct vfab_region *r, const struct vfab_owner *o, uint32_t cap);
/*
 * A CQ's ring to `cap` entries (rounded up to a power of two), the waiting
 * entries moved along: 0, -EINVAL when more entries wait than fit, -ENOMEM.
 * The caller holds off its own consumers; producers take the slot's lock.
 */
int vfab_cq_resize(struct vfab_region *r, int slot, uint32_t cap);
/* An SRQ with a ring of cap WQEs; tm_tags > 0: a TM SRQ with a tag table of that many. */
int vfab_srq_alloc(struct vfab_region *r, const struct vfab_owner *o, uint32_t cap,
		   uint32_t max_sge, uint32_t tm_tags);
int vfab_qp_alloc(struct vfab_region *r, const struct vfab_owner *o, uint32_t rq_cap,
		  uint32_t rq_max_sge);
void vfab_pd_free(struct vfab_region *r, int slot);
/*
 * Revokes a registration (its key then matches no check) and waits for the
 * copies that passed the check before; the slot stays taken, to be
 * published again (ibv_rereg_mr) or freed.
 */
void vfab_mr_revoke(struct vfab_region *r, int slot);
void vfab_mr_free(struct vfab_region *r, int slot);
void vfab_cq_free(struct vfab_region *r, int slot);
void vfab_srq_free(struct vfab_region *r, int slot);
void vfab_qp_free(struct vfab_region *r, int slot);

/* Handle -> slot lookups; NULL when stale or unknown. */
struct vfab_mr_slot *vfab_mr_lookup(struct vfab_region *r, uint32_t key);
struct vfab_qp_slot *vfab_qp_lookup(struct vfab_region *r, uint32_t hca, uint32_t qpn);

/*
 * ---- pool.c: the ring pool, a buddy allocator ----
 *
 * Blocks of 2^k bytes (VFAB_POOL_MIN_ORDER <= k), aligned to their size from
 * the pool's start; a request of n bytes takes a block of the smallest such
 * 2^k >= n, split off the smallest free block that holds it. Invariants:
 *  - a freed block merges with its buddy while that is free and of its
 *    order, so free memory never stays cut for good: once every block is
 *    freed, pool_free[] again holds exactly the blocks vfab_pool_init made
 *    (the pool's size as a sum of aligned powers of two) and any request
 *    up to the largest of them succeeds;
 *  - exhaustion is a clean -ENOMEM, never a partial block;
 *  - no process follows an offset of the region (list link, ring offset)
 *    outside the pool as its own mapping bounds it (region_map.h): a forged
 *    pool loses memory, it never makes anyone write elsewhere;
 *  - free blocks of VFAB_POOL_GIVE_BACK bytes or more hold no memory but
 *    their first page (MADV_REMOVE).
 * Offsets are relative to the region start; each shard has a pool of its
 * own (vfab_pool_shard_bytes), taken under that shard's lock.
 */
/*
 * The ring pool's size in bytes for nhcas HCAs, or override_mib MiB when not
 * 0 (the config's fabric.ring_pool_mib); within VFAB_POOL_BYTES_MIN (without
 * an override) and VFAB_POOL_BYTES_MAX.
 */
uint64_t vfab_pool_bytes(uint32_t nhcas, uint32_t override_mib);
/*
 * The first layout of shard s's empty pool (its creator's, reserving in
 * the shard's file fd); -ENOSPC: /dev/shm full.
 */
int vfab_pool_init(struct vfab_region *r, uint32_t s, int fd);
/*
 * A zeroed block of at least `bytes` of this process's shard's pool, its
 * pages reserved in the shard's file (a full /dev/shm is -ENOMEM here,
 * never a SIGBUS later): its region offset, or -ENOMEM.
 */
int64_t vfab_pool_alloc(struct vfab_region *r, uint64_t bytes);
/*
 * Whether [off, off + bytes) lies in shard s's ring pool in a mapping of
 * map_bytes (this process's own, region_map.h; never the region's word):
 * how vfabd checks a ring before it seals it, and how a requester checks
 * one before it writes there (s: the shard of the slot that names it).
 */
static inline bool vfab_pool_holds(uint64_t map_bytes, uint32_t s, uint64_t off, uint64_t bytes)
{
	uint64_t per = vfab_pool_shard_bytes(map_bytes), start = VFAB_POOL_OFF + (uint64_t)s * per;

	return s < VFAB_SHARDS && off >= start && off - start <= per &&
	       bytes <= per - (off - start);
}
/*
 * Gives back a block vfab_pool_alloc returned for `bytes`, to the pool of
 * the shard it lies in; anything else (a block of a shard not mapped here)
 * is ignored.
 */
void vfab_pool_free(struct vfab_region *r, uint64_t off, uint64_t bytes);
/* The same only when the block lies in shard s's pool (a slot's ring: its own shard's). */
void vfab_pool_free_shard(struct vfab_region *r, uint32_t s, uint64_t off, uint64_t bytes);
/* Bytes on this process's shard's free lists (tests, diagnostics). */
uint64_t vfab_pool_free_bytes(struct vfab_region *r);
static inline void *vfab_at(struct vfab_region *r, uint64_t off)
{
	return (char *)r + off;
}

/*
 * A requester pins an MR before its remote check (an R_Key's, or a receive
 * buffer's lkey for a SEND or UD datagram) and unpins it after the copy; vfab_mr_free revokes the
 * key and then waits until no copy is pinned (at most VFAB_MR_DRAIN_MS, so a requester that died
 * mid-copy cannot hold a deregistration forever): as on an HCA, nothing lands in a region once
 * ibv_dereg_mr returned. Both sides are sequentially consistent: either the
 * check sees the revocation or the free sees the pin.
 */
#define VFAB_MR_DRAIN_MS 1000
static inline void vfab_mr_pin(struct vfab_mr_slot *s)
{
	atomic_fetch_add(&s->inflight, 1);
}
static inline void vfab_mr_unpin(struct vfab_mr_slot *s)
{
	if (s)
		atomic_fetch_sub(&s->inflight, 1);
}

/* Free every object owned by pid (vfabd, when a process dies). Returns count. */
int vfab_region_reap_pid(struct vfab_region *r, int32_t pid);
/*
 * Only the objects of the process that held pid since start_ticks (0: any):
 * a pid reused by a newer process keeps that one's objects.
 */
int vfab_region_reap_owner(struct vfab_region *r, int32_t pid, uint64_t start_ticks);

/* Find the port that owns a GID (with the given type); -ENOENT if none. */
int vfab_gid_find(struct vfab_region *r, const uint8_t gid[16], uint8_t type, uint32_t *hca,
		  uint32_t *port);

#endif /* VFAB_REGION_H */
