/* SPDX-License-Identifier: MIT */
#include "netns/sysfs_view.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "fabric/gid.h"
#include "fabric/topology.h"

/* The numbers of /dev/full: any command sent to the "kernel" fails cleanly. */
#define UVERBS_MAJOR 1
#define UVERBS_MINOR 7

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

static const char *const hw_counters[] = {
    "duplicate_request", "implied_nak_seq_err",	     "local_ack_timeout_err",
    "out_of_buffer",	 "out_of_sequence",	     "packet_seq_err",
    "req_cqe_error",	 "req_remote_access_errors", "req_remote_invalid_request",
    "resp_cqe_error",	 "resp_local_length_error",  "resp_remote_access_errors",
    "rnr_nak_retry_err", "rx_atomic_requests",	     "rx_read_requests",
    "rx_write_requests",
};

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

/* The value of a counter file: its live counter, or 0 for those vfab does not count. */
static uint64_t counter_value(const uint64_t v[VFAB_NCOUNTERS], const char *name)
{
	int i = vfab_sysfs_counter_find(name);

	return i < 0 ? 0 : v[i];
}

/* A new view: link_downed starts at 0 (vfabd counts the downs it makes). */
static int write_counters(int portfd, const struct vfab_port *p)
{
	uint64_t v[VFAB_NCOUNTERS];
	int cnt = subdir(portfd, "counters"), hw, ret = 0;

	if (cnt < 0)
		return cnt;
	vfab_sysfs_counter_values(p, 0, v);
	for (size_t i = 0; i < sizeof(port_counters) / sizeof(port_counters[0]) && !ret; i++)
		ret = put(cnt, port_counters[i], "%llu\n",
			  (unsigned long long)counter_value(v, port_counters[i]));
	close(cnt);
	if (ret)
		return ret;
	hw = subdir(portfd, "hw_counters");
	if (hw < 0)
		return hw;
	for (size_t i = 0; i < sizeof(hw_counters) / sizeof(hw_counters[0]) && !ret; i++)
		ret = put(hw, hw_counters[i], "%llu\n",
			  (unsigned long long)counter_value(v, hw_counters[i]));
	if (ret == 0)
		ret = put(hw, "lifespan", "10\n");
	close(hw);
	return ret;
}

static int write_port(int portsfd, uint32_t num, const struct vfab_port *p)
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
		ret = put(fd, "cap_mask", "0x00010000\n");
	if (!ret)
		ret = write_gid_tables(fd, p);
	if (!ret) {
		int empty_pkey = -1;

		pk = subdir(fd, "pkeys");
		ret = pk < 0 ? pk : 0;
		for (unsigned i = 0; !ret && i < VFAB_SYSFS_PKEYS; i++)
			ret = put_indexed(pk, i, i != 0, &empty_pkey,
					  i == 0 ? "0xffff\n" : "0x0000\n");
		if (pk >= 0)
			close(pk);
	}
	if (!ret)
		ret = write_counters(fd, p);
	close(fd);
	return ret;
}

/*
 * The kernel prints a CPU mask as one 32-bit word per 32 possible CPUs:
 * /sys/devices/system/cpu/possible ("0-127") says how many.
 */
static unsigned possible_cpu_words(void)
{
	char text[256];
	struct vfab_cpus possible;
	int last;

	if (vfab_read_file("/sys/devices/system/cpu/possible", text, sizeof(text)) <= 0)
		return 1;
	text[strcspn(text, "\n")] = '\0';
	if (vfab_cpus_parse(text, &possible))
		return 1;
	last = vfab_cpus_nth(&possible, vfab_cpus_count(&possible) - 1);
	return last < 0 ? 1 : (unsigned)last / 32 + 1;
}

/* The NUMA node of a CPU (its nodeN entry in sysfs), -1 when none says. */
static int cpu_numa_node(int cpu)
{
	char path[128];
	struct dirent *de;
	int node = -1;
	DIR *d;

	if (cpu < 0)
		return -1;
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d", cpu);
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
 * What middleware reads about the PCI function behind the HCA: its locality
 * (UCX local_cpus, hwloc, NCCL numa_node: the node's own CPUs, so the HCA is
 * "close" to the node's cores) and its driver (Open MPI's UCX component
 * takes the basename of the driver link and matches "mlx*"). The link has
 * the kernel's shape and target, /sys/bus/pci/drivers/mlx5_core, which only
 * exists where the real driver is loaded.
 */
static int write_locality(int fd, const struct vfab_region *r, uint32_t node)
{
	const struct vfab_cpus *cpus = &r->nodes[node].cpus;
	char mask[VFAB_CPUS_MAX / 32 * 9 + 1], list[4096];
	int ret;

	if (vfab_cpus_format_mask(cpus, possible_cpu_words(), mask, sizeof(mask)) ||
	    vfab_cpus_format_list(cpus, list, sizeof(list)))
		return -EOVERFLOW;
	ret = put(fd, "local_cpus", "%s\n", mask);
	if (!ret)
		ret = put(fd, "local_cpulist", "%s\n", list);
	if (!ret)
		ret = put(fd, "numa_node", "%d\n", cpu_numa_node(vfab_cpus_nth(cpus, 0)));
	if (!ret && symlinkat("../../../../bus/pci/drivers/" VFAB_SYSFS_DRIVER, fd, "driver") &&
	    errno != EEXIST)
		ret = -errno;
	return ret;
}

static int write_device_dir(int hcafd, const struct vfab_region *r, uint32_t hca_idx)
{
	const struct vfab_hca *h = &r->hcas[hca_idx];
	char region[256];
	int fd = subdir(hcafd, "device"), ret;

	if (fd < 0)
		return fd;
	ret = vfab_region_path(r->fabric, region, sizeof(region));
	ret = ret < 0 ? ret : 0;
	if (!ret)
		ret = put(fd, "modalias", "vfab:%s\n", h->name);
	if (!ret)
		ret = put(fd, "vendor", "0x15b3\n");
	if (!ret)
		ret = put(fd, "device", "0x101b\n");
	if (!ret)
		ret = write_locality(fd, r, h->node);
	if (!ret)
		ret = put(fd, "vfab", "region %s\nhca %u\nrundir %s\n", region, hca_idx, r->rundir);
	close(fd);
	return ret;
}

static int write_hca(int ibfd, const struct vfab_region *r, uint32_t node, uint32_t hca_idx)
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
		ret = write_device_dir(fd, r, hca_idx);
	if (!ret) {
		ports = subdir(fd, "ports");
		ret = ports < 0 ? ports : 0;
		for (uint32_t p = 0; !ret && p < h->nports && p < VFAB_MAX_PORTS; p++)
			ret = write_port(ports, p + 1, &h->ports[p]);
		if (ports >= 0)
			close(ports);
	}
	close(fd);
	return ret;
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
	if (unlinkat(devfd, name, 0) && errno != ENOENT)
		return -errno;
	if (mknodat(devfd, name, S_IFCHR | 0666, makedev(UVERBS_MAJOR, UVERBS_MINOR)))
		return -errno;
	/* mknod honours the umask; everybody in the node must be able to open it. */
	if (fchmodat(devfd, name, 0666, 0))
		return -errno;
	return 0;
}

/*
 * /dev/infiniband/rdma_cm: librdmacm opens it and checks that it is a
 * character device; the preload library serves what is written to it
 * (cm/cm_shim.c). No sysfs entry: without class/misc/rdma_cm librdmacm
 * takes the newest ABI and any device numbers.
 */
static int write_rdma_cm(int devfd)
{
	if (unlinkat(devfd, "rdma_cm", 0) && errno != ENOENT)
		return -errno;
	if (mknodat(devfd, "rdma_cm", S_IFCHR | 0666, makedev(UVERBS_MAJOR, UVERBS_MINOR)))
		return -errno;
	if (fchmodat(devfd, "rdma_cm", 0666, 0))
		return -errno;
	return 0;
}

int vfab_sysfs_view_write(const struct vfab_region *r, uint32_t node, const char *outdir)
{
	const struct vfab_node *n;
	char path[4096];
	int ib = -1, verbs = -1, mad = -1, dev = -1, ret = 0;

	if (node >= r->nnodes || node >= VFAB_MAX_NODES)
		return -EINVAL;
	n = &r->nodes[node];
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

		if (h >= VFAB_MAX_HCAS || !r->hcas[h].in_use) {
			ret = -EINVAL;
			break;
		}
		ret = write_hca(ib, r, node, h);
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
