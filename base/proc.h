/* SPDX-License-Identifier: MIT */
/*
 * What /proc says about a process: the one parser of /proc/PID/stat and the
 * one answer to "is this pid alive".
 *
 * An unreadable stat (EACCES, EIO, a short read) counts as ALIVE: the kernel
 * removes /proc/PID only once the process is reaped, so a stat that exists but
 * cannot be read belongs to a running process. Every caller either frees what
 * a dead process owned (vfabd's reaper), signals it (teardown) or waits for it
 * to go (vfab down): calling a live process dead loses its objects or skips a
 * kill, while calling it alive only waits for the next look. Dead is therefore
 * said only when the kernel says so: ESRCH, a missing /proc/PID, or state Z/X.
 */
#ifndef VFAB_BASE_PROC_H
#define VFAB_BASE_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * State letter (R, S, Z, ...) and start time (clock ticks since boot, field 22:
 * with the pid it names one process across pid reuse) of pid. 0, -ENOENT when
 * the process is gone, -EIO when the file does not parse, or -errno of the read.
 */
int vfab_proc_stat(pid_t pid, char *state, unsigned long long *start);

/* The same of the calling process, from /proc/self (right in any PID namespace). */
int vfab_proc_self_stat(char *state, unsigned long long *start);

/*
 * The same through another mount of proc, root (a procfs directory such as
 * vfab_host_proc_dir's): pid numbers and "self" are those of the PID
 * namespace that proc shows.
 */
int vfab_proc_stat_in(const char *root, pid_t pid, char *state, unsigned long long *start);
int vfab_proc_self_stat_in(const char *root, char *state, unsigned long long *start);

/*
 * The calling process's pid in the outermost PID namespace this /proc shows
 * (NSpid's first entry): the host's pid when /proc is the host's, as for a
 * process that entered a PID namespace of its own without mounting /proc.
 * getpid() when NSpid says nothing more.
 */
pid_t vfab_proc_outer_pid(void);
/* The same through the proc at root; -errno when root/self/status is unreadable. */
pid_t vfab_proc_outer_pid_in(const char *root);

/*
 * The kernel's credentials of pid, from /proc/PID/status: its real,
 * effective, saved and file-system user ids and its effective capability
 * set (bit n: capability n). pid 0 means the calling process. 0, -ENOENT
 * when the process is gone, -EIO when the file does not parse.
 */
struct vfab_proc_creds {
	uid_t uid[4];
	unsigned long long cap_eff;
};
int vfab_proc_creds(pid_t pid, struct vfab_proc_creds *c);

/*
 * Who is at the other end of a connected unix socket, as the kernel says:
 * SO_PEERCRED's pid, uid and gid, a pidfd naming that very process
 * (SO_PEERPIDFD; on older kernels pidfd_open of the pid, which the
 * connect() just proved alive; -1 when neither works) and its start time,
 * read after the pidfd (0 unknown). 0, or -errno when the kernel tells nothing.
 */
struct vfab_proc_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	unsigned long long start;
	int pidfd;
};
int vfab_proc_peer(int fd, struct vfab_proc_peer *p);
/* Is the process there and not a zombie? (see above for an unreadable stat) */
bool vfab_pid_alive(pid_t pid);

/* /proc/PID/comm without the newline. */
int vfab_pid_comm(pid_t pid, char *buf, size_t len);

#endif /* VFAB_BASE_PROC_H */
