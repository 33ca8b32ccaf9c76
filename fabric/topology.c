/* SPDX-License-Identifier: MIT */
/* Fills the region's topology tables from a config (schemes in topology.h). */
#include "fabric/topology.h"
#include "fabric/gid.h"
#include "fabric/topology_links.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

uint8_t vfab_topology_fabric_byte(const char *fabric)
{
	uint32_t h = 2166136261u;

	for (; *fabric; fabric++)
		h = (h ^ (uint8_t)*fabric) * 16777619u;
	return (uint8_t)h;
}

static void make_mac(const char *fabric, uint32_t node_idx, uint8_t low, uint8_t mac[6])
{
	mac[0] = VFAB_MAC_OUI0;
	mac[1] = VFAB_MAC_OUI1;
	mac[2] = VFAB_MAC_OUI2;
	mac[3] = vfab_topology_fabric_byte(fabric);
	mac[4] = (uint8_t)node_idx;
	mac[5] = low;
}

int vfab_topology_netdev_mac(const char *fabric, const struct vfab_config *cfg, uint32_t node_idx,
			     const char *netdev, uint8_t mac[6])
{
	const struct vfab_cfg_node *n;
	int d;

	if (node_idx >= cfg->nnodes)
		return -ENOENT;
	n = &cfg->nodes[node_idx];
	for (uint32_t h = 0; h < n->nhcas; h++)
		for (uint32_t p = 0; p < n->hcas[h].nports; p++)
			if (!strcmp(n->hcas[h].netdev[p], netdev)) {
				make_mac(fabric, n->cluster_index, (uint8_t)(h + 0x10 * p), mac);
				return 0;
			}
	d = vfab_config_netdev_index(n, netdev);
	if (d < 0)
		return -ENOENT;
	make_mac(fabric, n->cluster_index, (uint8_t)(0x80 | d), mac);
	return 0;
}

void vfab_topology_gateway_mac(uint32_t vni, uint8_t mac[6])
{
	mac[0] = VFAB_MAC_OUI0;
	mac[1] = VFAB_MAC_OUI1;
	mac[2] = VFAB_MAC_OUI2;
	mac[3] = (uint8_t)(vni >> 8);
	mac[4] = (uint8_t)vni;
	mac[5] = 0xff;
}

static uint64_t guid_from_mac(const uint8_t mac[6])
{
	const uint8_t eui[8] = {mac[0], mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]};
	uint64_t g = 0;

	for (int i = 0; i < 8; i++)
		g = g << 8 | eui[i];
	return g;
}

/*
 * Addresses in configured order: the order a CNI adds them after the HCA
 * exists. With a VLAN they sit on the upper <netdev>.<vlan>, which the node
 * build brings up after adding them: its link-local address (the default
 * GID's value, another netdev) comes last.
 */
static int fill_gids(struct vfab_port *port, const struct vfab_cfg_netdev *d)
{
	struct vfab_gid_addr addrs[VFAB_CFG_MAX_ADDRS + 1];
	size_t count = 0;

	for (uint32_t a = 0; a < d->naddrs; a++, count++) {
		memset(&addrs[count], 0, sizeof(addrs[count]));
		addrs[count].family = d->addrs[a].family;
		memcpy(addrs[count].addr, d->addrs[a].addr, 16);
		addrs[count].prefix = d->addrs[a].prefix;
		addrs[count].vlan = d->vlan;
	}
	if (d->vlan) {
		memset(&addrs[count], 0, sizeof(addrs[count]));
		addrs[count].family = AF_INET6;
		vfab_gid_default(port->mac, addrs[count].addr);
		addrs[count].prefix = 64;
		addrs[count++].vlan = d->vlan;
	}
	return vfab_topology_port_gids(port, addrs, count);
}

int vfab_topology_port_gids(struct vfab_port *port, const struct vfab_gid_addr *addrs, size_t n)
{
	struct vfab_gid t[VFAB_PORT_GIDS];
	int k = vfab_gid_table_build_ordered(port->mac, addrs, n, t, VFAB_PORT_GIDS);

	if (k < 0)
		return k;
	/*
	 * Readers take no lock: entries first (the tail emptied, so a reader
	 * with the old count skips them), then the count, then the generation
	 * that tells cached resolutions to look again.
	 */
	memset(t + k, 0, (VFAB_PORT_GIDS - (size_t)k) * sizeof(t[0]));
	memcpy(port->gids, t, sizeof(t));
	__atomic_store_n(&port->ngids, (uint32_t)k, __ATOMIC_RELEASE);
	atomic_fetch_add_explicit(&port->gid_gen, 1, memory_order_release);
	return 0;
}

static int fill_port(struct vfab_region *r, const struct vfab_config *cfg, uint32_t node_idx,
		     uint32_t hca_idx, uint32_t port_no, struct vfab_port *port)
{
	const struct vfab_cfg_node *n = &cfg->nodes[node_idx];
	const char *netdev = n->hcas[hca_idx].netdev[port_no - 1];
	int d = vfab_config_netdev_index(n, netdev);
	const struct vfab_cfg_netdev *nd;
	double gbps = cfg->inter_node.has_bandwidth ? cfg->inter_node.bandwidth_gbps
						    : VFAB_CFG_DEFAULT_SPEED_GBPS;

	if (d < 0)
		return -EINVAL; /* the loader creates every bound netdev */
	nd = &n->netdevs[d];
	atomic_store(&port->state, 4); /* IBV_PORT_ACTIVE */
	snprintf(port->netdev, sizeof(port->netdev), "%s", netdev);
	vfab_topology_netdev_mac(r->fabric, cfg, node_idx, netdev, port->mac);
	port->vlan = nd->vlan;
	port->netdev_mtu = nd->mtu;
	port->active_mtu = vfab_topology_active_mtu(nd->mtu);
	port->speed_mbps = (uint32_t)llround(gbps * 1000.0);
	vfab_topology_encode_speed(port->speed_mbps, &port->active_width, &port->active_speed);
	port->segment = nd->leaf;
	memcpy(&port->subnet, cfg->leaves[nd->leaf].ipv4.addr, 4);
	topo_port_links(r, cfg, n->id, n->hcas[hca_idx].name, port_no, port);
	return fill_gids(port, nd);
}

static uint32_t first_ipv4(const struct vfab_cfg_node *n)
{
	uint32_t v = 0;

	for (uint32_t a = 0; a < n->netdevs[0].naddrs; a++)
		if (n->netdevs[0].addrs[a].family == AF_INET) {
			memcpy(&v, n->netdevs[0].addrs[a].addr, 4);
			break;
		}
	return v;
}

static int check_fits(const struct vfab_region *r, const struct vfab_config *cfg)
{
	uint32_t hcas = 0;

	if (r->nnodes || r->nhcas || r->nlinks || r->nleaves)
		return -EEXIST;
	if (cfg->nnodes > VFAB_MAX_NODES || cfg->nleaves > VFAB_MAX_LEAVES || !cfg->leaves)
		return -E2BIG;
	for (uint32_t i = 0; i < cfg->nnodes; i++) {
		if (cfg->nodes[i].nhcas > VFAB_CFG_MAX_HCAS ||
		    cfg->nodes[i].nnetdevs > VFAB_NODE_NETDEVS)
			return -E2BIG;
		hcas += cfg->nodes[i].nhcas;
	}
	return (hcas > VFAB_MAX_HCAS || topo_links_needed(cfg) > VFAB_MAX_LINKS) ? -E2BIG : 0;
}

static void fill_node_netdevs(struct vfab_region *r, const struct vfab_config *cfg, uint32_t i)
{
	const struct vfab_cfg_node *cn = &cfg->nodes[i];
	struct vfab_node *node = &r->nodes[i];

	for (uint32_t d = 0; d < cn->nnetdevs; d++) {
		struct vfab_node_netdev *nd = &node->netdevs[d];

		snprintf(nd->name, sizeof(nd->name), "%s", cn->netdevs[d].name);
		vfab_topology_netdev_mac(r->fabric, cfg, i, nd->name, nd->mac);
		nd->leaf = cn->netdevs[d].leaf;
		nd->mtu = cn->netdevs[d].mtu;
		nd->vlan = cn->netdevs[d].vlan;
	}
	node->nnetdevs = cn->nnetdevs;
	node->group = cn->group;
}

/*
 * The node's CPUs: as configured, else its share of the CPUs this process
 * (vfabd, started by `vfab up`) may use, so that a fabric started inside a
 * cpuset stays inside it.
 */
static void fill_node_cpus(struct vfab_node *node, const struct vfab_config *cfg, uint32_t i)
{
	struct vfab_cpus host;

	if (cfg->nodes[i].has_cpus)
		node->cpus = cfg->nodes[i].cpus;
	else if (vfab_cpus_of_self(&host) == 0)
		vfab_cpus_split(&host, cfg->nnodes, i, &node->cpus);
}

/*
 * The host's HCA in shared RDMA netns mode (config hosts[]), port 1 bound to
 * the PF (in no pod): its table is what the kernel builds. The default GID
 * comes from the PF's MAC; then roce_gid_mgmt.c adds the addresses of the
 * PF's uppers found in every network namespace (enum_all_gids_of_dev_cb walks
 * for_each_net), so each pod's macvlan net1 adds its addresses, in the order
 * its CNI added them, and its own link-local address (a macvlan has a MAC of
 * its own), pod after pod as they came up. Every entry names net1.
 */
static int fill_shared_port(struct vfab_region *r, const struct vfab_config *cfg, uint32_t host,
			    struct vfab_port *port)
{
	const struct vfab_cfg_host *ch = &cfg->hosts[host];
	struct vfab_gid_addr addrs[VFAB_PORT_GIDS];
	double gbps = cfg->inter_node.has_bandwidth ? cfg->inter_node.bandwidth_gbps
						    : VFAB_CFG_DEFAULT_SPEED_GBPS;
	size_t count = 0;

	for (uint32_t k = 0; k < ch->npods; k++) {
		uint32_t ni = ch->pods[k];
		const struct vfab_cfg_node *n = &cfg->nodes[ni];
		int h = -1, d;
		uint8_t mac[6];

		for (uint32_t j = 0; j < n->nhcas && h < 0; j++)
			if (!strcmp(n->hcas[j].name, ch->hca))
				h = (int)j;
		d = h < 0 ? -1 : vfab_config_netdev_index(n, n->hcas[h].netdev[0]);
		if (d < 0)
			return -EINVAL; /* the loader checked every pod */
		if (k == 0) {
			const struct vfab_cfg_netdev *nd = &n->netdevs[d];

			snprintf(port->pod_netdev, sizeof(port->pod_netdev), "%s", nd->name);
			port->netdev_mtu = nd->mtu;
			port->segment = nd->leaf;
		}
		for (uint32_t a = 0; a < n->netdevs[d].naddrs && count < VFAB_PORT_GIDS; a++) {
			memset(&addrs[count], 0, sizeof(addrs[count]));
			addrs[count].family = n->netdevs[d].addrs[a].family;
			memcpy(addrs[count].addr, n->netdevs[d].addrs[a].addr, 16);
			addrs[count].prefix = n->netdevs[d].addrs[a].prefix;
			addrs[count++].pod = (uint8_t)(ni + 1);
		}
		if (count >= VFAB_PORT_GIDS)
			return -E2BIG;
		vfab_topology_netdev_mac(r->fabric, cfg, ni, n->netdevs[d].name, mac);
		memset(&addrs[count], 0, sizeof(addrs[count]));
		addrs[count].family = AF_INET6;
		vfab_gid_default(mac, addrs[count].addr);
		addrs[count].prefix = 64;
		addrs[count++].pod = (uint8_t)(ni + 1);
	}
	atomic_store(&port->state, 4); /* IBV_PORT_ACTIVE */
	snprintf(port->netdev, sizeof(port->netdev), "%s", ch->netdev);
	make_mac(r->fabric, 0x80 | host, 0, port->mac);
	port->active_mtu = vfab_topology_active_mtu(port->netdev_mtu);
	port->speed_mbps = (uint32_t)llround(gbps * 1000.0);
	vfab_topology_encode_speed(port->speed_mbps, &port->active_width, &port->active_speed);
	memcpy(&port->subnet, cfg->leaves[port->segment].ipv4.addr, 4);
	topo_port_links(r, cfg, ch->id, ch->hca, 1, port);
	return vfab_topology_port_gids(port, addrs, count);
}

/*
 * One copy engine per CPU of the node, as many as the CPUs that can run
 * them at once; a node with no known CPUs gets one (no split).
 */
static uint32_t default_copy_engines(const struct vfab_cpus *cpus)
{
	unsigned n = vfab_cpus_count(cpus);

	if (n > VFAB_DEFAULT_COPY_ENGINES_MAX)
		n = VFAB_DEFAULT_COPY_ENGINES_MAX;
	return n ? n : 1;
}

/* HCA h of node i: a new one, or the host's shared one that an earlier pod made. */
static int fill_hca(struct vfab_region *r, const struct vfab_config *cfg, uint32_t i, uint32_t h,
		    int32_t shared_idx[])
{
	const struct vfab_cfg_node *cn = &cfg->nodes[i];
	struct vfab_node *node = &r->nodes[i];
	uint32_t host = cn->k8s_host ? cn->k8s_host - 1 : 0, hi = r->nhcas;
	bool shared = cn->k8s_host && cfg->hosts[host].shared &&
		      !strcmp(cfg->hosts[host].hca, cn->hcas[h].name);
	struct vfab_hca *hca = &r->hcas[hi];
	int rc;

	if (shared && shared_idx[host] >= 0) {
		node->hcas[node->nhcas++] = (uint32_t)shared_idx[host];
		return 0;
	}
	hca->node = i;
	hca->shared = shared;
	hca->netns_exclusive = cn->k8s_host && !cfg->hosts[host].shared;
	snprintf(hca->name, sizeof(hca->name), "%s", cn->hcas[h].name);
	hca->uverbs_idx = h;
	hca->nports = cn->hcas[h].nports;
	hca->copy_engines =
	    cn->hcas[h].copy_engines ? cn->hcas[h].copy_engines : default_copy_engines(&node->cpus);
	memcpy(hca->limit, cfg->limits, sizeof(hca->limit));
	for (uint32_t p = 1; p <= hca->nports; p++) {
		rc = shared ? fill_shared_port(r, cfg, host, &hca->ports[p - 1])
			    : fill_port(r, cfg, i, h, p, &hca->ports[p - 1]);
		if (rc)
			return rc;
	}
	hca->node_guid = guid_from_mac(hca->ports[0].mac);
	hca->sys_image_guid = hca->node_guid;
	node->hcas[node->nhcas++] = hi;
	hca->in_use = 1;
	r->nhcas++;
	if (shared)
		shared_idx[host] = (int32_t)hi;
	return 0;
}

int vfab_topology_fill(struct vfab_region *r, const struct vfab_config *cfg)
{
	int32_t shared_idx[VFAB_MAX_NODES];
	int rc = check_fits(r, cfg);

	for (uint32_t k = 0; k < VFAB_MAX_NODES; k++)
		shared_idx[k] = -1;
	if (rc)
		return rc;
	for (uint32_t i = 0; i < cfg->nnodes; i++) {
		const struct vfab_cfg_node *cn = &cfg->nodes[i];
		struct vfab_node *node = &r->nodes[i];

		node->index = i;
		snprintf(node->id, sizeof(node->id), "%s", cn->id);
		node->ipv4 = first_ipv4(cn);
		fill_node_netdevs(r, cfg, i);
		fill_node_cpus(node, cfg, i);
		for (uint32_t h = 0; h < cn->nhcas; h++) {
			rc = fill_hca(r, cfg, i, h, shared_idx);
			if (rc)
				return rc;
		}
		node->loopback = topo_node_loopback(r, cfg, cn->id);
		node->in_use = 1;
		r->nnodes++;
	}
	topo_fill_leaves(r, cfg);
	atomic_store(&r->ready, 1);
	return 0;
}
