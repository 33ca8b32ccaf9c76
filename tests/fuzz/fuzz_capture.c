/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: a datagram on a capture's socket, which any local user
 * can send (docs/TRUST.md "Packet capture"). The input is the datagram; it
 * goes through the tool's own check (vfab_cap_rec_sound) and, when that
 * passes, through the frame builder (tools/capture_frames.c, the RoCE
 * encoder, the CM MADs) into a sink that checks each frame's lengths.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/capture.h"
#include "fabric/roce_pkt.h"
#include "tools/capture_frames.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NHCAS 3

static struct vfab_hca hcas[NHCAS];

static void sink(void *arg, uint64_t ts_ns, const uint8_t *frame, uint32_t len, uint32_t incl)
{
	(void)arg;
	(void)ts_ns;
	/* A frame is never shorter than its headers, nor kept beyond its length. */
	if (incl > len || len < 14 + 12 || len > ROCE_MAX_HDR_LEN + 4096 + 8)
		abort();
	/* Every kept byte is readable. */
	volatile uint8_t x = 0;
	for (uint32_t i = 0; i < incl; i++)
		x ^= frame[i];
	(void)x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vfab_capture_frames o;
	struct vfab_cap_rec r;
	uint8_t *copy;

	if (size < sizeof(r) || size > sizeof(r) + VFAB_CAP_DGRAM_PAYLOAD)
		return 0;
	for (int i = 0; i < NHCAS; i++) {
		hcas[i].node_guid = 0x0276660000000000ull + (uint64_t)i;
		hcas[i].ports[0].mac[0] = 0x02;
		hcas[i].ports[0].mac[5] = (uint8_t)i;
	}
	o.hcas = hcas;
	o.nhcas = NHCAS;
	o.snaplen = 65535;
	o.put = sink;
	/* Exactly the datagram's bytes: a read past them is the sanitizer's to see. */
	copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	memcpy(&r, copy, sizeof(r));
	if (vfab_cap_rec_sound(&r, size, NHCAS))
		vfab_capture_frames(&o, &r, copy + sizeof(r));
	free(copy);
	return 0;
}
