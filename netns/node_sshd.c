/* SPDX-License-Identifier: MIT */
#include "netns/node_sshd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/paths.h"
#include "base/proc.h"
#include "netns/host_dirs.h"
#include "netns/launch_files.h"
#include "netns/node_spawn.h"

#define SSHD_READY_TIMEOUT_MS 5000

static const char *const sshd_candidates[] = {"/usr/sbin/sshd", "/usr/local/sbin/sshd",
					      "/sbin/sshd"};

/* sshd re-executes itself for every connection and insists on an absolute path. */
static const char *find_sshd(void)
{
	for (size_t i = 0; i < sizeof(sshd_candidates) / sizeof(sshd_candidates[0]); i++)
		if (access(sshd_candidates[i], X_OK) == 0)
			return sshd_candidates[i];
	return NULL;
}

/* A helper program on the host, quiet; its exit code, or -errno when it cannot run. */
static int run_on_host(char *const argv[])
{
	int fds[2], status, err = 0;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(fds[0]);
		close(fds[1]);
		return err;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		execvp(argv[0], argv);
		err = errno;
		if (write(fds[1], &err, sizeof(err)) < 0)
			_exit(127);
		_exit(127);
	}
	close(fds[1]);
	if (read(fds[0], &err, sizeof(err)) != sizeof(err))
		err = 0;
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (err)
		return -err;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int keygen(const char *path, const char *comment, char *err, size_t errlen)
{
	char pub[4096];
	char *argv[] = {"ssh-keygen",	 "-q", "-t",	     "ed25519", "-N", "", "-C",
			(char *)comment, "-f", (char *)path, NULL};
	int ret;

	/* ssh-keygen asks before overwriting, and nobody would answer. */
	if (vfab_pathf(pub, sizeof(pub), "%s.pub", path))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "key path too long");
	unlink(path);
	unlink(pub);
	ret = run_on_host(argv);
	if (ret == -ENOENT)
		return vfab_fail(err, errlen, ret, "ssh-keygen not found: install openssh-client");
	if (ret < 0)
		return vfab_fail(err, errlen, ret, "run ssh-keygen");
	if (ret > 0)
		return vfab_fail(err, errlen, -EIO, "ssh-keygen -f %s exited with %d", path, ret);
	return 0;
}

int vfab_ssh_prepare(const char *rundir, const struct vfab_config *cfg, char *err, size_t errlen)
{
	char dir[4096], key[4096], pub[4096], auth[4096], comment[300];
	int ret;

	if (!find_sshd())
		return vfab_fail(err, errlen, -ENOENT,
				 "sshd not found (looked in /usr/sbin, /usr/local/sbin, /sbin): "
				 "install openssh-server");
	if (vfab_pathf(dir, sizeof(dir), "%s/" VFAB_SSH_DIR, rundir) ||
	    vfab_pathf(auth, sizeof(auth), "%s/" VFAB_SSH_AUTHORIZED_KEYS, dir) ||
	    vfab_pathf(pub, sizeof(pub), "%s/" VFAB_SSH_CLIENT_KEY ".pub", dir))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "run dir path too long");
	/* sshd's StrictModes: nobody but root may write along the key paths. */
	ret = vfab_mkdir_p(dir, 0700);
	if (ret)
		return vfab_fail(err, errlen, ret, "mkdir %s", dir);
	snprintf(comment, sizeof(comment), "vfab@%s", rundir);
	ret = vfab_pathf(key, sizeof(key), "%s/" VFAB_SSH_HOST_KEY, dir);
	if (ret == 0)
		ret = keygen(key, comment, err, errlen);
	if (ret)
		return ret;
	ret = vfab_pathf(key, sizeof(key), "%s/" VFAB_SSH_CLIENT_KEY, dir);
	if (ret == 0)
		ret = keygen(key, comment, err, errlen);
	if (ret)
		return ret;
	ret = vfab_copy_file(pub, auth, 0600);
	if (ret)
		return vfab_fail(err, errlen, ret, "write %s", auth);
	ret = vfab_ssh_client_config_write(rundir, cfg);
	if (ret)
		return vfab_fail(err, errlen, ret, "write %s/" VFAB_SSH_CONFIG, rundir);
	/* Run as the user (a fabric without root), sshd needs no privilege separation dir. */
	if (vfab_fabric_owner_uid() >= 0)
		return 0;
	ret = vfab_host_dir_claim(rundir, VFAB_RUN_SSHD, VFAB_RUN_SSHD_MARKER, 0755);
	if (ret)
		return vfab_fail(err, errlen, ret, "create " VFAB_RUN_SSHD);
	return 0;
}

static void log_tail(const char *log, char *out, size_t len)
{
	char buf[512];
	int fd = open(log, O_RDONLY | O_CLOEXEC);
	off_t size;
	ssize_t n;

	out[0] = '\0';
	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	lseek(fd, size > (off_t)sizeof(buf) - 1 ? size - (off_t)sizeof(buf) + 1 : 0, SEEK_SET);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	/* The end is what explains a failure. */
	{
		size_t keep = (size_t)n < len ? (size_t)n : len - 1;

		memcpy(out, buf + n - keep, keep);
		out[keep] = '\0';
	}
}

static int sshd_files(const char *rundir, const char *node, char *pidfile, size_t plen, char *log,
		      size_t llen)
{
	if (vfab_pathf(pidfile, plen, "%s/" VFAB_SSH_DIR "/sshd-%s.pid", rundir, node) ||
	    vfab_pathf(log, llen, "%s/" VFAB_SSH_DIR "/sshd-%s.log", rundir, node))
		return -ENAMETOOLONG;
	return 0;
}

/* A running sshd of the fabric (of any node), whose user namespace the next one enters; 0: none. */
static pid_t sessions_holder(const char *rundir, const struct vfab_config *cfg)
{
	pid_t pid = 0;

	for (uint32_t i = 0; !pid && i < cfg->nnodes; i++)
		pid = vfab_sshd_pid(rundir, cfg->nodes[i].id);
	return pid;
}

int vfab_ssh_node_start(const char *rundir, const struct vfab_config *cfg, uint32_t node, char *err,
			size_t errlen)
{
	char conf[4096], pidfile[4096], log[4096], tail[400];
	const char *sshd = find_sshd(), *failed = "start";
	const char *id = cfg->nodes[node].id;
	long long deadline;
	int ret, status;

	if (!sshd)
		return vfab_fail(err, errlen, -ENOENT, "sshd not found: install openssh-server");
	ret = vfab_sshd_config_write(rundir, cfg, node, conf, sizeof(conf));
	if (ret == 0)
		ret = sshd_files(rundir, id, pidfile, sizeof(pidfile), log, sizeof(log));
	if (ret)
		return vfab_fail(err, errlen, ret, "write the sshd config of node %s", id);
	unlink(pidfile);
	{
		long uid = vfab_fabric_owner_uid();
		char map_user[32], map_group[32], ns[64];
		pid_t peer = sessions_holder(rundir, cfg);
		char *argv[] = {(char *)sshd, "-f", conf, "-E", log, NULL};
		/*
		 * A fabric without root: root of its user namespace cannot be
		 * sshd's root (privilege separation calls setgroups(), denied
		 * there), so sshd runs as the user in a user namespace nested in
		 * it, where the user's uid maps back to the fabric's root: as sshd
		 * runs for a user who is not root, letting only that user in. One
		 * such namespace for every node's sshd (the first makes it, the
		 * others enter it), so that what logins start in different nodes
		 * may copy into each other (process_vm_writev: ptrace rules).
		 */
		char *make[] = {"unshare", "--user", map_user, map_group, "--", (char *)sshd,
				"-f",	   conf,     "-E",     log,	  NULL};
		char *enter[] = {
		    "nsenter", ns,  "--preserve-credentials", "--", (char *)sshd, "-f", conf, "-E",
		    log,       NULL};

		snprintf(map_user, sizeof(map_user), "--map-user=%ld", uid);
		snprintf(map_group, sizeof(map_group), "--map-group=%ld", vfab_fabric_owner_gid());
		snprintf(ns, sizeof(ns), "--user=/proc/%d/ns/user", (int)peer);
		/* It daemonizes: the first process returns before sshd listens. */
		ret = vfab_node_run(rundir, id,
				    uid < 0 ? argv
				    : peer  ? enter
					    : make,
				    -1, &status, &failed);
	}
	if (ret)
		return vfab_fail(err, errlen, ret, "sshd in node %s: %s", id, failed);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		log_tail(log, tail, sizeof(tail));
		return vfab_fail(err, errlen, -EIO, "sshd in node %s failed (status 0x%x): %s", id,
				 (unsigned)status, tail);
	}
	/* sshd writes its pid file once its sockets listen. */
	deadline = vfab_now_ms() + SSHD_READY_TIMEOUT_MS;
	while (!vfab_sshd_pid(rundir, id)) {
		if (vfab_now_ms() > deadline) {
			log_tail(log, tail, sizeof(tail));
			return vfab_fail(err, errlen, -ETIMEDOUT,
					 "sshd in node %s did not start: %s", id,
					 tail[0] ? tail : "(no log)");
		}
		vfab_sleep_ms(5);
	}
	return 0;
}

int vfab_ssh_enabled(const char *rundir)
{
	char path[4096];

	return vfab_pathf(path, sizeof(path), "%s/" VFAB_SSH_CONFIG, rundir) == 0 &&
	       access(path, F_OK) == 0;
}

pid_t vfab_sshd_pid(const char *rundir, const char *node)
{
	char pidfile[4096], log[4096], comm[32];
	pid_t pid;

	if (sshd_files(rundir, node, pidfile, sizeof(pidfile), log, sizeof(log)) ||
	    vfab_read_pid_file(pidfile, &pid) || !vfab_pid_alive(pid))
		return 0;
	return vfab_pid_comm(pid, comm, sizeof(comm)) == 0 && strcmp(comm, "sshd") == 0 ? pid : 0;
}
