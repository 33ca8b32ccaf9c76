/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: vfabd's control-socket line protocol as an unprivileged
 * local client speaks it (the socket is open to every user). The input is
 * what the client sends; it goes through the daemon's own line framing and
 * dispatch (vfabd_proto_take) against a real region with the default
 * topology, replies queued and sent on a socketpair and thrown away, as the
 * loop does for one connection. Privileged verbs are refused here, as they
 * are for such a client.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "daemon/vfabd.h"
#include "daemon/vfabd_conn.h"
#include "daemon/vfabd_proto.h"
#include "fabric/topology.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct vfabd d;
static struct vfab_region *topo;
static char fabric[64], rundir[128];

static void cleanup(void)
{
	char path[256];

	if (d.r)
		vfab_region_close(d.r);
	vfab_region_unlink(fabric);
	vfab_topology_private_free(topo);
	if (d.rundir_fd >= 0)
		close(d.rundir_fd);
	snprintf(path, sizeof(path), "%s/fifo", rundir);
	rmdir(path);
	rmdir(rundir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct vfab_config cfg;
	char err[256];

	(void)argc;
	(void)argv;
	snprintf(fabric, sizeof(fabric), "fuzz-ctl-%d", (int)getpid());
	snprintf(rundir, sizeof(rundir), "/tmp/%s", fabric);
	mkdir(rundir, 0755);
	/* As vfabd: its own topology (names, paths), published into the region. */
	d.rundir_fd = open(rundir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (d.rundir_fd < 0 || vfab_config_load_default(&cfg, err, sizeof(err)) ||
	    vfab_topology_private(fabric, rundir, &cfg, &topo) ||
	    vfab_region_create(fabric, rundir, &d.r) || vfab_topology_publish(d.r, topo)) {
		fprintf(stderr, "fuzz_ctl: cannot set up a region: %s\n", err);
		exit(1);
	}
	vfab_config_free(&cfg);
	d.t = topo;
	d.fabric = fabric;
	atexit(cleanup);
	return 0;
}

static void drain(struct vfabd_conn *c, int peer)
{
	char sink[65536];

	while (c->out_off < c->out_len) {
		if (!vfabd_conn_flush(c))
			return;
		while (recv(peer, sink, sizeof(sink), MSG_DONTWAIT) > 0)
			;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vfabd_conn c = {.hca = -1, .pidfd = -1};
	int sv[2];
	size_t off = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv))
		return 0;
	c.fd = sv[0];
	c.peer_pid = getpid();
	c.peer_uid = 65534; /* nobody: an unprivileged client */
	while (off < size && !c.bye) {
		size_t n = sizeof(c.buf) - 1 - c.len;

		if (n > size - off)
			n = size - off;
		memcpy(c.buf + c.len, data + off, n);
		c.len += n;
		c.buf[c.len] = '\0';
		off += n;
		while (vfabd_proto_take(&d, &c))
			drain(&c, sv[1]);
		if (c.len == sizeof(c.buf) - 1)
			break; /* "request line too long": the loop drops such a client */
	}
	vfabd_conn_close(&c);
	close(sv[1]);
	d.srv.stop = false; /* a SHUTDOWN (refused anyway) must not carry over */
	return 0;
}
