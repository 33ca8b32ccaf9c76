/* SPDX-License-Identifier: MIT */
/* RoCE GID table rules (see gid.h). */
#include "fabric/gid.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

void vfab_gid_default(const uint8_t mac[6], uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	gid[8] = mac[0] ^ 0x02;
	gid[9] = mac[1];
	gid[10] = mac[2];
	gid[11] = 0xff;
	gid[12] = 0xfe;
	gid[13] = mac[3];
	gid[14] = mac[4];
	gid[15] = mac[5];
}

static int find_raw(const struct vfab_gid *t, size_t n, const uint8_t raw[16], uint16_t vlan,
		    uint8_t pod)
{
	for (size_t i = 0; i < n; i++)
		if (!memcmp(t[i].raw, raw, 16) && t[i].vlan == vlan && t[i].pod == pod)
			return (int)i;
	return -1;
}

/* Appends raw as RoCE v1 and v2 unless the table has it already (same netdev). */
static int add_pair(struct vfab_gid *out, size_t *n, size_t max, const uint8_t raw[16],
		    uint8_t prefix, uint16_t vlan, uint8_t pod)
{
	int type;

	if (find_raw(out, *n, raw, vlan, pod) >= 0)
		return 0;
	if (*n + 2 > max)
		return -ENOSPC;
	for (type = VFAB_GID_ROCE_V1; type <= VFAB_GID_ROCE_V2; type++) {
		struct vfab_gid *g = &out[*n];

		memset(g, 0, sizeof(*g));
		memcpy(g->raw, raw, 16);
		g->type = (uint8_t)type;
		g->prefix = prefix;
		g->vlan = vlan;
		g->pod = pod;
		g->index = (uint32_t)*n;
		(*n)++;
	}
	return 0;
}

int vfab_gid_table_build_ordered(const uint8_t mac[6], const struct vfab_gid_addr *addrs,
				 size_t count, struct vfab_gid *out, size_t max)
{
	uint8_t raw[16];
	size_t n = 0, i;
	int rc;

	vfab_gid_default(mac, raw);
	rc = add_pair(out, &n, max, raw, 64, 0, 0);
	for (i = 0; !rc && i < count; i++) {
		if (addrs[i].family == AF_INET) {
			memset(raw, 0, 10);
			raw[10] = 0xff;
			raw[11] = 0xff;
			memcpy(raw + 12, addrs[i].addr, 4);
			/* As an IPv6 prefix: the mapped range plus the IPv4 prefix. */
			rc = add_pair(out, &n, max, raw, (uint8_t)(96 + addrs[i].prefix),
				      addrs[i].vlan, addrs[i].pod);
		} else {
			rc = add_pair(out, &n, max, addrs[i].addr, addrs[i].prefix, addrs[i].vlan,
				      addrs[i].pod);
		}
	}
	return rc ? rc : (int)n;
}

int vfab_gid_table_build(const uint8_t mac[6], const struct in_addr *v4, size_t n4,
			 const struct in6_addr *v6, size_t n6, struct vfab_gid *out, size_t max)
{
	struct vfab_gid_addr a[VFAB_SYSFS_GID_TBL_LEN / 2];
	size_t n = 0, i;

	/* More addresses than a table holds can only end in -ENOSPC anyway. */
	if (n4 + n6 > sizeof(a) / sizeof(a[0]))
		return -ENOSPC;
	for (i = 0; i < n4; i++, n++) {
		memset(&a[n], 0, sizeof(a[n]));
		a[n].family = AF_INET;
		memcpy(a[n].addr, &v4[i].s_addr, 4);
	}
	for (i = 0; i < n6; i++, n++) {
		memset(&a[n], 0, sizeof(a[n]));
		a[n].family = AF_INET6;
		memcpy(a[n].addr, v6[i].s6_addr, 16);
	}
	return vfab_gid_table_build_ordered(mac, a, n, out, max);
}

void vfab_gid_format(const uint8_t raw[16], char buf[VFAB_GID_STR_LEN])
{
	snprintf(buf, VFAB_GID_STR_LEN,
		 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", raw[0],
		 raw[1], raw[2], raw[3], raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10],
		 raw[11], raw[12], raw[13], raw[14], raw[15]);
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The fixed sysfs form: eight groups of exactly four hex digits. */
static int parse_sysfs_form(const char *s, uint8_t raw[16])
{
	int g, k;

	for (g = 0; g < 8; g++) {
		unsigned v = 0;

		for (k = 0; k < 4; k++) {
			int d = hex_digit(*s++);

			if (d < 0)
				return -EINVAL;
			v = v << 4 | (unsigned)d;
		}
		if (*s != (g == 7 ? '\0' : ':'))
			return -EINVAL;
		s++;
		raw[2 * g] = (uint8_t)(v >> 8);
		raw[2 * g + 1] = (uint8_t)v;
	}
	return 0;
}

int vfab_gid_parse(const char *s, uint8_t raw[16])
{
	char buf[64];
	size_t len = strlen(s);

	while (len && (s[len - 1] == '\n' || s[len - 1] == ' '))
		len--;
	if (len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (!parse_sysfs_form(buf, raw))
		return 0;
	return inet_pton(AF_INET6, buf, raw) == 1 ? 0 : -EINVAL;
}

const char *vfab_gid_type_name(uint8_t type)
{
	return type == VFAB_GID_ROCE_V2 ? "RoCE v2" : "IB/RoCE v1";
}
