/* SPDX-License-Identifier: MIT */
/*
 * A node's network interfaces: the `nodes[].netdevs` entries (name, MTU and
 * the interface's own address list) and the node-level `nodes[].addresses`
 * list. Addresses keep the order they were written in: the GID table follows
 * it.
 */
#include "config_parse.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define NKEYS(t) (sizeof(t) / sizeof((t)[0]))

int cfg_node_netdev(struct cfg_ctx *c, yaml_node_t *at, const char *path, struct vfab_cfg_node *n,
		    const char *name)
{
	int i = vfab_config_netdev_index(n, name);
	char copy[VFAB_IFNAME_MAX];

	if (i >= 0)
		return i;
	if (n->nnetdevs == VFAB_CFG_MAX_NETDEVS)
		return cfg_fail(c, at, path, "too many netdevs on one node (at most %d)",
				VFAB_CFG_MAX_NETDEVS);
	/* Via a copy: name may point into n (an HCA's binding). */
	snprintf(copy, sizeof(copy), "%s", name);
	memset(&n->netdevs[n->nnetdevs], 0, sizeof(n->netdevs[0]));
	memcpy(n->netdevs[n->nnetdevs].name, copy, sizeof(copy));
	return (int)n->nnetdevs++;
}

int cfg_netdev_name(struct cfg_ctx *c, yaml_node_t *v, const char *path, char *buf)
{
	if (cfg_string(c, v, path, buf, VFAB_IFNAME_MAX))
		return -EINVAL;
	if (!buf[0] || !cfg_name_ok(buf, "-.") || !strcmp(buf, "lo") || !strcmp(buf, ".") ||
	    !strcmp(buf, ".."))
		return cfg_fail(c, v, path,
				"'%s' is not a usable interface name (letters, digits, '_', '-', "
				"'.'; not lo)",
				buf);
	return 0;
}

static int add_address(struct cfg_ctx *c, yaml_node_t *v, const char *path, struct vfab_cfg_node *n,
		       const char *netdev)
{
	char why[192];
	struct vfab_cfg_addr a;
	struct vfab_cfg_netdev *d;
	int idx;

	if (v->type != YAML_SCALAR_NODE)
		return cfg_fail(c, v, path, "expected an address such as 198.18.0.1/24");
	if (cfg_parse_addr((const char *)v->data.scalar.value, &a, why, sizeof(why)))
		return cfg_fail(c, v, path, "%s", why);
	a.line = cfg_line(v);
	idx = cfg_node_netdev(c, v, path, n, netdev);
	if (idx < 0)
		return idx;
	d = &n->netdevs[idx];
	if (d->naddrs == VFAB_CFG_MAX_ADDRS)
		return cfg_fail(c, v, path, "too many addresses on %s (at most %d)", d->name,
				VFAB_CFG_MAX_ADDRS);
	d->addrs[d->naddrs++] = a;
	return 0;
}

struct addr_item {
	char netdev[VFAB_IFNAME_MAX];
	yaml_node_t *address;
};

static int parse_addr_netdev(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct addr_item *it = obj;

	return cfg_netdev_name(c, v, path, it->netdev);
}

static int parse_addr_address(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	(void)c;
	(void)path;
	((struct addr_item *)obj)->address = v;
	return 0;
}

int cfg_parse_addresses(struct cfg_ctx *c, yaml_node_t *v, const char *path,
			struct vfab_cfg_node *n, struct cfg_node_lines *lines)
{
	static const struct cfg_key keys[] = {{"netdev", parse_addr_netdev},
					      {"address", parse_addr_address}};
	size_t count, i;

	lines->has_addresses = true;
	if (cfg_expect_sequence(c, v, path, "addresses"))
		return -EINVAL;
	count = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	for (i = 0; i < count; i++) {
		yaml_node_t *it = cfg_node(c, v->data.sequence.items.start[i]);
		struct addr_item item = {.netdev = VFAB_CFG_DEFAULT_NETDEV};
		char sub[CFG_PATH_MAX], sub2[CFG_PATH_MAX];
		uint32_t seen;

		cfg_path_index(sub, path, i);
		if (it->type == YAML_SCALAR_NODE) {
			if (add_address(c, it, sub, n, VFAB_CFG_DEFAULT_NETDEV))
				return -EINVAL;
			continue;
		}
		if (cfg_mapping(c, it, sub, keys, NKEYS(keys), false, &item, &seen))
			return -EINVAL;
		if (!(seen & 2))
			return cfg_fail(c, it, cfg_path_key(sub2, sub, "address"), "missing");
		if (add_address(c, item.address, cfg_path_key(sub2, sub, "address"), n,
				item.netdev))
			return -EINVAL;
	}
	return 0;
}

/* ---- nodes[].netdevs[] ---- */

struct netdev_item {
	char name[VFAB_IFNAME_MAX];
	uint32_t mtu;
	uint32_t vlan;
	yaml_node_t *addresses;
};

static int parse_nd_name(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	return cfg_netdev_name(c, v, path, ((struct netdev_item *)obj)->name);
}

static int parse_nd_mtu(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	return cfg_uint(c, v, path, 1280, 9000, &((struct netdev_item *)obj)->mtu);
}

/* 802.1Q ids 1..4094 (0 and 4095 are reserved). */
static int parse_nd_vlan(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	return cfg_uint(c, v, path, 1, 4094, &((struct netdev_item *)obj)->vlan);
}

static int parse_nd_addresses(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	((struct netdev_item *)obj)->addresses = v;
	return cfg_expect_sequence(c, v, path, "addresses");
}

static int netdev_addresses(struct cfg_ctx *c, yaml_node_t *v, const char *path,
			    struct vfab_cfg_node *n, const char *netdev)
{
	size_t count = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);

	for (size_t i = 0; i < count; i++) {
		char sub[CFG_PATH_MAX];

		if (add_address(c, cfg_node(c, v->data.sequence.items.start[i]),
				cfg_path_index(sub, path, i), n, netdev))
			return -EINVAL;
	}
	return 0;
}

int cfg_parse_netdevs(struct cfg_ctx *c, yaml_node_t *v, const char *path, struct vfab_cfg_node *n,
		      struct cfg_node_lines *lines)
{
	static const struct cfg_key keys[] = {{"name", parse_nd_name},
					      {"mtu", parse_nd_mtu},
					      {"addresses", parse_nd_addresses},
					      {"vlan", parse_nd_vlan}};
	size_t count, i;

	if (cfg_expect_sequence(c, v, path, "{name, mtu, vlan, addresses} entries"))
		return -EINVAL;
	count = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	for (i = 0; i < count; i++) {
		yaml_node_t *it = cfg_node(c, v->data.sequence.items.start[i]);
		struct netdev_item item = {.mtu = 0};
		char sub[CFG_PATH_MAX], sub2[CFG_PATH_MAX];
		uint32_t seen;
		int d;

		cfg_path_index(sub, path, i);
		if (cfg_mapping(c, it, sub, keys, NKEYS(keys), false, &item, &seen))
			return -EINVAL;
		if (!(seen & 1))
			return cfg_fail(c, it, cfg_path_key(sub2, sub, "name"), "missing");
		d = cfg_node_netdev(c, it, sub, n, item.name);
		if (d < 0)
			return d;
		if (lines->entry[d])
			return cfg_fail(c, it, cfg_path_key(sub2, sub, "name"),
					"%s is listed twice (also netdevs[%u])", item.name,
					lines->entry[d] - 1u);
		lines->entry[d] = (uint8_t)(i + 1);
		n->netdevs[d].mtu = item.mtu;
		if (item.vlan && d == 0)
			return cfg_fail(c, it, cfg_path_key(sub2, sub, "vlan"),
					"eth0 carries the node's sockets untagged: put the VLAN "
					"on the HCA's netdev (eth1, ...)");
		/* <name>.<vlan> must fit IFNAMSIZ (region.h vfab_vlan_ifname). */
		if (item.vlan && strlen(item.name) > 10)
			return cfg_fail(c, it, cfg_path_key(sub2, sub, "vlan"),
					"%s.%u is longer than a netdev name may be (15)", item.name,
					item.vlan);
		n->netdevs[d].vlan = (uint16_t)item.vlan;
		if (item.addresses) {
			lines->entry_addresses[d] = true;
			if (netdev_addresses(c, item.addresses,
					     cfg_path_key(sub2, sub, "addresses"), n, item.name))
				return -EINVAL;
			lines->entry_naddrs[d] = (uint8_t)n->netdevs[d].naddrs;
		}
	}
	return 0;
}

const char *cfg_addr_path(char *buf, const struct cfg_parse *p, uint32_t node, uint32_t d,
			  uint32_t a)
{
	const struct cfg_node_lines *l = &p->lines[node];
	const struct vfab_cfg_addr *ad = &p->cfg->nodes[node].netdevs[d].addrs[a];

	if (!ad->line)
		snprintf(buf, CFG_PATH_MAX, "nodes[%u] (default address of %s %s)", node,
			 p->cfg->nodes[node].id, p->cfg->nodes[node].netdevs[d].name);
	else if (l->entry[d] && a < l->entry_naddrs[d])
		snprintf(buf, CFG_PATH_MAX, "nodes[%u].netdevs[%u].addresses", node,
			 l->entry[d] - 1u);
	else
		snprintf(buf, CFG_PATH_MAX, "nodes[%u].addresses", node);
	return buf;
}
