/* SPDX-License-Identifier: MIT */
/*
 * Where a node's HCAs sit on the PCI bus (pci_view.h): one synthetic domain,
 * a root port per HCA in name order (so PCI order = name order, as probe
 * order makes it on a server), or a PCIe switch (root port -> upstream port
 * -> downstream ports) shared with a host GPU the config places it next to.
 * Reads only the host's sysfs below `sysroot`.
 */
#include "netns/pci_view.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "netns/pci_path.h"

#define PCI_DOMAIN_LIMIT 0x10000 /* NCCL and the kernel's names: 4 hex digits */

void vfab_pci_addr_text(const struct vfab_pci_addr *a, char buf[16])
{
	snprintf(buf, 16, "%04x:%02x:%02x.%x", (unsigned)(a->domain & 0xffff), a->bus, a->dev,
		 a->fn & 7);
}

const char *vfab_pci_speed_text(unsigned gen)
{
	static const char *const text[] = {"2.5 GT/s PCIe", "2.5 GT/s PCIe",  "5.0 GT/s PCIe",
					   "8.0 GT/s PCIe", "16.0 GT/s PCIe", "32.0 GT/s PCIe",
					   "64.0 GT/s PCIe"};

	return text[gen < 7 ? gen : 6];
}

/* Effective Mb/s of one lane: 8b/10b up to gen 2, 128b/130b for 3-5, FLIT for 6. */
static double lane_mbps(unsigned gen)
{
	static const double mbps[] = {0, 2000, 4000, 7877, 15754, 31508, 60500};

	return mbps[gen < 7 ? gen : 6];
}

/*
 * The HCA's link: x16 at the lowest generation from ConnectX-6's own (4) up
 * that carries all its ports at line rate, so the PCIe link is never what
 * limits the configured rate (a 400 Gb/s port gets 32 GT/s).
 */
static void hca_link(const struct vfab_hca *h, struct vfab_pci_dev *d)
{
	double need = 0;
	unsigned gen = 4;

	for (uint32_t p = 0; p < h->nports && p < VFAB_MAX_PORTS; p++)
		need += h->ports[p].speed_mbps;
	while (gen < 6 && lane_mbps(gen) * 16 < need)
		gen++;
	d->gen = (uint8_t)gen;
	d->width = 16;
}

/* A host function's max link from its sysfs files; gen 4 x16 when unreadable. */
static void host_link(const char *sysroot, const char *path, struct vfab_pci_dev *d)
{
	char file[4096], text[64];
	double gts = 0;
	int width = 0;

	d->gen = 4;
	d->width = 16;
	if (vfab_pathf(file, sizeof(file), "%s/%s/max_link_speed", sysroot, path) == 0 &&
	    vfab_read_file(file, text, sizeof(text)) > 0 && sscanf(text, "%lf", &gts) == 1)
		d->gen = gts > 48 ? 6 : gts > 24 ? 5 : gts > 12 ? 4 : gts > 6 ? 3 : gts > 3 ? 2 : 1;
	if (vfab_pathf(file, sizeof(file), "%s/%s/max_link_width", sysroot, path) == 0 &&
	    vfab_read_file(file, text, sizeof(text)) > 0 && sscanf(text, "%d", &width) == 1 &&
	    width > 0 && width <= 32)
		d->width = (uint8_t)width;
}

/* mlx5_2 before mlx5_10: digit runs compare as numbers. */
static int natural_cmp(const char *a, const char *b)
{
	while (*a && *b) {
		if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
			unsigned long x = strtoul(a, (char **)&a, 10);
			unsigned long y = strtoul(b, (char **)&b, 10);

			if (x != y)
				return x < y ? -1 : 1;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		a++;
		b++;
	}
	return (unsigned char)*a - (unsigned char)*b;
}

/* Domains the host uses: its pci<DDDD>:<BB> roots and every function's. */
static void mark_domains(const char *sysroot, const char *sub, const char *fmt, unsigned char *used)
{
	char path[4096];
	struct dirent *de;
	unsigned dom, bus;
	DIR *d;

	if (vfab_pathf(path, sizeof(path), "%s/%s", sysroot, sub))
		return;
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)))
		if (sscanf(de->d_name, fmt, &dom, &bus) == 2 && dom < PCI_DOMAIN_LIMIT)
			used[dom / 8] |= (unsigned char)(1u << (dom % 8));
	closedir(d);
}

/* The lowest domain from 1 up that no real root or function uses. */
static uint32_t choose_domain(const char *sysroot)
{
	unsigned char used[PCI_DOMAIN_LIMIT / 8] = {0};
	uint32_t dom;

	mark_domains(sysroot, "devices", "pci%x:%x", used);
	mark_domains(sysroot, "bus/pci/devices", "%x:%x:", used);
	mark_domains(sysroot, "class/pci_bus", "%x:%x", used);
	for (dom = 1; dom < PCI_DOMAIN_LIMIT - 1; dom++)
		if (!(used[dom / 8] & (1u << (dom % 8))))
			break;
	return dom;
}

static int fn_cmp(const void *a, const void *b)
{
	const struct vfab_pci_addr *x = &((const struct vfab_pci_host_fn *)a)->addr;
	const struct vfab_pci_addr *y = &((const struct vfab_pci_host_fn *)b)->addr;
	uint64_t kx = (uint64_t)x->domain << 24 | (uint32_t)x->bus << 16 | x->dev << 8 | x->fn;
	uint64_t ky = (uint64_t)y->domain << 24 | (uint32_t)y->bus << 16 | y->dev << 8 | y->fn;

	return kx < ky ? -1 : kx > ky;
}

/*
 * The host's functions below sysroot/bus/pci/devices for which keep() says
 * yes, sorted by address (for GPUs: CUDA's order of identical GPUs).
 */
static uint32_t host_fns(const char *sysroot, bool (*keep)(const char *dir, const void *arg),
			 const void *arg, struct vfab_pci_host_fn *out, uint32_t max)
{
	char list[4096], entry[4096], target[VFAB_PCI_PATH_MAX];
	struct dirent *de;
	uint32_t n = 0;
	DIR *d;

	if (vfab_pathf(list, sizeof(list), "%s/bus/pci/devices", sysroot))
		return 0;
	d = opendir(list);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		struct vfab_pci_host_fn *f = &out[n];
		ssize_t len;

		if (vfab_pci_parse_bdf(de->d_name, &f->addr) ||
		    vfab_pathf(entry, sizeof(entry), "%s/%s", list, de->d_name) ||
		    !keep(entry, arg))
			continue;
		len = readlink(entry, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (vfab_pci_path_join("bus/pci/devices", target, f->path, sizeof(f->path)) == 0)
			n++;
	}
	closedir(d);
	qsort(out, n, sizeof(out[0]), fn_cmp);
	return n;
}

/* An NVIDIA display controller (class 0x03xxxx): what CUDA numbers. */
static bool is_gpu(const char *dir, const void *arg)
{
	char path[4096], text[32];

	(void)arg;
	if (vfab_pathf(path, sizeof(path), "%s/vendor", dir) ||
	    vfab_read_file(path, text, sizeof(text)) <= 0 ||
	    strtoul(text, NULL, 16) != VFAB_PCI_VENDOR_NVIDIA)
		return false;
	if (vfab_pathf(path, sizeof(path), "%s/class", dir) ||
	    vfab_read_file(path, text, sizeof(text)) <= 0)
		return false;
	return (strtoul(text, NULL, 16) >> 16) == 0x03;
}

/* Every function on the bus of *arg (a GPU's other functions: audio, USB-C). */
static bool on_bus(const char *dir, const void *arg)
{
	const struct vfab_pci_addr *bus = arg;
	const char *name = strrchr(dir, '/') + 1;
	struct vfab_pci_addr a;

	return vfab_pci_parse_bdf(name, &a) == 0 && a.domain == bus->domain && a.bus == bus->bus;
}

uint32_t vfab_pci_host_gpus(const char *sysroot, struct vfab_pci_host_fn *out, uint32_t max)
{
	return host_fns(sysroot, is_gpu, NULL, out, max);
}

static int add_dev(struct vfab_pci_layout *l, uint8_t kind, int parent, uint8_t bus, uint8_t dev)
{
	struct vfab_pci_dev *d;

	if (l->ndevs >= VFAB_PCI_MAX_DEVS)
		return -ENOSPC;
	d = &l->devs[l->ndevs];
	memset(d, 0, sizeof(*d));
	d->kind = kind;
	d->parent = parent;
	d->addr = (struct vfab_pci_addr){.domain = l->domain, .bus = bus, .dev = dev};
	d->mirror = -1;
	return (int)l->ndevs++;
}

/* A bridge's secondary bus (and the name of its pci_bus directory). */
static void set_secondary(struct vfab_pci_layout *l, int i, uint32_t bus)
{
	l->devs[i].secondary = (uint8_t)bus;
	l->devs[i].subordinate = (uint8_t)bus;
	snprintf(l->devs[i].bus_name, sizeof(l->devs[i].bus_name), "%04x:%02x", (unsigned)l->domain,
		 (unsigned)bus);
}

struct plan {
	const struct vfab_region *r;
	const struct vfab_node *n;
	const char *sysroot;
	struct vfab_pci_layout *l;
	struct vfab_pci_host_fn *gpus;
	uint32_t bus; /* next free bus number */
	uint8_t slot; /* next root port's device number on bus 00 */
};

static int next_bus(struct plan *p, uint32_t *bus)
{
	if (p->bus > 0xff)
		return -ENOSPC;
	*bus = p->bus++;
	return 0;
}

/* An HCA below bridge `parent` (its own bus); the function is xx:00.0. */
static int add_hca(struct plan *p, int parent, uint32_t hca_slot)
{
	uint32_t hca = p->n->hcas[hca_slot], bus;
	int i, ret = next_bus(p, &bus);

	if (ret)
		return ret;
	set_secondary(p->l, parent, bus);
	i = add_dev(p->l, VFAB_PCI_HCA, parent, (uint8_t)bus, 0);
	if (i < 0)
		return i;
	p->l->devs[i].hca = hca;
	hca_link(&p->r->hcas[hca], &p->l->devs[i]);
	p->l->hca_dev[p->l->nhcas++] = (uint32_t)i;
	return 0;
}

/*
 * A PCIe switch as on a DGX: root port -> upstream port -> downstream port 0
 * holding GPU g (its real bus, with all of that bus's functions mirrored)
 * and one downstream port per HCA of `group` (name order).
 */
static int add_switch(struct plan *p, uint32_t g, const uint32_t *group, uint32_t ngroup)
{
	struct vfab_pci_layout *l = p->l;
	const struct vfab_pci_addr *ga = &p->gpus[g].addr;
	uint32_t b1, b2, b3;
	int rp, up, dg, ret;

	rp = add_dev(l, VFAB_PCI_ROOT_PORT, -1, 0, p->slot++);
	if (rp < 0)
		return rp;
	ret = next_bus(p, &b1);
	if (ret == 0)
		ret = next_bus(p, &b2);
	if (ret == 0)
		ret = next_bus(p, &b3); /* kept for the GPU's port: its real bus lies elsewhere */
	if (ret)
		return ret;
	set_secondary(l, rp, b1);
	up = add_dev(l, VFAB_PCI_SWITCH_UP, rp, (uint8_t)b1, 0);
	if (up < 0)
		return up;
	set_secondary(l, up, b2);
	dg = add_dev(l, VFAB_PCI_SWITCH_DOWN, up, (uint8_t)b2, 0);
	if (dg < 0)
		return dg;
	set_secondary(l, dg, b3);
	snprintf(l->devs[dg].bus_name, sizeof(l->devs[dg].bus_name), "%04x:%02x",
		 (unsigned)ga->domain, ga->bus);
	{
		uint32_t first = l->nmirrors;
		uint32_t n = host_fns(p->sysroot, on_bus, ga, &l->mirrors[first],
				      VFAB_PCI_MAX_MIRRORS - first);

		for (uint32_t m = first; m < first + n; m++) {
			int i = add_dev(l, VFAB_PCI_MIRROR, dg, 0, 0);

			if (i < 0)
				return i;
			l->devs[i].addr = l->mirrors[m].addr;
			l->devs[i].mirror = (int)m;
			host_link(p->sysroot, l->mirrors[m].path, &l->devs[i]);
		}
		l->nmirrors += n;
	}
	for (uint32_t k = 0; k < ngroup; k++) {
		int dh = add_dev(l, VFAB_PCI_SWITCH_DOWN, up, (uint8_t)b2, (uint8_t)(k + 1));

		if (dh < 0)
			return dh;
		ret = add_hca(p, dh, group[k]);
		if (ret)
			return ret;
	}
	/* The buses below each bridge: through the last one allocated. */
	l->devs[rp].subordinate = l->devs[up].subordinate = (uint8_t)(p->bus - 1);
	return 0;
}

/* Bridges carry the widest, fastest link below them (children follow parents). */
static void propagate_links(struct vfab_pci_layout *l)
{
	for (uint32_t i = l->ndevs; i-- > 0;) {
		struct vfab_pci_dev *d = &l->devs[i];

		if (d->parent < 0)
			continue;
		if (l->devs[d->parent].gen < d->gen)
			l->devs[d->parent].gen = d->gen;
		if (l->devs[d->parent].width < d->width)
			l->devs[d->parent].width = d->width;
	}
}

static int place(struct plan *p, const int *placed, const uint32_t *order, uint32_t nh)
{
	bool done[8] = {false};
	int ret = 0;

	for (uint32_t k = 0; k < nh && ret == 0; k++) {
		uint32_t group[8], ngroup = 0;
		int rp;

		if (done[order[k]])
			continue;
		if (placed[order[k]] < 0) {
			rp = add_dev(p->l, VFAB_PCI_ROOT_PORT, -1, 0, p->slot++);
			ret = rp < 0 ? rp : add_hca(p, rp, order[k]);
			done[order[k]] = true;
			continue;
		}
		for (uint32_t j = k; j < nh; j++) {
			if (placed[order[j]] == placed[order[k]]) {
				group[ngroup++] = order[j];
				done[order[j]] = true;
			}
		}
		ret = add_switch(p, (uint32_t)placed[order[k]], group, ngroup);
	}
	return ret;
}

int vfab_pci_plan(const struct vfab_region *r, uint32_t node, const int *gpu_of,
		  const char *sysroot, struct vfab_pci_layout *l)
{
	struct plan p = {.r = r, .sysroot = sysroot, .l = l, .bus = 1, .slot = 1};
	uint32_t order[8], nh;
	int placed[8], ret;
	bool want_gpu = false;

	memset(l, 0, sizeof(*l));
	if (node >= r->nnodes || node >= VFAB_MAX_NODES)
		return -EINVAL;
	p.n = &r->nodes[node];
	nh = p.n->nhcas < 8 ? p.n->nhcas : 8;
	for (uint32_t i = 0; i < nh; i++) {
		if (p.n->hcas[i] >= VFAB_MAX_HCAS)
			return -EINVAL;
		order[i] = i;
		placed[i] = gpu_of ? gpu_of[i] : VFAB_PCI_NO_GPU;
		want_gpu |= placed[i] >= 0;
	}
	if (nh == 0)
		return 0;
	/* Insertion sort by name: at most 8. */
	for (uint32_t i = 1; i < nh; i++)
		for (uint32_t j = i; j > 0 && natural_cmp(r->hcas[p.n->hcas[order[j - 1]]].name,
							  r->hcas[p.n->hcas[order[j]]].name) > 0;
		     j--) {
			uint32_t t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	l->domain = choose_domain(sysroot);
	if (want_gpu) {
		p.gpus = calloc(VFAB_PCI_MAX_GPUS, sizeof(*p.gpus));
		if (!p.gpus)
			return -ENOMEM;
		l->ngpus = vfab_pci_host_gpus(sysroot, p.gpus, VFAB_PCI_MAX_GPUS);
	}
	for (uint32_t i = 0; i < nh; i++) {
		if (placed[order[i]] >= 0 && (uint32_t)placed[order[i]] >= l->ngpus) {
			l->missing[l->nmissing++] = (struct vfab_pci_missing_gpu){
			    .hca = p.n->hcas[order[i]], .gpu = (uint32_t)placed[order[i]]};
			placed[order[i]] = VFAB_PCI_NO_GPU;
		}
	}
	ret = place(&p, placed, order, nh);
	free(p.gpus);
	if (ret)
		return ret;
	propagate_links(l);
	return 0;
}

int vfab_pci_dev_path(const struct vfab_pci_layout *l, uint32_t i, char *buf, size_t len)
{
	uint32_t chain[16];
	size_t used;
	int n = 0, w;

	if (i >= l->ndevs)
		return -EINVAL;
	for (int k = (int)i; k >= 0 && n < 16; k = l->devs[k].parent)
		chain[n++] = (uint32_t)k;
	w = snprintf(buf, len, "devices/pci%04x:00", (unsigned)l->domain);
	if (w < 0 || (size_t)w >= len)
		return -ENAMETOOLONG;
	used = (size_t)w;
	while (n-- > 0) {
		char bdf[16];

		vfab_pci_addr_text(&l->devs[chain[n]].addr, bdf);
		w = snprintf(buf + used, len - used, "/%s", bdf);
		if (w < 0 || (size_t)w >= len - used)
			return -ENAMETOOLONG;
		used += (size_t)w;
	}
	return 0;
}

int vfab_pci_hca_dev(const struct vfab_pci_layout *l, uint32_t hca)
{
	for (uint32_t k = 0; k < l->nhcas; k++)
		if (l->devs[l->hca_dev[k]].hca == hca)
			return (int)l->hca_dev[k];
	return -1;
}

const char *vfab_pci_port_netdev(const struct vfab_region *r, uint32_t node, uint32_t hca,
				 uint32_t port)
{
	const struct vfab_node *n;
	const char *name;

	if (node >= VFAB_MAX_NODES || hca >= VFAB_MAX_HCAS || port >= VFAB_MAX_PORTS)
		return NULL;
	n = &r->nodes[node];
	name = r->hcas[hca].ports[port].netdev;
	for (uint32_t d = 0; d < n->nnetdevs && d < VFAB_NODE_NETDEVS; d++)
		if (name[0] && strcmp(n->netdevs[d].name, name) == 0)
			return name;
	return NULL;
}
