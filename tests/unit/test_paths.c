/* SPDX-License-Identifier: MIT */
/*
 * Whose fabrics a process sees (base/paths.h): root's run root in the host's
 * user namespace, the user's own everywhere else: a user outside (not root)
 * and every process inside a rootless fabric's user namespace, where that
 * user is root. Run as root (CI): the other cases are made in children.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/fsutil.h"
#include "base/paths.h"

#define UID 4242u /* no /run/user/4242 on a test host */
#define GID 4343u

static int same(const char *what, int (*fn)(char *, size_t), const char *want)
{
	char got[4096] = "";

	if (fn(got, sizeof(got)) || strcmp(got, want)) {
		fprintf(stderr, "%s: '%s', not '%s'\n", what, got, want);
		return 0;
	}
	return 1;
}

/* What a user's process must see, whichever side of the user namespace it is on. */
static int check_user_paths(const char *xdg)
{
	char want[4096], anchor[4096];

	unsetenv("XDG_RUNTIME_DIR");
	snprintf(want, sizeof(want), "/tmp/vfab-%u", UID);
	if (vfab_fabric_owner_uid() != (long)UID || !same("run root", vfab_run_root, want))
		return 1;
	snprintf(want, sizeof(want), "/tmp/vfab-%u/netns", UID);
	if (!same("netns dir", vfab_netns_dir, want))
		return 2;
	if (vfab_userns_anchor_path(anchor, sizeof(anchor), "f") ||
	    strcmp(anchor, "/tmp/vfab-4242/f.userns"))
		return 3;
	/* XDG_RUNTIME_DIR counts only when it is the user's own directory. */
	setenv("XDG_RUNTIME_DIR", "/", 1);
	if (!same("run root, XDG_RUNTIME_DIR=/", vfab_run_root, "/tmp/vfab-4242"))
		return 4;
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	snprintf(want, sizeof(want), "%s/vfab", xdg);
	if (!same("run root, XDG_RUNTIME_DIR", vfab_run_root, want))
		return 5;
	return 0;
}

static char xdg[64];

static int make_xdg(void **state)
{
	(void)state;
	snprintf(xdg, sizeof(xdg), "/tmp/vfab-test-paths.XXXXXX");
	return mkdtemp(xdg) && chown(xdg, UID, GID) == 0 && chmod(xdg, 0700) == 0 ? 0 : -1;
}

static int remove_xdg(void **state)
{
	(void)state;
	return vfab_rm_rf(xdg);
}

static void test_root(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(vfab_fabric_owner_uid(), -1);
	assert_int_equal(vfab_fabric_owner_gid(), -1);
	assert_true(same("root's run root", vfab_run_root, VFAB_RUN_ROOT));
	assert_true(same("root's netns dir", vfab_netns_dir, VFAB_NETNS_DIR));
}

static int child_status(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

/* A user who is not root, in the host's user namespace: the user's own fabrics. */
static void test_user_outside(void **state)
{
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		skip();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(setresgid(GID, GID, GID) || setresuid(UID, UID, UID) ? 99
									   : check_user_paths(xdg));
	assert_int_equal(child_status(pid), 0);
}

/* Root of a user namespace that maps it to the user: still the user's fabrics. */
static void test_user_inside(void **state)
{
	char path[64], map[32];
	int go[2], done[2];
	pid_t pid;
	char c;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(done), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* The user's process makes the namespace, as the keeper does (netns/userns.c). */
		if (setresgid(GID, GID, GID) || setresuid(UID, UID, UID) ||
		    unshare(CLONE_NEWUSER) || write(done[1], "u", 1) != 1 ||
		    read(go[0], &c, 1) != 1)
			_exit(98);
		_exit(geteuid() != 0 ? 97 : check_user_paths(xdg));
	}
	assert_int_equal(read(done[0], &c, 1), 1);
	/* The parent (root of the host's namespace) may map any ids. */
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	snprintf(map, sizeof(map), "0 %u 1\n", UID);
	assert_int_equal(vfab_write_file(path, map, strlen(map), 0), 0);
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	snprintf(map, sizeof(map), "0 %u 1\n", GID);
	assert_int_equal(vfab_write_file(path, map, strlen(map), 0), 0);
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(child_status(pid), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_root),
	    cmocka_unit_test_setup_teardown(test_user_outside, make_xdg, remove_xdg),
	    cmocka_unit_test_setup_teardown(test_user_inside, make_xdg, remove_xdg),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
