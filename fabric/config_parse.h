/* SPDX-License-Identifier: MIT */
/*
 * State shared by the config schema walker (config.c) and the cross-field
 * checks that run once the whole document is read (config_check.c): where
 * things were written, so that later checks can still name a line.
 */
#ifndef VFAB_CONFIG_PARSE_H
#define VFAB_CONFIG_PARSE_H

#include "config_yaml.h"
#include "fabric/config.h"

#define CFG_SUBNET_BASE 0xc6120000u /* 198.18.0.0 */
#define CFG_SUBNET_PREFIX 15

struct cfg_node_lines {
	uint32_t id;
	uint32_t ranks;	    /* 0 when the node lists no ranks */
	uint32_t *rank;	    /* per rank element */
	uint32_t gpus;	    /* 0 when the node lists no gpus */
	bool has_addresses; /* an explicit list (even empty) disables the default */
};

struct cfg_parse {
	struct cfg_ctx ctx;
	struct vfab_config *cfg;
	struct cfg_node_lines *lines; /* one per node */
	uint32_t subnet_line, mtu_line;
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

/* Cross-field rules and defaults; the first failure is recorded in p->ctx. */
int cfg_check(struct cfg_parse *p);

#endif /* VFAB_CONFIG_PARSE_H */
