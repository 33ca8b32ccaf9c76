/* SPDX-License-Identifier: MIT */
/*
 * The PCI side of a node's HCAs (DESIGN.md "Sysfs view of an HCA", "PCI
 * view"): each HCA is a PCIe function under a synthetic root port (or, when
 * placed next to a host GPU, under a synthetic PCIe switch that also holds
 * that GPU), in a PCI domain no real root of the host uses, so NCCL's
 * topology, hwloc and lspci-style tools see a server's layout.
 *
 * Three steps, all pure functions of (region, node, host sysfs root, output
 * dir) so a unit test can feed a fake /sys from a temp dir:
 *   vfab_pci_plan        (pci_plan.c) addresses, buses, links, GPU placement
 *   vfab_pci_view_write  (pci_view.c) <outdir>/devices/pci<DDDD>:00/...
 *   vfab_pci_lists_write (pci_host.c) <outdir>/bus/pci/devices and
 *                        <outdir>/class/pci_bus: the host's entries plus the
 *                        synthetic ones, the placed GPUs' redirected, and the
 *                        GPUs' mirror directories in the synthetic tree
 * The node's /sys shows these at the same relative paths (node_mounts.c), so
 * every symlink here is relative and resolves both in the node and in the
 * run dir.
 */
#ifndef VFAB_NETNS_PCI_VIEW_H
#define VFAB_NETNS_PCI_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric/region.h"

/* Below a node dir (and below /sys in the node). */
#define VFAB_PCI_VIEW_DEVICES "devices"		    /* the synthetic pci<DDDD>:00 roots */
#define VFAB_PCI_VIEW_BUS_DEVICES "bus/pci/devices" /* replaces the node's listing */
#define VFAB_PCI_VIEW_CLASS_BUS "class/pci_bus"	    /* replaces the node's class */

/* What an HCA claims to be: a ConnectX-6 (part id 4123, as ibv_query_device says). */
#define VFAB_PCI_VENDOR_MELLANOX 0x15b3
#define VFAB_PCI_DEVICE_CX6 0x101b
#define VFAB_PCI_SUBSYS_CX6 0x0007
#define VFAB_PCI_VENDOR_NVIDIA 0x10de

#define VFAB_PCI_MAX_DEVS 128	/* functions of one node's synthetic tree */
#define VFAB_PCI_MAX_GPUS 64	/* host GPUs considered */
#define VFAB_PCI_MAX_MIRRORS 32 /* host functions on the placed GPUs' buses */
#define VFAB_PCI_PATH_MAX 512
#define VFAB_PCI_NO_GPU (-1)

struct vfab_pci_addr {
	uint32_t domain;
	uint8_t bus, dev, fn;
};

enum vfab_pci_kind {
	VFAB_PCI_ROOT_PORT,
	VFAB_PCI_SWITCH_UP,
	VFAB_PCI_SWITCH_DOWN,
	VFAB_PCI_HCA,
	VFAB_PCI_MIRROR, /* a host function (a placed GPU's) shown in the synthetic tree */
};

struct vfab_pci_dev {
	uint8_t kind;
	int parent; /* index of the bridge above; -1: on the root bus */
	struct vfab_pci_addr addr;
	/* Bridges: the buses below them (config space), and the name of the
	 * pci_bus directory below (a GPU's port holds the GPU's real bus). */
	uint8_t secondary, subordinate;
	char bus_name[16];
	uint8_t gen, width; /* PCIe link towards the parent: generation 1..6, lanes */
	uint32_t hca;	    /* VFAB_PCI_HCA: index into region hcas[] */
	int mirror;	    /* VFAB_PCI_MIRROR: index into mirrors[] */
};

/* A function of the host, by address and real directory below the sysfs root. */
struct vfab_pci_host_fn {
	struct vfab_pci_addr addr;
	char path[VFAB_PCI_PATH_MAX]; /* "devices/pci0000:00/.../0000:1b:00.0" */
};

/* An HCA whose hcas[].gpu names no GPU of the host: said by `vfab up`. */
struct vfab_pci_missing_gpu {
	uint32_t hca; /* region index */
	uint32_t gpu; /* the configured index */
};

struct vfab_pci_layout {
	uint32_t domain; /* of the synthetic root pci<DDDD>:00 */
	uint32_t ndevs;
	struct vfab_pci_dev devs[VFAB_PCI_MAX_DEVS]; /* parents before children */
	uint32_t nhcas;
	uint32_t hca_dev[8]; /* the node's HCAs in name order: index into devs[] */
	uint32_t ngpus;	     /* NVIDIA GPUs of the host, in PCI order (CUDA's) */
	uint32_t nmirrors;
	struct vfab_pci_host_fn mirrors[VFAB_PCI_MAX_MIRRORS];
	uint32_t nmissing;
	struct vfab_pci_missing_gpu missing[8];
};

/*
 * Plans node `node`'s tree. gpu_of[i] is the host GPU index (CUDA order) that
 * r->nodes[node].hcas[i] is placed next to, or VFAB_PCI_NO_GPU; gpu_of may be
 * NULL. `sysroot` is the host's sysfs ("/sys"): its PCI roots and devices
 * decide the domain, its NVIDIA display controllers are the GPUs. A GPU index
 * the host lacks lands in missing[] and the HCA gets a root port of its own.
 * Returns 0 or -errno (-EINVAL: bad node, -ENOSPC: tree too large).
 */
int vfab_pci_plan(const struct vfab_region *r, uint32_t node, const int *gpu_of,
		  const char *sysroot, struct vfab_pci_layout *l);

/*
 * The host's NVIDIA GPUs (display controllers, class 0x03xxxx, under
 * sysroot/bus/pci/devices) in PCI order, at most `max`: the numbering of
 * hcas[].gpu, and the order gpu_plan.h matches the driver's GPUs against.
 * Returns how many.
 */
uint32_t vfab_pci_host_gpus(const char *sysroot, struct vfab_pci_host_fn *out, uint32_t max);

/* "0001:02:00.0" */
void vfab_pci_addr_text(const struct vfab_pci_addr *a, char buf[16]);

/*
 * Path of devs[i] relative to the sysfs root: "devices/pci0001:00/0001:00:01.0/
 * 0001:01:00.0". Returns 0 or -ENAMETOOLONG.
 */
int vfab_pci_dev_path(const struct vfab_pci_layout *l, uint32_t i, char *buf, size_t len);

/* The devs[] index of region HCA `hca`, or -1. */
int vfab_pci_hca_dev(const struct vfab_pci_layout *l, uint32_t hca);

/*
 * The netdev of port `port` (0-based) of region HCA `hca` as node `node` has
 * it, or NULL: a shared HCA's PF is in no pod (the pods' net1 is a macvlan,
 * a virtual netdev with no PCI function), so there it has none.
 */
const char *vfab_pci_port_netdev(const struct vfab_region *r, uint32_t node, uint32_t hca,
				 uint32_t port);

/* "16.0 GT/s PCIe" for a generation (1..6). */
const char *vfab_pci_speed_text(unsigned gen);

/*
 * Writes <outdir>/devices/pci<DDDD>:00/... for node `node`: every synthetic
 * function (attributes, config space, locality from the node's CPUs read
 * against sysroot's CPU/NUMA files, links) and, in each HCA's function, the
 * device/vfab locator, net/<netdev> and infiniband*\/ entries. Nothing when
 * the node has no HCA. Returns 0 or -errno.
 */
int vfab_pci_view_write(const struct vfab_region *r, uint32_t node, const struct vfab_pci_layout *l,
			const char *sysroot, const char *outdir);

/*
 * Writes <outdir>/bus/pci/devices and <outdir>/class/pci_bus (the host's
 * entries from sysroot, the synthetic ones, the placed GPUs' buses and
 * functions redirected into the synthetic tree) and the mirror directories
 * of the placed GPUs' functions (an entry per entry of the real directory,
 * linked to it). Nothing when the layout is empty. Returns 0 or -errno.
 */
int vfab_pci_lists_write(const struct vfab_pci_layout *l, const char *sysroot, const char *outdir);

#endif /* VFAB_NETNS_PCI_VIEW_H */
