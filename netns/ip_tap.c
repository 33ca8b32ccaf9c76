/* SPDX-License-Identifier: MIT */
/* The delay line's tap (ip_shape.h vfab_ip_delay_tap). */
#include "netns/ip_shape.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netns/netcfg.h"

#define TAP_NAME "vfabdl%u"
#define TAP_QLEN 4096 /* frames the kernel queues for the reader */

int vfab_ip_delay_tap(unsigned id, int *ifindex)
{
	unsigned offload = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
	struct ifreq ifr;
	char key[64];
	int fd, s, rc = 0;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), TAP_NAME, id);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, TUNSETIFF, &ifr) || ioctl(fd, TUNSETOFFLOAD, offload)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	/* No addresses and no IPv6: nothing of its own (router solicitations) enters the line. */
	snprintf(key, sizeof(key), "ipv6/conf/%s/disable_ipv6", ifr.ifr_name);
	vfab_net_sysctl(key, "1");
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		rc = -errno;
	ifr.ifr_qlen = TAP_QLEN;
	if (!rc && (ioctl(s, SIOCSIFTXQLEN, &ifr) || ioctl(s, SIOCGIFFLAGS, &ifr)))
		rc = -errno;
	ifr.ifr_flags |= IFF_UP;
	if (!rc && (ioctl(s, SIOCSIFFLAGS, &ifr) || ioctl(s, SIOCGIFINDEX, &ifr)))
		rc = -errno;
	if (s >= 0)
		close(s);
	if (rc) {
		close(fd);
		return rc;
	}
	*ifindex = ifr.ifr_ifindex;
	return fd;
}
