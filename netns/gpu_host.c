/* SPDX-License-Identifier: MIT */
/*
 * The host's NVIDIA GPUs (gpu_plan.h): what the nvidia driver lists under
 * /proc/driver/nvidia/gpus/<bus id>/ (its minor in `information`), matched
 * with the PCI view's GPUs (pci_view.h: the one enumeration of host GPUs in
 * /sys), or, where the driver says nothing (a container that only got the
 * device nodes), the /dev/nvidia<N> character devices.
 */
#include "netns/gpu_plan.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fsutil.h"
#include "netns/pci_path.h"
#include "netns/pci_view.h"

/* "Device Minor: 3" in the driver's information file. */
int vfab_nvidia_info_minor(const char *path, uint32_t *minor)
{
	char line[256];
	FILE *f = fopen(path, "re");
	int ret = -ENODATA;

	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f)) {
		unsigned long v;
		char *end;

		if (strncmp(line, "Device Minor:", 13) != 0)
			continue;
		v = strtoul(line + 13, &end, 10);
		if (end != line + 13 && v <= VFAB_GPU_MAX_MINOR) {
			*minor = (uint32_t)v;
			ret = 0;
		}
	}
	fclose(f);
	return ret;
}

static int by_busid(const void *a, const void *b)
{
	return strcmp(((const struct vfab_host_gpu *)a)->busid,
		      ((const struct vfab_host_gpu *)b)->busid);
}

static int by_minor(const void *a, const void *b)
{
	uint32_t x = ((const struct vfab_host_gpu *)a)->minor;
	uint32_t y = ((const struct vfab_host_gpu *)b)->minor;

	return x < y ? -1 : x > y;
}

/* The driver's GPUs; bus ids as the kernel writes them, lower-case, fixed width. */
static int scan_proc(const char *procroot, struct vfab_host_gpus *h)
{
	char dir[4096], info[4096];
	struct dirent *de;
	DIR *d;

	if (vfab_pathf(dir, sizeof(dir), "%s/" VFAB_NVIDIA_PROC_GPUS, procroot))
		return -ENAMETOOLONG;
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d)) && h->n < VFAB_GPU_MAX) {
		struct vfab_host_gpu *g = &h->gpu[h->n];
		struct vfab_pci_addr a;

		if (vfab_pci_parse_bdf(de->d_name, &a) ||
		    vfab_pathf(info, sizeof(info), "%s/%s/information", dir, de->d_name) ||
		    vfab_nvidia_info_minor(info, &g->minor))
			continue;
		vfab_pci_addr_text(&a, g->busid);
		h->n++;
	}
	closedir(d);
	qsort(h->gpu, h->n, sizeof(h->gpu[0]), by_busid);
	return 0;
}

/* nvidia0, nvidia1, ...: not nvidiactl, nvidia-uvm, nvidia-modeset, nvidia-caps. */
int vfab_dev_gpus_scan(const char *devdir, struct vfab_host_gpus *h)
{
	char path[4096];
	struct dirent *de;
	struct stat st;
	DIR *d;

	memset(h, 0, sizeof(*h));
	d = opendir(devdir);
	if (!d)
		return 0;
	while ((de = readdir(d)) && h->n < VFAB_GPU_MAX) {
		const char *num = de->d_name + strlen(VFAB_NVIDIA_DEV_PREFIX);
		unsigned long v;
		char *end;

		if (strncmp(de->d_name, VFAB_NVIDIA_DEV_PREFIX, strlen(VFAB_NVIDIA_DEV_PREFIX)) ||
		    !isdigit((unsigned char)*num))
			continue;
		v = strtoul(num, &end, 10);
		if (*end || v > VFAB_GPU_MAX_MINOR ||
		    vfab_pathf(path, sizeof(path), "%s/%s", devdir, de->d_name) ||
		    lstat(path, &st) || !S_ISCHR(st.st_mode))
			continue;
		h->gpu[h->n].minor = (uint32_t)v;
		h->gpu[h->n].busid[0] = '\0';
		h->n++;
	}
	closedir(d);
	qsort(h->gpu, h->n, sizeof(h->gpu[0]), by_minor);
	return 0;
}

/* Each GPU's place among the PCI view's (hcas[].gpu), by bus id. */
static int match_pci(const char *sysroot, struct vfab_host_gpus *h)
{
	struct vfab_pci_host_fn *fns = calloc(VFAB_PCI_MAX_GPUS, sizeof(*fns));
	uint32_t nfns;

	if (!fns)
		return -ENOMEM;
	nfns = vfab_pci_host_gpus(sysroot, fns, VFAB_PCI_MAX_GPUS);
	for (uint32_t i = 0; i < h->n; i++) {
		h->gpu[i].pci_index = -1;
		for (uint32_t k = 0; k < nfns && h->gpu[i].busid[0]; k++) {
			char text[16];

			vfab_pci_addr_text(&fns[k].addr, text);
			if (strcmp(text, h->gpu[i].busid) == 0)
				h->gpu[i].pci_index = (int)k;
		}
	}
	free(fns);
	return 0;
}

int vfab_host_gpus_scan(const char *sysroot, const char *procroot, const char *devdir,
			struct vfab_host_gpus *h)
{
	int ret;

	memset(h, 0, sizeof(*h));
	ret = scan_proc(procroot, h);
	if (ret == 0 && h->n == 0)
		ret = vfab_dev_gpus_scan(devdir, h);
	if (ret == 0)
		ret = match_pci(sysroot, h);
	for (uint32_t i = 1; ret == 0 && i < h->n; i++)
		if (h->gpu[i].minor < h->gpu[i - 1].minor)
			h->minors_unordered = true;
	return ret;
}
