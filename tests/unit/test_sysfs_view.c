/* SPDX-License-Identifier: MIT */
/*
 * The node views written from a region into a temp dir: every file of the
 * sysfs contract (DESIGN.md "Sysfs view of an HCA") with the kernel's
 * formats, the /dev/infiniband node, and the /etc upper layer.
 */
#include <sys/mman.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "config/config.h"
#include "fabric/gid.h"
#include "fabric/region.h"
#include "fabric/topology.h"
#include "netns/etc_view.h"
#include "netns/fabric_net.h"
#include "netns/node_mounts.h"
#include "netns/pci_view.h"
#include "netns/sysfs_view.h"

/* What libibverbs matches the provider by: a ConnectX-6, lower-case hex (device/modalias). */
#define CX6_MODALIAS "pci:v000015b3d0000101bsv000015b3sd00000007bc02sc00i00\n"

/* Two nodes; node a has two HCAs, the second with two ports, and an IPv6. */
static const char multi_yaml[] = "version: 1\n"
				 "cluster: {name: tview}\n"
				 "nodes:\n"
				 "  - id: a\n"
				 "    hcas:\n"
				 "      - {name: mlx5_0}\n"
				 "      - {name: mlx5_1, ports: 2}\n"
				 "    addresses: [198.18.0.1/24, \"fd00::1/64\",\n"
				 "                {netdev: eth1, address: 198.18.1.1/24}]\n"
				 "  - id: b\n"
				 "    addresses: [198.18.0.2/24]\n";

struct fixture {
	struct vfab_region *r;
	struct vfab_config cfg;
	char dir[64];
};

static int setup_region(void **state, const char *yaml)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char err[512];

	assert_non_null(f);
	/* Page-aligned as the region's layout needs (calloc is not). */
	f->r = mmap(NULL, sizeof(*f->r), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(f->r != MAP_FAILED);
	assert_non_null(f->r);
	f->r->local.mapped = 1; /* shard 0 is this process's, as vfabd's is */
	if (yaml)
		assert_int_equal(
		    vfab_config_load_string(yaml, "multi.yaml", &f->cfg, err, sizeof(err)), 0);
	else
		assert_int_equal(vfab_config_load_default(&f->cfg, err, sizeof(err)), 0);
	snprintf(f->r->fabric, sizeof(f->r->fabric), "tview");
	snprintf(f->r->rundir, sizeof(f->r->rundir), "/run/vfab/tview");
	assert_int_equal(vfab_topology_fill(f->r, &f->cfg), 0);
	snprintf(f->dir, sizeof(f->dir), "/tmp/vfab-test-view-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	*state = f;
	return 0;
}

static int setup_default(void **state)
{
	return setup_region(state, NULL);
}

static int setup_multi(void **state)
{
	return setup_region(state, multi_yaml);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	vfab_rm_rf(f->dir);
	vfab_config_free(&f->cfg);
	munmap(f->r, sizeof(*f->r));
	free(f);
	return 0;
}

/*
 * A node's whole view as `vfab up` writes it: the PCI layout against a host
 * sysfs that does not exist (no GPUs, domain 1), its functions, then the
 * class directories whose device links point at them.
 */
static int write_view(struct fixture *f, uint32_t node)
{
	static struct vfab_pci_layout l;
	char sysroot[128];
	int ret;

	snprintf(sysroot, sizeof(sysroot), "%s/no-host-sys", f->dir);
	ret = vfab_pci_plan(f->r, node, NULL, sysroot, &l);
	if (ret == 0)
		ret = vfab_pci_view_write(f->r, node, &l, sysroot, f->dir);
	if (ret == 0)
		ret = vfab_pci_lists_write(&l, sysroot, f->dir);
	return ret ? ret : vfab_sysfs_view_write(f->r, node, &l, f->dir);
}

static void expect_file(const char *dir, const char *rel, const char *want)
{
	char path[4096], got[1024];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	n = vfab_read_file(path, got, sizeof(got));
	if (n < 0)
		fail_msg("%s: %s", path, strerror((int)-n));
	if (strcmp(got, want) != 0)
		fail_msg("%s: got '%s', want '%s'", rel, got, want);
}

static int count_entries(const char *dir, const char *rel)
{
	char path[4096];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static void test_hca_identity(void **state)
{
	struct fixture *f = *state;
	const struct vfab_hca *h = &f->r->hcas[f->r->nodes[0].hcas[0]];
	char want[64];

	assert_int_equal(write_view(f, 0), 0);
	snprintf(want, sizeof(want), "%04x:%04x:%04x:%04x\n", (unsigned)(h->node_guid >> 48),
		 (unsigned)(h->node_guid >> 32) & 0xffff, (unsigned)(h->node_guid >> 16) & 0xffff,
		 (unsigned)h->node_guid & 0xffff);
	expect_file(f->dir, "class/infiniband/mlx5_0/node_guid", want);
	expect_file(f->dir, "class/infiniband/mlx5_0/sys_image_guid", want);
	/* The topology derives the GUID from the MAC 02:76:66:..: never all zero. */
	assert_int_not_equal(h->node_guid, 0);
	expect_file(f->dir, "class/infiniband/mlx5_0/node_type", "1: CA\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/fw_ver", "20.35.1012\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/hca_type", "MT4123\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/board_id", "VFAB0000000001\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/node_desc", "node0 mlx5_0\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/device/modalias", CX6_MODALIAS);
	expect_file(f->dir, "class/infiniband/mlx5_0/device/vendor", "0x15b3\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/device/device", "0x101b\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/device/vfab",
		    "region /dev/shm/vfab-tview\nhca 0\nrundir /run/vfab/tview\n");
}

static void test_port_files(void **state)
{
	struct fixture *f = *state;
	char rate[64], want[80];

	assert_int_equal(write_view(f, 0), 0);
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/phys_state", "5: LinkUp\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/lid", "0x0\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/sm_lid", "0x0\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/lid_mask_count", "0\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/cap_mask", "0x04010000\n");
	assert_true(vfab_topology_sysfs_rate(&f->r->hcas[0].ports[0], rate, sizeof(rate)) > 0);
	assert_non_null(strstr(rate, " Gb/sec ("));
	snprintf(want, sizeof(want), "%s\n", rate);
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/rate", want);
	/* No second port on this HCA. */
	assert_int_equal(count_entries(f->dir, "class/infiniband/mlx5_0/ports"), 1);
}

static void test_port_down_state(void **state)
{
	struct fixture *f = *state;

	atomic_store(&f->r->hcas[0].ports[0].state, 1);
	assert_int_equal(write_view(f, 0), 0);
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/phys_state", "3: Disabled\n");
}

static void test_gid_table(void **state)
{
	struct fixture *f = *state;
	const struct vfab_port *p = &f->r->hcas[0].ports[0];
	uint8_t def[16];
	char text[VFAB_GID_STR_LEN], want[64];

	assert_int_equal(write_view(f, 0), 0);
	assert_int_equal(count_entries(f->dir, "class/infiniband/mlx5_0/ports/1/gids"), 256);
	assert_int_equal(count_entries(f->dir, "class/infiniband/mlx5_0/ports/1/gid_attrs/types"),
			 256);
	assert_int_equal(count_entries(f->dir, "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs"),
			 256);
	/* 0/1: fe80::EUI-64 of the port's MAC, v1 then v2. */
	vfab_gid_default(p->mac, def);
	vfab_gid_format(def, text);
	snprintf(want, sizeof(want), "%s\n", text);
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gids/0", want);
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gids/1", want);
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gid_attrs/types/0", "IB/RoCE v1\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gid_attrs/types/1", "RoCE v2\n");
	/* 2/3: 198.18.0.1 as ::ffff:c612:0001, the seed one-liner's index 3. */
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gids/3",
		    "0000:0000:0000:0000:0000:ffff:c612:0001\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gid_attrs/types/2", "IB/RoCE v1\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gid_attrs/types/3", "RoCE v2\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/3", "eth0\n");
	/* Empty entries: zero GID, v1 type, no netdev. */
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gids/4",
		    "0000:0000:0000:0000:0000:0000:0000:0000\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gids/255",
		    "0000:0000:0000:0000:0000:0000:0000:0000\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gid_attrs/types/255", "IB/RoCE v1\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/255", "\n");
}

/* Empty entries share one inode; a rewrite must not write through it. */
static void test_rewrite_keeps_shared_entries(void **state)
{
	struct fixture *f = *state;
	struct vfab_port *p = &f->r->hcas[0].ports[0];
	struct vfab_gid *g = &p->gids[p->ngids];

	assert_int_equal(write_view(f, 0), 0);
	memset(g, 0, sizeof(*g));
	g->raw[0] = 0xfd;
	g->raw[15] = 0x42;
	g->type = VFAB_GID_ROCE_V2;
	g->index = 10;
	p->ngids++;
	assert_int_equal(write_view(f, 0), 0);
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gids/10",
		    "fd00:0000:0000:0000:0000:0000:0000:0042\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gid_attrs/types/10", "RoCE v2\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/10", "eth0\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gids/9",
		    "0000:0000:0000:0000:0000:0000:0000:0000\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gids/11",
		    "0000:0000:0000:0000:0000:0000:0000:0000\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gid_attrs/types/11", "IB/RoCE v1\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/11", "\n");
}

static void test_second_node_differs(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(write_view(f, 1), 0);
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gids/3",
		    "0000:0000:0000:0000:0000:ffff:c612:0002\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/node_desc", "node1 mlx5_0\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/device/vfab",
		    "region /dev/shm/vfab-tview\nhca 1\nrundir /run/vfab/tview\n");
	assert_int_equal(write_view(f, 2), -EINVAL);
}

static void test_pkeys_and_counters(void **state)
{
	struct fixture *f = *state;
	struct vfab_port_counters *c = vfab_cnt(f->r, 0, 1);

	atomic_store(&c->xmit_data_words, 1234);
	atomic_store(&c->rnr_nak_retry_err, 7);
	atomic_store(&c->duplicate_request, 9);
	assert_int_equal(write_view(f, 0), 0);
	/* A RoCE port's table: the default P_Key only, as mlx5 reports it. */
	assert_int_equal(count_entries(f->dir, "class/infiniband/mlx5_0/ports/1/pkeys"), 1);
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/pkeys/0", "0xffff\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", "1234\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/counters/port_rcv_data", "0\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/counters/symbol_error", "0\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/counters/link_downed", "0\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/counters/port_xmit_discards", "0\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/hw_counters/rnr_nak_retry_err", "7\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/hw_counters/out_of_sequence", "0\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/hw_counters/duplicate_request", "9\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/hw_counters/implied_nak_seq_err",
		    "0\n");
}

static void test_verbs_class_and_dev(void **state)
{
	struct fixture *f = *state;
	char path[4096];
	struct stat st;

	if (geteuid() != 0)
		skip(); /* mknod of a character device needs CAP_MKNOD */
	assert_int_equal(write_view(f, 0), 0);
	expect_file(f->dir, "class/infiniband_verbs/abi_version", "6\n");
	expect_file(f->dir, "class/infiniband_verbs/uverbs0/ibdev", "mlx5_0\n");
	expect_file(f->dir, "class/infiniband_verbs/uverbs0/abi_version", "1\n");
	expect_file(f->dir, "class/infiniband_verbs/uverbs0/dev", "1:7\n");
	expect_file(f->dir, "class/infiniband_mad/abi_version", "5\n");
	snprintf(path, sizeof(path), "%s/dev/uverbs0", f->dir);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(major(st.st_rdev), 1);
	assert_int_equal(minor(st.st_rdev), 7);
	assert_int_equal(st.st_mode & 0777, 0666);
	/* Writing the view again (same dir) replaces, it does not fail. */
	assert_int_equal(write_view(f, 0), 0);
}

static void test_multi_hca_ports(void **state)
{
	struct fixture *f = *state;
	char path[4096];
	struct stat st;

	if (geteuid() != 0)
		skip();
	assert_int_equal(write_view(f, 0), 0);
	assert_int_equal(count_entries(f->dir, "class/infiniband"), 2);
	assert_int_equal(count_entries(f->dir, "class/infiniband/mlx5_1/ports"), 2);
	expect_file(f->dir, "class/infiniband_verbs/uverbs1/ibdev", "mlx5_1\n");
	snprintf(path, sizeof(path), "%s/dev/uverbs1", f->dir);
	assert_int_equal(stat(path, &st), 0);
	/* mlx5_0 on eth0: link-local, IPv4, then the IPv6 at 4/5. */
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gids/3",
		    "0000:0000:0000:0000:0000:ffff:c612:0001\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gids/5",
		    "fd00:0000:0000:0000:0000:0000:0000:0001\n");
	expect_file(f->dir, "class/infiniband/mlx5_0/ports/1/gid_attrs/types/5", "RoCE v2\n");
	/* mlx5_1 port 1 sits on eth1 with 198.18.1.1, port 2 on eth2. */
	expect_file(f->dir, "class/infiniband/mlx5_1/ports/1/gids/3",
		    "0000:0000:0000:0000:0000:ffff:c612:0101\n");
	expect_file(f->dir, "class/infiniband/mlx5_1/ports/1/gid_attrs/ndevs/0", "eth1\n");
	expect_file(f->dir, "class/infiniband/mlx5_1/ports/2/gid_attrs/ndevs/0", "eth2\n");
	expect_file(f->dir, "class/infiniband/mlx5_1/device/modalias", CX6_MODALIAS);
}

static void test_etc_view(void **state)
{
	struct fixture *f = *state;
	char upper[128], lib[128], value[8] = "";
	char path[4096];

	snprintf(upper, sizeof(upper), "%s/etc-upper", f->dir);
	/* A preload that does not exist is left out (ld.so would warn in every process). */
	assert_int_equal(vfab_etc_view_write(upper, &f->cfg, 1, "/opt/vfab/lib",
					     "/nonexistent/libvfab-preload.so"),
			 0);
	expect_file(upper, "hostname", "node1\n");
	expect_file(upper, "libibverbs.d/vfab.driver", "driver /opt/vfab/lib/libvfab\n");
	snprintf(path, sizeof(path), "%s/ld.so.preload", upper);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/hosts", upper);
	{
		char hosts[2048];

		assert_true(vfab_read_file(path, hosts, sizeof(hosts)) > 0);
		assert_non_null(strstr(hosts, "127.0.0.1\tlocalhost\n"));
		assert_non_null(strstr(hosts, "198.18.0.1\tnode0 node0.vfab\n"));
		assert_non_null(strstr(hosts, "198.18.0.2\tnode1 node1.vfab\n"));
	}
	/* The host's drivers are hidden: opaque dir, or whiteouts where xattrs fail. */
	snprintf(path, sizeof(path), "%s/libibverbs.d", upper);
	if (getxattr(path, "trusted.overlay.opaque", value, sizeof(value)) == 1)
		assert_int_equal(value[0], 'y');
	else if (access("/etc/libibverbs.d/mlx5.driver", F_OK) == 0)
		assert_int_equal(count_entries(upper, "libibverbs.d") > 1, 1);
	/* With an existing preload library, its absolute path goes in. */
	snprintf(lib, sizeof(lib), "%s/libvfab-preload.so", f->dir);
	assert_int_equal(vfab_write_file(lib, "", 0, 0644), 0);
	assert_int_equal(vfab_etc_view_write(upper, &f->cfg, 0, "/opt/vfab/lib", lib), 0);
	snprintf(path, sizeof(path), "%s\n", lib);
	expect_file(upper, "ld.so.preload", path);
	expect_file(upper, "hostname", "node0\n");
}

static void test_etc_view_libdirs_and_ssh(void **state)
{
	struct fixture *f = *state;
	const char *dirs[] = {"/opt/rdma/usr/lib/x86_64-linux-gnu", "/opt/other"};
	const char *bad[] = {"relative/lib"};
	char upper[128];

	snprintf(upper, sizeof(upper), "%s/etc-upper", f->dir);
	assert_int_equal(vfab_etc_view_add_libdirs(upper, dirs, 2), 0);
	expect_file(upper, "ld.so.conf.d/" VFAB_LIBDIRS_CONF,
		    "# vfab up --libdir: libraries carried for this node\n"
		    "/opt/rdma/usr/lib/x86_64-linux-gnu\n/opt/other\n");
	/* ld.so.conf wants absolute directories. */
	assert_int_equal(vfab_etc_view_add_libdirs(upper, bad, 1), -EINVAL);
	assert_int_equal(vfab_etc_view_add_ssh(upper, "/run/vfab/tview/ssh_config"), 0);
	expect_file(upper, "ssh/ssh_config.d/" VFAB_SSH_CONF_INCLUDE,
		    "# the fabric's nodes: plain 'ssh node1' works here\n"
		    "Include /run/vfab/tview/ssh_config\n");
}

/* Child of test_hide_peer_memory, in a mount namespace of its own: 0 passed. */
static int hide_peer_memory_child(const char *sys)
{
	char path[512];

	if (unshare(CLONE_NEWNS))
		return errno == EPERM ? 77 : 1;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) || vfab_node_hide_peer_memory(sys))
		return 2;
	/* What NCCL and UCX look for is gone; the directories stay, other modules too. */
	snprintf(path, sizeof(path), "%s/module/nvidia_peermem/version", sys);
	if (access(path, F_OK) == 0 || errno != ENOENT)
		return 3;
	snprintf(path, sizeof(path), "%s/kernel/mm/memory_peers/nv_mem/version", sys);
	if (access(path, F_OK) == 0 || errno != ENOENT)
		return 4;
	snprintf(path, sizeof(path), "%s/module/nvidia/version", sys);
	if (access(path, F_OK))
		return 5;
	/* Read-only: nothing can put an entry back. */
	snprintf(path, sizeof(path), "%s/module/nvidia_peermem/version", sys);
	if (vfab_write_file(path, "1\n", 2, 0644) != -EROFS)
		return 6;
	return 0;
}

static void test_hide_peer_memory(void **state)
{
	struct fixture *f = *state;
	const char *files[] = {"module/nvidia_peermem/version",
			       "kernel/mm/memory_peers/nv_mem/version", "module/nvidia/version"};
	char sys[128], path[256];
	int status;
	pid_t pid;

	snprintf(sys, sizeof(sys), "%s/fakesys", f->dir);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", sys, files[i]);
		*strrchr(path, '/') = '\0';
		assert_int_equal(vfab_mkdir_p(path, 0755), 0);
		snprintf(path, sizeof(path), "%s/%s", sys, files[i]);
		assert_int_equal(vfab_write_file(path, "1.0\n", 4, 0444), 0);
	}
	/* Nothing to hide: no error, nothing mounted. */
	assert_int_equal(vfab_node_hide_peer_memory("/nonexistent/sys"), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(hide_peer_memory_child(sys));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* NCCL reads /etc/nccl.conf after the environment; the first line of a name wins. */
static void test_etc_view_nccl_conf(void **state)
{
	struct fixture *f = *state;
	char upper[128], host[128], want[512];
	const char *gin = "# vfab: NCCL 2.28.7-2.28.9 crash without it on HCAs not driven by "
			  "libmlx5 (NVIDIA/nccl#1881)\nNCCL_GIN_TYPE=2\n";

	snprintf(upper, sizeof(upper), "%s/etc-upper", f->dir);
	snprintf(host, sizeof(host), "%s/nccl.conf.host", f->dir);
	assert_int_equal(vfab_mkdir_p(upper, 0755), 0);
	/* No host file: only the GIN line. */
	assert_int_equal(vfab_etc_view_add_nccl_conf(upper, host), 0);
	expect_file(upper, "nccl.conf", gin);
	/* The host's lines come first, so a GIN type of its own wins. */
	assert_int_equal(vfab_write_filef(host, "NCCL_DEBUG=WARN\nNCCL_GIN_TYPE=3"), 0);
	assert_int_equal(vfab_etc_view_add_nccl_conf(upper, host), 0);
	snprintf(want, sizeof(want), "NCCL_DEBUG=WARN\nNCCL_GIN_TYPE=3\n%s", gin);
	expect_file(upper, "nccl.conf", want);
	assert_int_equal(vfab_etc_view_add_nccl_conf("/nonexistent/upper", host), -ENOENT);
}

static void test_etc_view_unlocks_root_for_keys(void **state)
{
	struct fixture *f = *state;
	char upper[128], shadow[128], path[256];

	snprintf(upper, sizeof(upper), "%s/etc-upper", f->dir);
	snprintf(shadow, sizeof(shadow), "%s/shadow.host", f->dir);
	assert_int_equal(vfab_mkdir_p(upper, 0755), 0);
	snprintf(path, sizeof(path), "%s/shadow", upper);
	/* Not locked: the node keeps the host's file. */
	assert_int_equal(vfab_write_filef(shadow, "daemon:*:1:0::::\nroot:*:19000:0:99999:7:::\n"),
			 0);
	assert_int_equal(vfab_etc_view_unlock_root_keys(upper, shadow), 0);
	assert_int_equal(access(path, F_OK), -1);
	/* Locked ("!" + hash): '*' in the node, every other line as it was. */
	assert_int_equal(vfab_write_filef(shadow,
					  "daemon:*:1:0::::\nroot:!$y$j9T$abc:19000:0:99999:"
					  "7:::\nsshd:!:19000::::::\n"),
			 0);
	assert_int_equal(vfab_etc_view_unlock_root_keys(upper, shadow), 0);
	expect_file(upper, "shadow",
		    "daemon:*:1:0::::\nroot:*:19000:0:99999:7:::\nsshd:!:19000::::::\n");
}

static void test_host_end_names(void **state)
{
	char name[VFAB_IFNAME_MAX];

	(void)state;
	assert_int_equal(vfab_net_host_end_name(name, sizeof(name), "node0", 0, 0), 0);
	assert_string_equal(name, "node0-v");
	assert_int_equal(vfab_net_host_end_name(name, sizeof(name), "node0", 0, 2), 0);
	assert_string_equal(name, "node0-v2");
	/* 15-character ids do not fit IFNAMSIZ with a suffix. */
	assert_int_equal(vfab_net_host_end_name(name, sizeof(name), "abcdefghijklmno", 12, 0), 0);
	assert_string_equal(name, "vfn12-0");
	assert_true(strlen(name) < 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_hca_identity, setup_default, teardown),
	    cmocka_unit_test_setup_teardown(test_port_files, setup_default, teardown),
	    cmocka_unit_test_setup_teardown(test_port_down_state, setup_default, teardown),
	    cmocka_unit_test_setup_teardown(test_gid_table, setup_default, teardown),
	    cmocka_unit_test_setup_teardown(test_rewrite_keeps_shared_entries, setup_default,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_second_node_differs, setup_default, teardown),
	    cmocka_unit_test_setup_teardown(test_pkeys_and_counters, setup_default, teardown),
	    cmocka_unit_test_setup_teardown(test_verbs_class_and_dev, setup_default, teardown),
	    cmocka_unit_test_setup_teardown(test_multi_hca_ports, setup_multi, teardown),
	    cmocka_unit_test_setup_teardown(test_etc_view, setup_default, teardown),
	    cmocka_unit_test_setup_teardown(test_etc_view_libdirs_and_ssh, setup_default, teardown),
	    cmocka_unit_test_setup_teardown(test_etc_view_nccl_conf, setup_default, teardown),
	    cmocka_unit_test_setup_teardown(test_hide_peer_memory, setup_default, teardown),
	    cmocka_unit_test_setup_teardown(test_etc_view_unlocks_root_for_keys, setup_default,
					    teardown),
	    cmocka_unit_test(test_host_end_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
