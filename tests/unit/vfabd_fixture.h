/* SPDX-License-Identifier: MIT */
/*
 * A real vfabd for a unit test (path in $VFABD): started on a private run
 * dir under /tmp with a unique fabric name (the built-in 2-node config), and
 * removed with everything under that run dir even when a check failed. For
 * the tests of runtime control and the report; included by one test file
 * each, hence the static functions.
 */
#ifndef VFAB_TEST_VFABD_FIXTURE_H
#define VFAB_TEST_VFABD_FIXTURE_H

#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fabric/ctl.h"
#include "fabric/region.h"

static char fx_fabric[64], fx_rundir[128];
static pid_t fx_daemon;
/*
 * vfabd's --counters: "tick" (the view's files rewritten on the tick, which
 * the tests of the view read) unless a test asks for "fs" (its FUSE file
 * system at <rundir>/counters) before fx_start.
 */
static const char *fx_counters = "tick";

static inline int fx_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) && errno != ENOENT ? -1 : 0;
}

static inline void fx_cleanup(void)
{
	if (fx_daemon > 0) {
		kill(fx_daemon, SIGKILL);
		waitpid(fx_daemon, NULL, 0);
		fx_daemon = 0;
	}
	if (!fx_fabric[0])
		return;
	vfab_region_unlink(fx_fabric);
	/* Only ever our own /tmp/unit-... directory. */
	if (!strncmp(fx_rundir, "/tmp/unit-", 10)) {
		char mnt[192];

		/* The counters file system of the vfabd killed above (`vfab down` does the same).
		 */
		snprintf(mnt, sizeof(mnt), "%s/counters", fx_rundir);
		umount2(mnt, MNT_DETACH);
		nftw(fx_rundir, fx_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
}

static inline void fx_sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static inline int fx_request(const char *line, char *reply, size_t len)
{
	int fd = vfab_ctl_connect(fx_rundir), rc;

	if (fd < 0)
		return fd;
	rc = vfab_ctl_request(fd, line, reply, len);
	close(fd);
	return rc;
}

/* Starts vfabd; 0 once it answers STATUS, -1 (nothing left behind) otherwise. */
static inline int fx_start(const char *tag)
{
	static unsigned counter;
	char reply[512];

	snprintf(fx_fabric, sizeof(fx_fabric), "unit-%s-%d-%u", tag, (int)getpid(), counter++);
	snprintf(fx_rundir, sizeof(fx_rundir), "/tmp/%s", fx_fabric);
	fx_daemon = fork();
	if (fx_daemon < 0)
		return -1;
	if (fx_daemon == 0) {
		const char *bin = getenv("VFABD");

		if (!getenv("VFAB_TEST_VERBOSE"))
			(void)!freopen("/dev/null", "w", stderr);
		execl(bin, bin, "--fabric", fx_fabric, "--rundir", fx_rundir, "--counters",
		      fx_counters, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 250; i++) {
		if (fx_request("STATUS", reply, sizeof(reply)) > 0)
			return 0;
		fx_sleep_ms(20);
	}
	fx_cleanup();
	return -1;
}

static inline struct vfab_region *fx_region(void)
{
	struct vfab_region *r = NULL;
	char path[256];

	vfab_region_path(fx_fabric, path, sizeof(path));
	return vfab_region_open(path, &r) ? NULL : r;
}

/*
 * A request answered with "OK <n>\n" then n bytes (REPORT, HISTORY).
 * Returns the body (malloc'd, NUL-terminated) or NULL; *len its length.
 */
static inline char *fx_fetch(const char *request, size_t *len)
{
	int fd = vfab_ctl_connect(fx_rundir);
	char head[64], *body = NULL, *end, line[32];
	int q = snprintf(line, sizeof(line), "%s\n", request);
	size_t got = 0, n;
	ssize_t k;

	if (fd < 0 || send(fd, line, (size_t)q, MSG_NOSIGNAL) != q)
		goto fail;
	/* The header, byte by byte: nothing of the body may be consumed with it. */
	for (size_t i = 0; i < sizeof(head) - 1; i++) {
		if (recv(fd, head + i, 1, 0) != 1)
			goto fail;
		head[i + 1] = '\0';
		if (head[i] == '\n')
			break;
	}
	if (strncmp(head, "OK ", 3))
		goto fail;
	n = strtoul(head + 3, &end, 10);
	if (*end != '\n' || !n)
		goto fail;
	body = malloc(n + 1);
	while (body && got < n && (k = recv(fd, body + got, n - got, 0)) > 0)
		got += (size_t)k;
	if (!body || got != n)
		goto fail;
	body[n] = '\0';
	close(fd);
	*len = n;
	return body;
fail:
	free(body);
	if (fd >= 0)
		close(fd);
	return NULL;
}

static inline char *fx_report(size_t *len)
{
	return fx_fetch("REPORT", len);
}

#endif /* VFAB_TEST_VFABD_FIXTURE_H */
