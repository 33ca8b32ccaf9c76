/* SPDX-License-Identifier: MIT */
/*
 * The PCI view of a node (netns/pci_view.h) against a fake host /sys in a
 * temp dir: two NVIDIA GPUs (one with an audio function) behind real root
 * ports, a second real PCI domain, 64 possible CPUs. Checked: the synthetic
 * domain, name order of functions and buses, the PCIe switch shared with a
 * placed GPU (NCCL's walk from both ends meets at its upstream port), the
 * host listings with the GPU redirected, the files NCCL/hwloc read, and the
 * class/infiniband device links resolving into the tree.
 */
#include <sys/mman.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "config/config.h"
#include "fabric/region.h"
#include "fabric/topology.h"
#include "netns/pci_path.h"
#include "netns/pci_view.h"
#include "netns/sysfs_view.h"

/* mlx5_1 and mlx5_2 next to GPU 1, mlx5_3 next to a GPU the host lacks; listed out of order. */
static const char gpu_yaml[] = "version: 1\n"
			       "cluster: {name: tpci}\n"
			       "nodes:\n"
			       "  - id: a\n"
			       "    cpus: \"32-35\"\n"
			       "    hcas:\n"
			       "      - {name: mlx5_2, gpu: 1}\n"
			       "      - {name: mlx5_0}\n"
			       "      - {name: mlx5_3, gpu: 7}\n"
			       "      - {name: mlx5_1, gpu: 1}\n"
			       "  - id: b\n"
			       "fabric:\n"
			       "  inter_node: {bandwidth_gbps: 400}\n";

#define GPU1 "devices/pci0000:00/0000:00:02.0/0000:3d:00.0"
/* Where the synthetic tree puts GPU 1 and mlx5_1 (domain 2: the host has 0 and 1). */
#define SW_UP "devices/pci0002:00/0002:00:02.0/0002:02:00.0"
#define GPU1_SYN SW_UP "/0002:03:00.0/0000:3d:00.0"
#define MLX5_1_SYN SW_UP "/0002:03:01.0/0002:05:00.0"

struct fixture {
	struct vfab_region *r;
	struct vfab_config cfg;
	struct vfab_pci_layout l;
	char dir[64], sys[96], out[96];
};

static void mk(const struct fixture *f, const char *rel, const char *text)
{
	char path[4096], dir[4096];

	snprintf(path, sizeof(path), "%s/%s", f->sys, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	assert_int_equal(vfab_mkdir_p(dir, 0755), 0);
	if (text)
		assert_int_equal(vfab_write_filef(path, "%s", text), 0);
	else
		assert_int_equal(vfab_mkdir_p(path, 0755), 0);
}

static void ln(const struct fixture *f, const char *rel, const char *target)
{
	char path[4096], dir[4096];

	snprintf(path, sizeof(path), "%s/%s", f->sys, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	assert_int_equal(vfab_mkdir_p(dir, 0755), 0);
	assert_int_equal(symlink(target, path), 0);
}

/* A host function: vendor, class, link files, and its bus/pci/devices entry. */
static void host_fn(const struct fixture *f, const char *path, const char *vendor,
		    const char *class_code)
{
	char rel[512], target[512];
	const char *bdf = strrchr(path, '/') + 1;

	snprintf(rel, sizeof(rel), "%s/vendor", path);
	mk(f, rel, vendor);
	snprintf(rel, sizeof(rel), "%s/class", path);
	mk(f, rel, class_code);
	snprintf(rel, sizeof(rel), "%s/max_link_speed", path);
	mk(f, rel, "32.0 GT/s PCIe\n");
	snprintf(rel, sizeof(rel), "%s/max_link_width", path);
	mk(f, rel, "16\n");
	snprintf(rel, sizeof(rel), "%s/subsystem", path);
	snprintf(target, sizeof(target), "../../../../bus/pci");
	ln(f, rel, target);
	snprintf(rel, sizeof(rel), "bus/pci/devices/%s", bdf);
	snprintf(target, sizeof(target), "../../../%s", path);
	ln(f, rel, target);
}

static void fake_host(const struct fixture *f)
{
	host_fn(f, "devices/pci0000:00/0000:00:00.0", "0x8086\n", "0x060000\n");
	host_fn(f, "devices/pci0000:00/0000:00:01.0", "0x8086\n", "0x060400\n");
	host_fn(f, "devices/pci0000:00/0000:00:01.0/0000:1b:00.0", "0x10de\n", "0x030200\n");
	host_fn(f, "devices/pci0000:00/0000:00:02.0", "0x8086\n", "0x060400\n");
	host_fn(f, GPU1, "0x10de\n", "0x030000\n");
	host_fn(f, "devices/pci0000:00/0000:00:02.0/0000:3d:00.1", "0x10de\n", "0x040300\n");
	host_fn(f, "devices/pci0001:00/0001:00:00.0", "0x1af4\n", "0x020000\n");
	ln(f, "class/pci_bus/0000:00", "../../devices/pci0000:00/pci_bus/0000:00");
	ln(f, "class/pci_bus/0000:1b", "../../devices/pci0000:00/0000:00:01.0/pci_bus/0000:1b");
	ln(f, "class/pci_bus/0000:3d", "../../devices/pci0000:00/0000:00:02.0/pci_bus/0000:3d");
	ln(f, "class/pci_bus/0001:00", "../../devices/pci0001:00/pci_bus/0001:00");
	mk(f, "devices/system/cpu/possible", "0-63\n");
	mk(f, "devices/system/cpu/cpu32/node1", NULL);
}

static int setup_yaml(void **state, const char *yaml)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char err[512];

	assert_non_null(f);
	/* Page-aligned as the region's layout needs (calloc is not). */
	f->r = mmap(NULL, sizeof(*f->r), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(f->r != MAP_FAILED);
	assert_non_null(f->r);
	assert_int_equal(vfab_config_load_string(yaml, "pci.yaml", &f->cfg, err, sizeof(err)), 0);
	snprintf(f->r->fabric, sizeof(f->r->fabric), "tpci");
	snprintf(f->r->rundir, sizeof(f->r->rundir), "/run/vfab/tpci");
	assert_int_equal(vfab_topology_fill(f->r, &f->cfg), 0);
	snprintf(f->dir, sizeof(f->dir), "/tmp/vfab-test-pci-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->sys, sizeof(f->sys), "%s/sys", f->dir);
	snprintf(f->out, sizeof(f->out), "%s/node", f->dir);
	fake_host(f);
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_yaml(state, gpu_yaml);
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

/* The config's hcas[].gpu per region HCA of node 0, as `vfab up` passes them. */
static void gpus_of(const struct fixture *f, int gpu_of[8])
{
	const struct vfab_node *n = &f->r->nodes[0];

	for (uint32_t i = 0; i < n->nhcas; i++) {
		gpu_of[i] = VFAB_PCI_NO_GPU;
		for (uint32_t k = 0; k < f->cfg.nodes[0].nhcas; k++)
			if (!strcmp(f->cfg.nodes[0].hcas[k].name, f->r->hcas[n->hcas[i]].name) &&
			    f->cfg.nodes[0].hcas[k].has_gpu)
				gpu_of[i] = (int)f->cfg.nodes[0].hcas[k].gpu;
	}
}

static void write_all(struct fixture *f, const char *sysroot)
{
	int gpu_of[8];

	gpus_of(f, gpu_of);
	assert_int_equal(vfab_pci_plan(f->r, 0, gpu_of, sysroot, &f->l), 0);
	assert_int_equal(vfab_pci_view_write(f->r, 0, &f->l, sysroot, f->out), 0);
	assert_int_equal(vfab_pci_lists_write(&f->l, sysroot, f->out), 0);
	assert_int_equal(vfab_sysfs_view_write(f->r, 0, &f->l, f->out), 0);
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

static void expect_link(const char *dir, const char *rel, const char *want)
{
	char path[4096], got[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	n = readlink(path, got, sizeof(got) - 1);
	if (n < 0)
		fail_msg("readlink %s: %s", path, strerror(errno));
	got[n > 0 ? n : 0] = '\0';
	if (strcmp(got, want) != 0)
		fail_msg("%s: -> '%s', want '%s'", rel, got, want);
}

/* realpath of out/<rel>, relative to out again. */
static void expect_real(const char *out, const char *rel, const char *want)
{
	char path[4096], real[PATH_MAX], base[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", out, rel);
	if (!realpath(path, real))
		fail_msg("realpath %s: %s", path, strerror(errno));
	assert_non_null(realpath(out, base));
	assert_memory_equal(real, base, strlen(base));
	if (strcmp(real + strlen(base) + 1, want) != 0)
		fail_msg("%s: resolves to '%s', want '%s'", rel, real + strlen(base) + 1, want);
}

static void test_paths(void **state)
{
	struct vfab_pci_addr a;
	char buf[256];

	(void)state;
	assert_int_equal(vfab_pci_parse_bdf("0000:1b:00.1", &a), 0);
	assert_int_equal(a.domain, 0);
	assert_int_equal(a.bus, 0x1b);
	assert_int_equal(a.fn, 1);
	assert_int_equal(vfab_pci_parse_bdf("10000:01:00.0", &a), 0);
	assert_int_equal(a.domain, 0x10000);
	assert_int_equal(vfab_pci_parse_bdf("0000:00", &a), -EINVAL);
	assert_int_equal(vfab_pci_parse_bdf("0000:00:20.0", &a), -EINVAL);
	assert_int_equal(vfab_pci_path_join("bus/pci/devices", "../../../devices/pci0000:00/x", buf,
					    sizeof(buf)),
			 0);
	assert_string_equal(buf, "devices/pci0000:00/x");
	assert_int_equal(vfab_pci_path_join("a", "../../b", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(vfab_pci_path_join("a/b", "/abs", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/abs");
	assert_int_equal(vfab_pci_rel_link("class/net/eth0", "devices/x", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "../../../devices/x");
	assert_int_equal(vfab_pci_rel_link("a", "devices/x", buf, 8), -ENAMETOOLONG);
}

/* Domain, name order, buses, the switch, the GPU the host lacks. */
static void test_plan(void **state)
{
	struct fixture *f = *state;
	char path[VFAB_PCI_PATH_MAX], bdf[16];
	const char *want[] = {"0002:01:00.0", "0002:05:00.0", "0002:06:00.0", "0002:07:00.0"};

	write_all(f, f->sys);
	assert_int_equal(f->l.domain, 2);
	assert_int_equal(f->l.ngpus, 2);
	assert_int_equal(f->l.nmissing, 1);
	assert_int_equal(f->l.missing[0].gpu, 7);
	assert_string_equal(f->r->hcas[f->l.missing[0].hca].name, "mlx5_3");
	assert_int_equal(f->l.nhcas, 4);
	for (uint32_t k = 0; k < 4; k++) {
		const struct vfab_pci_dev *d = &f->l.devs[f->l.hca_dev[k]];
		char name[16];

		snprintf(name, sizeof(name), "mlx5_%u", k);
		assert_string_equal(f->r->hcas[d->hca].name, name);
		vfab_pci_addr_text(&d->addr, bdf);
		assert_string_equal(bdf, want[k]);
		/* 400 Gb/s ports: x16 at 32 GT/s, never below the port's rate. */
		assert_int_equal(d->gen, 5);
		assert_int_equal(d->width, 16);
	}
	assert_int_equal(vfab_pci_dev_path(&f->l, f->l.hca_dev[1], path, sizeof(path)), 0);
	assert_string_equal(path, MLX5_1_SYN);
	/* Both GPU 1 functions (display, audio) are mirrored below the GPU's port. */
	assert_int_equal(f->l.nmirrors, 2);
	assert_string_equal(f->l.mirrors[0].path, GPU1);
}

/* NCCL: class/pci_bus/<bus>/../../<bdf>, and the walk up meets at the switch. */
static void test_nccl_resolution(void **state)
{
	struct fixture *f = *state;

	write_all(f, f->sys);
	expect_real(f->out, "class/pci_bus/0000:3d/../../0000:3d:00.0", GPU1_SYN);
	expect_real(f->out, "class/infiniband/mlx5_1/device", MLX5_1_SYN);
	expect_real(f->out, "class/pci_bus/0002:05/../../0002:05:00.0", MLX5_1_SYN);
	expect_real(f->out, "class/pci_bus/0002:02/../../0002:02:00.0", SW_UP);
	expect_real(f->out, "class/pci_bus/0002:00/../../0002:00:01.0",
		    "devices/pci0002:00/0002:00:01.0");
	expect_real(f->out, "class/infiniband/mlx5_0/device",
		    "devices/pci0002:00/0002:00:01.0/0002:01:00.0");
	expect_real(f->out, "bus/pci/devices/0000:3d:00.1", SW_UP "/0002:03:00.0/0000:3d:00.1");
	/* The subsystem link ends in "pci" (NCCL's test for a PCI device). */
	expect_real(f->out, "class/infiniband/mlx5_2/device/subsystem", "bus/pci");
	/* The host's other buses and functions are listed as the host has them. */
	expect_link(f->out, "class/pci_bus/0000:1b",
		    "../../devices/pci0000:00/0000:00:01.0/pci_bus/0000:1b");
	expect_link(f->out, "bus/pci/devices/0000:1b:00.0",
		    "../../../devices/pci0000:00/0000:00:01.0/0000:1b:00.0");
	/* The mirror links to the real files, its own links re-aimed. */
	expect_link(f->out, GPU1_SYN "/vendor", "../../../../../../" GPU1 "/vendor");
	expect_link(f->out, GPU1_SYN "/subsystem", "../../../../../../bus/pci");
}

static void test_function_files(void **state)
{
	struct fixture *f = *state;
	char path[4096];
	unsigned char c[256];
	FILE *fp;

	write_all(f, f->sys);
	expect_file(f->out, MLX5_1_SYN "/vendor", "0x15b3\n");
	expect_file(f->out, MLX5_1_SYN "/device", "0x101b\n");
	expect_file(f->out, MLX5_1_SYN "/class", "0x020000\n");
	expect_file(f->out, MLX5_1_SYN "/subsystem_device", "0x0007\n");
	expect_file(f->out, MLX5_1_SYN "/modalias",
		    "pci:v000015b3d0000101bsv000015b3sd00000007bc02sc00i00\n");
	expect_file(f->out, MLX5_1_SYN "/max_link_speed", "32.0 GT/s PCIe\n");
	expect_file(f->out, MLX5_1_SYN "/max_link_width", "16\n");
	expect_file(f->out, MLX5_1_SYN "/numa_node", "1\n");
	expect_file(f->out, MLX5_1_SYN "/local_cpulist", "32-35\n");
	expect_file(f->out, MLX5_1_SYN "/local_cpus", "0000000f,00000000\n");
	expect_file(f->out, MLX5_1_SYN "/vfab",
		    "region /dev/shm/vfab-tpci\nhca 3\n"
		    "rundir /run/vfab/tpci\n");
	expect_link(f->out, MLX5_1_SYN "/driver", "../../../../../../bus/pci/drivers/mlx5_core");
	/* Config order gave mlx5_2, mlx5_0, mlx5_3, mlx5_1 the netdevs eth0..eth3. */
	expect_link(f->out, MLX5_1_SYN "/net/eth3",
		    "../../../../../../../devices/virtual/net/eth3");
	expect_real(f->out, MLX5_1_SYN "/infiniband/mlx5_1", "class/infiniband/mlx5_1");
	expect_file(f->out, SW_UP "/class", "0x060400\n");
	expect_file(f->out, SW_UP "/secondary_bus_number", "3\n");
	expect_file(f->out, SW_UP "/subordinate_bus_number", "6\n");
	expect_file(f->out, "devices/pci0002:00/0002:00:02.0/max_link_speed", "32.0 GT/s PCIe\n");
	/* The GPU's port takes the real GPU's link. */
	expect_file(f->out, SW_UP "/0002:03:00.0/max_link_width", "16\n");
	/* Config space: a bridge's type 1 header with its buses; the HCA's link status. */
	snprintf(path, sizeof(path), "%s/" SW_UP "/config", f->out);
	fp = fopen(path, "rb");
	assert_non_null(fp);
	assert_int_equal(fread(c, 1, sizeof(c), fp), 256);
	fclose(fp);
	assert_int_equal(c[0x0e], 1);
	assert_int_equal(c[0x19], 3);
	assert_int_equal(c[0x1a], 6);
	snprintf(path, sizeof(path), "%s/" MLX5_1_SYN "/config", f->out);
	fp = fopen(path, "rb");
	assert_non_null(fp);
	assert_int_equal(fread(c, 1, sizeof(c), fp), 256);
	fclose(fp);
	assert_int_equal(c[0] | c[1] << 8, 0x15b3);
	assert_int_equal(c[0x0b], 0x02);
	assert_int_equal(c[0x34], 0x40);
	assert_int_equal(c[0x40], 0x10);
	assert_int_equal((c[0x52] | c[0x53] << 8) & 0xf, 5);
	assert_int_equal(((c[0x52] | c[0x53] << 8) >> 4) & 0x3f, 16);
}

/*
 * libibverbs numbers devices in readdir order of class/infiniband_verbs: by
 * name. The views live on a tmpfs (whose order vfab controls); on a disk file
 * system readdir follows hashes, so this runs on /dev/shm or not at all.
 */
static void test_readdir_order(void **state)
{
	struct fixture *f = *state;
	char path[4096], ibdev[32], shm[64] = "/dev/shm/vfabtest-pci-XXXXXX";
	struct statfs sfs;
	struct dirent *de;
	int next = 0;
	DIR *d;

	if (statfs("/dev/shm", &sfs) || sfs.f_type != TMPFS_MAGIC || !mkdtemp(shm))
		skip();
	snprintf(f->out, sizeof(f->out), "%s", shm);
	write_all(f, f->sys);
	snprintf(path, sizeof(path), "%s/class/infiniband_verbs", f->out);
	d = opendir(path);
	assert_non_null(d);
	while ((de = readdir(d))) {
		char want[32];

		if (strncmp(de->d_name, "uverbs", 6))
			continue;
		snprintf(path, sizeof(path), "%s/class/infiniband_verbs/%s/ibdev", f->out,
			 de->d_name);
		assert_true(vfab_read_file(path, ibdev, sizeof(ibdev)) > 0);
		snprintf(want, sizeof(want), "mlx5_%d\n", next++);
		assert_string_equal(ibdev, want);
	}
	closedir(d);
	vfab_rm_rf(shm);
	assert_int_equal(next, 4);
}

/* A host without GPUs (or without /sys at all): every gpu: is said, none placed. */
static void test_no_gpus(void **state)
{
	struct fixture *f = *state;
	char none[128];

	snprintf(none, sizeof(none), "%s/none", f->dir);
	write_all(f, none);
	assert_int_equal(f->l.domain, 1);
	assert_int_equal(f->l.ngpus, 0);
	assert_int_equal(f->l.nmissing, 3);
	assert_int_equal(f->l.nmirrors, 0);
	for (uint32_t i = 0; i < f->l.ndevs; i++)
		assert_true(f->l.devs[i].kind == VFAB_PCI_ROOT_PORT ||
			    f->l.devs[i].kind == VFAB_PCI_HCA);
	expect_real(f->out, "class/infiniband/mlx5_3/device",
		    "devices/pci0001:00/0001:00:04.0/0001:04:00.0");
	expect_real(f->out, "class/pci_bus/0001:04/../../0001:04:00.0",
		    "devices/pci0001:00/0001:00:04.0/0001:04:00.0");
}

static void test_config_gpu_field(void **state)
{
	struct vfab_config cfg;
	char err[512];

	(void)state;
	assert_int_equal(vfab_config_load_string("version: 1\nnodes:\n  - id: a\n    hcas:\n"
						 "      - {name: mlx5_0, gpu: 64}\n",
						 "g.yaml", &cfg, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "g.yaml:5: nodes[0].hcas[0].gpu: 64 is out of range 0..63"));
	assert_int_equal(vfab_config_load_string("version: 1\nnodes:\n  - id: a\n    hcas:\n"
						 "      - {name: mlx5_0, gpu: x}\n",
						 "g.yaml", &cfg, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "g.yaml:5: nodes[0].hcas[0].gpu:"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_paths),
	    cmocka_unit_test_setup_teardown(test_plan, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_nccl_resolution, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_function_files, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_readdir_order, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_gpus, setup, teardown),
	    cmocka_unit_test(test_config_gpu_field),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
