/* SPDX-License-Identifier: MIT */
/*
 * The fabric description parsed from YAML (configs/README.md documents the
 * schema). This header carries only plain structs so that components that must
 * not depend on libyaml (the provider, via topology.h) can still include it;
 * the parser itself lives in the separate static library vfab_config.
 */
#ifndef VFAB_CONFIG_H
#define VFAB_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric/cpuset.h"
#include "fabric/region.h"

#define VFAB_CFG_NODE_ID_MAX 15 /* node ids become hostnames and netns names */
#define VFAB_CFG_MAX_HCAS 8	/* per node, as struct vfab_node.hcas[] */
#define VFAB_CFG_MAX_NETDEVS 8	/* per node */
#define VFAB_CFG_MAX_ADDRS 8	/* per netdev: 2 + 2 * 8 GIDs fit VFAB_PORT_GIDS */
#define VFAB_CFG_TEXT_MAX 64	/* host, profile, link type, backend */
#define VFAB_CFG_DEFAULT_NETDEV "eth0"
#define VFAB_CFG_DEFAULT_HCA "mlx5_0"
#define VFAB_CFG_DEFAULT_MTU 9000
#define VFAB_CFG_DEFAULT_SPEED_GBPS 200.0
#define VFAB_CFG_MAX_GROUPS VFAB_MAX_NODES /* leaf groups */
#define VFAB_CFG_DEFAULT_IPV6_PREFIX "fd00:198:18::/48"

/* hcas[].gpu: the node's GPU (cuda:K in the node) an HCA shares a PCIe switch with. */
#define VFAB_CFG_MAX_GPU_INDEX 63

/* An interface address, "198.18.0.1/24" or "fd00::1/64". */
struct vfab_cfg_addr {
	int family;	  /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* network byte order; IPv4 uses the first 4 bytes */
	uint8_t prefix;
	char text[64]; /* canonical "ADDR/PREFIX" */
	uint32_t line; /* where it was configured; 0 = a default */
};

/* A network interface of a node; eth0 always exists (first entry). */
struct vfab_cfg_netdev {
	char name[VFAB_IFNAME_MAX];
	uint32_t mtu;  /* bytes; fabric.mtu unless nodes[].netdevs[].mtu */
	uint32_t leaf; /* index into vfab_config.leaves: the L2 segment it joins */
	uint16_t vlan; /* netdevs[].vlan: the addresses go on <name>.<vlan>; 0: none */
	uint32_t naddrs;
	struct vfab_cfg_addr addrs[VFAB_CFG_MAX_ADDRS]; /* configured order */
};

struct vfab_cfg_hca {
	char name[VFAB_NAME_MAX];
	uint32_t nports;			      /* 1..VFAB_MAX_PORTS */
	char netdev[VFAB_MAX_PORTS][VFAB_IFNAME_MAX]; /* bound netdev per port */
	uint32_t copy_engines; /* 1..VFAB_MAX_COPY_ENGINES; 0: from the node's CPUs */
	bool has_gpu;	       /* hcas[].gpu given: the HCA sits next to the node's GPU `gpu` */
	uint32_t gpu;	       /* 0..VFAB_CFG_MAX_GPU_INDEX: its own (gpus list), else the host's */
};

struct vfab_cfg_node {
	char id[VFAB_CFG_NODE_ID_MAX + 1];
	/*
	 * A hosts[] id in a multi-host config (the machine the node runs on);
	 * elsewhere informational (the seed format's address).
	 */
	char host[VFAB_CFG_TEXT_MAX];
	uint32_t line;		/* where the node starts in the file */
	uint32_t cluster_index; /* its place in the file (cluster[]), on any host */
	uint32_t group;		/* leaf group: nodes[].leaf, or index / fabric.leaf_size */
	uint32_t nranks;
	uint32_t *ranks;
	bool has_gpus; /* `gpus` given (even 0, []): GPUs of its own (netns/gpu_plan.h) */
	uint32_t ngpus;
	char (*gpu_profiles)[VFAB_CFG_TEXT_MAX]; /* ngpus entries; "" when a count was given */
	uint32_t nhcas;
	struct vfab_cfg_hca hcas[VFAB_CFG_MAX_HCAS];
	uint32_t nnetdevs;
	struct vfab_cfg_netdev netdevs[VFAB_CFG_MAX_NETDEVS];
	uint32_t k8s_host;     /* hosts[] index + 1 of the host this pod is on; 0: none */
	uint32_t machine;      /* multi-host: hosts[] index + 1 of the node's machine; else 0 */
	bool has_cpus;	       /* else the host's CPUs split between the nodes */
	struct vfab_cpus cpus; /* nodes[].cpus */
};

/*
 * One class of links. Shaping is on only when a bandwidth or a latency was
 * given; an unshaped link copies at memory speed.
 */
struct vfab_cfg_link {
	char type[VFAB_CFG_TEXT_MAX]; /* "roce", "infiniband", "nvlink", ... */
	bool has_bandwidth, has_latency, shaped;
	double bandwidth_gbps;
	double latency_us;	 /* one way, end to end */
	double oversubscription; /* >= 1; 1 when not given */
	double loss;		 /* probability per message attempt, 0..1 */
};

/*
 * A leaf switch, derived by the loader: the node netdevs called `netdev` of
 * the nodes of leaf group `group` form one L2 segment with one IPv4 subnet
 * and optionally a routed IPv6 prefix (configs/README.md, "Leaves").
 */
struct vfab_cfg_leaf {
	char name[VFAB_NAME_MAX];     /* "leaf<group>", or "leaf<group>-<netdev>" */
	char netdev[VFAB_IFNAME_MAX]; /* the plane */
	uint32_t group;
	uint32_t plane; /* order of first appearance of the netdev name */
	uint32_t nmembers;
	uint32_t mtu;		      /* largest member MTU */
	uint16_t vlan;		      /* the members' VLAN (one per leaf); 0: untagged */
	struct vfab_cfg_addr ipv4;    /* network/prefix */
	struct vfab_cfg_addr ipv6;    /* network/prefix; family 0: none */
	struct vfab_cfg_addr ipv4_gw; /* the spine's address here; family 0: none */
	struct vfab_cfg_addr ipv6_gw;
	/*
	 * Multi-host, after vfab_config_select_host: the leaf's VXLAN network
	 * identifier when its nodes are on this host and others (its index in the
	 * file's leaves + 1, alike on every host); 0: the leaf is this host's alone.
	 */
	uint32_t vni;
};

/*
 * hosts[]: Kubernetes hosts and the pods (nodes) on them. In shared RDMA
 * netns mode the pods share the host's one HCA: every pod's HCA named `hca`
 * is that HCA, bound to the PF netdev `netdev` (in no pod), and each pod's
 * own HCA netdev (net1) is a macvlan upper of it (configs/README.md).
 */
#define VFAB_CFG_MAX_UPLINK_ADDRS 2

struct vfab_cfg_host {
	char id[VFAB_CFG_NODE_ID_MAX + 1];
	uint32_t line;
	bool shared;		      /* rdma_netns: shared (else exclusive: no effect) */
	char hca[VFAB_NAME_MAX];      /* hca.name */
	char netdev[VFAB_IFNAME_MAX]; /* hca.netdev: the PF */
	uint32_t npods;
	uint32_t pods[VFAB_MAX_NODES]; /* node indices, in the order the pods came up */
	char pod_ids[VFAB_MAX_NODES][VFAB_CFG_NODE_ID_MAX + 1];
	uint32_t pod_lines[VFAB_MAX_NODES];
	/*
	 * uplink (multi-host): the machine's netdev `uplink_netdev` carries the
	 * fabric's traffic to the other hosts; the fabric's router joins it as
	 * a macvlan holding these addresses (at most one per family).
	 */
	bool has_uplink;
	uint32_t uplink_line;
	char uplink_netdev[VFAB_IFNAME_MAX];
	uint32_t nuplink_addrs;
	struct vfab_cfg_addr uplink_addrs[VFAB_CFG_MAX_UPLINK_ADDRS];
};

/*
 * What another host holds, seen from the selected one, reached via that
 * host's uplink: a leaf of its own (the leaf's subnet), or a node's address
 * on a leaf that spans hosts (a host route: the routers never bridge to it).
 */
struct vfab_cfg_route {
	struct vfab_cfg_addr dst; /* the leaf's subnet, or one address /32 or /128 */
	struct vfab_cfg_addr via; /* the other host's uplink address (same family) */
	uint32_t host;		  /* hosts[] index of the other host */
	uint32_t leaf_group;	  /* its leaf group (names "leaf<group>" alike on every host) */
	int32_t leaf;		  /* a host route's leaf in this host's leaves[]; else -1 */
};

struct vfab_config {
	char source[256];	  /* display name used in messages */
	char name[VFAB_NAME_MAX]; /* cluster.name, "vfab" when absent */
	char default_backend[VFAB_CFG_TEXT_MAX];
	uint32_t version;
	uint32_t nnodes;
	struct vfab_cfg_node *nodes;
	struct vfab_cfg_addr subnet; /* within 198.18.0.0/15 */
	uint32_t mtu;		     /* netdev MTU, 1280..9000 */
	struct vfab_cfg_link intra_node, inter_node;
	uint32_t leaf_size;	/* nodes per leaf group; 0: not given */
	uint32_t ring_pool_mib; /* fabric.ring_pool_mib; 0: sized from the HCAs */
	/* fabric.limits, per HCA, by enum vfab_obj; 0: the ConnectX value (fabric/region.h). */
	uint32_t limits[VFAB_OBJ_KINDS];
	bool ipv6;			  /* default IPv6 addresses and routed prefixes */
	struct vfab_cfg_addr ipv6_prefix; /* where leaf IPv6 prefixes come from */
	double spine_latency_us;	  /* one way, leaf -> spine -> leaf */
	uint32_t ngroups;		  /* leaf groups */
	bool spine;			  /* more than one leaf: a router joins them */
	uint32_t nleaves;
	struct vfab_cfg_leaf *leaves;
	uint32_t nhosts;
	struct vfab_cfg_host *hosts;
	/*
	 * Multi-host (configs/README.md "Several hosts"): every hosts[] entry has
	 * an uplink and every node a machine. Until vfab_config_select_host,
	 * nodes[] and leaves[] are the whole cluster's (local_host -1); after it
	 * they are the selected host's only, cluster[] keeps every node in file
	 * order (for names and launch lists) and routes[] the other hosts' leaves.
	 */
	bool multihost;
	int32_t local_host;
	uint32_t ncluster;
	struct vfab_cfg_node *cluster; /* NULL: nodes[] is the cluster */
	uint32_t nroutes;
	struct vfab_cfg_route *routes;
};

/*
 * All loaders return 0, or -EINVAL (bad YAML or schema) / -errno (I/O) with
 * err = "FILE:LINE: FIELD: message". cfg is left empty on failure; call
 * vfab_config_free on success.
 */
int vfab_config_load_file(const char *path, struct vfab_config *cfg, char *err, size_t errlen);
int vfab_config_load_string(const char *yaml, const char *display_name, struct vfab_config *cfg,
			    char *err, size_t errlen);
/* The embedded default (configs/default.yaml): 2 nodes, one mlx5_0 each, unshaped. */
int vfab_config_load_default(struct vfab_config *cfg, char *err, size_t errlen);
void vfab_config_free(struct vfab_config *cfg);

/* The embedded default's YAML text (what `vfab up` writes to the run dir). */
extern const char vfab_default_config_yaml[];

/*
 * Multi-host: keep only host `id`'s share (its nodes, their leaves) and learn
 * the routes to the other hosts' leaves. -EINVAL with err set when the config
 * is not multi-host or has no such host.
 */
int vfab_config_select_host(struct vfab_config *cfg, const char *id, char *err, size_t errlen);
/*
 * What `vfab up --host` recorded in a run dir (base/paths.h
 * vfab_run_host_path): selects that host; no file, nothing to do.
 */
int vfab_config_apply_host_file(struct vfab_config *cfg, const char *path, char *err,
				size_t errlen);

/* Host h's uplink address of family (AF_INET, AF_INET6), or NULL. */
static inline const struct vfab_cfg_addr *vfab_config_uplink_addr(const struct vfab_cfg_host *h,
								  int family)
{
	for (uint32_t k = 0; k < h->nuplink_addrs; k++)
		if (h->uplink_addrs[k].family == family)
			return &h->uplink_addrs[k];
	return NULL;
}

/* Every node of the cluster, in file order, on whichever host (n: how many). */
static inline const struct vfab_cfg_node *vfab_config_cluster(const struct vfab_config *cfg,
							      uint32_t *n)
{
	*n = cfg->cluster ? cfg->ncluster : cfg->nnodes;
	return cfg->cluster ? cfg->cluster : cfg->nodes;
}

/* Index of a node's netdev by name, or -1. Inline: no library needed. */
static inline int vfab_config_netdev_index(const struct vfab_cfg_node *n, const char *name)
{
	for (uint32_t i = 0; i < n->nnetdevs; i++)
		if (!__builtin_strcmp(n->netdevs[i].name, name))
			return (int)i;
	return -1;
}

#endif /* VFAB_CONFIG_H */
