/* SPDX-License-Identifier: MIT */
/* Frames of the delay line (vfabd_frame.h). */
#include "vfabd_frame.h"

#include <linux/virtio_net.h>
#include <string.h>
#include <sys/socket.h>

#include "netns/ip_shape.h"

#define ETH_HLEN_ 14u
#define TAG_LEN 4u

static unsigned be16_at(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

bool vfabd_frame_source(const uint8_t *f, size_t len, int *family, const uint8_t **addr)
{
	size_t off = ETH_HLEN_;
	unsigned type;

	if (len < ETH_HLEN_)
		return false;
	type = be16_at(f + 12);
	if (type == 0x8100 && len >= ETH_HLEN_ + TAG_LEN) {
		type = be16_at(f + 16);
		off += TAG_LEN;
	}
	if (type == 0x0800 && len >= off + 20) {
		*family = AF_INET, *addr = f + off + 12;
		return true;
	}
	if (type == 0x86dd && len >= off + 40) {
		*family = AF_INET6, *addr = f + off + 8;
		return true;
	}
	if (type == 0x0806 && len >= off + 18) { /* Ethernet/IPv4 ARP: the sender's address */
		*family = AF_INET, *addr = f + off + 14;
		return true;
	}
	return false;
}

uint64_t vfabd_frame_unstamp(uint8_t **buf, size_t *len, uint64_t now_ns)
{
	const unsigned shift = VFAB_IP_DELAY_STAMP_SHIFT, eth = VFABD_FRAME_VNET_HDR;
	struct virtio_net_hdr h;
	uint8_t *b = *buf;
	uint64_t age;
	unsigned tci;

	if (*len < eth + ETH_HLEN_ + TAG_LEN || be16_at(b + eth + 12) != VFAB_IP_DELAY_STAMP_PROTO)
		return now_ns;
	tci = be16_at(b + eth + 14);
	memmove(b + TAG_LEN, b, eth + 12); /* the header and the MACs over the tag */
	b += TAG_LEN;
	memcpy(&h, b, sizeof(h));
	if (h.flags &
	    VIRTIO_NET_HDR_F_NEEDS_CSUM) /* counted from the frame's start, tag included */
		h.csum_start = (uint16_t)(h.csum_start - TAG_LEN);
	memcpy(b, &h, sizeof(h));
	*buf = b;
	*len -= TAG_LEN;
	age = ((now_ns >> shift) - tci) & 0xffff;
	return now_ns - (age << shift);
}

uint64_t vfabd_frame_path_ns(const struct vfabd_delay_lat *src, const struct vfabd_delay_lat *dst)
{
	if (!src)
		return dst->down_ns;
	return (uint64_t)src->up_ns + dst->down_ns +
	       (src->leaf != dst->leaf ? (uint64_t)src->leaf_up_ns + dst->leaf_down_ns : 0);
}
