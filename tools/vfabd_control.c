/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/paths.h"
#include "base/proc.h"
#include "fabric/ctl.h"
#include "fabric/region.h"
#include "tools/cli.h"

#define SHUTDOWN_ANSWER_MS 300
#define EXIT_WAIT_MS 1000

int vfab_vfabd_start(const struct vfab_cli *cli, const char *exe, const char *config, pid_t *pid)
{
	char log[PATH_MAX];
	pid_t child;

	if (vfab_pathf(log, sizeof(log), "%s/vfabd.log", cli->rundir))
		return -ENAMETOOLONG;
	if (access(exe, X_OK))
		return -errno;
	child = fork();
	if (child < 0)
		return -errno;
	if (child == 0) {
		int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
		sigset_t none;

		setsid();
		if (out < 0 || in < 0)
			_exit(127);
		dup2(in, 0);
		dup2(out, 1);
		dup2(out, 2);
		close_range(3, ~0U, 0);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execl(exe, "vfabd", "--fabric", cli->fabric, "--config", config, (char *)NULL);
		fprintf(stderr, "vfab: cannot run %s: %s\n", exe, strerror(errno));
		_exit(127);
	}
	*pid = child;
	return 0;
}

/* The last lines of vfabd.log, indented, for error messages. */
static void log_tail(const struct vfab_cli *cli, char *out, size_t len)
{
	char path[PATH_MAX], buf[2048];
	ssize_t n;
	int fd;
	off_t size;
	const char *p;

	out[0] = '\0';
	if (vfab_pathf(path, sizeof(path), "%s/vfabd.log", cli->rundir))
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	if (size > (off_t)sizeof(buf) - 1)
		lseek(fd, size - (off_t)sizeof(buf) + 1, SEEK_SET);
	else
		lseek(fd, 0, SEEK_SET);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	/* Start at a line boundary when the read began mid-line. */
	p = size > (off_t)sizeof(buf) - 1 && strchr(buf, '\n') ? strchr(buf, '\n') + 1 : buf;
	snprintf(out, len, "\n--- %.255s (tail) ---\n%.2047s", path, p);
}

int vfab_vfabd_request(const struct vfab_cli *cli, const char *line, char *reply, size_t len,
		       int timeout_ms)
{
	long long deadline = vfab_now_ms() + timeout_ms;
	size_t got = 0;
	char msg[256];
	int fd, n;

	if (len == 0)
		return -EINVAL;
	n = snprintf(msg, sizeof(msg), "%s\n", line);
	if (n < 0 || (size_t)n >= sizeof(msg))
		return -EINVAL;
	fd = vfab_ctl_connect(cli->rundir);
	if (fd < 0)
		return fd;
	/* A daemon that just closed must not kill the CLI with SIGPIPE. */
	if (send(fd, msg, (size_t)n, MSG_NOSIGNAL) != n) {
		n = -errno;
		close(fd);
		return n ? n : -EIO;
	}
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		long long left = deadline - vfab_now_ms();
		ssize_t r;

		if (left <= 0) {
			close(fd);
			return -ETIMEDOUT;
		}
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR) {
			n = -errno;
			close(fd);
			return n;
		}
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = read(fd, reply + got, len - 1 - got);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0) {
			close(fd);
			return r < 0 ? -errno : -ECONNRESET;
		}
		got += (size_t)r;
		reply[got] = '\0';
		char *nl = strchr(reply, '\n');

		if (nl) {
			*nl = '\0';
			close(fd);
			return (int)(nl - reply);
		}
		if (got == len - 1) {
			close(fd);
			return -EMSGSIZE;
		}
	}
}

int vfab_vfabd_wait_ready(const struct vfab_cli *cli, pid_t pid, int timeout_ms, char *err,
			  size_t errlen)
{
	long long deadline = vfab_now_ms() + timeout_ms;
	char reply[512], region_path[256], tail[2400];
	struct vfab_region *r;
	int status, ret;

	for (;;) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			log_tail(cli, tail, sizeof(tail));
			snprintf(err, errlen, "vfabd exited (%s %d) before it was ready%s",
				 WIFEXITED(status) ? "status" : "signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), tail);
			return -ECHILD;
		}
		/* The socket answers only once the topology is in the region. */
		ret = vfab_vfabd_request(cli, "STATUS", reply, sizeof(reply), 200);
		if (ret > 0 && reply[0] == '{')
			break;
		if (vfab_now_ms() >= deadline) {
			log_tail(cli, tail, sizeof(tail));
			snprintf(err, errlen, "vfabd did not answer STATUS within %d ms%s",
				 timeout_ms, tail);
			return -ETIMEDOUT;
		}
		vfab_sleep_ms(2);
	}
	ret = vfab_region_path(cli->fabric, region_path, sizeof(region_path));
	if (ret == 0)
		ret = vfab_region_open(region_path, &r);
	if (ret) {
		snprintf(err, errlen, "open the region %s: %s", region_path, strerror(-ret));
		return ret;
	}
	ret = atomic_load(&r->ready) ? 0 : -EPROTO;
	vfab_region_close(r);
	if (ret)
		snprintf(err, errlen, "vfabd answers but the region is not ready");
	return ret;
}

/* Is `pid` a vfabd started for this fabric? (pid files can be stale.) */
static int is_our_vfabd(const struct vfab_cli *cli, pid_t pid)
{
	char path[64], buf[1024];
	const char *fabric = VFAB_DEFAULT_FABRIC, *argv0, *base;
	ssize_t n;

	if (!vfab_pid_alive(pid))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	n = vfab_read_file(path, buf, sizeof(buf));
	if (n <= 0)
		return 0;
	argv0 = buf;
	base = strrchr(argv0, '/') ? strrchr(argv0, '/') + 1 : argv0;
	if (strcmp(base, "vfabd") != 0)
		return 0;
	for (const char *a = buf; a < buf + n; a += strlen(a) + 1)
		if (strcmp(a, "--fabric") == 0 && a + strlen(a) + 1 < buf + n)
			fabric = a + strlen(a) + 1;
	return strcmp(fabric, cli->fabric) == 0;
}

pid_t vfab_vfabd_pid(const struct vfab_cli *cli)
{
	char path[PATH_MAX];
	pid_t pid;

	if (vfab_vfabd_pid_path(path, sizeof(path), cli->rundir) || vfab_read_pid_file(path, &pid))
		return 0;
	return is_our_vfabd(cli, pid) ? pid : 0;
}

static int wait_gone(pid_t pid, int ms)
{
	long long deadline = vfab_now_ms() + ms;

	while (vfab_pid_alive(pid)) {
		if (vfab_now_ms() >= deadline)
			return 0;
		vfab_sleep_ms(2);
	}
	return 1;
}

int vfab_vfabd_stop(const struct vfab_cli *cli, pid_t started_pid)
{
	char reply[64];
	pid_t pid = vfab_vfabd_pid(cli);
	int ret = 0;

	if (!pid && started_pid > 0 && vfab_pid_alive(started_pid))
		pid = started_pid;
	if (vfab_vfabd_request(cli, "SHUTDOWN", reply, sizeof(reply), SHUTDOWN_ANSWER_MS) > 0 &&
	    strcmp(reply, "OK") == 0) {
		if (pid && !wait_gone(pid, EXIT_WAIT_MS))
			ret = -ETIMEDOUT;
	} else if (pid) {
		ret = -ETIMEDOUT;
	}
	if (ret && pid) {
		/* It did not answer (or not exit) in time: the pid was verified above. */
		kill(pid, SIGKILL);
		ret = wait_gone(pid, EXIT_WAIT_MS) ? 0 : -EBUSY;
	}
	if (started_pid > 0)
		waitpid(started_pid, NULL, ret ? WNOHANG : 0);
	return ret;
}
