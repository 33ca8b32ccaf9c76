/* SPDX-License-Identifier: MIT */
/*
 * vfabd's runtime control against a real daemon: LINK (region state, the
 * node's sysfs view replaced rather than written through, async events to
 * the FIFOs registered by HELLO), SHAPE, latency spikes, live counters,
 * FAULT pause/resume/kill on a process in a network namespace of its own,
 * and the refusal of unprivileged peers.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/vfabd_view_fixture.h"

static int setup(void **state)
{
	(void)state;
	return fx_start("ops");
}

static int teardown(void **state)
{
	(void)state;
	fx_cleanup();
	return 0;
}

struct ev {
	uint64_t element;
	uint32_t type;
	uint32_t reserved;
};

/* Reads one async event record, waiting up to a second. */
static bool read_event(int fd, struct ev *e)
{
	for (int i = 0; i < 100; i++) {
		ssize_t n = read(fd, e, sizeof(*e));

		if (n == (ssize_t)sizeof(*e))
			return true;
		fx_sleep_ms(10);
	}
	return false;
}

static int open_fifo(const char *name, char *path, size_t len)
{
	char dir[256];
	int fd;

	path_in_run(dir, sizeof(dir), "fifo");
	assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
	snprintf(path, len, "%s/%s", dir, name);
	assert_int_equal(mkfifo(path, 0600), 0);
	fd = open(path, O_RDONLY | O_NONBLOCK);
	assert_true(fd >= 0);
	return fd;
}

static void test_link_down_up(void **state)
{
	struct vfab_region *r = fx_region();
	char path[PATH_MAX], line[PATH_MAX + 64], reply[512], text[64];
	int fifo, ctl, other;
	struct ev e;

	(void)state;
	assert_non_null(r);
	make_port_view();
	fifo = open_fifo("4242.7", path, sizeof(path));
	/* A context of node0's mlx5_0 (hca 0) and one of node1's (hca 1). */
	ctl = vfab_ctl_connect(fx_rundir);
	assert_true(ctl >= 0);
	snprintf(line, sizeof(line), "HELLO %d hca=0 async=%s", (int)getpid(), path);
	assert_true(vfab_ctl_request(ctl, line, reply, sizeof(reply)) > 0);
	assert_string_equal(reply, "OK");
	other = vfab_ctl_connect(fx_rundir);
	snprintf(line, sizeof(line), "HELLO %d hca=1 async=%s", (int)getpid(), path);
	assert_true(vfab_ctl_request(other, line, reply, sizeof(reply)) > 0);
	assert_string_equal(reply, "OK");

	assert_true(fx_request("LINK node0/mlx5_0 down", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "OK ", 3);
	assert_int_equal(atomic_load(&r->hcas[0].ports[0].state), 1);
	assert_int_equal(atomic_load(&r->hcas[1].ports[0].state), 4);
	read_file(PORT_DIR "/state", text, sizeof(text));
	assert_string_equal(text, "1: DOWN\n");
	read_file(PORT_DIR "/phys_state", text, sizeof(text));
	assert_string_equal(text, "3: Disabled\n");
	/* Replaced, not written through: the entry it shared an inode with is intact. */
	read_file(PORT_DIR "/shared_active", text, sizeof(text));
	assert_string_equal(text, "4: ACTIVE\n");
	/* Exactly one event: only hca 0's context hears about hca 0. */
	assert_true(read_event(fifo, &e));
	assert_int_equal(e.element, 1);
	assert_int_equal(e.type, 10); /* IBV_EVENT_PORT_ERR */
	assert_int_equal(e.reserved, 0);
	assert_true(read(fifo, &e, sizeof(e)) <= 0); /* nothing more (EOF or EAGAIN) */

	/* Down again: no transition, no event. */
	assert_true(fx_request("LINK node0/mlx5_0/1 down", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "OK ", 3);
	fx_sleep_ms(50);
	assert_true(read(fifo, &e, sizeof(e)) <= 0); /* nothing more (EOF or EAGAIN) */

	assert_true(fx_request("LINK node0/mlx5_0/1 up", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "OK ", 3);
	assert_int_equal(atomic_load(&r->hcas[0].ports[0].state), 4);
	read_file(PORT_DIR "/state", text, sizeof(text));
	assert_string_equal(text, "4: ACTIVE\n");
	read_file(PORT_DIR "/phys_state", text, sizeof(text));
	assert_string_equal(text, "5: LinkUp\n");
	assert_true(read_event(fifo, &e));
	assert_int_equal(e.element, 1);
	assert_int_equal(e.type, 9); /* IBV_EVENT_PORT_ACTIVE */

	/* The down counts in link_downed, refreshed by the tick. */
	for (int i = 0; i < 100; i++) {
		read_file(PORT_DIR "/counters/link_downed", text, sizeof(text));
		if (!strcmp(text, "1\n"))
			break;
		fx_sleep_ms(20);
	}
	assert_string_equal(text, "1\n");

	/* Refusals: unknown port, bad direction, unknown node. */
	assert_true(fx_request("LINK node0/mlx5_0/2 down", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR ENOENT ", 11);
	assert_true(fx_request("LINK node0/mlx5_0 sideways", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR EINVAL ", 11);
	assert_true(fx_request("LINK node9/mlx5_0 down", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR ENOENT ", 11);
	close(other);
	close(ctl);
	close(fifo);
	vfab_region_close(r);
}

static void test_hello_options(void **state)
{
	char line[PATH_MAX + 64], reply[256];
	int fd;

	(void)state;
	fd = vfab_ctl_connect(fx_rundir);
	assert_true(fd >= 0);
	/* Outside <rundir>/fifo/: vfabd (root) must not write where a client says. */
	assert_true(vfab_ctl_request(fd, "HELLO 5 hca=0 async=/etc/passwd", reply, sizeof(reply)) >
		    0);
	assert_memory_equal(reply, "ERR EPERM ", 10);
	snprintf(line, sizeof(line), "HELLO 5 hca=0 async=%s/fifo/../vfabd.pid", fx_rundir);
	assert_true(vfab_ctl_request(fd, line, reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR EPERM ", 10);
	snprintf(line, sizeof(line), "HELLO 5 hca=99 async=%s/fifo/5.1", fx_rundir);
	assert_true(vfab_ctl_request(fd, line, reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR ENOENT ", 11);
	assert_true(vfab_ctl_request(fd, "HELLO 5 hca=0", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR EINVAL ", 11);
	/* The plain form still works, and the connection is now registered. */
	assert_true(vfab_ctl_request(fd, "HELLO 5", reply, sizeof(reply)) > 0);
	assert_string_equal(reply, "OK");
	assert_true(vfab_ctl_request(fd, "BYE", reply, sizeof(reply)) > 0);
	close(fd);
}

static void test_shape(void **state)
{
	struct vfab_region *r = fx_region();
	const struct vfab_port *p0;
	char reply[512], text[64];
	uint32_t up, down, loop;

	(void)state;
	assert_non_null(r);
	make_port_view();
	p0 = &r->hcas[0].ports[0];
	up = p0->link_up;
	down = p0->link_down;
	loop = r->nodes[0].loopback;
	assert_true(fx_request("SHAPE node0/mlx5_0 bw=25 lat=3.5 loss=0.01", reply, sizeof(reply)) >
		    0);
	assert_memory_equal(reply, "OK ", 3);
	for (uint32_t l = up; l == up || l == down; l = l == up ? down : UINT32_MAX) {
		assert_int_equal(r->links[l].rate_bps, 25000000000ull);
		assert_int_equal(r->links[l].latency_ns, 3500);
		assert_int_equal(r->links[l].loss_ppm, 10000);
	}
	assert_int_equal(p0->speed_mbps, 25000);
	read_file(PORT_DIR "/rate", text, sizeof(text));
	assert_string_equal(text, "25 Gb/sec (1X EDR)\n");
	/* node1 is untouched. */
	assert_int_equal(r->links[r->hcas[1].ports[0].link_up].rate_bps, 0);

	/* A named link: only it, and the port keeps its rate. */
	assert_true(fx_request("SHAPE node0/loopback lat=7", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "OK ", 3);
	assert_int_equal(r->links[loop].latency_ns, 7000);
	assert_true(fx_request("SHAPE node0/mlx5_0/1/up bw=100", reply, sizeof(reply)) > 0);
	assert_int_equal(r->links[up].rate_bps, 100000000000ull);
	assert_int_equal(r->links[down].rate_bps, 25000000000ull);
	assert_int_equal(p0->speed_mbps, 25000);
	/* bw=0 unshapes the link; the port keeps advertising its rate. */
	assert_true(fx_request("SHAPE node0/mlx5_0 bw=0", reply, sizeof(reply)) > 0);
	assert_int_equal(r->links[up].rate_bps, 0);
	assert_int_equal(p0->speed_mbps, 25000);

	assert_true(fx_request("SHAPE nolink lat=1", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR ENOENT ", 11);
	assert_true(fx_request("SHAPE node0/mlx5_0 speed=1", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR EINVAL ", 11);
	assert_true(fx_request("SHAPE node0/mlx5_0 loss=2", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR EINVAL ", 11);
	assert_true(fx_request("SHAPE node0/mlx5_0", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR EINVAL ", 11);
	/* Decimal numbers only (issue 27 #7): strtod would read 0x10 as 16 Gb/s. */
	const char *const bad[] = {"bw=0x10", "bw=inf", "lat=nan", "bw= 5", "loss=-0", "bw=1e400"};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char line[64];

		snprintf(line, sizeof(line), "SHAPE node0/mlx5_0 %s", bad[i]);
		assert_true(fx_request(line, reply, sizeof(reply)) > 0);
		assert_memory_equal(reply, "ERR EINVAL ", 11);
	}
	assert_int_equal(r->links[up].rate_bps, 0);
	assert_true(fx_request("SHAPE node0/mlx5_0 bw=2.5e1", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "OK ", 3);
	vfab_region_close(r);
}

static void test_spike(void **state)
{
	struct vfab_region *r = fx_region();
	char reply[512];
	uint32_t up, down;

	(void)state;
	assert_non_null(r);
	up = r->hcas[1].ports[0].link_up;
	down = r->hcas[1].ports[0].link_down;
	assert_true(fx_request("SHAPE node1/mlx5_0 lat=2", reply, sizeof(reply)) > 0);
	assert_true(fx_request("FAULT spike node1/mlx5_0 lat=100 for=0.4", reply, sizeof(reply)) >
		    0);
	assert_memory_equal(reply, "OK ", 3);
	assert_int_equal(r->links[up].latency_ns, 102000);
	assert_int_equal(r->links[down].latency_ns, 102000);
	/* A shape during the spike sets the base; the spike stays on top of it. */
	assert_true(fx_request("SHAPE node1/mlx5_0/1/up lat=5", reply, sizeof(reply)) > 0);
	assert_int_equal(r->links[up].latency_ns, 105000);
	fx_sleep_ms(700);
	assert_int_equal(r->links[up].latency_ns, 5000);
	assert_int_equal(r->links[down].latency_ns, 2000);

	assert_true(fx_request("FAULT spike node1/mlx5_0 lat=100", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR EINVAL ", 11);
	assert_true(fx_request("FAULT spike nowhere lat=1 for=1", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR ENOENT ", 11);
	vfab_region_close(r);
}

static void test_counters_live(void **state)
{
	struct vfab_region *r = fx_region();
	struct vfab_port_counters *c;
	char text[64], want[64];
	int i;

	(void)state;
	assert_non_null(r);
	make_port_view();
	c = vfab_cnt(r, 0, 1);
	/*
	 * port_xmit_data last: a tick reads it before the hw counters, so one
	 * that saw it changed sees them changed too.
	 */
	atomic_fetch_add(&c->out_of_sequence, 3);
	atomic_fetch_add(&c->duplicate_request, 5);
	atomic_fetch_add(&c->xmit_data_words, 123456);
	/* Within a second (ticks are 250 ms). */
	for (i = 0; i < 50; i++) {
		read_file(PORT_DIR "/counters/port_xmit_data", text, sizeof(text));
		if (!strcmp(text, "123456\n"))
			break;
		fx_sleep_ms(20);
	}
	assert_true(i < 50);
	read_file(PORT_DIR "/hw_counters/out_of_sequence", text, sizeof(text));
	assert_string_equal(text, "3\n");
	read_file(PORT_DIR "/hw_counters/duplicate_request", text, sizeof(text));
	assert_string_equal(text, "5\n");
	/* port_xmit_data was a hard link of symbol_error: replaced, not written through. */
	read_file(PORT_DIR "/counters/symbol_error", text, sizeof(text));
	assert_string_equal(text, "0\n");
	/* Unchanged counters are left alone. */
	read_file(PORT_DIR "/counters/port_rcv_data", text, sizeof(text));
	assert_string_equal(text, "0\n");
	atomic_fetch_add(&c->xmit_data_words, 1);
	snprintf(want, sizeof(want), "%llu\n",
		 (unsigned long long)atomic_load(&c->xmit_data_words));
	for (i = 0; i < 50; i++) {
		read_file(PORT_DIR "/counters/port_xmit_data", text, sizeof(text));
		if (!strcmp(text, want))
			break;
		fx_sleep_ms(20);
	}
	assert_string_equal(text, want);
	vfab_region_close(r);
}

static void test_fault_pause_kill(void **state)
{
	struct vfab_region *r = fx_region();
	pid_t holder, worker;
	char reply[512];

	(void)state;
	assert_non_null(r);
	/* Without a namespace the node has no processes to fault. */
	assert_true(fx_request("FAULT pause node0 1", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR ESRCH ", 10);
	holder = start_node(&worker);
	if (worker < 0) {
		stop_node(holder, worker);
		vfab_region_close(r);
		skip(); /* no CAP_SYS_ADMIN for a network namespace */
	}
	fx_write_holder("node0", holder);

	assert_true(fx_request("FAULT pause node0 0.5", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "OK ", 3);
	assert_true(wait_state(worker, 'T', true));
	assert_true(proc_state(holder) != 'T'); /* infrastructure stays */
	/* Resumed by the timer. */
	assert_true(wait_state(worker, 'T', false));

	assert_true(fx_request("FAULT pause node0", reply, sizeof(reply)) > 0);
	assert_true(wait_state(worker, 'T', true));
	fx_sleep_ms(600);
	assert_int_equal(proc_state(worker), 'T'); /* no timer: until resume */
	assert_true(fx_request("FAULT resume node0", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "OK ", 3);
	assert_true(wait_state(worker, 'T', false));

	assert_true(fx_request("FAULT kill node0", reply, sizeof(reply)) > 0);
	assert_string_equal(reply, "OK node0: 1 process(es) killed");
	/* Gone (reaped by its holder), the holder alive. */
	assert_true(wait_state(worker, 0, true));
	assert_true(proc_state(holder) != 0 && proc_state(holder) != 'Z');

	assert_true(fx_request("FAULT kill node7", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR ENOENT ", 11);
	assert_true(fx_request("FAULT explode node0", reply, sizeof(reply)) > 0);
	assert_memory_equal(reply, "ERR EINVAL ", 11);
	stop_node(holder, worker);
	vfab_region_close(r);
}

/* A paused node is continued when vfabd stops: no fault outlives the daemon. */
static void test_shutdown_resumes(void **state)
{
	struct vfab_region *r = fx_region();
	pid_t holder, worker;
	char reply[64];

	(void)state;
	assert_non_null(r);
	holder = start_node(&worker);
	if (worker < 0) {
		stop_node(holder, worker);
		vfab_region_close(r);
		skip();
	}
	fx_write_holder("node0", holder);
	assert_true(fx_request("FAULT pause node0", reply, sizeof(reply)) > 0);
	assert_true(wait_state(worker, 'T', true));
	assert_true(fx_request("SHUTDOWN", reply, sizeof(reply)) > 0);
	assert_int_equal(waitpid(fx_daemon, NULL, 0), fx_daemon);
	fx_daemon = 0;
	assert_true(wait_state(worker, 'T', false));
	stop_node(holder, worker);
	vfab_region_close(r);
}

static void test_unprivileged_refused(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		skip(); /* needs to become another user */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char reply[256];
		int ok;

		if (setgid(65534) || setuid(65534))
			_exit(3);
		ok = fx_request("LINK node0/mlx5_0 down", reply, sizeof(reply)) > 0 &&
		     !strncmp(reply, "ERR EPERM ", 10);
		ok = ok && fx_request("FAULT kill node0", reply, sizeof(reply)) > 0 &&
		     !strncmp(reply, "ERR EPERM ", 10);
		ok = ok && fx_request("SHUTDOWN", reply, sizeof(reply)) > 0 &&
		     !strncmp(reply, "ERR EPERM ", 10);
		/* Reading stays open to everybody. */
		ok = ok && fx_request("STATUS", reply, sizeof(reply)) > 0 && reply[0] == '{';
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 3)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * An unprivileged client that names another user's FIFO (here root's) in its
 * HELLO is refused, and a port event writes nothing there: the reader would
 * take the record for one of its own (a CQ pointer, for a channel).
 */
static void test_foreign_fifo_refused(void **state)
{
	char path[PATH_MAX], reply[256];
	int status, fifo;
	struct ev e;
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		skip(); /* needs to become another user */
	make_port_view();
	fifo = open_fifo("4242.9", path, sizeof(path)); /* root's, 0600 */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char line[PATH_MAX + 64];
		int fd, ok;

		if (setgid(65534) || setuid(65534))
			_exit(3);
		fd = vfab_ctl_connect(fx_rundir);
		snprintf(line, sizeof(line), "HELLO %d hca=0 async=%s", (int)getpid(), path);
		ok = fd >= 0 && vfab_ctl_request(fd, line, reply, sizeof(reply)) > 0 &&
		     !strncmp(reply, "ERR EPERM ", 10);
		if (!ok)
			_exit(1);
		/* Held open (no BYE) while the parent raises an event. */
		sleep(2);
		_exit(0);
	}
	fx_sleep_ms(500);
	assert_true(fx_request("LINK node0/mlx5_0 down", reply, sizeof(reply)) > 0);
	assert_true(fx_request("LINK node0/mlx5_0 up", reply, sizeof(reply)) > 0);
	fx_sleep_ms(100);
	assert_true(read(fifo, &e, sizeof(e)) <= 0); /* nothing arrived */
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 3)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
	close(fifo);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_link_down_up, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hello_options, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_shape, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_spike, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_counters_live, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fault_pause_kill, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_shutdown_resumes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unprivileged_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_foreign_fifo_refused, setup, teardown),
	};

	if (!getenv("VFABD")) {
		fprintf(stderr, "VFABD (path of the vfabd binary) is not set\n");
		return 1;
	}
	atexit(fx_cleanup);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
