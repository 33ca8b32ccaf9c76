/* SPDX-License-Identifier: MIT */
/*
 * The part of the provider's device object that the preload library
 * (vfab_preload.c) relies on. The preload library never links the provider
 * nor libibverbs: it finds these two entry points at a fixed offset behind
 * libibverbs' verbs_device, so the layout below is a contract between the
 * two shared objects and must only ever grow at its end.
 */
#ifndef VFAB_DEVICE_H
#define VFAB_DEVICE_H

#include "provider/verbs_abi.h"

#include <stddef.h>
#include <stdint.h>

#define VFAB_DRIVER_NAME "vfab"

/* Sits right before the public struct of every channel the provider makes. */
#define VFAB_CHANNEL_MAGIC 0x7666616263686e31ull /* "vfabchn1" */

struct vfab_region;
struct vfab_rmap;

struct vfab_device {
	struct vabi_device vdev; /* first: libibverbs casts between the two */
	/* Both return 0 or an errno value. */
	int (*create_channel)(struct ibv_context *ctx, struct ibv_comp_channel **out);
	int (*destroy_channel)(struct ibv_comp_channel *ch);
	/* Provider-private from here on; the preload library ignores it. */
	struct vfab_rmap *map; /* this process's mapping of the region */
	struct vfab_region *region;
	uint32_t hca; /* index in region->hcas[] */
	char region_path[256];
	char rundir[256];
};

/* The offsets the preload library was built against. */
#define VFAB_DEVICE_CREATE_CHANNEL_OFF 712
#define VFAB_DEVICE_DESTROY_CHANNEL_OFF 720

_Static_assert(offsetof(struct vfab_device, create_channel) == VFAB_DEVICE_CREATE_CHANNEL_OFF,
	       "vfab_device.create_channel offset is part of the preload contract");
_Static_assert(offsetof(struct vfab_device, destroy_channel) == VFAB_DEVICE_DESTROY_CHANNEL_OFF,
	       "vfab_device.destroy_channel offset is part of the preload contract");

/* A completion channel made by the provider: the magic lets the preload
 * library tell it from one libibverbs made. */
struct vfab_channel_head {
	uint64_t magic;
	struct ibv_comp_channel ch;
};
_Static_assert(offsetof(struct vfab_channel_head, ch) == sizeof(uint64_t),
	       "the magic must sit right before the public struct");

#endif /* VFAB_DEVICE_H */
