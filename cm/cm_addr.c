/* SPDX-License-Identifier: MIT */
#include "cm/cm_addr.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

socklen_t vfab_cm_sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

uint16_t vfab_cm_sa_port(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)ss)->sin6_port
					       : ((const struct sockaddr_in *)ss)->sin_port);
}

void vfab_cm_sa_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
}

void vfab_cm_sa_bytes(const struct sockaddr_storage *ss, uint8_t a[16])
{
	memset(a, 0, 16);
	if (ss->ss_family == AF_INET6)
		memcpy(a, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	else
		memcpy(a, &((const struct sockaddr_in *)ss)->sin_addr, 4);
}

void vfab_cm_sa_make(struct sockaddr_storage *ss, int family, const uint8_t a[16], uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	ss->ss_family = (sa_family_t)family;
	if (family == AF_INET6)
		memcpy(&((struct sockaddr_in6 *)ss)->sin6_addr, a, 16);
	else
		memcpy(&((struct sockaddr_in *)ss)->sin_addr, a, 4);
	vfab_cm_sa_set_port(ss, port);
}

void vfab_cm_sa_copy(struct sockaddr_storage *ss, const struct sockaddr *sa)
{
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, sa, vfab_cm_sa_len(sa));
}

int vfab_cm_addr_any(const struct sockaddr *addr)
{
	if (addr->sa_family == AF_INET) {
		uint32_t a = ntohl(((const struct sockaddr_in *)addr)->sin_addr.s_addr);

		return a == INADDR_ANY || (a >> 24) == IN_LOOPBACKNET;
	}
	if (addr->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)addr)->sin6_addr;

		return IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LOOPBACK(a);
	}
	return 0;
}

uint16_t vfab_cm_ephemeral_port(void)
{
	uint16_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint16_t)rand();
	return (uint16_t)(32768 + v % (61000 - 32768));
}
