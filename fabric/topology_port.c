/* SPDX-License-Identifier: MIT */
/*
 * Port attributes in the encodings ibverbs and sysfs use: active_mtu from the
 * netdev MTU, active_width/active_speed from a configured rate, and the
 * sysfs `rate` text.
 */
#include "fabric/topology.h"

#include <errno.h>
#include <stdio.h>

/* GRH + UDP + BTH + XRC ETH + AtomicETH + ICRC, as the kernel reserves. */
#define ROCE_HEADROOM (40 + 8 + 12 + 4 + 28 + 4)

uint32_t vfab_topology_active_mtu(uint32_t netdev_mtu)
{
	uint32_t payload = netdev_mtu > ROCE_HEADROOM ? netdev_mtu - ROCE_HEADROOM : 0;
	uint32_t e;

	for (e = 5; e >= 1; e--)
		if (payload >= (128u << e)) /* enum ibv_mtu e = 128 << e bytes */
			return e;
	return 1; /* below 256 is not a valid netdev MTU here; keep the smallest */
}

/* ibverbs encodings (enum ibv_port_attr.active_width / active_speed). */
enum { W1X = 1, W4X = 2, W8X = 4, W12X = 8, W2X = 16 };
enum { SDR = 1, DDR = 2, QDR = 4, FDR10 = 8, FDR = 16, EDR = 32, HDR = 64, NDR = 128 };

/*
 * The combinations a ConnectX reports for Ethernet link modes (1/10/25/40/50/
 * 56/100/200/400 GbE) plus the wider IB ones, by total rate.
 */
static const struct {
	uint32_t mbps;
	uint8_t width, speed;
} speed_table[] = {
    {2500, W1X, SDR},	{5000, W1X, DDR},     {10000, W1X, QDR},  {14000, W1X, FDR},
    {20000, W4X, DDR},	{25000, W1X, EDR},    {40000, W4X, QDR},  {50000, W1X, HDR},
    {56000, W4X, FDR},	{100000, W4X, EDR},   {200000, W4X, HDR}, {400000, W4X, NDR},
    {800000, W8X, NDR}, {1200000, W12X, NDR},
};

void vfab_topology_encode_speed(uint32_t mbps, uint8_t *active_width, uint8_t *active_speed)
{
	size_t i, best = 0;
	uint32_t best_diff = UINT32_MAX;

	for (i = 0; i < sizeof(speed_table) / sizeof(speed_table[0]); i++) {
		uint32_t m = speed_table[i].mbps;
		uint32_t diff = m > mbps ? m - mbps : mbps - m;

		if (diff < best_diff) { /* strict: ties go to the slower entry */
			best_diff = diff;
			best = i;
		}
	}
	*active_width = speed_table[best].width;
	*active_speed = speed_table[best].speed;
}

static int width_lanes(uint8_t width)
{
	switch (width) {
	case W1X:
		return 1;
	case W2X:
		return 2;
	case W4X:
		return 4;
	case W8X:
		return 8;
	case W12X:
		return 12;
	default:
		return -EINVAL;
	}
}

int vfab_topology_sysfs_rate(const struct vfab_port *p, char *buf, size_t len)
{
	const char *name = "";
	int lanes = width_lanes(p->active_width), tenths, n;

	if (lanes < 0)
		return lanes;
	switch (p->active_speed) {
	case DDR:
		name = " DDR", tenths = 50;
		break;
	case QDR:
		name = " QDR", tenths = 100;
		break;
	case FDR10:
		name = " FDR10", tenths = 100;
		break;
	case FDR:
		name = " FDR", tenths = 140;
		break;
	case EDR:
		name = " EDR", tenths = 250;
		break;
	case HDR:
		name = " HDR", tenths = 500;
		break;
	case NDR:
		name = " NDR", tenths = 1000;
		break;
	default: /* SDR, and what the kernel prints for anything unknown */
		tenths = 25;
		break;
	}
	tenths *= lanes;
	n = snprintf(buf, len, "%d%s Gb/sec (%dX%s)", tenths / 10, tenths % 10 ? ".5" : "", lanes,
		     name);
	return (n < 0 || (size_t)n >= len) ? -ENOSPC : n;
}
