/* SPDX-License-Identifier: MIT */
/*
 * The RDMA devices a process's netlink requests are answered about: read
 * from its own /sys/class/infiniband, the view `vfab up` (root) wrote into
 * its node, so that netlink and sysfs can never disagree and a process
 * sees over netlink only the devices of its node, as the kernel shows only
 * a network namespace's own devices in exclusive mode.
 */
#ifndef VFAB_NL_DEV_H
#define VFAB_NL_DEV_H

#include <net/if.h>
#include <stdint.h>

#define VFAB_NL_MAX_DEVS 32
#define VFAB_NL_MAX_PORTS 2

struct vfab_nl_port {
	uint8_t state;	    /* enum ib_port_state, sysfs ports/N/state's number */
	uint8_t phys_state; /* ports/N/phys_state's number */
	uint32_t cap_flags; /* ports/N/cap_mask */
	int ib;		    /* link_layer InfiniBand: the LID fields are sent */
	uint32_t lid, sm_lid;
	uint8_t lmc;
	char netdev[IF_NAMESIZE]; /* gid_attrs/ndevs/0; "" none */
	uint32_t ifindex;	  /* of netdev in the caller's namespace; 0 none there */
};

struct vfab_nl_dev {
	uint32_t index; /* the device's index: N of its uverbsN */
	char name[64];
	char fw[64];
	uint64_t node_guid, sys_image_guid; /* host byte order */
	uint8_t node_type;		    /* node_type's number (1: CA) */
	uint32_t nports;
	struct vfab_nl_port port[VFAB_NL_MAX_PORTS];
	char uverbs[32]; /* uverbsN */
	uint32_t cdev_major, cdev_minor;
	uint64_t abi;	   /* infiniband_verbs/uverbsN/abi_version */
	char locator[512]; /* device/vfab (vfab's own: region, HCA index, run dir); "" none */
};

/*
 * Reads the devices below class_fd (a descriptor of .../class), sorted by
 * index; only the one of index `only` unless it is VFAB_NL_ANY_DEV (a
 * request about one device reads no other). Returns how many (at most
 * max), or -errno when the directory cannot be read. A device whose files
 * do not parse is left out.
 */
#define VFAB_NL_ANY_DEV UINT32_MAX
int vfab_nl_devs_read(int class_fd, uint32_t only, struct vfab_nl_dev *out, int max);

/* A port's hardware counter (ports/N/hw_counters/NAME), as `rdma statistic` shows it. */
struct vfab_nl_counter {
	char name[48];
	uint64_t value;
};
#define VFAB_NL_MAX_COUNTERS 64

/*
 * The hw_counters of port `port` of device `dev` below class_fd, sorted by
 * name (lifespan, the sysfs refresh interval, is no counter). Returns how
 * many, or -errno.
 */
int vfab_nl_hw_counters_read(int class_fd, const char *dev, uint32_t port,
			     struct vfab_nl_counter *out, int max);

/* The parsers, for the unit tests: "4: ACTIVE" -> 4; "0c42:a103:0065:4f38" -> 0x0c42a10300654f38.
 */
int vfab_nl_parse_lead_number(const char *s, uint32_t *v);
int vfab_nl_parse_guid(const char *s, uint64_t *v);

#endif /* VFAB_NL_DEV_H */
