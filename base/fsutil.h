/* SPDX-License-Identifier: MIT */
/*
 * Small file-system helpers shared by the sandbox code, the daemon and the CLI. All of
 * them return 0 (or a length) on success and -errno on failure, so callers can
 * turn a failure into one message at the edge.
 */
#ifndef VFAB_BASE_FSUTIL_H
#define VFAB_BASE_FSUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

/* snprintf that reports truncation as -ENAMETOOLONG. */
int vfab_pathf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Formats a message into err and returns ret, so one line says what failed. */
int vfab_fail(char *err, size_t errlen, int ret, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* mkdir -p: creates missing parents; an existing directory is fine. */
int vfab_mkdir_p(const char *path, mode_t mode);

/* Create or truncate a file with exactly these bytes. */
int vfab_write_file(const char *path, const void *data, size_t len, mode_t mode);
int vfab_write_filef(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Read up to len-1 bytes, NUL-terminate; returns the length read. */
ssize_t vfab_read_file(const char *path, char *buf, size_t len);

/* Copy a whole file (config copies; small files only). */
int vfab_copy_file(const char *src, const char *dst, mode_t mode);

/* A pid file holds a decimal pid and a newline; it is replaced atomically. */
int vfab_read_pid_file(const char *path, pid_t *pid);
/* The pid of a pid file's text (NUL-terminated); -EINVAL when it holds none. */
int vfab_parse_pid_file(const char *text, pid_t *pid);
int vfab_write_pid_file(const char *path, pid_t pid);

/* rm -rf without crossing mount points or following symlinks; a missing path is fine. */
int vfab_rm_rf(const char *path);

/*
 * A listening unix socket of type (SOCK_STREAM, SOCK_SEQPACKET) at path,
 * non-blocking and close-on-exec, that every local user may connect to
 * (mode 0666; who connected the server learns from the kernel). A socket
 * left at path (by a daemon that crashed) is replaced. fd or -errno.
 */
int vfab_unix_listen(const char *path, int type);

/*
 * Whether every user may read path (an absolute one): each directory above
 * it searchable and the file readable by "others". 0, or -EACCES with the
 * first component that is not copied into where[wlen] (-errno from stat).
 */
int vfab_path_public(const char *path, char *where, size_t wlen);

/* The directory of the running executable (dirname of /proc/self/exe). */
int vfab_self_exe_dir(char *buf, size_t len);

#endif /* VFAB_BASE_FSUTIL_H */
