/* SPDX-License-Identifier: MIT */
#include "cm/cm_far.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "base/paths.h"
#include "cm/cm_dir.h"
#include "fabric/reach.h"

#define CTXS 16 /* contexts remembered: as many as the agent opens (cm_agent.c) */

/* What a context's fabric is, asked once: its HCA index and region (NULL: no wire). */
static struct {
	struct ibv_context *ctx;
	uint32_t hca;
	struct vfab_region *r;
	char region[sizeof(((struct vfab_locator *)0)->region)];
} seen[CTXS];
static unsigned nseen;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The region of ctx's fabric when vfabd carries RoCE to other machines; else NULL. */
static struct vfab_region *wired(struct ibv_context *ctx, uint32_t *hca)
{
	struct vfab_locator loc;
	struct vfab_region *r = NULL;
	char sock[600];

	for (unsigned i = 0; i < nseen; i++)
		if (seen[i].ctx == ctx) {
			*hca = seen[i].hca;
			return seen[i].r;
		}
	if (vfab_cm_dir_locator(ibv_get_device_name(ctx->device), &loc) || loc.hca >= VFAB_MAX_HCAS)
		return NULL;
	for (unsigned i = 0; i < nseen && !r; i++)
		if (!strcmp(seen[i].region, loc.region))
			r = seen[i].r;
	/* Mapped once for the process's life, as the provider maps it. */
	if (!r && !vfab_wire_sock_path(sock, sizeof(sock), loc.rundir) && !access(sock, F_OK) &&
	    vfab_region_open(loc.region, &r))
		r = NULL;
	if (nseen < CTXS) {
		seen[nseen] = (typeof(seen[0])){.ctx = ctx, .hca = loc.hca, .r = r};
		memcpy(seen[nseen++].region, loc.region, sizeof(loc.region));
	}
	*hca = loc.hca;
	return r;
}

bool vfab_cm_far(struct ibv_context *ctx, uint8_t port, uint8_t sgid_index, const uint8_t dgid[16])
{
	struct fabric_reach fr;
	struct vfab_region *r;
	uint32_t hca;
	bool far = false;

	pthread_mutex_lock(&lock);
	r = wired(ctx, &hca);
	if (r)
		far = fabric_reach_by_index(r, hca, port, sgid_index, dgid, &fr) == -ENOENT;
	pthread_mutex_unlock(&lock);
	return far;
}
