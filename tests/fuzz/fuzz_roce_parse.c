/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: a frame off the wire, which any host on the link can
 * send, read by the RoCE parser (fabric/roce_parse.c). Whatever it returns,
 * what it points to lies inside the frame; what it accepts, the encoder
 * builds again with the same headers and payload length.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/roce_pkt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t again[65536 + 256];
	struct roce_pkt_view v;
	int rc = roce_pkt_parse(data, size, &v), n;

	if (rc != 0 && rc != -EPROTO && rc != -EINVAL && rc != -EBADMSG && rc != -EOPNOTSUPP)
		abort();
	if (rc != 0)
		return 0;
	if (v.len > size || v.payload < data || v.payload + v.paylen + v.pad + 4 != data + v.len)
		abort();
	/* Every byte of the payload is readable. */
	volatile uint8_t x = 0;
	for (uint32_t i = 0; i < v.paylen; i++)
		x ^= v.payload[i];
	(void)x;
	v.addr.l3 = v.l3;
	n = roce_pkt_build(again, sizeof(again), &v.addr, &v.bth, &v.ext, v.payload, v.paylen);
	if (n != (int)v.len || roce_pkt_parse(again, (size_t)n, &v) != 0)
		abort();
	return 0;
}
