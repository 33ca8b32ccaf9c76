/* SPDX-License-Identifier: MIT */
#include "netns/userns.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/paths.h"
#include "base/proc.h"

#define KEEPER_GONE_TIMEOUT_MS 2000

bool vfab_userns_outside(void)
{
	return geteuid() != 0;
}

/*
 * The run root is the user's: under /tmp anybody could have made it first
 * (with links in it), so it must be a directory of this user that nobody
 * else may write.
 */
static int make_run_root(char *err, size_t errlen)
{
	char root[4096];
	struct stat st;
	int ret = vfab_run_root(root, sizeof(root));

	if (ret)
		return vfab_fail(err, errlen, ret, "run root path");
	if (mkdir(root, 0700) && errno != EEXIST)
		return vfab_fail(err, errlen, -errno, "create %s", root);
	if (lstat(root, &st))
		return vfab_fail(err, errlen, -errno, "stat %s", root);
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return vfab_fail(err, errlen, -EPERM,
				 "%s is not a directory of uid %u that only it may write", root,
				 (unsigned)geteuid());
	return 0;
}

static int write_proc_self(const char *file, const char *text)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/%s", file);
	return vfab_write_file(path, text, strlen(text), 0);
}

/* One entry of the host's /dev (dir: its descriptor) in the new /dev. */
static void copy_dev_entry(int dir, const char *name)
{
	char src[PATH_MAX], dst[PATH_MAX], target[PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd;

	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) ||
	    vfab_pathf(src, sizeof(src), "/proc/self/fd/%d/%s", dir, name) ||
	    vfab_pathf(dst, sizeof(dst), "/dev/%s", name))
		return;
	if (S_ISLNK(st.st_mode)) {
		n = readlinkat(dir, name, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = '\0';
			(void)!symlink(target, dst);
		}
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(dst, st.st_mode & 07777) == 0)
			mount(src, dst, NULL, MS_BIND | MS_REC, NULL);
		return;
	}
	/* Device nodes cannot be made here (no CAP_MKNOD outside): the host's are bound. */
	fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	close(fd);
	if (mount(src, dst, NULL, MS_BIND, NULL))
		unlink(dst);
}

/*
 * A /dev of the keeper's mount namespace: a tmpfs holding every entry of
 * the host's (bound, so devices open as before), infiniband/ for the nodes'
 * views to be bound on, and a /dev/shm of its own for the region.
 */
static int build_dev(char *err, size_t errlen)
{
	struct dirent *de;
	DIR *d;
	int ret, dir = open("/dev", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dir < 0)
		return vfab_fail(err, errlen, -errno, "open /dev");
	d = mount("vfab-dev", "/dev", "tmpfs", MS_NOSUID, "mode=0755") ? NULL : fdopendir(dup(dir));
	if (!d) {
		ret = vfab_fail(err, errlen, -errno, "a tmpfs /dev with the host's entries");
		close(dir);
		return ret;
	}
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strcmp(de->d_name, "shm") && strcmp(de->d_name, "infiniband"))
			copy_dev_entry(dir, de->d_name);
	}
	closedir(d);
	close(dir);
	if (mkdir("/dev/shm", 01777) || chmod("/dev/shm", 01777) ||
	    mount("vfab-shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"))
		return vfab_fail(err, errlen, -errno, "a private /dev/shm");
	return 0;
}

int vfab_userns_unshare(int more_flags)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int ret;

	if (unshare(CLONE_NEWUSER | more_flags))
		return -errno;
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
	ret = write_proc_self("uid_map", map);
	if (!ret)
		ret = write_proc_self("setgroups", "deny\n");
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
	return ret ? ret : write_proc_self("gid_map", map);
}

static int keeper_setup(char *err, size_t errlen)
{
	/*
	 * The network namespace stands for the host's: vfab returns to it
	 * between nodes (setns), which needs a namespace this user owns.
	 */
	int ret = vfab_userns_unshare(CLONE_NEWNS | CLONE_NEWNET);

	if (ret)
		return vfab_fail(err, errlen, ret,
				 "a user, mount and network namespace of its own (are unprivileged "
				 "user namespaces allowed? see vfab doctor)");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return vfab_fail(err, errlen, -errno, "make the mounts private");
	return build_dev(err, errlen);
}

static __attribute__((noreturn)) void keeper_main(int report)
{
	char msg[512] = "";
	int null, ret;

	setsid();
	prctl(PR_SET_NAME, VFAB_USERNS_KEEPER_COMM, 0, 0, 0);
	ret = keeper_setup(msg + sizeof(int), sizeof(msg) - sizeof(int));
	memcpy(msg, &ret, sizeof(int));
	(void)!write(report, msg, sizeof(msg));
	if (ret)
		_exit(1);
	/* The CLI's output may be a pipe someone reads to EOF: never hold it. */
	null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	close_range(3, ~0U, 0);
	if (chdir("/"))
		_exit(1);
	for (int s = 1; s < NSIG; s++)
		if (s != SIGTERM)
			signal(s, SIG_IGN);
	for (;;)
		pause();
}

static int read_anchor(const char *fabric, pid_t *pid)
{
	char path[4096], text[64], state;
	unsigned long long start, now;
	struct stat st;
	int p;

	if (vfab_userns_anchor_path(path, sizeof(path), fabric))
		return -ENAMETOOLONG;
	if (vfab_read_file(path, text, sizeof(text)) <= 0 ||
	    sscanf(text, "%d %llu", &p, &start) != 2 || p <= 0)
		return -ENOENT;
	/* A live process of this user with the start time the anchor names. */
	snprintf(path, sizeof(path), "/proc/%d", p);
	if (vfab_proc_stat(p, &state, &now) || now != start || state == 'Z' || state == 'X' ||
	    stat(path, &st) || st.st_uid != geteuid())
		return -ENOENT;
	*pid = p;
	return 0;
}

/*
 * A process of this user in a user namespace of its own: the keeper, or,
 * once the keeper is gone (killed), the fabric's vfabd, which lives in the
 * same namespaces, so that `vfab down` still reaches what is left.
 */
static int ns_holder(const char *fabric, pid_t *pid)
{
	char path[4096], text[32], comm[32];
	struct stat mine, theirs, st;
	int p;

	if (read_anchor(fabric, pid) == 0)
		return 0;
	if (vfab_run_dir(path, sizeof(path), fabric) ||
	    vfab_pathf(path + strlen(path), sizeof(path) - strlen(path), "/" VFAB_VFABD_PID_FILE) ||
	    vfab_read_file(path, text, sizeof(text)) <= 0 || sscanf(text, "%d", &p) != 1 || p <= 0)
		return -ENOENT;
	snprintf(path, sizeof(path), "/proc/%d/ns/user", p);
	if (vfab_pid_comm(p, comm, sizeof(comm)) || strcmp(comm, "vfabd") || stat(path, &theirs) ||
	    stat("/proc/self/ns/user", &mine) || theirs.st_ino == mine.st_ino)
		return -ENOENT;
	snprintf(path, sizeof(path), "/proc/%d", p);
	if (stat(path, &st) || st.st_uid != geteuid())
		return -ENOENT;
	*pid = p;
	return 0;
}

int vfab_userns_join(const char *fabric)
{
	static const struct {
		const char *name;
		int type;
	} ns[] = {{"user", CLONE_NEWUSER}, {"mnt", CLONE_NEWNS}, {"net", CLONE_NEWNET}};
	int fd[3] = {-1, -1, -1}, ret;
	char path[64], cwd[PATH_MAX];
	pid_t pid;

	ret = ns_holder(fabric, &pid);
	if (ret)
		return ret;
	if (!getcwd(cwd, sizeof(cwd)))
		snprintf(cwd, sizeof(cwd), "/");
	for (int i = 0; i < 3 && !ret; i++) {
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, ns[i].name);
		fd[i] = open(path, O_RDONLY | O_CLOEXEC);
		ret = fd[i] < 0 ? -errno : 0;
	}
	/* The user namespace first: it gives the rights to enter the others. */
	for (int i = 0; i < 3 && !ret; i++)
		ret = setns(fd[i], ns[i].type) ? -errno : 0;
	/* setns into a mount namespace leaves the process at its root. */
	if (!ret && chdir(cwd) && chdir("/"))
		ret = -errno;
	for (int i = 0; i < 3; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	return ret;
}

int vfab_userns_create(const char *fabric, char *err, size_t errlen)
{
	char path[4096], msg[512];
	unsigned long long start;
	int fds[2], ret, status;
	pid_t pid, any;
	char state;

	ret = make_run_root(err, errlen);
	if (ret)
		return ret;
	if (read_anchor(fabric, &any) == 0)
		return vfab_fail(err, errlen, -EEXIST, "the fabric's user namespace exists");
	if (pipe2(fds, O_CLOEXEC))
		return vfab_fail(err, errlen, -errno, "pipe");
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return vfab_fail(err, errlen, -errno, "fork");
	}
	if (pid == 0) {
		close(fds[0]);
		keeper_main(fds[1]);
	}
	close(fds[1]);
	ret = read(fds[0], msg, sizeof(msg)) == (ssize_t)sizeof(msg) ? 0 : -EIO;
	close(fds[0]);
	if (!ret)
		memcpy(&ret, msg, sizeof(int));
	if (ret) {
		vfab_fail(err, errlen, ret, "%s",
			  ret == -EIO ? "the keeper died" : msg + sizeof(int));
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return ret;
	}
	ret = vfab_proc_stat(pid, &state, &start);
	if (!ret)
		ret = vfab_userns_anchor_path(path, sizeof(path), fabric);
	if (!ret)
		ret = vfab_write_filef(path, "%d %llu\n", (int)pid, start);
	if (!ret)
		ret = vfab_userns_join(fabric);
	if (ret) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		unlink(path);
		return vfab_fail(err, errlen, ret, "join the fabric's user namespace");
	}
	return 0;
}

int vfab_userns_end(const char *fabric)
{
	char path[4096];
	pid_t pid;

	if (vfab_fabric_owner_uid() < 0)
		return 0; /* root's fabrics have no keeper */
	if (read_anchor(fabric, &pid) == 0) {
		kill(pid, SIGKILL);
		for (int ms = 0; ms < KEEPER_GONE_TIMEOUT_MS && vfab_pid_alive(pid); ms += 10)
			nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
	if (vfab_userns_anchor_path(path, sizeof(path), fabric) == 0)
		unlink(path);
	/* The published namespaces' directory, once no other fabric of the user has any. */
	if (vfab_netns_dir(path, sizeof(path)) == 0) {
		umount2(path, MNT_DETACH);
		rmdir(path);
	}
	if (vfab_run_root(path, sizeof(path)) == 0)
		rmdir(path);
	return 0;
}
