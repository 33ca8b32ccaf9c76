/* SPDX-License-Identifier: MIT */
/*
 * cm/cm_dir.c: the listener directory trusts an entry only when the kernel
 * vouches for what it says (docs/TRUST.md "RDMA CM"): a live process with
 * the start time written, owned by the file's owner, allowed the port;
 * links, FIFOs, garbage and dead processes are stale; a name is taken
 * atomically and removed only by its listener (or as stale).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/proc.h"
#include "cm/cm_dir.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_cm_dir.XXXXXX");
	return mkdtemp(dir) ? chmod(dir, 01777) : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static struct vfab_cm_entry self_entry(uint32_t qpn)
{
	struct vfab_cm_entry e = {.cm_qpn = qpn, .pid = getpid()};
	char state;

	assert_int_equal(vfab_proc_self_stat(&state, &e.start), 0);
	return e;
}

static void put(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int publish(const char *name, const struct vfab_cm_entry *e)
{
	char tmp[256];
	int ret = vfab_cm_dir_prepare(dir, e, tmp, sizeof(tmp));

	assert_int_equal(ret, 0);
	ret = vfab_cm_dir_publish(dir, tmp, name, e);
	unlink(tmp);
	return ret;
}

static void names(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	char name[64];

	(void)state;
	inet_pton(AF_INET, "198.18.0.2", &a.sin_addr);
	assert_int_equal(vfab_cm_dir_name(name, sizeof(name), 0x106, (struct sockaddr *)&a, 7174),
			 0);
	assert_string_equal(name, "0106-198.18.0.2-7174");
	assert_true(vfab_cm_dir_name_ok(name));
	assert_false(vfab_cm_dir_name_ok(""));
	assert_false(vfab_cm_dir_name_ok(".hidden-1"));
	assert_false(vfab_cm_dir_name_ok("../etc/passwd"));
}

static void own_entry(void **state)
{
	struct vfab_cm_entry e = self_entry(77), got, other;
	char path[256];
	struct stat st;

	(void)state;
	assert_int_equal(publish("0106-198.18.0.2-7001", &e), 0);
	assert_int_equal(vfab_cm_dir_check(dir, "0106-198.18.0.2-7001", &got), 0);
	assert_int_equal(got.cm_qpn, 77);
	assert_int_equal(got.pid, getpid());
	/* Readable by every user, whatever the umask. */
	snprintf(path, sizeof(path), "%s/0106-198.18.0.2-7001", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	/* The same listener again: fine; another live one: the name is taken. */
	assert_int_equal(publish("0106-198.18.0.2-7001", &e), 0);
	other = self_entry(78);
	assert_int_equal(publish("0106-198.18.0.2-7001", &other), -EADDRINUSE);
	assert_int_equal(vfab_cm_dir_free_stale(dir, "0106-198.18.0.2-7001"), -EADDRINUSE);
	/* Only its listener removes it. */
	vfab_cm_dir_remove(dir, "0106-198.18.0.2-7001", &other);
	assert_int_equal(vfab_cm_dir_check(dir, "0106-198.18.0.2-7001", &got), 0);
	vfab_cm_dir_remove(dir, "0106-198.18.0.2-7001", &e);
	assert_int_equal(vfab_cm_dir_check(dir, "0106-198.18.0.2-7001", &got), -ENOENT);
}

static void stale_entries(void **state)
{
	struct vfab_cm_entry e = self_entry(5), got;
	char text[64], path[256];
	pid_t child;

	(void)state;
	/* Another start time: a process that took the pid of a dead one. */
	snprintf(text, sizeof(text), "5 %d %llu\n", (int)getpid(), e.start + 1);
	put("0106-198.18.0.2-7002", text);
	assert_int_equal(vfab_cm_dir_check(dir, "0106-198.18.0.2-7002", &got), -ESTALE);
	/* A dead process. */
	child = fork();
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
	snprintf(text, sizeof(text), "5 %d 1\n", (int)child);
	put("0106-198.18.0.2-7003", text);
	assert_int_equal(vfab_cm_dir_check(dir, "0106-198.18.0.2-7003", &got), -ESTALE);
	/* Garbage, and a name without a port. */
	put("0106-198.18.0.2-7004", "not an entry\n");
	assert_int_equal(vfab_cm_dir_check(dir, "0106-198.18.0.2-7004", &got), -ESTALE);
	snprintf(text, sizeof(text), "5 %d %llu\n", (int)getpid(), e.start);
	put("0106-198.18.0.2-x", text);
	assert_int_equal(vfab_cm_dir_check(dir, "0106-198.18.0.2-x", &got), -ESTALE);
	/* A link (to a valid entry, even) and a FIFO: never followed, never blocking. */
	put("0106-198.18.0.2-7005", text);
	snprintf(path, sizeof(path), "%s/0106-198.18.0.2-7006", dir);
	assert_int_equal(symlink("0106-198.18.0.2-7005", path), 0);
	assert_int_equal(vfab_cm_dir_check(dir, "0106-198.18.0.2-7006", &got), -ESTALE);
	snprintf(path, sizeof(path), "%s/0106-198.18.0.2-7007", dir);
	assert_int_equal(mkfifo(path, 0666), 0);
	assert_int_equal(vfab_cm_dir_check(dir, "0106-198.18.0.2-7007", &got), -ESTALE);
	/* A stale name is taken over by a new listener, and freed by vfabd's CMFREE. */
	assert_int_equal(publish("0106-198.18.0.2-7002", &e), 0);
	assert_int_equal(vfab_cm_dir_check(dir, "0106-198.18.0.2-7002", &got), 0);
	assert_int_equal(vfab_cm_dir_free_stale(dir, "0106-198.18.0.2-7003"), 0);
	assert_int_equal(vfab_cm_dir_check(dir, "0106-198.18.0.2-7003", &got), -ENOENT);
	assert_int_equal(vfab_cm_dir_free_stale(dir, "0106-198.18.0.2-7099"), 0);
}

/* A file another user wrote never vouches for a process of ours (root only: chown). */
static void foreign_owner(void **state)
{
	struct vfab_cm_entry e = self_entry(9), got;
	char text[64], path[256];

	(void)state;
	if (geteuid() != 0 || getuid() != 0) {
		skip();
		return;
	}
	snprintf(text, sizeof(text), "9 %d %llu\n", (int)getpid(), e.start);
	put("0106-198.18.0.2-7010", text);
	snprintf(path, sizeof(path), "%s/0106-198.18.0.2-7010", dir);
	assert_int_equal(chown(path, 65534, 65534), 0);
	assert_int_equal(vfab_cm_dir_check(dir, "0106-198.18.0.2-7010", &got), -ESTALE);
	/* Root's own file names root's process: valid, privileged port included. */
	put("0106-198.18.0.2-80", text);
	assert_int_equal(vfab_cm_dir_check(dir, "0106-198.18.0.2-80", &got), 0);
}

/*
 * A privileged port is valid only for a process with CAP_NET_BIND_SERVICE:
 * anyone may write the file (binding is where the kernel refuses), nobody
 * is made to trust it.
 */
static void privileged_port(void **state)
{
	struct vfab_cm_entry e = self_entry(11), got;
	struct vfab_proc_creds c;
	char state_letter;
	pid_t child;
	int fds[2], ret;

	(void)state;
	assert_int_equal(vfab_proc_creds(0, &c), 0);
	assert_int_equal(c.uid[1], geteuid());
	if (!(c.cap_eff & (1ull << 10))) { /* we lack it: our own entry on port 80 is stale */
		assert_int_equal(publish("0106-198.18.0.2-80", &e), 0);
		assert_int_equal(vfab_cm_dir_check(dir, "0106-198.18.0.2-80", &got), -ESTALE);
		return;
	}
	if (geteuid() != 0) {
		skip();
		return;
	}
	/* As root: a child turned into another user, without the capability. */
	assert_int_equal(pipe(fds), 0);
	child = fork();
	if (child == 0) {
		struct vfab_cm_entry ce = {.cm_qpn = 12};
		char tmp[256];

		if (setgid(65534) || setuid(65534))
			_exit(1);
		ce.pid = getpid();
		ret = vfab_proc_self_stat(&state_letter, &ce.start);
		ret = ret ? ret : vfab_cm_dir_prepare(dir, &ce, tmp, sizeof(tmp));
		ret = ret ? ret : vfab_cm_dir_publish(dir, tmp, "0106-198.18.0.2-81", &ce);
		unlink(tmp);
		if (write(fds[1], &ret, sizeof(ret)) != sizeof(ret))
			_exit(1);
		pause();
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &ret, sizeof(ret)), sizeof(ret));
	assert_int_equal(ret, 0);
	assert_int_equal(vfab_cm_dir_check(dir, "0106-198.18.0.2-81", &got), -ESTALE);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	close(fds[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(names),	       cmocka_unit_test(own_entry),
	    cmocka_unit_test(stale_entries),   cmocka_unit_test(foreign_owner),
	    cmocka_unit_test(privileged_port),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
