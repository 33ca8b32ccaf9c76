/* SPDX-License-Identifier: MIT */
/*
 * GPUs per node (netns/gpu_plan.h, node_gpus.h): the planner on hosts with
 * 4, 3, 1 and no GPUs (partition, wrap-around, nodes without a list,
 * `gpus: 0`), hcas[].gpu as the node's own index, the host scan against a
 * fake /proc, /sys and /dev (driver minors out of PCI order, the /dev
 * fallback), the node's run-dir list written and read back, and the seccomp
 * filter that keeps a node from making another GPU's device node.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/paths.h"
#include "config/config.h"
#include "netns/gpu_plan.h"
#include "netns/node_enter.h"
#include "netns/node_gpus.h"

static struct vfab_gpu_plan plan;

static void load(struct vfab_config *cfg, const char *yaml)
{
	char err[512];

	assert_int_equal(vfab_config_load_string(yaml, "g.yaml", cfg, err, sizeof(err)), 0);
}

/* A host of n GPUs whose minors equal their index. */
static struct vfab_host_gpus host_of(uint32_t n)
{
	struct vfab_host_gpus h;

	memset(&h, 0, sizeof(h));
	h.n = n;
	for (uint32_t i = 0; i < n; i++) {
		h.gpu[i].minor = i;
		h.gpu[i].pci_index = (int)i;
	}
	return h;
}

static void assert_gpus(const struct vfab_gpu_node *g, uint32_t n, const uint8_t *want)
{
	assert_false(g->all);
	assert_int_equal(g->n, n);
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(g->host[i], want[i]);
}

static const char two_by_two[] = "nodes:\n"
				 "  - {id: node0, gpus: [{profile: h100}, {profile: h100}]}\n"
				 "  - {id: node1, gpus: 2}\n";

static void test_partition(void **state)
{
	struct vfab_host_gpus h = host_of(4);
	struct vfab_config cfg;

	(void)state;
	load(&cfg, two_by_two);
	assert_int_equal(vfab_gpu_plan(&h, &cfg, &plan), 0);
	assert_true(plan.listed);
	assert_false(plan.wrapped);
	assert_int_equal(plan.asked, 4);
	assert_gpus(&plan.node[0], 2, (const uint8_t[]){0, 1});
	assert_gpus(&plan.node[1], 2, (const uint8_t[]){2, 3});
	/* hcas[].gpu K names the node's K-th GPU; past its GPUs: none. */
	assert_int_equal(vfab_gpu_plan_node_gpu(&plan, 1, 0), 2);
	assert_int_equal(vfab_gpu_plan_node_gpu(&plan, 1, 1), 3);
	assert_int_equal(vfab_gpu_plan_node_gpu(&plan, 1, 2), -1);
	vfab_config_free(&cfg);
}

/* One GPU: every node shares GPU 0, each sees it once. */
static void test_wrap_one_gpu(void **state)
{
	struct vfab_host_gpus h = host_of(1);
	struct vfab_config cfg;

	(void)state;
	load(&cfg, two_by_two);
	assert_int_equal(vfab_gpu_plan(&h, &cfg, &plan), 0);
	assert_true(plan.wrapped);
	assert_gpus(&plan.node[0], 1, (const uint8_t[]){0});
	assert_gpus(&plan.node[1], 1, (const uint8_t[]){0});
	assert_int_equal(plan.node[1].wanted, 2);
	assert_int_equal(vfab_gpu_plan_node_gpu(&plan, 0, 1), -1);
	vfab_config_free(&cfg);
}

/* Three GPUs: node1 gets 2 then 0 again, seen in PCI order (cuda:0 = host 0). */
static void test_wrap_three_gpus(void **state)
{
	struct vfab_host_gpus h = host_of(3);
	struct vfab_config cfg;

	(void)state;
	load(&cfg, "nodes:\n"
		   "  - {id: node0, gpus: 2}\n"
		   "  - {id: node1, gpus: 2}\n"
		   "  - {id: node2, gpus: 2}\n");
	assert_int_equal(vfab_gpu_plan(&h, &cfg, &plan), 0);
	assert_true(plan.wrapped);
	assert_int_equal(plan.asked, 6);
	assert_gpus(&plan.node[0], 2, (const uint8_t[]){0, 1});
	assert_gpus(&plan.node[1], 2, (const uint8_t[]){0, 2});
	assert_gpus(&plan.node[2], 2, (const uint8_t[]){1, 2});
	assert_int_equal(vfab_gpu_plan_node_gpu(&plan, 1, 1), 2);
	vfab_config_free(&cfg);
}

/* No list: every GPU, nothing consumed; `gpus: 0` (or []): none at all. */
static void test_nodes_without_list(void **state)
{
	struct vfab_host_gpus h = host_of(4);
	struct vfab_config cfg;

	(void)state;
	load(&cfg, "nodes:\n"
		   "  - {id: node0}\n"
		   "  - {id: node1, gpus: 3}\n"
		   "  - {id: node2, gpus: 0}\n"
		   "  - {id: node3, gpus: []}\n"
		   "  - {id: node4, gpus: 1}\n");
	assert_int_equal(vfab_gpu_plan(&h, &cfg, &plan), 0);
	assert_true(plan.node[0].all);
	assert_int_equal(vfab_gpu_plan_node_gpu(&plan, 0, 3), 3);
	assert_int_equal(vfab_gpu_plan_node_gpu(&plan, 0, 4), -1);
	assert_gpus(&plan.node[1], 3, (const uint8_t[]){0, 1, 2});
	assert_gpus(&plan.node[2], 0, NULL);
	assert_gpus(&plan.node[3], 0, NULL);
	assert_gpus(&plan.node[4], 1, (const uint8_t[]){3});
	assert_false(plan.wrapped);
	vfab_config_free(&cfg);

	/* Nobody lists gpus: nothing to say, nothing hidden. */
	load(&cfg, "nodes:\n  - {id: node0}\n  - {id: node1}\n");
	assert_int_equal(vfab_gpu_plan(&h, &cfg, &plan), 0);
	assert_false(plan.listed);
	assert_true(plan.node[0].all && plan.node[1].all);
	vfab_config_free(&cfg);
}

/* No GPU on the host: the lists only count ranks. */
static void test_host_without_gpus(void **state)
{
	struct vfab_host_gpus h = host_of(0);
	struct vfab_config cfg;

	(void)state;
	load(&cfg, two_by_two);
	assert_int_equal(vfab_gpu_plan(&h, &cfg, &plan), 0);
	assert_true(plan.listed);
	assert_false(plan.wrapped);
	assert_int_equal(plan.asked, 4);
	assert_true(plan.node[0].all && plan.node[1].all);
	assert_int_equal(vfab_gpu_plan_node_gpu(&plan, 0, 0), -1);
	vfab_config_free(&cfg);
}

/* ---- the host scan, the node's list, against files in a temp dir ---- */

struct fixture {
	char dir[64], path[4096];
};

static void put(struct fixture *f, const char *rel, const char *text)
{
	char dir[4096];

	snprintf(f->path, sizeof(f->path), "%s/%s", f->dir, rel);
	snprintf(dir, sizeof(dir), "%s", f->path);
	*strrchr(dir, '/') = '\0';
	assert_int_equal(vfab_mkdir_p(dir, 0755), 0);
	if (text)
		assert_int_equal(vfab_write_filef(f->path, "%s", text), 0);
}

/* An NVIDIA GPU in the fake /sys and, with minor >= 0, in the driver's list. */
static void fake_gpu(struct fixture *f, const char *bdf, int minor)
{
	char rel[256], target[256], text[128];

	snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/vendor", bdf);
	put(f, rel, "0x10de\n");
	snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/class", bdf);
	put(f, rel, "0x030200\n");
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", bdf);
	put(f, rel, NULL);
	snprintf(target, sizeof(target), "../../../devices/pci0000:00/%s", bdf);
	assert_int_equal(symlink(target, f->path), 0);
	if (minor < 0)
		return;
	snprintf(rel, sizeof(rel), "proc/" VFAB_NVIDIA_PROC_GPUS "/%s/information", bdf);
	snprintf(text, sizeof(text),
		 "Model: \t\t NVIDIA H100\nIRQ:   \t\t 42\nDevice Minor: \t %d\n", minor);
	put(f, rel, text);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/vfab-test-gpu-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	vfab_rm_rf(f->dir);
	free(f);
	return 0;
}

static void scan(struct fixture *f, struct vfab_host_gpus *h)
{
	char sys[128], proc[128], dev[128];

	snprintf(sys, sizeof(sys), "%s/sys", f->dir);
	snprintf(proc, sizeof(proc), "%s/proc", f->dir);
	snprintf(dev, sizeof(dev), "%s/dev", f->dir);
	assert_int_equal(vfab_host_gpus_scan(sys, proc, dev, h), 0);
}

/*
 * PCI order wins over the minors (a host that probed them in another order),
 * and each GPU finds its place among the PCI view's: a GPU the nvidia driver
 * does not drive (no minor) is in /sys but not a CUDA GPU.
 */
static void test_scan_driver(void **state)
{
	struct fixture *f = *state;
	struct vfab_host_gpus h;

	fake_gpu(f, "0000:b1:00.0", 1);
	fake_gpu(f, "0000:1b:00.0", 2);
	fake_gpu(f, "0000:3d:00.0", -1);
	fake_gpu(f, "0000:5e:00.0", 0);
	scan(f, &h);
	assert_int_equal(h.n, 3);
	assert_string_equal(h.gpu[0].busid, "0000:1b:00.0");
	assert_int_equal(h.gpu[0].minor, 2);
	assert_int_equal(h.gpu[0].pci_index, 0);
	assert_string_equal(h.gpu[1].busid, "0000:5e:00.0");
	assert_int_equal(h.gpu[1].minor, 0);
	assert_int_equal(h.gpu[1].pci_index, 2);
	assert_string_equal(h.gpu[2].busid, "0000:b1:00.0");
	assert_int_equal(h.gpu[2].pci_index, 3);
	assert_true(h.minors_unordered);
}

/* No driver directory: the /dev/nvidia<N> character devices, by minor. */
static void test_scan_dev(void **state)
{
	struct fixture *f = *state;
	struct vfab_host_gpus h;
	char path[4096];

	scan(f, &h);
	assert_int_equal(h.n, 0); /* nothing at all: a host without GPUs */
	put(f, "dev/nvidia10", "not a device\n");
	put(f, "dev/nvidiactl", "x");
	put(f, "dev/nvidia-uvm", "x");
	if (geteuid() == 0) {
		for (int m = 2; m >= 0; m -= 2) {
			snprintf(path, sizeof(path), "%s/dev/nvidia%d", f->dir, m);
			assert_int_equal(mknod(path, S_IFCHR | 0666, makedev(1, 3)), 0);
		}
	}
	scan(f, &h);
	if (geteuid() != 0) {
		assert_int_equal(h.n, 0);
		return;
	}
	assert_int_equal(h.n, 2);
	assert_int_equal(h.gpu[0].minor, 0);
	assert_int_equal(h.gpu[1].minor, 2);
	assert_string_equal(h.gpu[0].busid, "");
	assert_int_equal(h.gpu[0].pci_index, -1);
	assert_false(h.minors_unordered);
}

/* The node's list in the run dir: its GPUs kept, the others hidden, by minor. */
static void test_node_list(void **state)
{
	struct fixture *f = *state;
	struct vfab_host_gpus h = host_of(3);
	struct vfab_node_gpus g;
	struct vfab_config cfg;

	h.gpu[1].minor = 7;
	snprintf(h.gpu[1].busid, sizeof(h.gpu[1].busid), "0000:3d:00.0");
	load(&cfg, "nodes:\n  - {id: node0, gpus: 2}\n  - {id: node1}\n");
	assert_int_equal(vfab_gpu_plan(&h, &cfg, &plan), 0);
	put(f, "nodes/node0/x", NULL);
	put(f, "nodes/node1/x", NULL);
	assert_int_equal(vfab_node_gpus_write(f->dir, "node0", &plan, 0), 0);
	assert_int_equal(vfab_node_gpus_write(f->dir, "node1", &plan, 1), 0);
	assert_int_equal(vfab_node_gpus_load(f->dir, "node1", &g), -ENOENT);
	assert_int_equal(vfab_node_gpus_load(f->dir, "node0", &g), 0);
	assert_int_equal(g.nkeep, 2);
	assert_int_equal(g.keep[0], 0);
	assert_int_equal(g.keep[1], 7);
	assert_int_equal(g.nhide, 1);
	assert_int_equal(g.hide[0], 2);
	vfab_config_free(&cfg);
	put(f, "nodes/node1/gpus", "keep 300 -\n");
	assert_int_equal(vfab_node_gpus_load(f->dir, "node1", &g), -EINVAL);
}

/* mknod of `dev` as a character device in dir, in a child that has the filter. */
static int mknod_filtered(const char *dir, const char *name, dev_t dev, mode_t type)
{
	char path[4096];
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		const uint32_t keep[] = {0, 5};

		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (vfab_node_block_gpu_mknod(keep, 2))
			_exit(100);
		if (mknodat(AT_FDCWD, path, type | 0600, dev) == 0)
			_exit(0);
		_exit(errno == EPERM ? 1 : 101);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_mknod_filter(void **state)
{
	struct fixture *f = *state;

	if (geteuid() != 0)
		skip(); /* mknod of devices needs root anyway */
	assert_int_equal(mknod_filtered(f->dir, "own0", makedev(195, 0), S_IFCHR), 0);
	assert_int_equal(mknod_filtered(f->dir, "own5", makedev(195, 5), S_IFCHR), 0);
	assert_int_equal(mknod_filtered(f->dir, "other1", makedev(195, 1), S_IFCHR), 1);
	assert_int_equal(mknod_filtered(f->dir, "other253", makedev(195, 253), S_IFCHR), 1);
	assert_int_equal(mknod_filtered(f->dir, "ctl", makedev(195, 255), S_IFCHR), 0);
	assert_int_equal(mknod_filtered(f->dir, "null", makedev(1, 3), S_IFCHR), 0);
	assert_int_equal(mknod_filtered(f->dir, "blk", makedev(195, 1), S_IFBLK), 0);
	assert_int_equal(mknod_filtered(f->dir, "fifo", makedev(195, 1), S_IFIFO), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_partition),
	    cmocka_unit_test(test_wrap_one_gpu),
	    cmocka_unit_test(test_wrap_three_gpus),
	    cmocka_unit_test(test_nodes_without_list),
	    cmocka_unit_test(test_host_without_gpus),
	    cmocka_unit_test_setup_teardown(test_scan_driver, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_scan_dev, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_node_list, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mknod_filter, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
