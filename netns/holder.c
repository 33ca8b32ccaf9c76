/* SPDX-License-Identifier: MIT */
#include "netns/holder.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/paths.h"
#include "base/proc.h"
#include "netns/node_mounts.h"

#define HOLDER_READY_TIMEOUT_MS 10000
#define REPORT_FD 3

/* Status record the holder sends to its parent: errno (0 = ready) + text. */
struct holder_report {
	int error;
	char text[480];
};

static void report(int error, const char *text)
{
	struct holder_report r = {.error = error};
	ssize_t w;

	snprintf(r.text, sizeof(r.text), "%s", text);
	do
		w = write(REPORT_FD, &r, sizeof(r));
	while (w < 0 && errno == EINTR);
}

static void detach(int report_fd)
{
	/* Out of the way of 0..3 first, whatever numbers the pipe got. */
	int keep = fcntl(report_fd, F_DUPFD, 64);
	int null = open("/dev/null", O_RDWR);

	setsid();
	/* The CLI's stdout may be a pipe someone reads to EOF: never hold it. */
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	dup2(keep, REPORT_FD);
	close_range(REPORT_FD + 1, ~0U, 0);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	/* Terminal signals: the holder answers only to SIGTERM/SIGKILL. */
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	prctl(PR_SET_NAME, VFAB_HOLDER_COMM, 0, 0, 0);
}

static __attribute__((noreturn)) void holder_main(const char *rundir, const char *node,
						  const char *region_path, int report_fd)
{
	sigset_t all;
	char err[400] = "", path[4096];
	int ret;

	detach(report_fd);
	if (unshare(CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWNS | CLONE_NEWIPC)) {
		ret = -errno;
		snprintf(err, sizeof(err), "unshare net+uts+mnt+ipc");
		goto failed;
	}
	if (sethostname(node, strlen(node))) {
		ret = -errno;
		snprintf(err, sizeof(err), "sethostname %s", node);
		goto failed;
	}
	ret = vfab_node_mounts_setup(rundir, node, region_path, err, sizeof(err));
	if (ret)
		goto failed;
	ret = vfab_holder_pid_path(path, sizeof(path), rundir, node);
	if (ret == 0)
		ret = vfab_write_pid_file(path, getpid());
	if (ret) {
		snprintf(err, sizeof(err), "write holder.pid of node %s", node);
		goto failed;
	}
	report(0, "");
	close(REPORT_FD);
	/* Keep the blocked set empty so that SIGTERM ends us right away. */
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (;;)
		pause();
failed:
	report(-ret, err);
	_exit(1);
}

static int wait_report(int fd, pid_t pid, char *err, size_t errlen)
{
	struct holder_report r;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	size_t got = 0;
	int n;

	while (got < sizeof(r)) {
		n = poll(&p, 1, HOLDER_READY_TIMEOUT_MS);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(err, errlen, "holder %d did not become ready", (int)pid);
			return -ETIMEDOUT;
		}
		ssize_t rd = read(fd, (char *)&r + got, sizeof(r) - got);

		if (rd < 0 && errno == EINTR)
			continue;
		if (rd <= 0) {
			snprintf(err, errlen, "holder %d exited before it was ready", (int)pid);
			return -ECHILD;
		}
		got += (size_t)rd;
	}
	if (r.error) {
		r.text[sizeof(r.text) - 1] = '\0';
		snprintf(err, errlen, "holder: %s", r.text);
		return -r.error;
	}
	return 0;
}

int vfab_holder_start(const char *rundir, const char *node, const char *region_path, pid_t *pid,
		      char *err, size_t errlen)
{
	int fds[2], ret;
	pid_t child;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	child = fork();
	if (child < 0) {
		ret = -errno;
		close(fds[0]);
		close(fds[1]);
		snprintf(err, errlen, "fork holder");
		return ret;
	}
	if (child == 0) {
		close(fds[0]);
		holder_main(rundir, node, region_path, fds[1]);
	}
	close(fds[1]);
	ret = wait_report(fds[0], child, err, errlen);
	close(fds[0]);
	if (ret) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return ret;
	}
	*pid = child;
	return 0;
}

int vfab_holder_is_alive(pid_t pid)
{
	char comm[32];

	if (!vfab_pid_alive(pid))
		return 0;
	return vfab_pid_comm(pid, comm, sizeof(comm)) == 0 && strcmp(comm, VFAB_HOLDER_COMM) == 0;
}
