/* SPDX-License-Identifier: MIT */
/*
 * vfab addr: a node's addresses, listed, added or removed from the host.
 * The change itself is netns/node_addr.c's (in the node's namespace); vfabd
 * sees it as it sees `ip addr` inside the node, and this verb then watches
 * the region and the node's sysfs view (read-only) until the HCA ports on
 * that netdev show the new GID table, so that what it prints is what a
 * program in the node finds from then on.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "fabric/gid.h"
#include "fabric/region.h"
#include "fabric/topology.h"
#include "netns/netns_file.h"
#include "netns/node_addr.h"
#include "netns/sysfs_view.h"
#include "tools/cli.h"

/*
 * vfabd applies a change within milliseconds; the margin keeps a busy host
 * (a test suite on two cores) from reporting a failure that is only late.
 */
#define ADDR_APPLY_MS 2000
#define ADDR_POLL_NS (10 * 1000 * 1000)

static void usage(FILE *f)
{
	fprintf(f, "usage: vfab [--fabric NAME] addr NODE\n"
		   "       vfab [--fabric NAME] addr NODE add|del ADDR/PREFIX [dev NETDEV]\n"
		   "Without add/del: NODE's netdevs with their state and addresses, like\n"
		   "'ip -br addr' inside the node.\n"
		   "add/del changes an address of NODE as 'ip addr add|del' inside it would\n"
		   "(IPv4 or IPv6; IPv6 without DAD, like the node's configured addresses).\n"
		   "NETDEV defaults to the netdev of the node's first HCA (eth0, bond0, ...).\n"
		   "The HCA ports on that netdev follow: an added address gets a RoCE v1 and\n"
		   "a v2 GID (printed with their indices), a removed one's entries become\n"
		   "empty, and every context on the port gets IBV_EVENT_GID_CHANGE. vfab\n"
		   "returns once the GID table and the sysfs view show the change.\n"
		   "Exit: 0 ok, 1 runtime failure (fabric not up, address already there or\n"
		   "not there, GID table not updated), 2 usage error, unknown node or netdev.\n");
}

struct addr_args {
	const char *node;
	int add; /* -1: list */
	struct vfab_ifaddr a;
	const char *netdev; /* NULL: the first HCA's */
};

static int parse_args(int argc, char **argv, int first, struct addr_args *args)
{
	int n = argc - first;

	memset(args, 0, sizeof(*args));
	args->add = -1;
	if (n != 1 && n != 3 && n != 5) {
		fprintf(stderr, "vfab addr: want NODE, or NODE add|del ADDR/PREFIX [dev NETDEV]\n");
		usage(stderr);
		return VFAB_EXIT_USAGE;
	}
	args->node = argv[first];
	if (n == 1)
		return VFAB_EXIT_OK;
	if (strcmp(argv[first + 1], "add") && strcmp(argv[first + 1], "del")) {
		fprintf(stderr, "vfab addr: '%s' is neither add nor del\n", argv[first + 1]);
		usage(stderr);
		return VFAB_EXIT_USAGE;
	}
	args->add = !strcmp(argv[first + 1], "add");
	if (vfab_ifaddr_parse(argv[first + 2], &args->a)) {
		fprintf(stderr,
			"vfab addr: '%s' is not ADDR/PREFIX (a.b.c.d/0..32 or an IPv6 "
			"address/0..128)\n",
			argv[first + 2]);
		return VFAB_EXIT_USAGE;
	}
	if (n == 5) {
		if (strcmp(argv[first + 3], "dev")) {
			fprintf(stderr, "vfab addr: expected 'dev NETDEV', got '%s'\n",
				argv[first + 3]);
			usage(stderr);
			return VFAB_EXIT_USAGE;
		}
		args->netdev = argv[first + 4];
	}
	return VFAB_EXIT_OK;
}

/* Says what is wrong with the node's namespace file, if that is the failure. */
static int namespace_failed(const struct vfab_cli *cli, const char *node, int ret)
{
	char ns[256] = "";

	if (ret != -ENOENT && ret != -EXDEV)
		return 0;
	vfab_netns_path(ns, sizeof(ns), cli->fabric, node);
	if (ret == -ENOENT)
		fprintf(stderr,
			"vfab addr: the network namespace of node %s (%s) is gone; restart the "
			"fabric (down, up)\n",
			node, ns);
	else
		fprintf(stderr,
			"vfab addr: %s is this host's own network namespace; refusing to touch "
			"the host's addresses\n",
			ns);
	return 1;
}

static int list_addrs(const struct vfab_cli *cli, const char *node)
{
	struct vfab_addr_list list;
	char text[VFAB_IFADDR_STR_LEN];
	int ret = vfab_node_addr_list(cli->fabric, node, &list);

	if (ret) {
		if (!namespace_failed(cli, node, ret))
			fprintf(stderr, "vfab addr: cannot list the addresses of node %s: %s\n",
				node, strerror(-ret));
		return VFAB_EXIT_FAIL;
	}
	for (unsigned i = 0; i < list.nnetdevs; i++) {
		const struct vfab_netdev_addrs *nd = &list.netdevs[i];

		printf("%-16s %-14s", nd->name, nd->state);
		for (unsigned k = 0; k < nd->naddrs; k++) {
			vfab_ifaddr_format(&nd->addrs[k], text);
			printf(" %s", text);
		}
		printf("\n");
	}
	if (list.truncated)
		fprintf(stderr, "vfab addr: node %s has more netdevs or addresses than shown\n",
			node);
	return VFAB_EXIT_OK;
}

/* ---- the GID table, read from the region and the node's sysfs view ---- */

/* An HCA port bound to the netdev, with the entries of the address's GID. */
struct port_gids {
	const struct vfab_hca *hca;  /* names and wiring: the CLI's own topology */
	const struct vfab_hca *live; /* the same HCA in the region: its GID tables */
	uint32_t port;		     /* from 1 */
	int v1, v2;		     /* indices, -1: none */
	int is_default;		     /* the address is the default GID: entries 0 and 1 stay */
	uint16_t vlan; /* 0: on the port's netdev; else on its VLAN upper (vfab_gid.vlan) */
};

static int topo_node(const struct vfab_region *t, const char *id)
{
	for (int i = 0; i < VFAB_MAX_NODES; i++)
		if (t->nodes[i].in_use && !strcmp(t->nodes[i].id, id))
			return i;
	return -1;
}

/*
 * The HCA ports of node n on netdev, or whose netdev's VLAN upper netdev is
 * (at most max), for the address's gid.
 */
static int ports_on(const struct vfab_region *t, const struct vfab_region *r,
		    const struct vfab_node *n, const char *netdev, const uint8_t gid[16],
		    struct port_gids *out, int max)
{
	uint8_t def[16];
	int count = 0;

	for (uint32_t h = 0; h < n->nhcas && h < 8; h++) {
		const struct vfab_hca *hca = &t->hcas[n->hcas[h]], *live = &r->hcas[n->hcas[h]];

		for (uint32_t p = 0; p < hca->nports && p < VFAB_MAX_PORTS && count < max; p++) {
			const struct vfab_port *port = &hca->ports[p];
			char upper[VFAB_IFNAME_MAX] = "";

			if (port->vlan)
				vfab_vlan_ifname(upper, port->netdev, port->vlan);
			if (!strcmp(port->netdev, netdev)) {
				vfab_gid_default(port->mac, def);
				out[count++] = (struct port_gids){
				    hca, live, p + 1, -1, -1, !memcmp(def, gid, 16), 0};
			} else if (upper[0] && !strcmp(upper, netdev)) {
				out[count++] =
				    (struct port_gids){hca, live, p + 1, -1, -1, 0, port->vlan};
			}
		}
	}
	return count;
}

/* The GID an address becomes (IPv4 as ::ffff:a.b.c.d). */
static void addr_gid(const struct vfab_ifaddr *a, uint8_t gid[16])
{
	memset(gid, 0, 16);
	if (a->family == AF_INET) {
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, a->addr, 4);
	} else {
		memcpy(gid, a->addr, 16);
	}
}

/* Where gid sits in the port's table now (vfabd changes it without locks). */
static void find_gid(struct port_gids *pg, const uint8_t gid[16])
{
	const struct vfab_port *p = &pg->live->ports[pg->port - 1];
	uint32_t n = __atomic_load_n(&p->ngids, __ATOMIC_ACQUIRE);

	pg->v1 = pg->v2 = -1;
	for (uint32_t i = 0; i < n && i < VFAB_PORT_GIDS; i++) {
		uint8_t type = __atomic_load_n(&p->gids[i].type, __ATOMIC_ACQUIRE);

		if (type == VFAB_GID_EMPTY || p->gids[i].vlan != pg->vlan ||
		    memcmp(p->gids[i].raw, gid, 16))
			continue;
		if (type == VFAB_GID_ROCE_V1 && pg->v1 < 0)
			pg->v1 = (int)p->gids[i].index;
		else if (type == VFAB_GID_ROCE_V2 && pg->v2 < 0)
			pg->v2 = (int)p->gids[i].index;
	}
}

/* gids/idx and gid_attrs/types/idx of the view read gid and type_name. */
static int view_shows(const struct vfab_cli *cli, const char *node, const struct port_gids *pg,
		      int idx, const uint8_t gid[16], const char *type_name)
{
	char path[PATH_MAX], want[VFAB_GID_STR_LEN + 1], got[64];
	const char *files[2] = {"gids", "gid_attrs/types"};
	ssize_t n;

	for (int f = 0; f < 2; f++) {
		char sub[32];

		snprintf(sub, sizeof(sub), "%s/%d", files[f], idx);
		if (vfab_sysfs_port_path(path, sizeof(path), cli->rundir, node, pg->hca->name,
					 pg->port, sub))
			return 0;
		n = vfab_read_file(path, got, sizeof(got) - 1);
		if (n < 0)
			return 0;
		got[n] = '\0';
		if (f == 0)
			vfab_gid_format(gid, want);
		else
			snprintf(want, sizeof(want), "%s", type_name);
		if (strncmp(got, want, strlen(want)) || got[strlen(want)] != '\n')
			return 0;
	}
	return 1;
}

/* After an add: both entries exist, in the region and in the view. */
static int add_applied(const struct vfab_cli *cli, const char *node, struct port_gids *pg,
		       const uint8_t gid[16])
{
	find_gid(pg, gid);
	if (pg->is_default)
		return 1;
	return pg->v1 >= 0 && pg->v2 >= 0 &&
	       view_shows(cli, node, pg, pg->v1, gid, vfab_gid_type_name(VFAB_GID_ROCE_V1)) &&
	       view_shows(cli, node, pg, pg->v2, gid, vfab_gid_type_name(VFAB_GID_ROCE_V2));
}

/* After a delete: gone from the region, and the indices it had read empty. */
static int del_applied(const struct vfab_cli *cli, const char *node, struct port_gids *pg,
		       const uint8_t gid[16], int old_v1, int old_v2)
{
	static const uint8_t zero[16];
	const char *empty = vfab_gid_type_name(VFAB_GID_EMPTY);

	find_gid(pg, gid);
	if (pg->is_default)
		return 1;
	return pg->v1 < 0 && pg->v2 < 0 &&
	       (old_v1 < 0 || view_shows(cli, node, pg, old_v1, zero, empty)) &&
	       (old_v2 < 0 || view_shows(cli, node, pg, old_v2, zero, empty));
}

/*
 * Waits until every port shows the change (old[] holds a delete's former
 * indices, two per port). Returns the index of a port that did not, or -1.
 */
static int wait_applied(const struct vfab_cli *cli, const char *node, struct port_gids *pgs,
			int npg, int add, const uint8_t gid[16], const int *old)
{
	long long deadline = vfab_now_ms() + ADDR_APPLY_MS;
	const struct timespec pause = {0, ADDR_POLL_NS};
	int i;

	for (;;) {
		for (i = 0; i < npg; i++)
			if (add ? !add_applied(cli, node, &pgs[i], gid)
				: !del_applied(cli, node, &pgs[i], gid, old[2 * i], old[2 * i + 1]))
				break;
		if (i == npg || vfab_now_ms() >= deadline)
			return i == npg ? -1 : i;
		nanosleep(&pause, NULL);
	}
}

static void print_result(const char *node, const char *netdev, int add, const char *text,
			 const struct port_gids *pgs, int npg, const int *old)
{
	printf("%s %s: %s %s (", node, netdev, add ? "added" : "removed", text);
	if (npg == 0)
		printf("no HCA port on %s, no GID", netdev);
	for (int i = 0; i < npg; i++) {
		printf("%s%s port %u: ", i ? "; " : "", pgs[i].hca->name, pgs[i].port);
		if (pgs[i].is_default)
			printf("the default GID, index 0 and 1 stay");
		else if (add)
			printf("GID index %d RoCE v1, %d RoCE v2", pgs[i].v1, pgs[i].v2);
		else if (old[2 * i] >= 0)
			printf("GID index %d, %d now empty", old[2 * i], old[2 * i + 1]);
		else
			printf("had no GID for it");
	}
	printf(")\n");
}

/* The change's failure as a message and exit code. */
static int change_failed(const struct vfab_cli *cli, const struct addr_args *args,
			 const char *netdev, const char *text, int ret)
{
	if (namespace_failed(cli, args->node, ret))
		return VFAB_EXIT_FAIL;
	switch (ret) {
	case -ENODEV:
		fprintf(stderr, "vfab addr: %s has no netdev '%s'\n", args->node, netdev);
		return VFAB_EXIT_USAGE;
	case -EEXIST:
		fprintf(stderr, "vfab addr: %s %s already has %s\n", args->node, netdev, text);
		return VFAB_EXIT_FAIL;
	case -EADDRNOTAVAIL:
		fprintf(stderr, "vfab addr: %s %s has no address %s\n", args->node, netdev, text);
		return VFAB_EXIT_FAIL;
	default:
		fprintf(stderr, "vfab addr: cannot %s %s on %s %s: %s\n",
			args->add ? "add" : "delete", text, args->node, netdev, strerror(-ret));
		return ret == -EINVAL ? VFAB_EXIT_USAGE : VFAB_EXIT_FAIL;
	}
}

/*
 * t: the CLI's own topology (node, HCA and netdev names it acts on); r: the
 * region, read only for the GID tables it compares (docs/TRUST.md).
 */
static int change_addr(const struct vfab_cli *cli, const struct addr_args *args,
		       const struct vfab_region *t, const struct vfab_region *r)
{
	char text[VFAB_IFADDR_STR_LEN];
	struct port_gids pgs[8 * VFAB_MAX_PORTS];
	int old[2 * 8 * VFAB_MAX_PORTS], npg, ni, ret, late;
	const struct vfab_node *n;
	const char *netdev = args->netdev;
	uint8_t gid[16];

	ni = topo_node(t, args->node);
	if (ni < 0) {
		fprintf(stderr, "vfab addr: node %s is not in the config of fabric %s\n",
			args->node, cli->fabric);
		return VFAB_EXIT_FAIL;
	}
	n = &t->nodes[ni];
	if (!netdev && n->nhcas) {
		const struct vfab_port *p0 = &t->hcas[n->hcas[0]].ports[0];

		/* A shared HCA's port is on the host's PF; the pod's own netdev is net1. */
		netdev = p0->pod_netdev[0] ? p0->pod_netdev : p0->netdev;
	} else if (!netdev) {
		netdev = n->netdevs[0].name;
	}
	vfab_ifaddr_format(&args->a, text);
	addr_gid(&args->a, gid);
	npg = ports_on(t, r, n, netdev, gid, pgs, (int)(sizeof(pgs) / sizeof(pgs[0])));
	for (int i = 0; i < npg; i++) {
		find_gid(&pgs[i], gid);
		old[2 * i] = pgs[i].v1;
		old[2 * i + 1] = pgs[i].v2;
	}

	ret = vfab_node_addr_change(cli->fabric, args->node, netdev, args->add, &args->a);
	if (ret < 0)
		return change_failed(cli, args, netdev, text, ret);
	if (ret == 1) {
		/* The kernel keeps the address under another prefix: its GIDs stay. */
		printf("%s %s: removed %s (the address stays with another prefix length, and "
		       "with it its GIDs)\n",
		       args->node, netdev, text);
		return VFAB_EXIT_OK;
	}
	late = wait_applied(cli, args->node, pgs, npg, args->add, gid, old);
	if (late >= 0) {
		fprintf(stderr,
			"vfab addr: %s %s: %s %s, but %s port %u's GID table does not show "
			"it after %d ms; is vfabd running ('vfab status')?\n",
			args->node, netdev, args->add ? "added" : "removed", text,
			pgs[late].hca->name, pgs[late].port, ADDR_APPLY_MS);
		return VFAB_EXIT_FAIL;
	}
	print_result(args->node, netdev, args->add, text, pgs, npg, old);
	return VFAB_EXIT_OK;
}

int vfab_cmd_addr(struct vfab_cli *cli, int argc, char **argv)
{
	struct addr_args args;
	struct vfab_region *r, *t;
	char path[256];
	int first, rc;

	first = vfab_ops_options(cli, argc, argv, usage, &rc);
	if (first < 0)
		return rc;
	rc = parse_args(argc, argv, first, &args);
	if (rc)
		return rc;
	rc = vfab_cli_check_node(cli, "addr", args.node);
	if (rc)
		return rc;
	if (args.add < 0)
		return list_addrs(cli, args.node);
	rc = vfab_cli_topology(cli, "addr", &t);
	if (rc)
		return rc;
	rc = vfab_region_path(cli->fabric, path, sizeof(path));
	if (!rc)
		rc = vfab_region_open(path, &r);
	if (rc) {
		fprintf(stderr, "vfab addr: cannot map the region of fabric %s (%s): %s\n",
			cli->fabric, path, strerror(-rc));
		vfab_topology_private_free(t);
		return VFAB_EXIT_FAIL;
	}
	rc = change_addr(cli, &args, t, r);
	vfab_region_close(r);
	vfab_topology_private_free(t);
	return rc;
}
