/* SPDX-License-Identifier: MIT */
/*
 * Registration with libibverbs and the device objects: a vfab HCA is found
 * through its sysfs view, whose device/vfab file names the shared region
 * and the HCA's index in it. The region is mapped once per process and
 * shared by every device and context that lives in it.
 */
#include "provider/vfab.h"
#include "base/locator.h"
#include "fabric/region_map.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vfab_rmap *maps;

/*
 * A fabric that went down and came up again has a new region file under the
 * same path: only a mapping of the same file is shared. A new mapping gets
 * its FIFO directory from rundir, the locator's.
 */
static struct vfab_rmap *rmap_get(const char *path, const char *rundir)
{
	struct vfab_region_map rm;
	struct vfab_rmap *m;
	struct stat st;
	int rc;

	if (stat(path, &st) < 0)
		return NULL;
	pthread_mutex_lock(&map_lock);
	for (m = maps; m; m = m->next) {
		if (!strcmp(m->path, path) && m->dev == st.st_dev && m->ino == st.st_ino) {
			m->refcnt++;
			goto out;
		}
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		goto out;
	snprintf(m->path, sizeof(m->path), "%s", path);
	rc = vfab_region_open(path, &m->r);
	if (rc) {
		vfab_dbg("cannot map region %s: %s", path, strerror(-rc));
		free(m);
		m = NULL;
		goto out;
	}
	rc = vfab_fifo_attach(m->r, rundir);
	if (rc) {
		vfab_dbg("no FIFO directory in %s: %s", rundir, strerror(-rc));
		vfab_region_close(m->r);
		free(m);
		m = NULL;
		goto out;
	}
	rc = vfab_ktab_open(rundir, &m->k);
	if (!rc)
		rc = vfab_region_map_get(m->r, &rm);
	if (rc) {
		vfab_dbg("no object table in %s: %s", rundir, strerror(-rc));
		vfab_ktab_close(m->k);
		vfab_fifo_detach(m->r);
		vfab_region_close(m->r);
		free(m);
		m = NULL;
		goto out;
	}
	m->map_bytes = rm.bytes;
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	m->refcnt = 1;
	m->next = maps;
	maps = m;
out:
	pthread_mutex_unlock(&map_lock);
	return m;
}

static void rmap_put(struct vfab_rmap *m)
{
	struct vfab_rmap **pp;

	pthread_mutex_lock(&map_lock);
	if (--m->refcnt == 0) {
		for (pp = &maps; *pp; pp = &(*pp)->next) {
			if (*pp == m) {
				*pp = m->next;
				break;
			}
		}
		vfab_fifo_detach(m->r);
		vfab_ktab_close(m->k);
		vfab_region_close(m->r);
		free(m);
	}
	pthread_mutex_unlock(&map_lock);
}

static int vfab_create_channel_op(struct ibv_context *ctx, struct ibv_comp_channel **out)
{
	return vfab_create_channel(ctx, out);
}

static int vfab_destroy_channel_op(struct ibv_comp_channel *ch)
{
	return vfab_destroy_channel(ch);
}

static struct vabi_device *vfab_alloc_device(struct vabi_sysfs_dev *sysfs)
{
	struct vfab_locator loc;
	struct vfab_device *dev;
	char text[1024];
	struct vfab_rmap *m;
	int n;

	n = ibv_read_ibdev_sysfs_file(text, sizeof(text), sysfs, "device/vfab");
	if (n <= 0) {
		vfab_dbg("%s: no device/vfab locator", sysfs->ibdev_name);
		return NULL;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	/*
	 * The run dir every file of the provider lives in comes from the
	 * locator (root's, base/locator.h), never from the region.
	 */
	if (vfab_locator_parse(text, VFAB_MAX_HCAS, &loc)) {
		vfab_dbg("%s: malformed device/vfab locator", sysfs->ibdev_name);
		goto fail;
	}
	dev->hca = loc.hca;
	snprintf(dev->rundir, sizeof(dev->rundir), "%s", loc.rundir);
	m = rmap_get(loc.region, dev->rundir);
	if (!m)
		goto fail;
	if (!atomic_load(&m->r->ready) || dev->hca >= m->r->nhcas || !m->r->hcas[dev->hca].in_use) {
		vfab_dbg("%s: HCA %u is not in region %s", sysfs->ibdev_name, dev->hca, loc.region);
		rmap_put(m);
		goto fail;
	}
	snprintf(dev->region_path, sizeof(dev->region_path), "%s", loc.region);
	dev->map = m;
	dev->region = m->r;
	dev->create_channel = vfab_create_channel_op;
	dev->destroy_channel = vfab_destroy_channel_op;
	return &dev->vdev;
fail:
	free(dev);
	return NULL;
}

static void vfab_uninit_device(struct vabi_device *vdev)
{
	struct vfab_device *dev = (struct vfab_device *)vdev;

	if (dev->map)
		rmap_put(dev->map);
	free(dev);
}

/*
 * An HCA's device/modalias is a ConnectX-6's PCI one with lower-case hex
 * digits (docs/DESIGN.md "PCI view"): libmlx5, linked by perftest, pyverbs
 * and UCX, registers before the providers of /etc/libibverbs.d and matches
 * the kernel's upper-case form, so only this pattern may match it. The
 * device/vfab locator must be there too: no real device is ever taken.
 */
static const struct vabi_match_ent vfab_match_table[] = {
    {.u.modalias = "pci:v000015b3d0000101bsv*", .kind = VABI_MATCH_MODALIAS},
    {.kind = VABI_MATCH_SENTINEL},
};

static bool vfab_match_device(struct vabi_sysfs_dev *sysfs)
{
	/* libibverbs fails a read that does not fit: room for the whole locator. */
	char text[1024];

	return sysfs->match &&
	       ibv_read_ibdev_sysfs_file(text, sizeof(text), sysfs, "device/vfab") > 0;
}

static const struct vabi_device_ops vfab_dev_ops = {
    .name = VFAB_DRIVER_NAME,
    .match_min_abi_version = 1,
    .match_max_abi_version = 1,
    .match_table = vfab_match_table,
    .match_device = vfab_match_device,
    .alloc_device = vfab_alloc_device,
    .uninit_device = vfab_uninit_device,
    .alloc_context = vfab_alloc_context,
};

static void __attribute__((constructor)) vfab_register(void)
{
	vabi_register_driver(&vfab_dev_ops);
}
