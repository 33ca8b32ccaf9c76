/* SPDX-License-Identifier: MIT */
/*
 * State shared by the config schema walker (config.c) and the cross-field
 * checks that run once the whole document is read (config_check.c): where
 * things were written, so that later checks can still name a line.
 */
#ifndef VFAB_CONFIG_PARSE_H
#define VFAB_CONFIG_PARSE_H

#include "config/config.h"
#include "config_yaml.h"

#define CFG_SUBNET_BASE 0xc6120000u /* 198.18.0.0 */
#define CFG_SUBNET_PREFIX 15

struct cfg_node_lines {
	uint32_t id;
	uint32_t ranks;	    /* 0 when the node lists no ranks */
	uint32_t *rank;	    /* per rank element */
	uint32_t gpus;	    /* 0 when the node lists no gpus */
	uint32_t leaf;	    /* 0 when the node has no `leaf` */
	bool has_addresses; /* an explicit list (even empty) disables the defaults */
	/* Per netdev: its nodes[].netdevs entry (index + 1, 0 = none), whether that
	 * entry had an `addresses` list, and how many leading addresses it gave. */
	uint8_t entry[VFAB_CFG_MAX_NETDEVS];
	bool entry_addresses[VFAB_CFG_MAX_NETDEVS];
	uint8_t entry_naddrs[VFAB_CFG_MAX_NETDEVS];
};

struct cfg_parse {
	struct cfg_ctx ctx;
	struct vfab_config *cfg;
	struct cfg_node_lines *lines; /* one per node */
	uint32_t subnet_line, mtu_line, leaf_size_line;
};

/*
 * "ADDR" or "ADDR/PREFIX", IPv4 inside 198.18.0.0/15 or IPv6 (not loopback,
 * multicast, unspecified or IPv4-mapped). An IPv4 address without a prefix
 * gets prefix 0 here and the subnet's prefix in cfg_check (the subnet may
 * come later in the file); IPv6 defaults to /64. why gets the reason.
 */
int cfg_parse_addr(const char *text, struct vfab_cfg_addr *a, char *why, size_t whylen);
/* Fills a->text from addr/prefix. */
void cfg_addr_format(struct vfab_cfg_addr *a);
static inline uint32_t cfg_addr_v4(const struct vfab_cfg_addr *a)
{
	return (uint32_t)a->addr[0] << 24 | (uint32_t)a->addr[1] << 16 | (uint32_t)a->addr[2] << 8 |
	       a->addr[3];
}

/* The `nodes` sequence (config_node.c); obj is the struct cfg_parse. */
int cfg_parse_nodes(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj);

/* ---- config_netdev.c: a node's netdevs and addresses ---- */

/* Index of netdev `name` of n, created (at the end) when missing. */
int cfg_node_netdev(struct cfg_ctx *c, yaml_node_t *at, const char *path, struct vfab_cfg_node *n,
		    const char *name);
/* A usable interface name into buf (VFAB_IFNAME_MAX). */
int cfg_netdev_name(struct cfg_ctx *c, yaml_node_t *v, const char *path, char *buf);
/* nodes[].netdevs: [{name, mtu, addresses}] (creates the netdevs in order). */
int cfg_parse_netdevs(struct cfg_ctx *c, yaml_node_t *v, const char *path, struct vfab_cfg_node *n,
		      struct cfg_node_lines *lines);
/* nodes[].addresses: "ADDR/PREFIX" (on eth0) or {netdev: NAME, address: ADDR/PREFIX}. */
int cfg_parse_addresses(struct cfg_ctx *c, yaml_node_t *v, const char *path,
			struct vfab_cfg_node *n, struct cfg_node_lines *lines);
/* "nodes[i].addresses" or "nodes[i].netdevs[e].addresses": where address a of netdev d was written.
 */
const char *cfg_addr_path(char *buf, const struct cfg_parse *p, uint32_t node, uint32_t d,
			  uint32_t a);

/* ---- config_hosts.c: hosts[] and their pods ---- */

/* The `hosts` sequence; obj is the struct cfg_parse. Pods are named, resolved later. */
int cfg_parse_hosts(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj);
/* Resolves pods to nodes and checks shared hosts; needs cfg_check done (leaves). */
int cfg_check_hosts(struct cfg_parse *p);

/* ---- config_machines.c: several hosts ---- */

/* hosts[].uplink: {netdev, addresses}; obj is the struct vfab_cfg_host. */
int cfg_parse_uplink(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj);
/* Uplinks, each node's machine, one host per leaf; needs cfg_check_hosts done. */
int cfg_check_machines(struct cfg_parse *p);

/* ---- config_leaves.c ---- */

/*
 * Leaf groups, leaves (L2 segments), their subnets and gateways, then the
 * default addresses of netdevs that have none. Needs apply-subnet-prefix and
 * the netdev MTUs done; the first failure is recorded in p->ctx.
 */
int cfg_plan_leaves(struct cfg_parse *p);

/* Cross-field rules and defaults; the first failure is recorded in p->ctx. */
int cfg_check(struct cfg_parse *p);

#endif /* VFAB_CONFIG_PARSE_H */
