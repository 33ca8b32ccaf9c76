/* SPDX-License-Identifier: MIT */
/*
 * Raw Ethernet frames as a ConnectX's NIC handles them for a raw packet QP:
 * the flow steering rules of ibv_create_flow (the specs compiled into one
 * rule, matched against a frame's headers), and the checksums the HCA fills
 * in on IBV_SEND_IP_CSUM and vouches for with IBV_WC_IP_CSUM_OK. Pure rules
 * on bytes: libibverbs' structures only, no calls; unit-tested (test_flow).
 */
#ifndef VFAB_FLOW_H
#define VFAB_FLOW_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The specs one rule may hold (a ConnectX takes L2, L3, L4 and a tunnel). */
#define VFAB_FLOW_MAX_SPECS 8
/* The largest filter (IPv6) of a spec, in bytes. */
#define VFAB_FLOW_FILTER_MAX 40

/* The headers of one frame, parsed once; offsets into the frame, 0 when absent. */
struct vfab_frame {
	const uint8_t *buf;
	size_t len;
	uint16_t ether_type; /* after a VLAN tag, network order */
	uint16_t vlan_tci;   /* network order; 0 when untagged */
	size_t l3;	     /* IPv4 or IPv6 header */
	uint8_t ip_version;  /* 4, 6, or 0 */
	uint8_t proto;	     /* IPv4 protocol or IPv6 next header */
	size_t l4;	     /* TCP or UDP header */
	uint32_t vni;	     /* VXLAN (UDP port 4789): its VNI; has_vni says whether */
	bool has_vni;
};

/* One spec of a rule: its filter's value and mask, compared byte for byte. */
struct vfab_flow_spec {
	uint32_t type; /* enum ibv_flow_spec_type */
	uint8_t len;   /* filter bytes */
	uint8_t val[VFAB_FLOW_FILTER_MAX], mask[VFAB_FLOW_FILTER_MAX];
};

struct vfab_flow_rule {
	uint32_t attr_type; /* enum ibv_flow_attr_type */
	uint16_t priority;
	bool drop; /* IBV_FLOW_SPEC_ACTION_DROP: matched frames go nowhere */
	uint32_t nspecs;
	struct vfab_flow_spec specs[VFAB_FLOW_MAX_SPECS];
};

/*
 * ibv_create_flow's attributes (the specs follow attr in memory) into a
 * rule: 0, EINVAL for a malformed spec or attribute, EOPNOTSUPP for what
 * vfab does not steer (inner headers, GRE, MPLS, ESP, tags, counters,
 * egress rules).
 */
int vfab_flow_compile(const struct ibv_flow_attr *attr, struct vfab_flow_rule *rule);

/* The frame's headers; false for a frame shorter than an Ethernet header. */
bool vfab_frame_parse(const uint8_t *buf, size_t len, struct vfab_frame *f);

/*
 * Whether rule takes the frame. own_mac: the port's address, which the
 * default rules use (ALL_DEFAULT: unicast to it; MC_DEFAULT: multicast;
 * SNIFFER: everything).
 */
bool vfab_flow_match(const struct vfab_flow_rule *rule, const struct vfab_frame *f,
		     const uint8_t own_mac[6]);

/* IBV_SEND_IP_CSUM: the IPv4 header's and the TCP/UDP checksums, in place. */
void vfab_frame_fill_csum(uint8_t *buf, size_t len);

/*
 * IBV_WC_IP_CSUM_OK as libmlx5 sets it: an IPv4 frame whose header
 * checksum and TCP or UDP checksum are both right.
 */
bool vfab_frame_csum_ok(const struct vfab_frame *f);

/* RSS as a ConnectX offers it: Toeplitz over IPv4 or IPv6 addresses and TCP or UDP ports. */
#define VFAB_RSS_KEY_BYTES 40
#define VFAB_RSS_FIELDS                                                                            \
	(IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_IPV6 |                      \
	 IBV_RX_HASH_DST_IPV6 | IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP |              \
	 IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP)

/*
 * An RSS QP's hash configuration as mlx5 takes it: 0, EOPNOTSUPP for
 * another function or fields beyond VFAB_RSS_FIELDS, EINVAL for a key that
 * is not 40 bytes or fields of both IP versions or both L4 protocols.
 */
int vfab_rss_check(const struct ibv_rx_hash_conf *conf);

/*
 * The Toeplitz hash of the frame's selected fields (source address, then
 * destination, then the ports, in network order); 0 for a frame that lacks
 * the IP version or L4 protocol the fields name.
 */
uint32_t vfab_rss_hash(const uint8_t *key, size_t key_len, uint64_t fields,
		       const struct vfab_frame *f);

#endif /* VFAB_FLOW_H */
