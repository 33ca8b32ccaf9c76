/* SPDX-License-Identifier: MIT */
/* The delay line's frames (daemon/vfabd_frame.h): sources, stamps, path latencies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <linux/virtio_net.h>

#include "daemon/vfabd_frame.h"
#include "netns/ip_shape.h"

#define HDR VFABD_FRAME_VNET_HDR

static const uint8_t dst_mac[6] = {0x02, 0, 0, 0, 0, 2}, src_mac[6] = {0x02, 0, 0, 0, 0, 1};

/* An Ethernet header of `type` at f, under a 802.1Q tag when vlan. */
static size_t eth(uint8_t *f, unsigned type, int vlan)
{
	size_t off = 12;

	memcpy(f, dst_mac, 6);
	memcpy(f + 6, src_mac, 6);
	if (vlan) {
		f[off++] = 0x81, f[off++] = 0x00, f[off++] = 0x00, f[off++] = 0x07;
	}
	f[off++] = (uint8_t)(type >> 8), f[off++] = (uint8_t)type;
	return off;
}

static void test_source_ipv4_ipv6_arp(void **state)
{
	uint8_t f[128] = {0};
	const uint8_t *a;
	int fam = 0;
	size_t off;

	(void)state;
	off = eth(f, 0x0800, 0);
	memcpy(f + off + 12, "\xc6\x12\x00\x01", 4); /* 198.18.0.1 */
	assert_true(vfabd_frame_source(f, off + 20, &fam, &a));
	assert_int_equal(fam, AF_INET);
	assert_memory_equal(a, "\xc6\x12\x00\x01", 4);
	assert_false(vfabd_frame_source(f, off + 19, &fam, &a)); /* a cut IPv4 header */

	off = eth(f, 0x86dd, 1);
	memset(f + off + 8, 0xfd, 16);
	assert_true(vfabd_frame_source(f, off + 40, &fam, &a));
	assert_int_equal(fam, AF_INET6);
	assert_ptr_equal(a, f + 18 + 8);

	off = eth(f, 0x0806, 0);
	memcpy(f + off + 14, "\xc6\x12\x01\x02", 4);
	assert_true(vfabd_frame_source(f, off + 28, &fam, &a));
	assert_int_equal(fam, AF_INET);
	assert_memory_equal(a, "\xc6\x12\x01\x02", 4);

	off = eth(f, 0x88cc, 0); /* LLDP: no address */
	assert_false(vfabd_frame_source(f, off + 40, &fam, &a));
	assert_false(vfabd_frame_source(f, 13, &fam, &a)); /* a runt */
}

/* A tap frame: virtio-net header, MACs, the stamp's tag with tci, IPv4. */
static size_t stamped(uint8_t *b, unsigned tci, uint16_t csum_start)
{
	struct virtio_net_hdr h = {
	    .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .csum_start = csum_start, .csum_offset = 16};
	uint8_t *f = b + HDR;

	memset(b, 0, 200);
	memcpy(b, &h, sizeof(h));
	memcpy(f, dst_mac, 6);
	memcpy(f + 6, src_mac, 6);
	f[12] = VFAB_IP_DELAY_STAMP_PROTO >> 8, f[13] = VFAB_IP_DELAY_STAMP_PROTO & 0xff;
	f[14] = (uint8_t)(tci >> 8), f[15] = (uint8_t)tci;
	f[16] = 0x08, f[17] = 0x00;
	f[18] = 0x45;
	return HDR + 18 + 60;
}

static void test_unstamp(void **state)
{
	const unsigned shift = VFAB_IP_DELAY_STAMP_SHIFT;
	uint64_t now = (123456789ull << shift) + 17; /* 1.024 us units, and a remainder */
	uint8_t buf[256], *b = buf;
	struct virtio_net_hdr h;
	size_t len = stamped(buf, (unsigned)((123456789ull - 50) & 0xffff), 14 + 4 + 20);

	(void)state;
	assert_int_equal(vfabd_frame_unstamp(&b, &len, now), now - (50ull << shift));
	assert_ptr_equal(b, buf + 4);
	assert_int_equal(len, HDR + 14 + 60);
	memcpy(&h, b, sizeof(h));
	assert_int_equal(h.csum_start, 14 + 20); /* the tag is gone from what it counts */
	assert_int_equal(h.csum_offset, 16);
	assert_memory_equal(b + HDR, dst_mac, 6);
	assert_memory_equal(b + HDR + 6, src_mac, 6);
	assert_int_equal(b[HDR + 12], 0x08);
	assert_int_equal(b[HDR + 14], 0x45);

	/* The 16-bit stamp wrapped since: the age still comes out right. */
	b = buf;
	len = stamped(buf, 0xfff0, 0);
	now = (0x10005ull << shift);
	assert_int_equal(vfabd_frame_unstamp(&b, &len, now), now - (0x15ull << shift));

	/* No stamp: nothing moves, the latency starts now. */
	b = buf;
	len = stamped(buf, 1, 0);
	buf[HDR + 12] = 0x81;
	assert_int_equal(vfabd_frame_unstamp(&b, &len, now), now);
	assert_ptr_equal(b, buf);
	assert_int_equal(len, HDR + 18 + 60);
	len = HDR + 17; /* too short to hold a tag */
	assert_int_equal(vfabd_frame_unstamp(&b, &len, now), now);
}

static void test_path(void **state)
{
	struct vfabd_delay_lat
	    a = {.up_ns = 100, .down_ns = 200, .leaf = 0, .leaf_up_ns = 1000, .leaf_down_ns = 2000},
	    b = {.up_ns = 10, .down_ns = 20, .leaf = 0, .leaf_up_ns = 3000, .leaf_down_ns = 4000};

	(void)state;
	assert_int_equal(vfabd_frame_path_ns(&a, &b), 100 + 20); /* one leaf */
	assert_int_equal(vfabd_frame_path_ns(&b, &a), 10 + 200);
	b.leaf = 1; /* through the spine: a's uplink, b's downlink */
	assert_int_equal(vfabd_frame_path_ns(&a, &b), 100 + 1000 + 4000 + 20);
	assert_int_equal(vfabd_frame_path_ns(NULL, &b), 20); /* from outside */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_source_ipv4_ipv6_arp),
	    cmocka_unit_test(test_unstamp),
	    cmocka_unit_test(test_path),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
