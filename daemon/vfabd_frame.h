/* SPDX-License-Identifier: MIT */
/*
 * What the delay line (vfabd_delay.h) reads from a frame, and the latency
 * it gives it: pure functions, unit-tested (tests/unit/test_vfabd_frame.c).
 * A frame as the tap gives it starts with a virtio-net header.
 */
#ifndef VFAB_DAEMON_VFABD_FRAME_H
#define VFAB_DAEMON_VFABD_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* struct virtio_net_hdr: the tap's header before every frame (its default size). */
#define VFABD_FRAME_VNET_HDR 10u

/* A wire's one-way latencies, ns: its links' and those of its leaf to and from the spine. */
struct vfabd_delay_lat {
	uint32_t up_ns, down_ns;	   /* node -> leaf, leaf -> node */
	uint32_t leaf;			   /* the leaf it joins */
	uint32_t leaf_up_ns, leaf_down_ns; /* leaf -> spine, spine -> leaf */
};

/*
 * The source address of an Ethernet frame f (no virtio-net header): IPv4,
 * IPv6 or an IPv4 ARP sender, under at most one 802.1Q tag. *family is
 * AF_INET or AF_INET6, *addr points into f. False: none.
 */
bool vfabd_frame_source(const uint8_t *f, size_t len, int *family, const uint8_t **addr);

/*
 * Takes the delay line's stamp (netns/ip_shape.h VFAB_IP_DELAY_STAMP_*) off
 * a tap frame (*buf: header and frame, *len bytes) read at now_ns: the frame
 * then starts 4 bytes further and is 4 bytes shorter, its header's checksum
 * start moved with it. Returns when the frame's latency began: now_ns when
 * it carries no stamp.
 */
uint64_t vfabd_frame_unstamp(uint8_t **buf, size_t *len, uint64_t now_ns);

/* The one-way latency from a sender's wire (NULL: from outside the fabric's wires) to dst's. */
uint64_t vfabd_frame_path_ns(const struct vfabd_delay_lat *src, const struct vfabd_delay_lat *dst);

#endif /* VFAB_DAEMON_VFABD_FRAME_H */
