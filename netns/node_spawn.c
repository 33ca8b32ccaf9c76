/* SPDX-License-Identifier: MIT */
#include "netns/node_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "netns/node_enter.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

enum spawn_step { STEP_ENTER = 1, STEP_EXEC = 2 };

/* What the child tells its parent when it cannot get to the program. */
struct spawn_report {
	int step;
	int error;
};

static void report(int fd, int step, int error)
{
	struct spawn_report r = {.step = step, .error = error};
	ssize_t w;

	do
		w = write(fd, &r, sizeof(r));
	while (w < 0 && errno == EINTR);
}

/* A clean start: the CLI blocks or ignores signals that the program must see. */
static void reset_signals(void)
{
	sigset_t none;

	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static void set_stdio(int out_fd)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (null >= 0)
		dup2(null, 0);
	if (out_fd < 0)
		out_fd = null;
	if (out_fd >= 0) {
		dup2(out_fd, 1);
		dup2(out_fd, 2);
	}
}

static __attribute__((noreturn)) void child_main(const char *rundir, const char *node,
						 char *const argv[],
						 const struct vfab_spawn_opts *opts, int report_fd,
						 pid_t parent)
{
	int ret;

	reset_signals();
	if (opts->death_signal) {
		prctl(PR_SET_PDEATHSIG, opts->death_signal, 0, 0, 0);
		/* The parent may have died before the line above. */
		if (getppid() != parent)
			_exit(128 + opts->death_signal);
	}
	if (opts->new_pgrp)
		setpgid(0, 0);
	set_stdio(opts->out_fd);
	/* The report pipe is close-on-exec already: nothing else may leak in. */
	close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
	ret = vfab_node_enter(rundir, node);
	if (ret) {
		report(report_fd, STEP_ENTER, -ret);
		_exit(127);
	}
	for (char *const *e = opts->env_add; e && *e; e++)
		putenv(*e);
	if (strchr(argv[0], '/'))
		execv(argv[0], argv);
	else
		execvp(argv[0], argv);
	report(report_fd, STEP_EXEC, errno);
	_exit(errno == ENOENT ? 127 : 126);
}

/* The child's report: nothing at all means the exec went through. */
static int read_report(int fd, const char **failed)
{
	struct spawn_report r;
	size_t got = 0;

	while (got < sizeof(r)) {
		ssize_t n = read(fd, (char *)&r + got, sizeof(r) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got == 0)
		return 0;
	if (got < sizeof(r) || r.error <= 0)
		r = (struct spawn_report){.step = STEP_ENTER, .error = EIO};
	if (failed)
		*failed = r.step == STEP_EXEC ? "exec" : "enter the node";
	return -r.error;
}

int vfab_node_spawn(const char *rundir, const char *node, char *const argv[],
		    const struct vfab_spawn_opts *opts, pid_t *pid, const char **failed)
{
	static const struct vfab_spawn_opts defaults = {.out_fd = -1};
	pid_t child, self = getpid();
	int fds[2], ret;

	if (!argv || !argv[0])
		return -EINVAL;
	if (!opts)
		opts = &defaults;
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	child = fork();
	if (child < 0) {
		ret = -errno;
		close(fds[0]);
		close(fds[1]);
		if (failed)
			*failed = "fork";
		return ret;
	}
	if (child == 0) {
		close(fds[0]);
		child_main(rundir, node, argv, opts, fds[1], self);
	}
	/* Both sides set the group: whoever runs first, a signal finds it. */
	if (opts->new_pgrp)
		setpgid(child, child);
	close(fds[1]);
	ret = read_report(fds[0], failed);
	close(fds[0]);
	if (ret) {
		while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
			;
		return ret;
	}
	*pid = child;
	return 0;
}

int vfab_node_run(const char *rundir, const char *node, char *const argv[], int out_fd,
		  int *wstatus, const char **failed)
{
	struct vfab_spawn_opts opts = {.out_fd = out_fd};
	pid_t pid;
	int ret = vfab_node_spawn(rundir, node, argv, &opts, &pid, failed);

	if (ret)
		return ret;
	while (waitpid(pid, wstatus, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}
