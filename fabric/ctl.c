/* SPDX-License-Identifier: MIT */
/* Control-socket client (see ctl.h). Used by the provider: no heavy deps. */
#include "fabric/ctl.h"
#include "base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/*
 * A full listen backlog (a daemon that stopped accepting, or one flooded with
 * connections) would block a plain connect() forever; a non-blocking one says
 * EAGAIN, and is tried again until the deadline.
 */
int vfab_ctl_connect(const char *rundir)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	long long deadline = vfab_now_ms() + VFAB_CTL_TIMEOUT_MS;
	int fd, n;

	n = vfab_ctl_sock_path(sa.sun_path, sizeof(sa.sun_path), rundir);
	if (n)
		return n;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		struct timespec pause = {.tv_nsec = 5 * 1000000L};

		n = -errno;
		if (n == -EINTR)
			continue;
		if (n != -EAGAIN || vfab_now_ms() >= deadline) {
			close(fd);
			return n == -EAGAIN ? -ETIMEDOUT : n;
		}
		nanosleep(&pause, NULL);
	}
	/* Callers may use plain blocking calls on it. */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	return fd;
}

static int wait_fd(int fd, short events, long long deadline)
{
	struct pollfd p = {.fd = fd, .events = events};
	int rc;

	do {
		long long left = deadline - vfab_now_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		rc = poll(&p, 1, (int)left);
	} while (rc < 0 && errno == EINTR);
	if (rc < 0)
		return -errno;
	return rc ? 0 : -ETIMEDOUT;
}

static int send_all(int fd, const char *buf, size_t len, long long deadline)
{
	while (len) {
		/* MSG_NOSIGNAL: a dead daemon must not SIGPIPE the application. */
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			int rc;

			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			rc = wait_fd(fd, POLLOUT, deadline);
			if (rc)
				return rc;
			continue;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int vfab_ctl_request(int fd, const char *line, char *reply, size_t len)
{
	long long deadline = vfab_now_ms() + VFAB_CTL_TIMEOUT_MS;
	size_t l = strlen(line), got = 0;
	int rc;

	if (!len)
		return -EINVAL;
	if (l && line[l - 1] == '\n') {
		rc = send_all(fd, line, l, deadline);
	} else if (l < 1024) {
		/* One send: a daemon woken by half a line only waits again. */
		char buf[1024];

		memcpy(buf, line, l);
		buf[l] = '\n';
		rc = send_all(fd, buf, l + 1, deadline);
	} else {
		rc = send_all(fd, line, l, deadline);
		if (!rc)
			rc = send_all(fd, "\n", 1, deadline);
	}
	if (rc)
		return rc;
	/* The daemon only speaks when asked, so nothing follows the reply line. */
	for (uint64_t spin_end = vfab_mono_ns() + VFAB_CTL_SPIN_NS;;) {
		ssize_t n;
		char *nl;

		if (got + 1 >= len)
			return -EMSGSIZE;
		/*
		 * A reply usually comes within tens of microseconds: waiting for
		 * it awake spares the daemon the wake-up of a sleeper, which costs
		 * more than the request on a virtual machine. Then poll. Never
		 * sched_yield() meanwhile: on a busy CPU that gives a whole time
		 * slice away per request.
		 */
		if (vfab_mono_ns() >= spin_end && (rc = wait_fd(fd, POLLIN, deadline)))
			return rc;
		n = recv(fd, reply + got, len - 1 - got, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (!n)
			return -ECONNRESET;
		got += (size_t)n;
		reply[got] = '\0';
		nl = memchr(reply, '\n', got);
		if (nl) {
			*nl = '\0';
			return (int)(nl - reply);
		}
	}
}
