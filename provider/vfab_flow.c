/* SPDX-License-Identifier: MIT */
/*
 * Flow steering rules and checksum offloads of raw Ethernet frames (see
 * vfab_flow.h). A spec's filter is compared with the same filter filled from
 * the frame, masked byte by byte: both are in network order, as the verbs
 * structures hold them.
 */
#include "provider/vfab_flow.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#define ETH_HDR 14
#define VLAN_HDR 4
#define IPV4_MIN_HDR 20
#define IPV6_HDR 40
#define TCP_MIN_HDR 20
#define UDP_HDR 8
#define VXLAN_HDR 8
#define VXLAN_PORT 4789
#define PROTO_TCP 6
#define PROTO_UDP 17

/* Where a spec of each type keeps its filter, and how many of its bytes count. */
struct spec_layout {
	uint32_t type;
	size_t size, val, mask, len;
};

#define LAYOUT(t, spec, filter, last)                                                              \
	{                                                                                          \
		t, sizeof(struct spec), offsetof(struct spec, val), offsetof(struct spec, mask),   \
		    offsetof(struct filter, last) + sizeof(((struct filter *)0)->last)             \
	}

static const struct spec_layout layouts[] = {
    LAYOUT(IBV_FLOW_SPEC_ETH, ibv_flow_spec_eth, ibv_flow_eth_filter, vlan_tag),
    LAYOUT(IBV_FLOW_SPEC_IPV4, ibv_flow_spec_ipv4, ibv_flow_ipv4_filter, dst_ip),
    LAYOUT(IBV_FLOW_SPEC_IPV4_EXT, ibv_flow_spec_ipv4_ext, ibv_flow_ipv4_ext_filter, flags),
    LAYOUT(IBV_FLOW_SPEC_IPV6, ibv_flow_spec_ipv6, ibv_flow_ipv6_filter, hop_limit),
    LAYOUT(IBV_FLOW_SPEC_TCP, ibv_flow_spec_tcp_udp, ibv_flow_tcp_udp_filter, src_port),
    LAYOUT(IBV_FLOW_SPEC_UDP, ibv_flow_spec_tcp_udp, ibv_flow_tcp_udp_filter, src_port),
    LAYOUT(IBV_FLOW_SPEC_VXLAN_TUNNEL, ibv_flow_spec_tunnel, ibv_flow_tunnel_filter, tunnel_id),
};

static const struct spec_layout *layout_of(uint32_t type)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].type == type)
			return &layouts[i];
	return NULL;
}

int vfab_flow_compile(const struct ibv_flow_attr *attr, struct vfab_flow_rule *rule)
{
	const uint8_t *p = (const uint8_t *)(attr + 1);

	memset(rule, 0, sizeof(*rule));
	if (attr->flags & IBV_FLOW_ATTR_FLAGS_EGRESS)
		return EOPNOTSUPP;
	if (attr->comp_mask || (attr->flags & ~(uint32_t)IBV_FLOW_ATTR_FLAGS_DONT_TRAP) ||
	    attr->type > IBV_FLOW_ATTR_SNIFFER ||
	    (attr->type != IBV_FLOW_ATTR_NORMAL && attr->num_of_specs))
		return EINVAL;
	if (attr->num_of_specs > VFAB_FLOW_MAX_SPECS)
		return EOPNOTSUPP;
	rule->attr_type = attr->type;
	rule->priority = attr->priority;
	for (uint32_t i = 0; i < attr->num_of_specs; i++) {
		struct ibv_flow_spec_action_drop hdr;
		const struct spec_layout *l;

		/* Specs follow each other at their own sizes: no alignment to rely on. */
		memcpy(&hdr, p, sizeof(hdr));
		if (hdr.size < sizeof(hdr))
			return EINVAL;
		if (hdr.type == IBV_FLOW_SPEC_ACTION_DROP) {
			rule->drop = true;
			p += hdr.size;
			continue;
		}
		l = layout_of(hdr.type);
		if (!l)
			return EOPNOTSUPP; /* inner headers, GRE, MPLS, ESP, tags, counters */
		if (hdr.size < l->size)
			return EINVAL;
		struct vfab_flow_spec *s = &rule->specs[rule->nspecs++];

		s->type = hdr.type;
		s->len = (uint8_t)l->len;
		memcpy(s->val, p + l->val, l->len);
		memcpy(s->mask, p + l->mask, l->len);
		p += hdr.size;
	}
	return 0;
}

bool vfab_frame_parse(const uint8_t *b, size_t len, struct vfab_frame *f)
{
	size_t off = ETH_HDR, l4 = 0;
	uint16_t vlan_tpid = htons(0x8100), qinq_tpid = htons(0x88a8);

	memset(f, 0, sizeof(*f));
	f->buf = b;
	f->len = len;
	if (len < ETH_HDR)
		return false;
	memcpy(&f->ether_type, b + 12, 2);
	if ((f->ether_type == vlan_tpid || f->ether_type == qinq_tpid) &&
	    len >= ETH_HDR + VLAN_HDR) {
		memcpy(&f->vlan_tci, b + 14, 2);
		memcpy(&f->ether_type, b + 16, 2);
		off += VLAN_HDR;
	}
	if (f->ether_type == htons(0x0800) && len >= off + IPV4_MIN_HDR && b[off] >> 4 == 4) {
		size_t ihl = (size_t)(b[off] & 15) * 4;

		if (ihl < IPV4_MIN_HDR || len < off + ihl)
			return true;
		f->l3 = off;
		f->ip_version = 4;
		f->proto = b[off + 9];
		/* A fragment after the first has no L4 header; the first one does. */
		if (!((b[off + 6] & 0x1f) | b[off + 7]))
			l4 = off + ihl;
	} else if (f->ether_type == htons(0x86dd) && len >= off + IPV6_HDR && b[off] >> 4 == 6) {
		f->l3 = off;
		f->ip_version = 6;
		f->proto = b[off + 6];
		l4 = off + IPV6_HDR;
	}
	if (!l4)
		return true;
	if ((f->proto == PROTO_TCP && len >= l4 + TCP_MIN_HDR) ||
	    (f->proto == PROTO_UDP && len >= l4 + UDP_HDR))
		f->l4 = l4;
	if (f->l4 && f->proto == PROTO_UDP && b[l4 + 2] == VXLAN_PORT >> 8 &&
	    b[l4 + 3] == (VXLAN_PORT & 0xff) && len >= l4 + UDP_HDR + VXLAN_HDR &&
	    (b[l4 + UDP_HDR] & 0x08)) {
		const uint8_t *v = b + l4 + UDP_HDR;

		f->has_vni = true;
		f->vni = (uint32_t)v[4] << 16 | (uint32_t)v[5] << 8 | v[6];
	}
	return true;
}

/* The filter of a spec of this type, filled from the frame; false if it lacks the layer. */
static bool frame_filter(const struct vfab_frame *f, uint32_t type, uint8_t *out)
{
	const uint8_t *b = f->buf;

	switch (type) {
	case IBV_FLOW_SPEC_ETH: {
		struct ibv_flow_eth_filter e;

		memcpy(e.dst_mac, b, 6);
		memcpy(e.src_mac, b + 6, 6);
		e.ether_type = f->ether_type;
		e.vlan_tag = f->vlan_tci;
		memcpy(out, &e, sizeof(e));
		return true;
	}
	case IBV_FLOW_SPEC_IPV4:
	case IBV_FLOW_SPEC_IPV4_EXT: {
		struct ibv_flow_ipv4_ext_filter v;
		const uint8_t *ip = b + f->l3;

		if (f->ip_version != 4)
			return false;
		memcpy(&v.src_ip, ip + 12, 4);
		memcpy(&v.dst_ip, ip + 16, 4);
		v.proto = ip[9];
		v.tos = ip[1];
		v.ttl = ip[8];
		v.flags = ip[6] >> 5;
		/* ibv_flow_ipv4_filter is the first 8 bytes of the extended one. */
		memcpy(out, &v, sizeof(v));
		return true;
	}
	case IBV_FLOW_SPEC_IPV6: {
		struct ibv_flow_ipv6_filter v;
		const uint8_t *ip = b + f->l3;
		uint32_t vtf;

		if (f->ip_version != 6)
			return false;
		memcpy(&vtf, ip, 4);
		vtf = ntohl(vtf);
		memset(&v, 0, sizeof(v));
		memcpy(v.src_ip, ip + 8, 16);
		memcpy(v.dst_ip, ip + 24, 16);
		v.flow_label = htonl(vtf & 0xfffff);
		v.next_hdr = ip[6];
		v.traffic_class = (uint8_t)(vtf >> 20);
		v.hop_limit = ip[7];
		memcpy(out, &v, sizeof(v));
		return true;
	}
	case IBV_FLOW_SPEC_TCP:
	case IBV_FLOW_SPEC_UDP: {
		struct ibv_flow_tcp_udp_filter v;

		if (!f->l4 || f->proto != (type == IBV_FLOW_SPEC_TCP ? PROTO_TCP : PROTO_UDP))
			return false;
		memcpy(&v.src_port, b + f->l4, 2);
		memcpy(&v.dst_port, b + f->l4 + 2, 2);
		memcpy(out, &v, sizeof(v));
		return true;
	}
	case IBV_FLOW_SPEC_VXLAN_TUNNEL: {
		uint32_t id = htonl(f->vni);

		if (!f->has_vni)
			return false;
		memcpy(out, &id, sizeof(id));
		return true;
	}
	default:
		return false;
	}
}

static bool spec_match(const struct vfab_flow_spec *s, const struct vfab_frame *f)
{
	uint8_t got[VFAB_FLOW_FILTER_MAX];

	if (!frame_filter(f, s->type, got))
		return false;
	for (uint32_t i = 0; i < s->len; i++)
		if ((got[i] ^ s->val[i]) & s->mask[i])
			return false;
	return true;
}

bool vfab_flow_match(const struct vfab_flow_rule *rule, const struct vfab_frame *f,
		     const uint8_t own_mac[6])
{
	bool multicast = f->buf[0] & 1;

	switch (rule->attr_type) {
	case IBV_FLOW_ATTR_SNIFFER:
		return true;
	case IBV_FLOW_ATTR_MC_DEFAULT:
		return multicast;
	case IBV_FLOW_ATTR_ALL_DEFAULT:
		return multicast || !memcmp(f->buf, own_mac, 6);
	default:
		break;
	}
	for (uint32_t i = 0; i < rule->nspecs; i++)
		if (!spec_match(&rule->specs[i], f))
			return false;
	return true;
}

int vfab_rss_check(const struct ibv_rx_hash_conf *c)
{
	const uint64_t v4 = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4,
		       v6 = IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6,
		       tcp = IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP,
		       udp = IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;

	if (c->rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ ||
	    (c->rx_hash_fields_mask & ~(uint64_t)VFAB_RSS_FIELDS))
		return EOPNOTSUPP;
	if (c->rx_hash_key_len != VFAB_RSS_KEY_BYTES || !c->rx_hash_key ||
	    ((c->rx_hash_fields_mask & v4) && (c->rx_hash_fields_mask & v6)) ||
	    ((c->rx_hash_fields_mask & tcp) && (c->rx_hash_fields_mask & udp)))
		return EINVAL;
	return 0;
}

/* The input's fields in the order RSS hashes them; their length. */
static size_t rss_input(uint64_t fields, const struct vfab_frame *f, uint8_t in[36])
{
	const uint8_t *ip = f->buf + f->l3, *l4 = f->buf + f->l4;
	bool v4 = fields & (IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4),
	     v6 = fields & (IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6);
	uint64_t src_port = fields & (IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_SRC_PORT_UDP),
		 dst_port = fields & (IBV_RX_HASH_DST_PORT_TCP | IBV_RX_HASH_DST_PORT_UDP);
	uint8_t proto = (fields & (IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP))
			    ? PROTO_TCP
			    : PROTO_UDP;
	size_t n = 0, alen = v4 ? 4 : 16;

	if ((v4 && f->ip_version != 4) || (v6 && f->ip_version != 6) ||
	    ((src_port || dst_port) && (!f->l4 || f->proto != proto)))
		return 0;
	if (fields & (IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_SRC_IPV6)) {
		memcpy(in + n, ip + (v4 ? 12 : 8), alen);
		n += alen;
	}
	if (fields & (IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_DST_IPV6)) {
		memcpy(in + n, ip + (v4 ? 16 : 24), alen);
		n += alen;
	}
	if (src_port) {
		memcpy(in + n, l4, 2);
		n += 2;
	}
	if (dst_port) {
		memcpy(in + n, l4 + 2, 2);
		n += 2;
	}
	return n;
}

uint32_t vfab_rss_hash(const uint8_t *key, size_t key_len, uint64_t fields,
		       const struct vfab_frame *f)
{
	uint8_t in[36];
	size_t n = rss_input(fields, f, in);
	uint32_t hash = 0, window;
	size_t next = 32; /* the key bit that enters the window next */

	if (!n || key_len < 4)
		return 0;
	window = (uint32_t)key[0] << 24 | (uint32_t)key[1] << 16 | (uint32_t)key[2] << 8 | key[3];
	for (size_t i = 0; i < n; i++) {
		for (int b = 7; b >= 0; b--, next++) {
			if (in[i] >> b & 1)
				hash ^= window;
			window <<= 1;
			if (next / 8 < key_len)
				window |= (uint32_t)(key[next / 8] >> (7 - next % 8) & 1);
		}
	}
	return hash;
}

/* The ones' complement sum of len bytes (big-endian words) added to sum. */
static uint32_t sum16(uint32_t sum, const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* The L4 segment's length and its pseudo-header's sum; false when the frame is short. */
static bool l4_pseudo(const struct vfab_frame *f, size_t *l4_len, uint32_t *sum)
{
	const uint8_t *ip = f->buf + f->l3;
	size_t end;

	if (f->ip_version == 4)
		end = f->l3 + ((size_t)ip[2] << 8 | ip[3]);
	else
		end = f->l4 + ((size_t)ip[4] << 8 | ip[5]);
	if (end > f->len || end < f->l4)
		return false;
	*l4_len = end - f->l4;
	*sum = f->ip_version == 4 ? sum16(0, ip + 12, 8) : sum16(0, ip + 8, 32);
	*sum += f->proto + (uint32_t)*l4_len;
	return true;
}

static size_t l4_csum_at(const struct vfab_frame *f)
{
	return f->l4 + (f->proto == PROTO_TCP ? 16 : 6);
}

void vfab_frame_fill_csum(uint8_t *b, size_t len)
{
	struct vfab_frame f;
	size_t l4_len, at;
	uint32_t sum;
	uint16_t c;

	if (!vfab_frame_parse(b, len, &f) || !f.l3)
		return;
	if (f.ip_version == 4) {
		size_t ihl = (size_t)(b[f.l3] & 15) * 4;

		b[f.l3 + 10] = b[f.l3 + 11] = 0;
		c = (uint16_t)~fold(sum16(0, b + f.l3, ihl));
		b[f.l3 + 10] = (uint8_t)(c >> 8);
		b[f.l3 + 11] = (uint8_t)c;
	}
	if (!f.l4 || !l4_pseudo(&f, &l4_len, &sum))
		return;
	at = l4_csum_at(&f);
	b[at] = b[at + 1] = 0;
	c = (uint16_t)~fold(sum16(sum, b + f.l4, l4_len));
	if (!c && f.proto == PROTO_UDP)
		c = 0xffff; /* 0 means "no checksum" in UDP */
	b[at] = (uint8_t)(c >> 8);
	b[at + 1] = (uint8_t)c;
}

bool vfab_frame_csum_ok(const struct vfab_frame *f)
{
	const uint8_t *b = f->buf;
	size_t l4_len, at;
	uint32_t sum;

	if (f->ip_version != 4 || !f->l4 ||
	    fold(sum16(0, b + f->l3, (size_t)(b[f->l3] & 15) * 4)) != 0xffff)
		return false;
	if (!l4_pseudo(f, &l4_len, &sum))
		return false;
	at = l4_csum_at(f);
	if (f->proto == PROTO_UDP && !b[at] && !b[at + 1])
		return true;
	return fold(sum16(sum, b + f->l4, l4_len)) == 0xffff;
}
