/* SPDX-License-Identifier: MIT */
/*
 * vfabd end to end: startup and refusals, the control protocol, reaping of
 * processes that die with or without HELLO, clean shutdown. Runs the real
 * daemon (path in $VFABD) on a private run dir and a unique fabric name; the
 * teardown kills it and removes its files even when a check failed.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <linux/sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/proc.h"
#include "fabric/ctl.h"
#include "fabric/ktab.h"
#include "fabric/region.h"

static char fabric[64], rundir[128];
static pid_t daemon_pid;

static void cleanup_files(void)
{
	char path[256];

	if (daemon_pid > 0) {
		kill(daemon_pid, SIGKILL);
		waitpid(daemon_pid, NULL, 0);
		daemon_pid = 0;
	}
	vfab_region_unlink(fabric);
	snprintf(path, sizeof(path), "%s/vfabd.sock", rundir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/vfabd.pid", rundir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/" VFAB_KTAB_NAME, rundir);
	unlink(path);
	/* The counters file system of the vfabd killed above (`vfab down` does the same). */
	snprintf(path, sizeof(path), "%s/counters", rundir);
	umount2(path, MNT_DETACH);
	rmdir(path);
	rmdir(rundir);
}

static pid_t spawn(const char *config, const char *fabric_name)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		const char *bin = getenv("VFABD");
		char *argv[] = {(char *)bin,	"--fabric", (char *)fabric_name,
				"--rundir",	rundir,	    config ? "--config" : NULL,
				(char *)config, NULL};

		if (!getenv("VFAB_TEST_VERBOSE"))
			freopen("/dev/null", "w", stderr);
		execv(bin, argv);
		_exit(127);
	}
	return pid;
}

static int request(const char *line, char *reply, size_t len)
{
	int fd = vfab_ctl_connect(rundir), rc;

	if (fd < 0)
		return fd;
	rc = vfab_ctl_request(fd, line, reply, len);
	close(fd);
	return rc;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static int start_daemon(void **state)
{
	static unsigned counter;
	char reply[512];

	(void)state;
	snprintf(fabric, sizeof(fabric), "unit-vfabd-%d-%u", (int)getpid(), counter++);
	snprintf(rundir, sizeof(rundir), "/tmp/%s", fabric);
	daemon_pid = spawn(NULL, fabric);
	for (int i = 0; i < 250; i++) { /* 5 s: vfab up waits the same way */
		if (request("STATUS", reply, sizeof(reply)) > 0)
			return 0;
		sleep_ms(20);
	}
	cleanup_files();
	return -1;
}

static int stop_daemon(void **state)
{
	(void)state;
	cleanup_files();
	return 0;
}

static struct vfab_region *open_region(void)
{
	struct vfab_region *r;
	char path[256];

	vfab_region_path(fabric, path, sizeof(path));
	assert_int_equal(vfab_region_open(path, &r), 0);
	return r;
}

/* Waits up to 3 s (the reaper ticks every 500 ms) for a slot to change state. */
static bool wait_state(_Atomic uint32_t *state, uint32_t want)
{
	for (int i = 0; i < 150; i++) {
		if (atomic_load(state) == want)
			return true;
		sleep_ms(20);
	}
	return false;
}

static void test_status_and_protocol(void **state)
{
	struct vfab_region *r = open_region();
	char reply[512], want[512];
	struct stat st;
	int fd;

	(void)state;
	assert_int_equal(r->ready, 1);
	assert_string_equal(r->rundir, rundir);
	assert_int_equal(r->nnodes, 2);
	snprintf(want, sizeof(want),
		 "{\"fabric\":\"%s\",\"nodes\":2,\"hcas\":2,\"qps\":0,\"mrs\":0,\"cqs\":0,"
		 "\"clients\":0,",
		 fabric);
	assert_true(request("STATUS", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, want, strlen(want));

	fd = vfab_ctl_connect(rundir);
	assert_true(fd >= 0);
	/* Refusals name an errno, so clients can tell usage errors from failures. */
	assert_true(vfab_ctl_request(fd, "NOPE", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR EINVAL ", 11);
	assert_true(vfab_ctl_request(fd, "HELLO x", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR EINVAL ", 11);
	assert_true(vfab_ctl_request(fd, "HELLO 1", reply, sizeof(reply)) > 0);
	assert_string_equal(reply, "OK");
	assert_true(vfab_ctl_request(fd, "HELLO 1", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR EALREADY ", 13);
	assert_true(vfab_ctl_request(fd, "STATUS", reply, sizeof(reply)) > 0);
	assert_non_null(strstr(reply, "\"clients\":1,"));
	assert_true(vfab_ctl_request(fd, "BYE", reply, sizeof(reply)) > 0);
	assert_string_equal(reply, "OK");
	close(fd);

	assert_int_equal(stat(rundir, &st), 0);
	snprintf(want, sizeof(want), "%s/vfabd.sock", rundir);
	assert_int_equal(stat(want, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0666);
	vfab_region_close(r);
}

struct owner {
	pid_t pid;
	int qp, mr;
	int go; /* closing it lets a lingering child exit */
};

/* Child side: no cmocka asserts here, a failure must not run the test suite twice. */
static void owner_main(int hello, int ready_fd, int go_fd, bool linger)
{
	struct vfab_region *r;
	char path[256], reply[64], line[32];
	struct vfab_owner o = {.pid = getpid(), .ctx_id = 7};
	int slots[2], fd;
	char c;

	prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives a failed test */
	vfab_region_path(fabric, path, sizeof(path));
	if (vfab_region_open(path, &r))
		_exit(1);
	slots[0] = vfab_qp_alloc(r, &o, 8, 1);
	slots[1] = vfab_mr_alloc(r, &o);
	if (hello) {
		fd = vfab_ctl_connect(rundir);
		snprintf(line, sizeof(line), "HELLO %d", (int)getpid());
		if (fd < 0 || vfab_ctl_request(fd, line, reply, sizeof(reply)) < 0)
			_exit(1);
		if (hello == 2) {
			vfab_ctl_request(fd, "BYE", reply, sizeof(reply));
			close(fd);
		}
		if (hello == 3)
			close(fd); /* as a provider whose HELLO timed out */
	}
	if (write(ready_fd, slots, sizeof(slots)) != sizeof(slots))
		_exit(1);
	if (linger)
		(void)!read(go_fd, &c, 1);
	_exit(0); /* no BYE on an open connection, no frees: as if killed */
}

/*
 * A child that owns a QP and an MR. hello: 0 none, 1 HELLO, 2 HELLO then BYE,
 * 3 HELLO then a close without BYE.
 * A lingering child stays alive until o->go is closed.
 */
static struct owner owner_child(int hello, bool linger)
{
	struct owner o = {.go = -1};
	int ready[2], go[2], slots[2];

	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	o.pid = fork();
	assert_true(o.pid >= 0);
	if (o.pid == 0) {
		close(ready[0]);
		close(go[1]);
		owner_main(hello, ready[1], go[0], linger);
	}
	close(ready[1]);
	close(go[0]);
	assert_int_equal(read(ready[0], slots, sizeof(slots)), (ssize_t)sizeof(slots));
	close(ready[0]);
	assert_true(slots[0] >= 0 && slots[1] >= 0);
	o.qp = slots[0];
	o.mr = slots[1];
	if (linger)
		o.go = go[1];
	else
		close(go[1]);
	return o;
}

static void test_reap_without_bye(void **state)
{
	struct vfab_region *r = open_region();
	struct owner o;

	(void)state;
	o = owner_child(1, false);
	assert_int_equal(waitpid(o.pid, NULL, 0), o.pid);
	assert_true(wait_state(&r->qps[o.qp].state, VFAB_SLOT_FREE));
	assert_true(wait_state(&r->mrs[o.mr].state, VFAB_SLOT_FREE));
	vfab_region_close(r);
}

static void test_reap_before_hello(void **state)
{
	struct vfab_region *r = open_region();
	struct owner o;

	(void)state;
	o = owner_child(0, false);
	assert_int_equal(waitpid(o.pid, NULL, 0), o.pid);
	assert_true(wait_state(&r->qps[o.qp].state, VFAB_SLOT_FREE));
	assert_true(wait_state(&r->mrs[o.mr].state, VFAB_SLOT_FREE));
	vfab_region_close(r);
}

static void test_bye_keeps_live_objects(void **state)
{
	struct vfab_region *r = open_region();
	struct owner o;

	(void)state;
	o = owner_child(2, true);
	/* Said BYE and closed, still alive: its objects stay over several ticks. */
	sleep_ms(1200);
	assert_int_equal(r->qps[o.qp].state, VFAB_SLOT_USED);
	assert_int_equal(r->mrs[o.mr].state, VFAB_SLOT_USED);
	assert_int_equal(r->qps[o.qp].owner.pid, o.pid);
	/* Once it exits the periodic reaper frees them. */
	close(o.go);
	assert_int_equal(waitpid(o.pid, NULL, 0), o.pid);
	assert_true(wait_state(&r->qps[o.qp].state, VFAB_SLOT_FREE));
	assert_true(wait_state(&r->mrs[o.mr].state, VFAB_SLOT_FREE));
	vfab_region_close(r);
}

/* A live process whose connection closed without BYE keeps its objects. */
static void test_live_close_keeps_objects(void **state)
{
	struct vfab_region *r = open_region();
	struct owner o;

	(void)state;
	o = owner_child(3, true);
	sleep_ms(1200);
	assert_int_equal(r->qps[o.qp].state, VFAB_SLOT_USED);
	assert_int_equal(r->mrs[o.mr].state, VFAB_SLOT_USED);
	close(o.go);
	assert_int_equal(waitpid(o.pid, NULL, 0), o.pid);
	assert_true(wait_state(&r->qps[o.qp].state, VFAB_SLOT_FREE));
	assert_true(wait_state(&r->mrs[o.mr].state, VFAB_SLOT_FREE));
	vfab_region_close(r);
}

/* A HELLO naming another process registers the caller, never the named one. */
static void test_hello_claim_ignored(void **state)
{
	struct vfab_region *r = open_region();
	char line[32], reply[64];
	struct owner o;
	int fd;

	(void)state;
	o = owner_child(0, true);
	fd = vfab_ctl_connect(rundir);
	assert_true(fd >= 0);
	snprintf(line, sizeof(line), "HELLO %d", (int)o.pid);
	assert_true(vfab_ctl_request(fd, line, reply, sizeof(reply)) > 0);
	close(fd); /* without BYE: o.pid's objects must not go */
	sleep_ms(1200);
	assert_int_equal(r->qps[o.qp].state, VFAB_SLOT_USED);
	assert_int_equal(r->mrs[o.mr].state, VFAB_SLOT_USED);
	close(o.go);
	assert_int_equal(waitpid(o.pid, NULL, 0), o.pid);
	assert_true(wait_state(&r->qps[o.qp].state, VFAB_SLOT_FREE));
	vfab_region_close(r);
}

/*
 * One client flooding STATUS (and reading nothing) must not starve another:
 * a HELLO on a second connection is answered well within the provider's
 * timeout. The flood is bounded (4 MiB of requests, killed at the end).
 */
static void test_flood_fairness(void **state)
{
	char line[32], reply[64];
	long long t0, dt;
	pid_t flood;
	int fd;

	(void)state;
	flood = fork();
	assert_true(flood >= 0);
	if (flood == 0) {
		static char buf[1 << 16];
		int ffd;

		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives a failed test */
		ffd = vfab_ctl_connect(rundir);

		for (size_t i = 0; i + 7 <= sizeof(buf); i += 7)
			memcpy(buf + i, "STATUS\n", 7);
		for (int i = 0; ffd >= 0 && i < 64; i++)
			if (send(ffd, buf, sizeof(buf) - sizeof(buf) % 7, MSG_NOSIGNAL) < 0)
				break;
		pause();
		_exit(0);
	}
	sleep_ms(300); /* the flood is under way */
	t0 = vfab_now_ms();
	fd = vfab_ctl_connect(rundir);
	assert_true(fd >= 0);
	snprintf(line, sizeof(line), "HELLO %d", (int)getpid());
	assert_true(vfab_ctl_request(fd, line, reply, sizeof(reply)) > 0);
	dt = vfab_now_ms() - t0;
	assert_string_equal(reply, "OK");
	assert_true(dt < 1000);
	assert_true(vfab_ctl_request(fd, "BYE", reply, sizeof(reply)) > 0);
	close(fd);
	kill(flood, SIGKILL);
	assert_int_equal(waitpid(flood, NULL, 0), flood);
}

/*
 * A flood of connections (bounded: the limit plus one) meets a clear
 * refusal, and vfabd keeps serving: after a few close, STATUS is answered.
 */
static void test_conn_limit(void **state)
{
	const size_t want = 4096 + 1;
	struct pollfd p = {.events = POLLIN};
	char reply[256];
	struct rlimit rl;
	ssize_t n = 0;
	int *fds;

	(void)state;
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_max < want + 64)
		skip();
	if (rl.rlim_cur < want + 64) {
		rl.rlim_cur = want + 64;
		assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	}
	fds = calloc(want, sizeof(*fds));
	assert_non_null(fds);
	for (size_t i = 0; i < want; i++) {
		fds[i] = vfab_ctl_connect(rundir);
		assert_true(fds[i] >= 0);
	}
	p.fd = fds[want - 1];
	if (poll(&p, 1, 5000) == 1)
		n = recv(fds[want - 1], reply, sizeof(reply) - 1, 0);
	assert_true(n > 0);
	reply[n] = '\0';
	assert_memory_equal(reply, "ERR EMFILE ", 11);
	for (size_t i = 0; i < 16; i++)
		close(fds[i]);
	sleep_ms(100);
	assert_true(request("STATUS", reply, sizeof(reply)) > 0);
	assert_int_equal(reply[0], '{');
	for (size_t i = 16; i < want; i++)
		close(fds[i]);
	free(fds);
}

/*
 * A daemon whose listen backlog is full (it stopped accepting) must not hang
 * a client in connect(): vfab_ctl_connect gives up with ETIMEDOUT. alarm()
 * bounds the test should it hang.
 */
static void test_connect_timeout(void **state)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dir[64];
	long long t0;
	int lfd, fds[8], n = 0, rc = 0;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/unit-ctl-%d", (int)getpid());
	assert_true(mkdir(dir, 0700) == 0 || errno == EEXIST);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/vfabd.sock", dir);
	unlink(sa.sun_path);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 0), 0);
	alarm(30);
	t0 = vfab_now_ms();
	while (n < 8 && (rc = vfab_ctl_connect(dir)) >= 0)
		fds[n++] = rc;
	alarm(0);
	assert_int_equal(rc, -ETIMEDOUT);
	assert_true(vfab_now_ms() - t0 < 5000);
	while (n)
		close(fds[--n]);
	close(lfd);
	unlink(sa.sun_path);
	rmdir(dir);
}

static pid_t clone_with_pid(pid_t want)
{
	pid_t tid = want;
	struct clone_args args = {
	    .exit_signal = SIGCHLD,
	    .set_tid = (uint64_t)(uintptr_t)&tid,
	    .set_tid_size = 1,
	};

	return (pid_t)syscall(SYS_clone3, &args, sizeof(args));
}

/*
 * An owner that died while vfabd was not looking, its pid taken by a newer
 * process meanwhile: its objects are still reaped (owners are a pid and a
 * start time), and the newcomer is left alone.
 */
static void test_reap_after_pid_reuse(void **state)
{
	struct vfab_region *r = open_region();
	int ready[2], slot = -1, status;
	pid_t a, b;

	(void)state;
	if (geteuid() != 0)
		skip(); /* clone3 with set_tid needs CAP_SYS_ADMIN */
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(kill(daemon_pid, SIGSTOP), 0);
	a = fork();
	assert_true(a >= 0);
	if (a == 0) {
		struct vfab_owner o = {.pid = getpid(), .ctx_id = 9};
		char st;

		if (vfab_proc_self_stat(&st, (unsigned long long *)&o.start_ticks))
			_exit(1);
		slot = vfab_qp_alloc(r, &o, 8, 1);
		_exit(write(ready[1], &slot, sizeof(slot)) == sizeof(slot) ? 0 : 1);
	}
	assert_int_equal(read(ready[0], &slot, sizeof(slot)), (ssize_t)sizeof(slot));
	assert_true(slot >= 0);
	assert_int_equal(waitpid(a, &status, 0), a);
	/* Start times count clock ticks (10 ms): a newcomer of the same tick is the owner. */
	sleep_ms(30);
	b = clone_with_pid(a);
	if (b == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	kill(daemon_pid, SIGCONT);
	if (b < 0)
		skip(); /* the pid was taken by someone else, or no set_tid */
	assert_int_equal(r->qps[slot].owner.pid, b);
	assert_true(wait_state(&r->qps[slot].state, VFAB_SLOT_FREE));
	kill(b, SIGKILL);
	assert_int_equal(waitpid(b, &status, 0), b);
	close(ready[0]);
	close(ready[1]);
	vfab_region_close(r);
}

static void test_refusals(void **state)
{
	char path[256];
	int status;
	pid_t second;

	(void)state;
	/* The fabric exists: a second daemon refuses with exit 1. */
	second = spawn(NULL, fabric);
	assert_int_equal(waitpid(second, &status, 0), second);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);

	/* A bad config: exit 2, nothing created. */
	second = spawn(VFAB_TEST_DATA "/wrong_type.yaml", "unit-vfabd-never");
	assert_int_equal(waitpid(second, &status, 0), second);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 2);
	vfab_region_path("unit-vfabd-never", path, sizeof(path));
	assert_int_not_equal(access(path, F_OK), 0);

	/* A bad fabric name: exit 2. */
	second = spawn(NULL, "bad/name");
	assert_int_equal(waitpid(second, &status, 0), second);
	assert_int_equal(WEXITSTATUS(status), 2);
}

static void test_shutdown(void **state)
{
	char reply[64], path[256];
	int status;

	(void)state;
	assert_true(request("SHUTDOWN", reply, sizeof(reply)) > 0);
	assert_string_equal(reply, "OK");
	assert_int_equal(waitpid(daemon_pid, &status, 0), daemon_pid);
	daemon_pid = 0;
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	snprintf(path, sizeof(path), "%s/vfabd.sock", rundir);
	assert_int_not_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/vfabd.pid", rundir);
	assert_int_not_equal(access(path, F_OK), 0);
	/* The region stays for `vfab down`. */
	vfab_region_path(fabric, path, sizeof(path));
	assert_int_equal(access(path, F_OK), 0);
}

static void test_sigterm(void **state)
{
	int status;

	(void)state;
	assert_int_equal(kill(daemon_pid, SIGTERM), 0);
	assert_int_equal(waitpid(daemon_pid, &status, 0), daemon_pid);
	daemon_pid = 0;
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_status_and_protocol, start_daemon, stop_daemon),
	    cmocka_unit_test_setup_teardown(test_reap_without_bye, start_daemon, stop_daemon),
	    cmocka_unit_test_setup_teardown(test_reap_before_hello, start_daemon, stop_daemon),
	    cmocka_unit_test_setup_teardown(test_bye_keeps_live_objects, start_daemon, stop_daemon),
	    cmocka_unit_test_setup_teardown(test_live_close_keeps_objects, start_daemon,
					    stop_daemon),
	    cmocka_unit_test_setup_teardown(test_hello_claim_ignored, start_daemon, stop_daemon),
	    cmocka_unit_test_setup_teardown(test_flood_fairness, start_daemon, stop_daemon),
	    cmocka_unit_test_setup_teardown(test_conn_limit, start_daemon, stop_daemon),
	    cmocka_unit_test(test_connect_timeout),
	    cmocka_unit_test_setup_teardown(test_reap_after_pid_reuse, start_daemon, stop_daemon),
	    cmocka_unit_test_setup_teardown(test_refusals, start_daemon, stop_daemon),
	    cmocka_unit_test_setup_teardown(test_shutdown, start_daemon, stop_daemon),
	    cmocka_unit_test_setup_teardown(test_sigterm, start_daemon, stop_daemon),
	};

	if (!getenv("VFABD")) {
		fprintf(stderr, "VFABD (path of the vfabd binary) is not set\n");
		return 1;
	}
	atexit(cleanup_files);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
