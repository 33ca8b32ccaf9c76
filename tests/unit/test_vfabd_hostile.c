/* SPDX-License-Identifier: MIT */
/*
 * vfabd runs as root and the region is writable by every local user (mode
 * 0666). These tests play that user against a real daemon: names and a run
 * dir written into the region never become paths vfabd opens, a symbolic
 * link planted below the run dir is never followed, and a pid written into
 * the region is never signalled (docs/TRUST.md "vfabd and the region").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/vfabd_view_fixture.h"

/* A directory outside the run dir that the hostile user points vfabd at. */
static char outside[256];

static int setup(void **state)
{
	(void)state;
	if (fx_start("hostile"))
		return -1;
	snprintf(outside, sizeof(outside), "%s-outside", fx_rundir);
	return mkdir(outside, 0755);
}

static int teardown(void **state)
{
	(void)state;
	fx_cleanup();
	/* Only ever our own /tmp/unit-...-outside directory. */
	if (!strncmp(outside, "/tmp/unit-", 10))
		nftw(outside, fx_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static void mkdirs_abs(const char *path)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		assert_true(mkdir(buf, 0755) == 0 || errno == EEXIST);
		*p = '/';
	}
	assert_true(mkdir(buf, 0755) == 0 || errno == EEXIST);
}

/* Entries of dir besides . and ..; -1 when it cannot be read. */
static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

/* Waits up to 2 s (8 ticks) until the view's file reads want. */
static bool view_reads(const char *rel, const char *want)
{
	char text[64];

	for (int i = 0; i < 100; i++) {
		read_file(rel, text, sizeof(text));
		if (!strcmp(text, want))
			return true;
		fx_sleep_ms(20);
	}
	return false;
}

/*
 * The user rewrites the run dir, node0's id and mlx5_0's name in the region
 * so that the path built from them leads into `outside` (the rundir) and
 * climbs out of it again with "..": vfabd keeps writing node0's real view
 * and nothing lands outside; an async FIFO under the forged run dir is
 * refused.
 */
static void test_region_strings_not_paths(void **state)
{
	struct vfab_region *r = fx_region();
	char stage[300], path[PATH_MAX], line[PATH_MAX + 64], reply[256];
	int n;
	int fd;

	(void)state;
	assert_non_null(r);
	make_port_view();
	/* Every directory the forged path walks through, so only the daemon decides. */
	snprintf(path, sizeof(path), "%s/nodes/x/class/infiniband", outside);
	mkdirs_abs(path);
	snprintf(stage, sizeof(stage), "%s/stage/ports/1", outside);
	mkdirs_abs(stage);
	snprintf(path, sizeof(path), "%s/counters", stage);
	mkdirs_abs(path);
	snprintf(path, sizeof(path), "%s/hw_counters", stage);
	mkdirs_abs(path);
	snprintf(path, sizeof(path), "%s/fifo", outside);
	mkdirs_abs(path);

	snprintf(r->rundir, sizeof(r->rundir), "%s", outside);
	snprintf(r->nodes[0].id, sizeof(r->nodes[0].id), "x");
	/* <outside>/nodes/x/class/infiniband/../../../../../..: "/" (outside is /tmp/<name>). */
	n = snprintf(r->hcas[0].name, sizeof(r->hcas[0].name), "../../../../../..%s/stage",
		     outside);
	assert_true(n > 0 && (size_t)n < sizeof(r->hcas[0].name));

	atomic_fetch_add(&vfab_cnt(r, 0, 1)->out_of_sequence, 2);
	atomic_fetch_add(&vfab_cnt(r, 0, 1)->xmit_data_words, 777);
	assert_true(view_reads(PORT_DIR "/counters/port_xmit_data", "777\n"));
	read_file(PORT_DIR "/hw_counters/out_of_sequence", line, sizeof(line));
	assert_string_equal(line, "2\n");
	snprintf(path, sizeof(path), "%s/counters", stage);
	assert_int_equal(count_entries(path), 0);
	snprintf(path, sizeof(path), "%s/hw_counters", stage);
	assert_int_equal(count_entries(path), 0);

	/* Control requests name ports by vfabd's own names, and write the real view. */
	assert_true(fx_request("LINK node0/mlx5_0 down", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "OK ", 3);
	read_file(PORT_DIR "/state", line, sizeof(line));
	assert_string_equal(line, "1: DOWN\n");
	assert_int_equal(count_entries(stage), 2); /* counters/ and hw_counters/ only */

	/* A FIFO under the forged run dir is not <rundir>/fifo/ for vfabd. */
	snprintf(path, sizeof(path), "%s/fifo/%d.1", outside, (int)getpid());
	assert_int_equal(mkfifo(path, 0600), 0);
	fd = vfab_ctl_connect(fx_rundir);
	assert_true(fd >= 0);
	snprintf(line, sizeof(line), "HELLO %d hca=0 async=%s", (int)getpid(), path);
	assert_true(vfab_ctl_request(fd, line, reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR EPERM ", 10);
	close(fd);
	vfab_region_close(r);
}

/*
 * Below the run dir only root writes, but a view is a tree of thousands of
 * files: a symbolic link anywhere in it (here counters/ of node0's port,
 * pointing outside) is not followed, and the rest of the view stays live.
 */
static void test_view_links_not_followed(void **state)
{
	struct vfab_region *r = fx_region();
	char link_path[PATH_MAX], text[64];

	(void)state;
	assert_non_null(r);
	make_port_view();
	path_in_run(link_path, sizeof(link_path), PORT_DIR "/counters");
	snprintf(text, sizeof(text), "%s", "counters.real");
	path_in_run(text, sizeof(text), PORT_DIR "/counters.real");
	assert_int_equal(rename(link_path, text), 0);
	assert_int_equal(symlink(outside, link_path), 0);

	atomic_fetch_add(&vfab_cnt(r, 0, 1)->xmit_data_words, 5);
	atomic_fetch_add(&vfab_cnt(r, 0, 1)->duplicate_request, 9);
	assert_true(view_reads(PORT_DIR "/hw_counters/duplicate_request", "9\n"));
	fx_sleep_ms(600); /* two more ticks */
	assert_int_equal(count_entries(outside), 0);
	vfab_region_close(r);
}

/*
 * FAULT acts on the processes of a node's network namespace, known from the
 * holder's pid file in the run dir. A holder pid written into the region (at
 * the place the region once kept one) names nothing to vfabd.
 */
static void test_region_pid_not_signalled(void **state)
{
	struct vfab_region *r = fx_region();
	pid_t holder, worker;
	char reply[256];

	(void)state;
	assert_non_null(r);
	holder = start_node(&worker);
	if (worker < 0) {
		stop_node(holder, worker);
		vfab_region_close(r);
		skip(); /* no CAP_SYS_ADMIN for a network namespace */
	}
	/* The victim: the processes of some other namespace the user can name by pid. */
	r->nodes[0].reserved = holder;
	assert_true(fx_request("FAULT kill node0", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR ESRCH ", 10);
	fx_sleep_ms(100);
	assert_true(proc_state(worker) != 0 && proc_state(worker) != 'Z');
	/* Only the pid file `vfab up` writes makes them node0's. */
	fx_write_holder("node0", holder);
	assert_true(fx_request("FAULT kill node0", reply, sizeof(reply)) > 0);
	assert_string_equal(reply, "OK node0: 1 process(es) killed");
	assert_true(wait_state(worker, 0, true));
	stop_node(holder, worker);
	vfab_region_close(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_region_strings_not_paths, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_view_links_not_followed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_region_pid_not_signalled, setup, teardown),
	};

	if (!getenv("VFABD")) {
		fprintf(stderr, "VFABD (path of the vfabd binary) is not set\n");
		return 1;
	}
	atexit(fx_cleanup);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
