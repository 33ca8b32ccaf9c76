/* SPDX-License-Identifier: MIT */
/*
 * The synthetic PCI functions of a node (pci_view.h): the files the kernel
 * has for a PCIe function and that NCCL (class, link speed/width, numa_node,
 * subsystem -> .../bus/pci), hwloc (config space, local_cpus), lspci and
 * ibdev2netdev-style scripts (net/, resource) read.
 */
#include "netns/pci_view.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/locator.h"
#include "base/paths.h"
#include "netns/pci_path.h"
#include "netns/sysfs_view.h"

#define CONFIG_SIZE 256
#define PCIE_CAP 0x40 /* where the PCI Express capability sits in config space */
#define CLASS_BRIDGE 0x060400
#define CLASS_ETHERNET 0x020000

/* What each kind of synthetic function says it is. */
struct ids {
	uint16_t vendor, device, subvendor, subdevice;
	uint32_t class_code;
	uint8_t revision;
	uint8_t port_type; /* PCIe capability: 0 endpoint, 4 root port, 5 upstream, 6 downstream */
	const char *driver;
};

static const struct ids *kind_ids(uint8_t kind)
{
	/* Generic bridges no tool special-cases: an Intel root port, a PLX switch. */
	static const struct ids root = {0x8086,	      0x352a, 0x8086, 0x0000,
					CLASS_BRIDGE, 0x04,   4,      "pcieport"};
	static const struct ids up = {0x10b5,	    0x8796, 0x10b5, 0x0000,
				      CLASS_BRIDGE, 0xab,   5,	    "pcieport"};
	static const struct ids down = {0x10b5,	      0x8796, 0x10b5, 0x0000,
					CLASS_BRIDGE, 0xab,   6,      "pcieport"};
	static const struct ids hca = {VFAB_PCI_VENDOR_MELLANOX,
				       VFAB_PCI_DEVICE_CX6,
				       VFAB_PCI_VENDOR_MELLANOX,
				       VFAB_PCI_SUBSYS_CX6,
				       CLASS_ETHERNET,
				       0x00,
				       0,
				       VFAB_SYSFS_DRIVER};

	switch (kind) {
	case VFAB_PCI_ROOT_PORT:
		return &root;
	case VFAB_PCI_SWITCH_UP:
		return &up;
	case VFAB_PCI_SWITCH_DOWN:
		return &down;
	default:
		return &hca;
	}
}

static int putf(const char *dir, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Replaced, not written through: a view written again starts from new files. */
static int put_bytes(const char *dir, const char *name, const void *data, size_t len, mode_t mode)
{
	char path[4096];

	if (vfab_pathf(path, sizeof(path), "%s/%s", dir, name))
		return -ENAMETOOLONG;
	if (unlink(path) && errno != ENOENT)
		return -errno;
	return vfab_write_file(path, data, len, mode);
}

static int putf(const char *dir, const char *name, const char *fmt, ...)
{
	char text[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(text))
		return -EOVERFLOW;
	return put_bytes(dir, name, text, (size_t)n, 0444);
}

/* dir/name -> the path `to` (relative to the sysfs root) seen from `from`. */
static int link_rel(const char *dir, const char *from, const char *name, const char *to)
{
	char path[4096], target[4096];
	int ret = vfab_pci_rel_link(from, to, target, sizeof(target));

	if (ret)
		return ret;
	if (vfab_pathf(path, sizeof(path), "%s/%s", dir, name))
		return -ENAMETOOLONG;
	if (unlink(path) && errno != ENOENT)
		return -errno;
	return symlink(target, path) ? -errno : 0;
}

/* The node's CPUs as every synthetic function states them. */
struct locality {
	char mask[VFAB_CPUS_MAX / 32 * 9 + 1];
	char list[4096];
	int numa;
};

/*
 * The kernel prints a CPU mask as one 32-bit word per 32 possible CPUs:
 * devices/system/cpu/possible ("0-127") says how many.
 */
static unsigned possible_cpu_words(const char *sysroot)
{
	char path[4096], text[256];
	struct vfab_cpus possible;
	int last;

	if (vfab_pathf(path, sizeof(path), "%s/devices/system/cpu/possible", sysroot) ||
	    vfab_read_file(path, text, sizeof(text)) <= 0)
		return 1;
	text[strcspn(text, "\n")] = '\0';
	if (vfab_cpus_parse(text, &possible))
		return 1;
	last = vfab_cpus_nth(&possible, vfab_cpus_count(&possible) - 1);
	return last < 0 ? 1 : (unsigned)last / 32 + 1;
}

/* The NUMA node of a CPU (its nodeN entry in sysfs), -1 when none says. */
static int cpu_numa_node(const char *sysroot, int cpu)
{
	char path[4096];
	struct dirent *de;
	int node = -1;
	DIR *d;

	if (cpu < 0 || vfab_pathf(path, sizeof(path), "%s/devices/system/cpu/cpu%d", sysroot, cpu))
		return -1;
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)) && node < 0)
		if (strncmp(de->d_name, "node", 4) == 0 && de->d_name[4] >= '0' &&
		    de->d_name[4] <= '9')
			node = atoi(de->d_name + 4);
	closedir(d);
	return node;
}

/*
 * The HCA is "close" to the node's own cores (UCX local_cpus, hwloc, NCCL
 * numa_node), and so is every bridge above it.
 */
static int locality_of(const struct vfab_region *r, uint32_t node, const char *sysroot,
		       struct locality *loc)
{
	const struct vfab_cpus *cpus = &r->nodes[node].cpus;

	if (vfab_cpus_format_mask(cpus, possible_cpu_words(sysroot), loc->mask,
				  sizeof(loc->mask)) ||
	    vfab_cpus_format_list(cpus, loc->list, sizeof(loc->list)))
		return -EOVERFLOW;
	loc->numa = cpu_numa_node(sysroot, vfab_cpus_nth(cpus, 0));
	return 0;
}

static void put16(uint8_t *c, unsigned off, uint16_t v)
{
	c[off] = (uint8_t)v;
	c[off + 1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *c, unsigned off, uint32_t v)
{
	put16(c, off, (uint16_t)v);
	put16(c, off + 2, (uint16_t)(v >> 16));
}

/* BAR 0 of an HCA: 32 MiB, 64-bit prefetchable, one per function. */
static uint64_t bar0_start(const struct vfab_pci_addr *a)
{
	return 0x200000000000ULL + ((uint64_t)(a->domain & 0xffff) << 33) +
	       ((uint64_t)a->bus << 25);
}

/*
 * The first 256 bytes of config space: a type 0 (function) or type 1 (bridge)
 * header and a PCI Express capability whose link registers say what the
 * sysfs link files say (hwloc and lspci read them from here).
 */
static int write_config(const char *dir, const struct vfab_pci_dev *d, const struct ids *id)
{
	uint8_t c[CONFIG_SIZE] = {0};
	uint16_t link = (uint16_t)(d->gen | d->width << 4);

	put16(c, 0x00, id->vendor);
	put16(c, 0x02, id->device);
	put16(c, 0x04, 0x0006);				    /* memory space, bus master */
	put16(c, 0x06, 0x0010);				    /* capability list */
	put32(c, 0x08, id->class_code << 8 | id->revision); /* class code, revision */
	c[0x34] = PCIE_CAP;
	if (id->class_code == CLASS_BRIDGE) {
		c[0x0e] = 0x01;
		c[0x18] = d->addr.bus;
		c[0x19] = d->secondary;
		c[0x1a] = d->subordinate;
	} else {
		uint64_t bar = bar0_start(&d->addr);

		put32(c, 0x10, (uint32_t)bar | 0xc); /* 64-bit prefetchable memory */
		put32(c, 0x14, (uint32_t)(bar >> 32));
		put16(c, 0x2c, id->subvendor);
		put16(c, 0x2e, id->subdevice);
		c[0x3c] = 0xff;
		c[0x3d] = 0x01;
	}
	c[PCIE_CAP] = 0x10; /* PCI Express */
	put16(c, PCIE_CAP + 0x02, (uint16_t)(0x2 | id->port_type << 4));
	put32(c, PCIE_CAP + 0x0c, link); /* link capabilities: max speed, width */
	put16(c, PCIE_CAP + 0x12, link); /* link status: current speed, width */
	return put_bytes(dir, "config", c, sizeof(c), 0644);
}

/* resource: start, end, flags per BAR, ROM and bridge window, as the kernel prints them. */
static int write_resource(const char *dir, const struct vfab_pci_dev *d, bool bridge)
{
	char text[1024];
	size_t used = 0;

	for (int i = 0; i < 13; i++) {
		uint64_t start = 0, end = 0, flags = 0;

		if (i == 0 && !bridge) {
			start = bar0_start(&d->addr);
			end = start + 0x1ffffff;
			flags = 0x14220c;
		}
		used += (size_t)snprintf(
		    text + used, sizeof(text) - used, "0x%016llx 0x%016llx 0x%016llx\n",
		    (unsigned long long)start, (unsigned long long)end, (unsigned long long)flags);
	}
	return putf(dir, "resource", "%s", text);
}

static int write_ids(const char *dir, const struct vfab_pci_dev *d, const struct ids *id)
{
	char bdf[16], modalias[96];
	int ret;

	vfab_pci_addr_text(&d->addr, bdf);
	/*
	 * The kernel's format, except an HCA's hex digits are lower case: libmlx5,
	 * which perftest, pyverbs and UCX load into the process, registers first
	 * and would claim the kernel's "pci:v000015B3d0000101B..." (then fail to
	 * open it); fnmatch is case-sensitive, so only vfab's provider matches.
	 */
	snprintf(modalias, sizeof(modalias),
		 d->kind == VFAB_PCI_HCA ? "pci:v%08xd%08xsv%08xsd%08xbc%02xsc%02xi%02x"
					 : "pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X",
		 id->vendor, id->device, id->subvendor, id->subdevice, id->class_code >> 16,
		 (id->class_code >> 8) & 0xff, id->class_code & 0xff);
	ret = putf(dir, "vendor", "0x%04x\n", id->vendor);
	if (!ret)
		ret = putf(dir, "device", "0x%04x\n", id->device);
	if (!ret)
		ret = putf(dir, "subsystem_vendor", "0x%04x\n", id->subvendor);
	if (!ret)
		ret = putf(dir, "subsystem_device", "0x%04x\n", id->subdevice);
	if (!ret)
		ret = putf(dir, "class", "0x%06x\n", id->class_code);
	if (!ret)
		ret = putf(dir, "revision", "0x%02x\n", id->revision);
	if (!ret)
		ret = putf(dir, "modalias", "%s\n", modalias);
	if (!ret)
		ret = putf(dir, "uevent",
			   "DRIVER=%s\nPCI_CLASS=%X\nPCI_ID=%04X:%04X\nPCI_SUBSYS_ID=%04X:%04X\n"
			   "PCI_SLOT_NAME=%s\nMODALIAS=%s\n",
			   id->driver, id->class_code, id->vendor, id->device, id->subvendor,
			   id->subdevice, bdf, modalias);
	return ret;
}

static int write_link_files(const char *dir, const struct vfab_pci_dev *d)
{
	int ret = putf(dir, "max_link_speed", "%s\n", vfab_pci_speed_text(d->gen));

	if (!ret)
		ret = putf(dir, "current_link_speed", "%s\n", vfab_pci_speed_text(d->gen));
	if (!ret)
		ret = putf(dir, "max_link_width", "%u\n", d->width);
	if (!ret)
		ret = putf(dir, "current_link_width", "%u\n", d->width);
	return ret;
}

static int write_locality(const char *dir, const struct locality *loc)
{
	int ret = putf(dir, "local_cpus", "%s\n", loc->mask);

	if (!ret)
		ret = putf(dir, "local_cpulist", "%s\n", loc->list);
	if (!ret)
		ret = putf(dir, "numa_node", "%d\n", loc->numa);
	return ret;
}

/*
 * <bridge>/pci_bus/<bus>: the bus below a bridge (or the root), the directory
 * /sys/class/pci_bus links to; NCCL resolves a bus id through it.
 */
static int write_pci_bus(const char *outdir, const char *owner, const char *bus,
			 const struct locality *loc)
{
	char rel[VFAB_PCI_PATH_MAX], dir[4096];
	int ret;

	if (vfab_pathf(rel, sizeof(rel), "%s/pci_bus/%s", owner, bus) ||
	    vfab_pathf(dir, sizeof(dir), "%s/%s", outdir, rel))
		return -ENAMETOOLONG;
	ret = vfab_mkdir_p(dir, 0755);
	if (!ret)
		ret = putf(dir, "cpuaffinity", "%s\n", loc->mask);
	if (!ret)
		ret = putf(dir, "cpulistaffinity", "%s\n", loc->list);
	if (!ret)
		ret = link_rel(dir, rel, "device", owner);
	if (!ret)
		ret = link_rel(dir, rel, "subsystem", "class/pci_bus");
	return ret;
}

/* dir/sub/name -> `to`, seen from rel/sub (mkdir dir/sub first). */
static int link_in(const char *dir, const char *rel, const char *sub, const char *name,
		   const char *to)
{
	char subdir[4096], from[VFAB_PCI_PATH_MAX];
	int ret;

	if (vfab_pathf(subdir, sizeof(subdir), "%s/%s", dir, sub) ||
	    vfab_pathf(from, sizeof(from), "%s/%s", rel, sub))
		return -ENAMETOOLONG;
	ret = vfab_mkdir_p(subdir, 0755);
	return ret || !name ? ret : link_rel(subdir, from, name, to);
}

/* What only an HCA's function has: the locator, its netdevs, its RDMA devices. */
static int write_hca_extras(const struct vfab_region *r, uint32_t node, const char *dir,
			    const char *rel, uint32_t hca_idx)
{
	const struct vfab_hca *h = &r->hcas[hca_idx];
	struct vfab_locator loc = {.hca = hca_idx};
	char text[1024], to[256], uverbs[32];
	int ret;

	ret = vfab_region_path(r->fabric, loc.region, sizeof(loc.region));
	if (!ret && vfab_pathf(loc.rundir, sizeof(loc.rundir), "%s", r->rundir))
		ret = -ENAMETOOLONG;
	if (!ret)
		ret = vfab_locator_format(text, sizeof(text), &loc);
	if (ret)
		return ret;
	/* The provider's contract (base/locator.h): region, HCA index, run dir. */
	ret = putf(dir, "vfab", "%s", text);
	if (!ret)
		ret = link_in(dir, rel, "net", NULL, NULL);
	for (uint32_t p = 0; !ret && p < h->nports && p < VFAB_MAX_PORTS; p++) {
		const char *nd = vfab_pci_port_netdev(r, node, hca_idx, p);

		/* The node's veths are virtual netdevs: the kernel keeps them there. */
		if (nd && !vfab_pathf(to, sizeof(to), "devices/virtual/net/%s", nd))
			ret = link_in(dir, rel, "net", nd, to);
	}
	if (!ret && !vfab_pathf(to, sizeof(to), "class/infiniband/%s", h->name))
		ret = link_in(dir, rel, "infiniband", h->name, to);
	snprintf(uverbs, sizeof(uverbs), "uverbs%u", h->uverbs_idx);
	if (!ret && !vfab_pathf(to, sizeof(to), "class/infiniband_verbs/%s", uverbs))
		ret = link_in(dir, rel, "infiniband_verbs", uverbs, to);
	return ret;
}

static int write_function(const struct vfab_region *r, uint32_t node,
			  const struct vfab_pci_layout *l, uint32_t i, const char *outdir,
			  const struct locality *loc)
{
	const struct vfab_pci_dev *d = &l->devs[i];
	const struct ids *id = kind_ids(d->kind);
	char rel[VFAB_PCI_PATH_MAX], dir[4096], to[64];
	bool bridge = id->class_code == CLASS_BRIDGE;
	int ret = vfab_pci_dev_path(l, i, rel, sizeof(rel));

	if (ret)
		return ret;
	if (vfab_pathf(dir, sizeof(dir), "%s/%s", outdir, rel))
		return -ENAMETOOLONG;
	ret = vfab_mkdir_p(dir, 0755);
	if (!ret)
		ret = write_ids(dir, d, id);
	if (!ret)
		ret = write_config(dir, d, id);
	if (!ret)
		ret = write_resource(dir, d, bridge);
	if (!ret)
		ret = write_link_files(dir, d);
	if (!ret)
		ret = write_locality(dir, loc);
	if (!ret)
		ret = putf(dir, "enable", "1\n");
	/* NCCL takes a function whose subsystem link ends in "pci" for a PCI device. */
	if (!ret)
		ret = link_rel(dir, rel, "subsystem", "bus/pci");
	/*
	 * The kernel's shape (Open MPI's UCX component matches the basename of
	 * an HCA's against "mlx*"); the target exists only where that driver is.
	 */
	if (!ret && !vfab_pathf(to, sizeof(to), "bus/pci/drivers/%s", id->driver))
		ret = link_rel(dir, rel, "driver", to);
	if (!ret && bridge) {
		ret = putf(dir, "secondary_bus_number", "%u\n", d->secondary);
		if (!ret)
			ret = putf(dir, "subordinate_bus_number", "%u\n", d->subordinate);
		if (!ret)
			ret = write_pci_bus(outdir, rel, d->bus_name, loc);
	}
	if (!ret && d->kind == VFAB_PCI_HCA)
		ret = write_hca_extras(r, node, dir, rel, d->hca);
	return ret;
}

int vfab_pci_view_write(const struct vfab_region *r, uint32_t node, const struct vfab_pci_layout *l,
			const char *sysroot, const char *outdir)
{
	char root[64], bus[16], dir[4096];
	struct locality loc;
	int ret;

	if (node >= r->nnodes || node >= VFAB_MAX_NODES)
		return -EINVAL;
	if (l->ndevs == 0)
		return 0;
	ret = locality_of(r, node, sysroot, &loc);
	if (ret)
		return ret;
	snprintf(root, sizeof(root), "devices/pci%04x:00", (unsigned)l->domain);
	snprintf(bus, sizeof(bus), "%04x:00", (unsigned)l->domain);
	if (vfab_pathf(dir, sizeof(dir), "%s/%s", outdir, root))
		return -ENAMETOOLONG;
	ret = vfab_mkdir_p(dir, 0755);
	if (!ret)
		ret = putf(dir, "uevent", "%s", "");
	if (!ret)
		ret = write_pci_bus(outdir, root, bus, &loc);
	for (uint32_t i = 0; !ret && i < l->ndevs; i++)
		if (l->devs[i].kind != VFAB_PCI_MIRROR)
			ret = write_function(r, node, l, i, outdir, &loc);
	return ret;
}
