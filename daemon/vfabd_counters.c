/* SPDX-License-Identifier: MIT */
/*
 * Live port counters: every tick the region's per-port counters (kept by the
 * provider's data path, data in 4-byte words as the kernel reports them) are
 * compared with what was last written to the node's sysfs view, and only the
 * files whose value changed are replaced. The cache starts at zero because
 * the views are written from a region whose counters are still zero (no
 * process can open an HCA before its node exists); an idle fabric costs no
 * file-system writes at all. The values come from the region (any user may
 * change them: they are only printed); the files they go to are named by
 * vfabd's own topology (d->t) and opened below the run dir without
 * following links.
 */

#include "vfabd_counters.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vfabd.h"
#include "vfabd_log.h"

#include "netns/sysfs_view.h"

struct vfabd_port_cache {
	uint64_t v[VFAB_NCOUNTERS];
};

int vfabd_counters_init(struct vfabd *d)
{
	d->counters.cache =
	    calloc((size_t)VFAB_MAX_HCAS * VFAB_MAX_PORTS, sizeof(*d->counters.cache));
	return d->counters.cache ? 0 : -ENOMEM;
}

void vfabd_counters_free(struct vfabd *d)
{
	free(d->counters.cache);
	d->counters.cache = NULL;
}

/* Writes the changed counters of one port; a port without a view waits for one. */
static void update_port(struct vfabd *d, uint32_t hca, uint32_t port)
{
	struct vfabd_port_cache *cache = &d->counters.cache[hca * VFAB_MAX_PORTS + port - 1];
	struct vfab_port_counters c;
	uint64_t v[VFAB_NCOUNTERS];
	int dirs[2] = {-1, -1};

	vfab_port_counters_sum(d->r, hca, port, &c);
	vfab_sysfs_counter_values(&c, d->link.downed[hca][port - 1], v);
	/*
	 * hw_counters/ first: a reader that sees a counters/ file of this tick
	 * then finds the hw counters read with it already written.
	 */
	for (int n = 0; n < 2 * VFAB_NCOUNTERS; n++) {
		int i = n % VFAB_NCOUNTERS, hw = n < VFAB_NCOUNTERS;
		int *dir = &dirs[hw];
		char text[32];
		int rc;

		if (vfab_sysfs_counter_is_hw(i) != hw || v[i] == cache->v[i])
			continue;
		if (*dir == -1) {
			*dir = vfab_sysfs_port_open(
			    d->rundir_fd, d->t->nodes[d->t->hcas[hca].node].id,
			    d->t->hcas[hca].name, port, hw ? "hw_counters" : "counters");
			if (*dir < 0) {
				if (*dir != -ENOENT)
					vfabd_log("counters of HCA %u port %u: %s", hca, port,
						  strerror(-*dir));
				*dir = -2; /* tried: no more attempts this tick */
			}
		}
		if (*dir < 0)
			continue;
		snprintf(text, sizeof(text), "%llu\n", (unsigned long long)v[i]);
		rc = vfab_sysfs_replace(*dir, vfab_sysfs_counter_names[i], text);
		if (rc == 0)
			cache->v[i] = v[i];
	}
	for (int k = 0; k < 2; k++)
		if (dirs[k] >= 0)
			close(dirs[k]);
}

void vfabd_counters_tick(struct vfabd *d)
{
	if (!d->counters.cache)
		return;
	/* Which ports exist is vfabd's own topology's to say, not the region's. */
	for (uint32_t h = 0; h < d->t->nhcas && h < VFAB_MAX_HCAS; h++) {
		if (!d->t->hcas[h].in_use)
			continue;
		for (uint32_t p = 1; p <= d->t->hcas[h].nports && p <= VFAB_MAX_PORTS; p++)
			update_port(d, h, p);
	}
}
