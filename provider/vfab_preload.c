/* SPDX-License-Identifier: MIT */
/*
 * libvfab-preload.so, enabled in every node through its /etc/ld.so.preload.
 * libibverbs' ibv_create_comp_channel always asks the kernel, which a vfab
 * node has not got, so this library answers it for vfab contexts through the
 * provider's device object and forwards everything else to libibverbs. It
 * links neither libibverbs nor the provider: a program that never uses verbs
 * never calls into it.
 */
#include "provider/vfab_preload.h"
#include "provider/vfab_device.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

void *vfab_preload_sibling(const char *lib)
{
	Dl_info info;
	char path[4096];
	const char *slash;

	if (!dladdr((void *)vfab_preload_sibling, &info) || !info.dli_fname)
		return NULL;
	slash = strrchr(info.dli_fname, '/');
	if (!slash)
		return NULL;
	snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname, lib);
	return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

typedef struct ibv_comp_channel *(*create_fn)(struct ibv_context *ctx);
typedef int (*destroy_fn)(struct ibv_comp_channel *ch);

static struct vfab_device *vfab_device_of(struct ibv_context *ctx)
{
	const struct vabi_device *d;

	if (!ctx || !ctx->device)
		return NULL;
	d = (const struct vabi_device *)ctx->device;
	if (!d->ops || !d->ops->name || strcmp(d->ops->name, VFAB_DRIVER_NAME) != 0)
		return NULL;
	return (struct vfab_device *)ctx->device;
}

/* libibverbs' own entry point; the references we interpose carry IBVERBS_1.0. */
static void *next_symbol(const char *name)
{
	return dlvsym(RTLD_NEXT, name, "IBVERBS_1.0");
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *ctx)
{
	struct vfab_device *dev = vfab_device_of(ctx);
	struct ibv_comp_channel *ch = NULL;
	create_fn next;
	int rc;

	if (dev) {
		rc = dev->create_channel(ctx, &ch);
		if (rc) {
			errno = rc;
			return NULL;
		}
		return ch;
	}
	next = (create_fn)next_symbol("ibv_create_comp_channel");
	if (!next) {
		errno = ENOSYS;
		return NULL;
	}
	return next(ctx);
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	struct vfab_device *dev = ch ? vfab_device_of(ch->context) : NULL;
	destroy_fn next;

	/* The magic right before the public struct marks a provider channel. */
	if (dev &&
	    ((const struct vfab_channel_head *)((const char *)ch - sizeof(uint64_t)))->magic ==
		VFAB_CHANNEL_MAGIC)
		return dev->destroy_channel(ch);
	next = (destroy_fn)next_symbol("ibv_destroy_comp_channel");
	if (!next)
		return ENOSYS;
	return next(ch);
}
