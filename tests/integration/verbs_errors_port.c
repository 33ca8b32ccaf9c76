/* SPDX-License-Identifier: MIT */
/*
 * verbs_errors (see verbs_errors.c): the port of this node's HCA goes down
 * and comes back (vfabd's LINK request, what `vfab link` sends), as a cable
 * pulled and plugged in again. A down port reports PORT_DOWN / Disabled,
 * every context of the HCA gets IBV_EVENT_PORT_ERR, an RC QP's messages are
 * not delivered, so its WR ends in RETRY_EXC_ERR after the ACK timer ran
 * retry_cnt + 1 times; up again, PORT_ACTIVE and traffic flows.
 *
 * The control socket is found through the device's locator file; the
 * request needs root (the integration tests run as root).
 */
#include "verbs_harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static char link_target[160]; /* "<node>/<hca>" once the port was taken down */

/* <rundir>/vfabd.sock, the run dir from /sys/class/infiniband/<dev>/device/vfab. */
static int socket_path(char *out, size_t len)
{
	char path[256], line[200];
	int rc = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/vfab",
		 ibv_get_device_name(dev));
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		size_t n;

		line[strcspn(line, "\n")] = '\0';
		n = strlen(line);
		if (strncmp(line, "rundir ", 7) || n - 7 + sizeof("/vfabd.sock") > len)
			continue;
		memcpy(out, line + 7, n - 7);
		memcpy(out + n - 7, "/vfabd.sock", sizeof("/vfabd.sock"));
		rc = 0;
	}
	fclose(f);
	return rc;
}

/* Sends one request line to vfabd; true when the reply starts with OK. */
static bool vfabd_request(const char *req, char *reply, size_t len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t got = 0;
	ssize_t n;
	int fd;

	reply[0] = '\0';
	if (socket_path(sa.sun_path, sizeof(sa.sun_path)))
		return snprintf(reply, len, "no run dir in the device/vfab locator"), false;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		snprintf(reply, len, "connect %s: %s", sa.sun_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req) || write(fd, "\n", 1) != 1) {
		close(fd);
		return snprintf(reply, len, "write: %s", strerror(errno)), false;
	}
	while (got + 1 < len && (n = read(fd, reply + got, len - 1 - got)) > 0) {
		got += (size_t)n;
		reply[got] = '\0';
		if (strchr(reply, '\n'))
			break;
	}
	close(fd);
	reply[strcspn(reply, "\n")] = '\0';
	return !strncmp(reply, "OK", 2);
}

static bool set_link(bool up, char *reply, size_t len)
{
	char req[200];

	snprintf(req, sizeof(req), "LINK %s %s", link_target, up ? "up" : "down");
	return vfabd_request(req, reply, len);
}

/* A failed run must not leave the node's port down for the tests after it. */
static void restore_link(void)
{
	char reply[256];

	if (link_target[0])
		set_link(true, reply, sizeof(reply));
}

static bool port_is(struct ibv_context *ctx, enum ibv_port_state state, uint8_t phys)
{
	struct ibv_port_attr pa;

	return !ibv_query_port(ctx, PORT, &pa) && pa.state == state && pa.phys_state == phys;
}

void test_port_down(void)
{
	char host[64], reply[256];
	struct side a, b;
	struct ibv_sge g;
	struct conn c;
	double t0, ms;

	if (gethostname(host, sizeof(host)))
		die("gethostname");
	snprintf(link_target, sizeof(link_target), "%s/%s", host, ibv_get_device_name(dev));
	atexit(restore_link);
	pair_open(&a, &b, ALL, NULL);
	if (!check(set_link(false, reply, sizeof(reply)), "vfabd takes the port down",
		   "LINK %s down: %s", link_target, reply)) {
		pair_close(&a, &b);
		return;
	}
	check(port_is(a.ctx, IBV_PORT_DOWN, 3), "down port: PORT_DOWN, phys_state 3 (Disabled)",
	      "query_port says otherwise");
	check(wait_async(a.ctx, IBV_EVENT_PORT_ERR, 2000), "IBV_EVENT_PORT_ERR on every context",
	      "none on the first context");
	check(wait_async(b.ctx, IBV_EVENT_PORT_ERR, 2000), "IBV_EVENT_PORT_ERR on the second too",
	      "none on the second context");

	/* A fresh pair on the down port: timeout 8 (1.05 ms), three retries. */
	pair_close(&a, &b);
	c = conn_to(NULL);
	c.timeout = 8;
	c.retry_cnt = 3;
	pair_open(&a, &b, ALL, &c);
	g = sge_of(&a, 0, 64);
	t0 = now_ms();
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, (uintptr_t)b.buf, b.mr->rkey, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "WRITE over a down port -> RETRY_EXC_ERR", IBV_WC_RETRY_EXC_ERR, 5000);
	ms = now_ms() - t0;
	check(ms >= 4.0 && ms < 1000, "after (retry_cnt+1) ACK timeouts",
	      "took %.2f ms, expected about 4.2", ms);

	check(set_link(true, reply, sizeof(reply)), "vfabd brings the port up", "LINK up: %s",
	      reply);
	link_target[0] = '\0';
	check(port_is(a.ctx, IBV_PORT_ACTIVE, 5), "up again: PORT_ACTIVE, phys_state 5 (LinkUp)",
	      "query_port says otherwise");
	check(wait_async(a.ctx, IBV_EVENT_PORT_ACTIVE, 2000), "IBV_EVENT_PORT_ACTIVE", "no event");
	pair_close(&a, &b);
	pair_open(&a, &b, ALL, NULL);
	g = sge_of(&a, 0, 64);
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, (uintptr_t)b.buf, b.mr->rkey, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "WRITE after the port came back", IBV_WC_SUCCESS, 1000);
	pair_close(&a, &b);
}
