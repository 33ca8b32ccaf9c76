/* SPDX-License-Identifier: MIT */
#include "netns/sysfs_view.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "fabric/gid.h"
#include "fabric/topology.h"
#include "netns/pci_path.h"
#include "netns/pci_view.h"

/* The numbers of /dev/full: any command sent to the "kernel" fails cleanly. */
#define UVERBS_MAJOR 1
#define UVERBS_MINOR 7
#define UVERBS_HOST_NODE "/dev/full" /* the host's node of that number */

/* Every file of counters/ and hw_counters/ (those vfab does not count read 0). */
static const char *const port_counters[] = {
    "VL15_dropped",
    "excessive_buffer_overrun_errors",
    "link_downed",
    "link_error_recovery",
    "local_link_integrity_errors",
    "multicast_rcv_packets",
    "multicast_xmit_packets",
    "port_rcv_constraint_errors",
    "port_rcv_data",
    "port_rcv_errors",
    "port_rcv_packets",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_constraint_errors",
    "port_xmit_data",
    "port_xmit_discards",
    "port_xmit_packets",
    "port_xmit_wait",
    "symbol_error",
    "unicast_rcv_packets",
    "unicast_xmit_packets",
};

/* mlx5's q counters, its extended error counters among them (counters.c). */
static const char *const hw_counters[] = {
    "duplicate_request",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "out_of_buffer",
    "out_of_sequence",
    "packet_seq_err",
    "req_cqe_error",
    "req_cqe_flush_error",
    "req_remote_access_errors",
    "req_remote_invalid_request",
    "req_rnr_retries_exceeded",
    "req_transport_retries_exceeded",
    "resp_cqe_error",
    "resp_cqe_flush_error",
    "resp_local_length_error",
    "resp_remote_access_errors",
    "rnr_nak_retry_err",
    "rx_atomic_requests",
    "rx_read_requests",
    "rx_write_requests",
    "lifespan",
};

const char *const *vfab_sysfs_counter_files(bool hw, size_t *n)
{
	*n = hw ? sizeof(hw_counters) / sizeof(hw_counters[0])
		: sizeof(port_counters) / sizeof(port_counters[0]);
	return hw ? hw_counters : port_counters;
}

int vfab_sysfs_counter_text(const uint64_t v[VFAB_NCOUNTERS], const char *name, char *buf,
			    size_t len)
{
	int i = vfab_sysfs_counter_find(name);
	/* hw_counters/lifespan: how long (ms) mlx5 caches its hw counters. */
	uint64_t value = strcmp(name, "lifespan") == 0 ? 10 : i < 0 ? 0 : v[i];
	int n = snprintf(buf, len, "%llu\n", (unsigned long long)value);

	return n < 0 || (size_t)n >= len ? -EOVERFLOW : n;
}

static int put(int dirfd, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Files are replaced, never written through: an entry may be a hard link
 * shared with other entries (see link_same), which must keep their content.
 */
static int put(int dirfd, const char *name, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n, fd, ret = 0;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -EOVERFLOW;
	if (unlinkat(dirfd, name, 0) && errno != ENOENT)
		return -errno;
	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, (size_t)n) != n)
		ret = errno ? -errno : -EIO;
	close(fd);
	return ret;
}

/*
 * The 250-odd empty entries of each GID/pkey table are identical: one file
 * and hard links to it cost one inode instead of hundreds (a port has ~900
 * such files, and tmpfs keeps a page per file).
 */
static int link_same(int dirfd, const char *existing, const char *name)
{
	if (unlinkat(dirfd, name, 0) && errno != ENOENT)
		return -errno;
	return linkat(dirfd, existing, dirfd, name, 0) ? -errno : 0;
}

/* mkdir (existing is fine) and open it as the base of the next files. */
static int subdir(int dirfd, const char *name)
{
	int fd;

	if (mkdirat(dirfd, name, 0755) && errno != EEXIST)
		return -errno;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int open_dir_path(const char *path)
{
	int ret = vfab_mkdir_p(path, 0755);
	int fd;

	if (ret)
		return ret;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static void guid_text(uint64_t guid, char buf[20])
{
	snprintf(buf, 20, "%04x:%04x:%04x:%04x", (unsigned)(guid >> 48) & 0xffff,
		 (unsigned)(guid >> 32) & 0xffff, (unsigned)(guid >> 16) & 0xffff,
		 (unsigned)guid & 0xffff);
}

/*
 * One numbered file per entry: gids/N, gid_attrs/types/N, ... `*shared`
 * names the first entry written with the shared content (-1: none yet);
 * later entries with that content become links to it.
 */
static int put_indexed(int dirfd, unsigned idx, int is_shared, int *shared, const char *text)
{
	char name[16], first[16];
	int ret;

	snprintf(name, sizeof(name), "%u", idx);
	if (is_shared && *shared >= 0) {
		snprintf(first, sizeof(first), "%d", *shared);
		return link_same(dirfd, first, name);
	}
	ret = put(dirfd, name, "%s", text);
	if (ret == 0 && is_shared)
		*shared = (int)idx;
	return ret;
}

static int write_gid_tables(int portfd, const struct vfab_port *p)
{
	const struct vfab_gid *by_index[VFAB_SYSFS_GID_TBL_LEN] = {0};
	int gids = subdir(portfd, "gids"), attrs = -1, types = -1, ndevs = -1, ret = 0;
	int empty_gid = -1, empty_type = -1, empty_ndev = -1;

	for (uint32_t i = 0; i < p->ngids && i < VFAB_PORT_GIDS; i++)
		if (p->gids[i].type != VFAB_GID_EMPTY && p->gids[i].index < VFAB_SYSFS_GID_TBL_LEN)
			by_index[p->gids[i].index] = &p->gids[i];
	if (gids < 0)
		return gids;
	attrs = subdir(portfd, "gid_attrs");
	if (attrs < 0) {
		ret = attrs;
		goto out;
	}
	types = subdir(attrs, "types");
	ndevs = subdir(attrs, "ndevs");
	if (types < 0 || ndevs < 0) {
		ret = types < 0 ? types : ndevs;
		goto out;
	}
	for (unsigned i = 0; i < VFAB_SYSFS_GID_TBL_LEN && ret == 0; i++) {
		const struct vfab_gid *g = by_index[i];
		struct vfab_sysfs_gid_texts t;

		/* A shared HCA's pod entries name the pod's upper (net1), the rest the PF. */
		vfab_sysfs_gid_texts(g, g && g->pod ? p->pod_netdev : p->netdev, &t);
		ret = put_indexed(gids, i, !g, &empty_gid, t.gid);
		if (ret == 0)
			ret = put_indexed(types, i, !g, &empty_type, t.type);
		if (ret == 0)
			ret = put_indexed(ndevs, i, !g, &empty_ndev, t.ndev);
	}
out:
	if (ndevs >= 0)
		close(ndevs);
	if (types >= 0)
		close(types);
	if (attrs >= 0)
		close(attrs);
	close(gids);
	return ret;
}

/* A new view: link_downed starts at 0 (vfabd counts the downs it makes). */
static int write_counters(int portfd, const struct vfab_port_counters *c)
{
	uint64_t v[VFAB_NCOUNTERS];
	int dir, ret = 0;

	vfab_sysfs_counter_values(c, 0, v);
	for (int hw = 0; hw < 2 && !ret; hw++) {
		size_t n;
		const char *const *names = vfab_sysfs_counter_files(hw, &n);

		dir = subdir(portfd, hw ? "hw_counters" : "counters");
		if (dir < 0)
			return dir;
		for (size_t i = 0; i < n && !ret; i++) {
			char text[32];
			int len = vfab_sysfs_counter_text(v, names[i], text, sizeof(text));

			ret = len < 0 ? len : put(dir, names[i], "%s", text);
		}
		close(dir);
	}
	return ret;
}

static int write_port(int portsfd, uint32_t num, const struct vfab_port *p,
		      const struct vfab_port_counters *c)
{
	char name[16], rate[64];
	uint32_t state = atomic_load(&p->state);
	int fd, pk, ret;

	snprintf(name, sizeof(name), "%u", num);
	fd = subdir(portsfd, name);
	if (fd < 0)
		return fd;
	ret = vfab_topology_sysfs_rate(p, rate, sizeof(rate));
	ret = ret < 0 ? ret : 0;
	if (!ret)
		ret = put(fd, "state", "%s", vfab_sysfs_state_text(state));
	if (!ret)
		ret = put(fd, "phys_state", "%s", vfab_sysfs_phys_state_text(state));
	if (!ret)
		ret = put(fd, "rate", "%s\n", rate);
	if (!ret)
		ret = put(fd, "link_layer", "Ethernet\n");
	if (!ret)
		ret = put(fd, "lid", "0x0\n");
	if (!ret)
		ret = put(fd, "sm_lid", "0x0\n");
	if (!ret)
		ret = put(fd, "lid_mask_count", "0\n");
	if (!ret)
		ret = put(fd, "sm_sl", "0\n");
	if (!ret)
		ret = put(fd, "cap_mask", "0x%08x\n", VFAB_PORT_CAP_FLAGS);
	if (!ret)
		ret = write_gid_tables(fd, p);
	if (!ret) {
		int empty_pkey = -1;

		pk = subdir(fd, "pkeys");
		ret = pk < 0 ? pk : 0;
		for (unsigned i = 0; !ret && i < VFAB_PKEY_TBL_LEN; i++)
			ret = put_indexed(pk, i, i != 0, &empty_pkey,
					  i == 0 ? "0xffff\n" : "0x0000\n");
		if (pk >= 0)
			close(pk);
	}
	if (!ret)
		ret = write_counters(fd, c);
	close(fd);
	return ret;
}

/*
 * device: the HCA's PCI function, a link as on a server (NCCL realpaths it,
 * hwloc parses the link, the provider reads device/vfab through it).
 */
static int write_device_link(int hcafd, const struct vfab_hca *h, const struct vfab_pci_layout *l,
			     uint32_t hca_idx)
{
	char from[128], path[VFAB_PCI_PATH_MAX], target[VFAB_PCI_PATH_MAX + 64];
	int dev = vfab_pci_hca_dev(l, hca_idx), ret;

	if (dev < 0)
		return -EINVAL;
	snprintf(from, sizeof(from), "class/infiniband/%s", h->name);
	ret = vfab_pci_dev_path(l, (uint32_t)dev, path, sizeof(path));
	if (!ret)
		ret = vfab_pci_rel_link(from, path, target, sizeof(target));
	if (ret)
		return ret;
	if (unlinkat(hcafd, "device", 0) && errno != ENOENT)
		return -errno;
	return symlinkat(target, hcafd, "device") ? -errno : 0;
}

static int write_hca(int ibfd, const struct vfab_region *r, uint32_t node,
		     const struct vfab_pci_layout *l, uint32_t hca_idx)
{
	const struct vfab_hca *h = &r->hcas[hca_idx];
	char guid[20], sysguid[20];
	int fd = subdir(ibfd, h->name), ports, ret;

	if (fd < 0)
		return fd;
	guid_text(h->node_guid, guid);
	guid_text(h->sys_image_guid, sysguid);
	ret = put(fd, "node_guid", "%s\n", guid);
	if (!ret)
		ret = put(fd, "sys_image_guid", "%s\n", sysguid);
	if (!ret)
		ret = put(fd, "node_type", "1: CA\n");
	if (!ret)
		ret = put(fd, "fw_ver", "20.35.1012\n");
	if (!ret)
		ret = put(fd, "hca_type", "MT4123\n");
	if (!ret)
		ret = put(fd, "hw_rev", "0x0\n");
	if (!ret)
		ret = put(fd, "board_id", "VFAB0000000001\n");
	if (!ret)
		ret = put(fd, "node_desc", "%s %s\n", r->nodes[node].id, h->name);
	if (!ret)
		ret = write_device_link(fd, h, l, hca_idx);
	if (!ret) {
		ports = subdir(fd, "ports");
		ret = ports < 0 ? ports : 0;
		for (uint32_t p = 0; !ret && p < h->nports && p < VFAB_MAX_PORTS; p++) {
			struct vfab_port_counters c;

			vfab_port_counters_sum(r, hca_idx, p + 1, &c);
			ret = write_port(ports, p + 1, &h->ports[p], &c);
		}
		if (ports >= 0)
			close(ports);
	}
	close(fd);
	return ret;
}

/*
 * A character device UVERBS_MAJOR:UVERBS_MINOR (the host's /dev/full) that
 * everybody in the node may open. Without CAP_MKNOD (a rootless fabric,
 * netns/userns.h) the host's own node is bound on an empty file instead:
 * the same device to stat and open. The view's /dev/infiniband binds these
 * with their directory (node_mounts.c: recursively).
 */
static int make_char_node(int devfd, const char *name)
{
	char path[64];
	int fd;

	if (unlinkat(devfd, name, 0) && errno != ENOENT)
		return -errno;
	if (mknodat(devfd, name, S_IFCHR | 0666, makedev(UVERBS_MAJOR, UVERBS_MINOR)) == 0)
		/* mknod honours the umask; everybody in the node must be able to open it. */
		return fchmodat(devfd, name, 0666, 0) ? -errno : 0;
	if (errno != EPERM)
		return -errno;
	fd = openat(devfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd < 0)
		return -errno;
	close(fd);
	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", devfd, name);
	return mount(UVERBS_HOST_NODE, path, NULL, MS_BIND, NULL) ? -errno : 0;
}

static int write_uverbs(int verbsfd, int devfd, const struct vfab_hca *h)
{
	char name[32];
	int fd, ret;

	snprintf(name, sizeof(name), "uverbs%u", h->uverbs_idx);
	fd = subdir(verbsfd, name);
	if (fd < 0)
		return fd;
	ret = put(fd, "ibdev", "%s\n", h->name);
	if (!ret)
		ret = put(fd, "abi_version", "%d\n", VFAB_UVERBS_ABI_VERSION);
	if (!ret)
		ret = put(fd, "dev", "%d:%d\n", UVERBS_MAJOR, UVERBS_MINOR);
	close(fd);
	if (ret)
		return ret;
	return make_char_node(devfd, name);
}

/*
 * /dev/infiniband/rdma_cm: librdmacm opens it and checks that it is a
 * character device; the preload library serves what is written to it
 * (cm/cm_shim.c). No sysfs entry: without class/misc/rdma_cm librdmacm
 * takes the newest ABI and any device numbers.
 */
static int write_rdma_cm(int devfd)
{
	return make_char_node(devfd, "rdma_cm");
}

/*
 * Whether readdir on parent's file system lists entries in the order they
 * were made: libibverbs numbers devices in readdir order of
 * class/infiniband_verbs, and tmpfs lists newest first on some kernels and
 * oldest first on others. A scratch directory with two entries says which.
 */
static int readdir_is_creation_order(int parent)
{
	static const char probe[] = ".vfab-order-probe";
	int fd, first = -1;
	struct dirent *de;
	DIR *d;

	if (mkdirat(parent, probe, 0700) && errno != EEXIST)
		return -errno;
	fd = openat(parent, probe, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if ((mkdirat(fd, "a", 0700) && errno != EEXIST) ||
	    (mkdirat(fd, "b", 0700) && errno != EEXIST) || !(d = fdopendir(fd))) {
		int err = errno;

		close(fd);
		return -err;
	}
	while (first < 0 && (de = readdir(d)))
		if (de->d_name[0] != '.')
			first = de->d_name[0] == 'a';
	unlinkat(dirfd(d), "a", AT_REMOVEDIR);
	unlinkat(dirfd(d), "b", AT_REMOVEDIR);
	closedir(d);
	unlinkat(parent, probe, AT_REMOVEDIR);
	return first < 0 ? 1 : first;
}

/*
 * The HCA and uverbs directories, made in an order that readdir returns by
 * name (the layout's order, mlx5_0 first), as ibv_devices lists a server's.
 */
static int make_dirs_in_order(int ib, int verbs, const struct vfab_region *r,
			      const struct vfab_pci_layout *l)
{
	int ascending = readdir_is_creation_order(verbs);

	if (ascending < 0)
		return ascending;
	for (uint32_t k = 0; k < l->nhcas; k++) {
		uint32_t i = ascending ? k : l->nhcas - 1 - k;
		const struct vfab_hca *h = &r->hcas[l->devs[l->hca_dev[i]].hca];
		char name[32];

		snprintf(name, sizeof(name), "uverbs%u", h->uverbs_idx);
		if ((mkdirat(ib, h->name, 0755) && errno != EEXIST) ||
		    (mkdirat(verbs, name, 0755) && errno != EEXIST))
			return -errno;
	}
	return 0;
}

int vfab_sysfs_view_write(const struct vfab_region *r, uint32_t node,
			  const struct vfab_pci_layout *pci, const char *outdir)
{
	const struct vfab_node *n;
	char path[4096];
	int ib = -1, verbs = -1, mad = -1, dev = -1, ret = 0;

	if (node >= r->nnodes || node >= VFAB_MAX_NODES)
		return -EINVAL;
	n = &r->nodes[node];
	if (pci->nhcas != (n->nhcas < 8 ? n->nhcas : 8))
		return -EINVAL; /* a layout of another node */
	/* Leaves room for every name below, so the snprintf calls cannot truncate. */
	if (strlen(outdir) > sizeof(path) - 64)
		return -ENAMETOOLONG;
	snprintf(path, sizeof(path), "%s/class/infiniband", outdir);
	ib = open_dir_path(path);
	if (ib < 0)
		return ib;
	snprintf(path, sizeof(path), "%s/class/infiniband_verbs", outdir);
	verbs = open_dir_path(path);
	snprintf(path, sizeof(path), "%s/class/infiniband_mad", outdir);
	mad = open_dir_path(path);
	snprintf(path, sizeof(path), "%s/dev", outdir);
	dev = open_dir_path(path);
	if (verbs < 0 || mad < 0 || dev < 0) {
		ret = verbs < 0 ? verbs : mad < 0 ? mad : dev;
		goto out;
	}
	ret = put(verbs, "abi_version", "%d\n", VFAB_VERBS_ABI_VERSION);
	if (!ret)
		ret = put(mad, "abi_version", "%d\n", VFAB_UMAD_ABI_VERSION);
	for (uint32_t i = 0; !ret && i < n->nhcas && i < 8; i++) {
		uint32_t h = n->hcas[i];

		if (h >= VFAB_MAX_HCAS || !r->hcas[h].in_use)
			ret = -EINVAL;
	}
	if (!ret)
		ret = make_dirs_in_order(ib, verbs, r, pci);
	for (uint32_t i = 0; !ret && i < n->nhcas && i < 8; i++) {
		uint32_t h = n->hcas[i];

		ret = write_hca(ib, r, node, pci, h);
		if (!ret)
			ret = write_uverbs(verbs, dev, &r->hcas[h]);
	}
	if (!ret && n->nhcas)
		ret = write_rdma_cm(dev);
out:
	if (dev >= 0)
		close(dev);
	if (mad >= 0)
		close(mad);
	if (verbs >= 0)
		close(verbs);
	close(ib);
	return ret;
}
