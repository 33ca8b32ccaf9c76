/* SPDX-License-Identifier: MIT */
/*
 * Interface addresses of the config. IPv4 is confined to the benchmarking
 * range 198.18.0.0/15 (RFC 2544) so that a fabric can never shadow a network
 * the host really uses, even when someone routes between namespaces later.
 */
#include "config_parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static int why_fail(char *why, size_t len, const char *fmt, const char *arg)
{
	snprintf(why, len, fmt, arg);
	return -EINVAL;
}

static int parse_prefix(const char *s, unsigned max, uint8_t *out)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	v = strtoul(s, &end, 10);
	if (*end || v < 1 || v > max)
		return -EINVAL;
	*out = (uint8_t)v;
	return 0;
}

static int check_v4(struct vfab_cfg_addr *a, char *why, size_t len, const char *text)
{
	uint32_t v = cfg_addr_v4(a);

	if ((v >> (32 - CFG_SUBNET_PREFIX)) != (CFG_SUBNET_BASE >> (32 - CFG_SUBNET_PREFIX)))
		return why_fail(why, len,
				"%s is outside 198.18.0.0/15 (vfab only uses the benchmarking "
				"range, never networks the host may use)",
				text);
	return 0;
}

static int check_v6(const struct vfab_cfg_addr *a, char *why, size_t len, const char *text)
{
	static const uint8_t zero[16], loop[16] = {[15] = 1};
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};

	if (!memcmp(a->addr, zero, 16) || !memcmp(a->addr, loop, 16))
		return why_fail(why, len, "%s is not usable as an interface address", text);
	if (a->addr[0] == 0xff)
		return why_fail(why, len, "%s is a multicast address", text);
	if (!memcmp(a->addr, mapped, 12))
		return why_fail(why, len, "%s is IPv4-mapped: write the IPv4 address instead",
				text);
	return 0;
}

int cfg_parse_addr(const char *text, struct vfab_cfg_addr *a, char *why, size_t whylen)
{
	char buf[64];
	char *slash;

	memset(a, 0, sizeof(*a));
	if (strlen(text) >= sizeof(buf))
		return why_fail(why, whylen, "'%s' is not an address", text);
	strcpy(buf, text);
	slash = strchr(buf, '/');
	if (slash)
		*slash++ = '\0';
	a->family = strchr(buf, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(a->family, buf, a->addr) != 1)
		return why_fail(why, whylen, "'%s' is not an IPv4 or IPv6 address", text);
	if (slash && parse_prefix(slash, a->family == AF_INET ? 32 : 128, &a->prefix))
		return why_fail(why, whylen, "'%s' has an invalid prefix length", text);
	if (a->family == AF_INET6 && !a->prefix)
		a->prefix = 64;
	if (a->family == AF_INET ? check_v4(a, why, whylen, text) : check_v6(a, why, whylen, text))
		return -EINVAL;
	cfg_addr_format(a);
	return 0;
}

void cfg_addr_format(struct vfab_cfg_addr *a)
{
	char ip[INET6_ADDRSTRLEN];

	inet_ntop(a->family, a->addr, ip, sizeof(ip));
	if (a->prefix)
		snprintf(a->text, sizeof(a->text), "%s/%u", ip, a->prefix);
	else
		snprintf(a->text, sizeof(a->text), "%s", ip);
}
