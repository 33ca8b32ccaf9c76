/* SPDX-License-Identifier: MIT */
/*
 * vfabd's counters file system (daemon/vfabd_countersfs.c) against a real
 * daemon: a value written into the region is what the next read returns,
 * with no tick in between; a read at offset 0 takes a new value, later
 * offsets continue the same one; files are 0444 and no write, create or
 * truncate gets through; the tree is vfabd's own topology, whatever a user
 * writes into the region's names; the directories list the view's names.
 * Skipped where the mount cannot be made (not root, no /dev/fuse).
 */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <cmocka.h>

#include "netns/sysfs_view.h"
#include "tests/unit/vfabd_fixture.h"

#define PORT "counters/node0/mlx5_0/1"

static char port_dir[256];

static int setup(void **state)
{
	(void)state;
	fx_counters = "fs";
	if (fx_start("cfs"))
		return -1;
	snprintf(port_dir, sizeof(port_dir), "%s/" PORT, fx_rundir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fx_cleanup();
	return 0;
}

static void skip_unless_mounted(void)
{
	char top[192];
	struct statfs sf;

	snprintf(top, sizeof(top), "%s/counters", fx_rundir);
	if (statfs(top, &sf) || sf.f_type != 0x65735546 /* FUSE_SUPER_MAGIC */) {
		fprintf(stderr, "no counters file system (not root, or no /dev/fuse): skipped\n");
		skip();
	}
}

static void read_at(const char *sub, const char *name, char *buf, size_t len)
{
	char path[512];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s/%s", port_dir, sub, name);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	n = read(fd, buf, len - 1);
	assert_true(n >= 0);
	buf[n] = '\0';
	close(fd);
}

static void test_exact_at_every_read(void **state)
{
	struct vfab_region *r = fx_region();
	struct vfab_port_counters *c;
	char text[64], want[64];

	(void)state;
	assert_non_null(r);
	skip_unless_mounted();
	c = vfab_cnt(r, 0, 1);
	read_at("counters", "port_xmit_data", text, sizeof(text));
	assert_string_equal(text, "0\n");
	/* No tick in between: each read sees the region as it is. */
	for (int i = 1; i <= 20; i++) {
		atomic_fetch_add(&c->xmit_data_words, 1000003);
		atomic_fetch_add(&c->rcv_packets, 1);
		atomic_fetch_add(&c->rnr_nak_retry_err, 1);
		snprintf(want, sizeof(want), "%llu\n", 1000003ULL * (unsigned)i);
		read_at("counters", "port_xmit_data", text, sizeof(text));
		assert_string_equal(text, want);
		snprintf(want, sizeof(want), "%d\n", i);
		read_at("counters", "port_rcv_packets", text, sizeof(text));
		assert_string_equal(text, want);
		read_at("counters", "unicast_rcv_packets", text, sizeof(text));
		assert_string_equal(text, want);
		read_at("hw_counters", "rnr_nak_retry_err", text, sizeof(text));
		assert_string_equal(text, want);
	}
	read_at("counters", "symbol_error", text, sizeof(text));
	assert_string_equal(text, "0\n");
	read_at("hw_counters", "lifespan", text, sizeof(text));
	assert_string_equal(text, "10\n");
	vfab_region_close(r);
}

/* seq_file's rule: offset 0 computes, later offsets continue that text. */
static void test_snapshot_per_open(void **state)
{
	struct vfab_region *r = fx_region();
	_Atomic uint64_t *w;
	char path[512], text[64];
	int fd;

	(void)state;
	assert_non_null(r);
	skip_unless_mounted();
	w = &vfab_cnt(r, 0, 1)->xmit_data_words;
	atomic_store(w, 123456);
	snprintf(path, sizeof(path), "%s/counters/port_xmit_data", port_dir);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, text, 3, 0), 3);
	atomic_store(w, 987654321);
	assert_int_equal(pread(fd, text + 3, sizeof(text) - 4, 3), 4);
	text[7] = '\0';
	assert_string_equal(text, "123456\n");
	assert_int_equal(pread(fd, text, sizeof(text) - 1, 0), 10);
	text[10] = '\0';
	assert_string_equal(text, "987654321\n");
	close(fd);
	vfab_region_close(r);
}

static void test_read_only(void **state)
{
	char path[512], text[64];
	struct stat st;

	(void)state;
	skip_unless_mounted();
	snprintf(path, sizeof(path), "%s/counters/port_xmit_data", port_dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode, S_IFREG | 0444);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_gid, 0);
	assert_int_equal(open(path, O_WRONLY), -1);
	assert_int_equal(open(path, O_RDWR), -1);
	assert_int_equal(open(path, O_RDONLY | O_TRUNC), -1);
	snprintf(path, sizeof(path), "%s/counters/new", port_dir);
	assert_int_equal(open(path, O_WRONLY | O_CREAT, 0644), -1);
	assert_int_equal(mkdir(path, 0755), -1);
	snprintf(path, sizeof(path), "%s/counters/port_xmit_data", port_dir);
	assert_int_equal(unlink(path), -1);
	read_at("counters", "port_xmit_data", text, sizeof(text));
	assert_string_equal(text, "0\n");
}

/* The names of a directory of the file system, sorted, one string. */
static void list(const char *rel, char *out, size_t len)
{
	char path[512];
	struct dirent **ents;
	int n;

	snprintf(path, sizeof(path), "%s/%s", fx_rundir, rel);
	n = scandir(path, &ents, NULL, alphasort);
	assert_true(n >= 0);
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (ents[i]->d_name[0] != '.') {
			strncat(out, ents[i]->d_name, len - strlen(out) - 2);
			strcat(out, " ");
		}
		free(ents[i]);
	}
	free(ents);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* What a user writes over a name of the region (out of line: gcc sees no bounds to check). */
static void __attribute__((noinline)) forge(char *name, const char *text)
{
	snprintf(name, VFAB_NAME_MAX, "%s", text);
}

static void test_tree_is_vfabds(void **state)
{
	struct vfab_region *r = fx_region();
	char got[2048], want[2048];

	(void)state;
	assert_non_null(r);
	skip_unless_mounted();
	/* A user rewrites the region's names: the tree is vfabd's own topology's. */
	forge(r->nodes[0].id, "../../etc");
	forge(r->hcas[0].name, "evil");
	r->hcas[0].nports = 2;
	list("counters", got, sizeof(got));
	assert_string_equal(got, "node0 node1 ");
	list("counters/node0", got, sizeof(got));
	assert_string_equal(got, "mlx5_0 ");
	list("counters/node0/mlx5_0", got, sizeof(got));
	assert_string_equal(got, "1 ");
	list(PORT, got, sizeof(got));
	assert_string_equal(got, "counters hw_counters ");
	/* The view's names, those vfab up writes (netns/sysfs_view.c). */
	for (int hw = 0; hw < 2; hw++) {
		size_t n;
		const char *const *names = vfab_sysfs_counter_files(hw, &n);
		const char *sorted[64];

		assert_true(n < 64);
		memcpy(sorted, names, n * sizeof(*names));
		qsort(sorted, n, sizeof(*sorted), by_name);
		want[0] = '\0';
		for (size_t i = 0; i < n; i++) {
			strcat(want, sorted[i]);
			strcat(want, " ");
		}
		list(hw ? PORT "/hw_counters" : PORT "/counters", got, sizeof(got));
		assert_string_equal(got, want);
	}
	vfab_region_close(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_exact_at_every_read, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_snapshot_per_open, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_read_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tree_is_vfabds, setup, teardown),
	};

	if (!getenv("VFABD")) {
		fprintf(stderr, "VFABD (path of the vfabd binary) is not set\n");
		return 1;
	}
	atexit(fx_cleanup);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
