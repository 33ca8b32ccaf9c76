/* SPDX-License-Identifier: MIT */
/*
 * Around the real vfabd of vfabd_fixture.h: a minimal sysfs view of node0's
 * port in its run dir (the files vfabd rewrites), small file helpers relative
 * to the run dir, and a stand-in for a node (a holder in a network namespace
 * of its own with one worker) whose holder pid goes where `vfab up` writes
 * it. Static inline: each test file uses a part.
 */
#ifndef VFAB_TEST_VFABD_VIEW_FIXTURE_H
#define VFAB_TEST_VFABD_VIEW_FIXTURE_H

#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "base/paths.h"
#include "tests/unit/vfabd_fixture.h"

#define PORT_DIR "nodes/node0/class/infiniband/mlx5_0/ports/1"

static inline void path_in_run(char *buf, size_t len, const char *rel)
{
	snprintf(buf, len, "%s/%s", fx_rundir, rel);
}

static inline void write_file(const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	path_in_run(path, sizeof(path), rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static inline void read_file(const char *rel, char *buf, size_t len)
{
	char path[PATH_MAX];
	FILE *f;
	size_t n;

	path_in_run(path, sizeof(path), rel);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static inline void mkdirs(const char *rel)
{
	char path[PATH_MAX];

	path_in_run(path, sizeof(path), rel);
	for (char *p = path + strlen(fx_rundir) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
		*p = '/';
	}
	assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

/* An entry that is a hard link of another, as the empty GID slots of a real view are. */
static inline void hard_link(const char *existing_rel, const char *rel)
{
	char a[PATH_MAX], b[PATH_MAX];

	path_in_run(a, sizeof(a), existing_rel);
	path_in_run(b, sizeof(b), rel);
	assert_int_equal(link(a, b), 0);
}

/* A minimal view of node0's port: the files vfabd rewrites. */
static inline void make_port_view(void)
{
	mkdirs(PORT_DIR "/counters");
	mkdirs(PORT_DIR "/hw_counters");
	write_file(PORT_DIR "/shared_active", "4: ACTIVE\n");
	hard_link(PORT_DIR "/shared_active", PORT_DIR "/state");
	write_file(PORT_DIR "/phys_state", "5: LinkUp\n");
	write_file(PORT_DIR "/rate", "200 Gb/sec (4X HDR)\n");
	write_file(PORT_DIR "/counters/symbol_error", "0\n");
	hard_link(PORT_DIR "/counters/symbol_error", PORT_DIR "/counters/port_xmit_data");
	write_file(PORT_DIR "/counters/port_rcv_data", "0\n");
	write_file(PORT_DIR "/counters/link_downed", "0\n");
	write_file(PORT_DIR "/hw_counters/out_of_sequence", "0\n");
	write_file(PORT_DIR "/hw_counters/duplicate_request", "0\n");
}

/* /proc/PID/stat state letter, or 0 when the process is gone. */
static inline char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

static inline bool wait_state(pid_t pid, char want, bool equal)
{
	for (int i = 0; i < 200; i++) {
		char s = proc_state(pid);

		if (equal ? s == want : s != want)
			return true;
		fx_sleep_ms(10);
	}
	return false;
}

/*
 * A stand-in for node0: a holder in a network namespace of its own with one
 * worker process; the holder reaps the worker, the pipe reports its pid.
 * Each dies with its parent, so a failed check leaves nothing running (nor
 * holding the test's output open, which ctest would wait for).
 */
static inline pid_t start_node(pid_t *worker)
{
	pid_t holder, test = getpid();
	int p[2];

	assert_int_equal(pipe(p), 0);
	holder = fork();
	assert_true(holder >= 0);
	if (holder == 0) {
		pid_t w, me = getpid();

		close(p[0]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != test || unshare(CLONE_NEWNET))
			_exit(3);
		w = fork();
		if (w == 0) {
			if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != me)
				_exit(3);
			for (;;)
				pause();
		}
		if (write(p[1], &w, sizeof(w)) != sizeof(w))
			_exit(1);
		for (;;)
			if (wait(NULL) < 0 && errno == ECHILD)
				pause();
	}
	close(p[1]);
	if (read(p[0], worker, sizeof(*worker)) != sizeof(*worker))
		*worker = -1;
	close(p[0]);
	return holder;
}

static inline void stop_node(pid_t holder, pid_t worker)
{
	if (worker > 0)
		kill(worker, SIGKILL);
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
}

/* The holder pid file `vfab up` writes: vfabd's only source for a node's holder. */
static inline void fx_write_holder(const char *node, pid_t holder)
{
	char rel[256], text[32];

	snprintf(rel, sizeof(rel), "nodes/%s", node);
	mkdirs(rel);
	snprintf(rel, sizeof(rel), "nodes/%s/" VFAB_HOLDER_PID_FILE, node);
	snprintf(text, sizeof(text), "%d\n", (int)holder);
	write_file(rel, text);
}

#endif /* VFAB_TEST_VFABD_VIEW_FIXTURE_H */
