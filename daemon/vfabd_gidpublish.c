/* SPDX-License-Identifier: MIT */
/*
 * A port's new GID table goes out in three places: the region (what the
 * providers resolve and answer ibv_query_gid from), the node's sysfs view
 * (what NCCL, perftest and the seed's grep one-liners read), and an
 * IBV_EVENT_GID_CHANGE on every context of the HCA that registered its async
 * FIFO, as the kernel's GID cache dispatches after each change.
 *
 * The region's readers take no lock. After a runtime change gids[i] is the
 * entry of index i (holes are VFAB_GID_EMPTY), so an entry that stays is
 * never rewritten and a reader only races with the entries that change:
 * those are emptied first, filled, and given their type last; the count
 * covers old and new entries while that happens; gid_gen moves at the end
 * and sends every cached resolution (provider/vfab_attempt.c) back to the
 * table.
 */

#include "vfabd_gidpublish.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vfabd.h"
#include "vfabd_events.h"
#include "vfabd_log.h"

#include "fabric/gid.h"
#include "netns/sysfs_view.h"

/* The entry of index idx in the region's current layout (NULL: empty). */
static const struct vfab_gid *entry_at(const struct vfab_port *p, uint32_t idx)
{
	uint32_t n = p->ngids < VFAB_PORT_GIDS ? p->ngids : VFAB_PORT_GIDS;

	for (uint32_t i = 0; i < n; i++)
		if (p->gids[i].index == idx && p->gids[i].type != VFAB_GID_EMPTY)
			return &p->gids[i];
	return NULL;
}

static bool same_gid(const struct vfab_gid *a, const struct vfab_gid *b)
{
	if (!a || !b)
		return !a && !b;
	return a->type == b->type && !memcmp(a->raw, b->raw, 16);
}

/* Moves the region's table to index-addressed layout (position == index). */
static void region_update(struct vfab_port *p, const struct vfab_gid *t, uint32_t len)
{
	uint32_t old = p->ngids < VFAB_PORT_GIDS ? p->ngids : VFAB_PORT_GIDS;
	uint32_t i;

	if (len > old)
		__atomic_store_n(&p->ngids, len, __ATOMIC_RELEASE);
	for (i = 0; i < VFAB_PORT_GIDS; i++) {
		struct vfab_gid *g = &p->gids[i];
		const struct vfab_gid *want = t[i].type != VFAB_GID_EMPTY ? &t[i] : NULL;
		bool cur_ok = g->type != VFAB_GID_EMPTY && g->index == i;

		if (cur_ok && want && same_gid(g, want)) {
			g->prefix = want->prefix;
			continue;
		}
		if (!want && g->type == VFAB_GID_EMPTY)
			continue;
		__atomic_store_n(&g->type, (uint8_t)VFAB_GID_EMPTY, __ATOMIC_RELEASE);
		memcpy(g->raw, want ? want->raw : t[i].raw, 16);
		g->prefix = want ? want->prefix : 0;
		g->index = i;
		if (want)
			__atomic_store_n(&g->type, want->type, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&p->ngids, len, __ATOMIC_RELEASE);
	atomic_fetch_add_explicit(&p->gid_gen, 1, memory_order_release);
}

static int view_update(struct vfabd *d, uint32_t hca, uint32_t port, const bool *changed,
		       const struct vfab_gid *t)
{
	const struct vfab_hca *h = &d->t->hcas[hca];
	const char *netdev = h->ports[port - 1].netdev;
	struct vfab_sysfs_gid_dirs dirs;
	int rc =
	    vfab_sysfs_gid_dirs_open(d->rundir_fd, d->t->nodes[h->node].id, h->name, port, &dirs);

	for (uint32_t i = 0; !rc && i < VFAB_PORT_GIDS; i++)
		if (changed[i])
			rc = vfab_sysfs_replace_gid(
			    &dirs, i, t[i].type != VFAB_GID_EMPTY ? &t[i] : NULL, netdev);
	vfab_sysfs_gid_dirs_close(&dirs); /* a failed open left every fd at -1 */
	return rc;
}

int vfabd_gid_publish(struct vfabd *d, uint32_t hca, uint32_t port, const struct vfab_gid *t,
		      uint32_t len)
{
	const struct vfab_hca *h = &d->t->hcas[hca];
	struct vfab_port *p = &d->r->hcas[hca].ports[port - 1];
	bool changed[VFAB_PORT_GIDS] = {false};
	int n = 0, rc, told;

	for (uint32_t i = 0; i < VFAB_PORT_GIDS; i++) {
		changed[i] = !same_gid(entry_at(p, i), t[i].type != VFAB_GID_EMPTY ? &t[i] : NULL);
		n += changed[i];
	}
	if (!n) {
		/* An address re-added with another prefix length: the routing rules see it. */
		for (uint32_t i = 0; i < VFAB_PORT_GIDS; i++)
			if (t[i].type != VFAB_GID_EMPTY && entry_at(p, i)->prefix != t[i].prefix) {
				region_update(p, t, len);
				break;
			}
		return 0;
	}
	region_update(p, t, len);
	rc = view_update(d, hca, port, changed, t);
	if (rc)
		vfabd_log("%s/%s port %u: GID view not updated: %s", d->t->nodes[h->node].id,
			  h->name, port, strerror(-rc));
	told = vfabd_raise_port_event(d, hca, port, IBV_EVENT_GID_CHANGE);
	vfabd_log("%s/%s port %u (%s): GID table changed at %d index(es), now %u entries; "
		  "%d context(s) notified",
		  d->t->nodes[h->node].id, h->name, port, h->ports[port - 1].netdev, n, len, told);
	return rc ? rc : n;
}
