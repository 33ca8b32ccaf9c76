/* SPDX-License-Identifier: MIT */
/*
 * Names in control requests: a node id, "node/hca[/port]" (HCA names repeat
 * across nodes, mlx5_0 everywhere, so the node is always part of it), or a
 * link name as the topology gives it ("node0/mlx5_0/1/up", "leaf0/down",
 * "node0/loopback").
 */

#include "vfabd_target.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int vfabd_find_node(const struct vfab_region *r, const char *id)
{
	for (uint32_t i = 0; i < r->nnodes && i < VFAB_MAX_NODES; i++)
		if (r->nodes[i].in_use && strcmp(r->nodes[i].id, id) == 0)
			return (int)i;
	return -ENOENT;
}

int vfabd_parse_port(const struct vfab_region *r, const char *s, uint32_t *hca, uint32_t *port)
{
	char buf[3 * VFAB_NAME_MAX], *hname, *pname, *end;
	const struct vfab_node *n;
	int node;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	hname = strchr(buf, '/');
	if (!hname)
		return -EINVAL;
	*hname++ = '\0';
	pname = strchr(hname, '/');
	if (pname)
		*pname++ = '\0';
	node = vfabd_find_node(r, buf);
	if (node < 0)
		return node;
	n = &r->nodes[node];
	for (uint32_t i = 0; i < n->nhcas && i < 8; i++) {
		uint32_t h = n->hcas[i];

		if (h >= VFAB_MAX_HCAS || strcmp(r->hcas[h].name, hname) != 0)
			continue;
		*hca = h;
		*port = 0;
		if (!pname)
			return 0;
		errno = 0;
		unsigned long p = strtoul(pname, &end, 10);

		if (!*pname || *end || errno)
			return -EINVAL;
		if (p < 1 || p > r->hcas[h].nports)
			return -ENOENT;
		*port = (uint32_t)p;
		return 0;
	}
	return -ENOENT;
}

int vfabd_parse_links(const struct vfab_region *r, const char *s, uint32_t *links, size_t max,
		      int32_t *port_hca, uint32_t *port_no)
{
	uint32_t hca, port, first, last;
	size_t n = 0;
	int rc;

	*port_hca = -1;
	*port_no = 0;
	/* A link name first: "node0/loopback" would otherwise read as an HCA. */
	for (uint32_t i = 0; i < r->nlinks && i < VFAB_MAX_LINKS; i++) {
		if (!r->links[i].in_use || strcmp(r->links[i].name, s) != 0)
			continue;
		if (!max)
			return -ENOSPC;
		links[0] = i;
		return 1;
	}
	rc = vfabd_parse_port(r, s, &hca, &port);
	if (rc)
		return -ENOENT; /* neither a link nor a port by that name */
	first = port ? port : 1;
	last = port ? port : r->hcas[hca].nports;
	for (uint32_t p = first; p <= last; p++) {
		const struct vfab_port *pt = &r->hcas[hca].ports[p - 1];

		if (n + 2 > max)
			return -ENOSPC;
		links[n++] = pt->link_up;
		links[n++] = pt->link_down;
	}
	*port_hca = (int32_t)hca;
	*port_no = port;
	return (int)n;
}

int vfabd_parse_number(const char *value, double lo, double hi, double *out)
{
	char *end;
	double v;

	/*
	 * Decimal only, as the usage says (bw=25, lat=0.5, loss=1e-3): strtod
	 * alone also takes hex ("0x10" is 16), "inf", "nan" and leading blanks.
	 */
	if (!((*value >= '0' && *value <= '9') || *value == '.') ||
	    value[strspn(value, "0123456789.eE+-")] != '\0')
		return -EINVAL;
	errno = 0;
	v = strtod(value, &end);
	if (!*value || *end || errno || !isfinite(v) || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}
