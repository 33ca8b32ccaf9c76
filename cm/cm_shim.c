/* SPDX-License-Identifier: MIT */
#include "cm/cm_shim.h"
#include "provider/vfab_preload.h"
#include "rdmanl/nl_shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_FD 65536

typedef int (*open_fn)(const char *, int, ...);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef int (*close_fn)(int);
typedef int (*fstat_fn)(int, struct stat *);
typedef int (*fxstat_fn)(int, int, struct stat *);
typedef int (*cm_open_fn)(int);
typedef ssize_t (*cm_write_fn)(int, const void *, size_t);
typedef void (*cm_close_fn)(int);

/* Which fds are the CM's: one byte each, read on every write() and close(). */
static unsigned char cm_fd[MAX_FD];
/*
 * What fstat says of them: the device node as opened. Their numbers belong
 * to an eventfd from the open on (so poll/epoll see the event queue at once),
 * but librdmacm's open_cdev checks S_ISCHR right after the open.
 */
static struct stat cm_stat;

static struct {
	pthread_once_t once;
	cm_open_fn open;
	cm_write_fn write;
	cm_close_fn close;
} cm = {PTHREAD_ONCE_INIT, NULL, NULL, NULL};

static void *next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* libc's own, looked up once before main (dlsym may allocate: not from inside a call). */
static struct {
	open_fn open, open64;
	write_fn write;
	close_fn close;
	fstat_fn fstat, fstat64;
	fxstat_fn fxstat, fxstat64;
} libc;

__attribute__((constructor)) static void resolve_libc(void)
{
	libc.open = (open_fn)next("open");
	libc.open64 = (open_fn)next("open64");
	libc.write = (write_fn)next("write");
	libc.close = (close_fn)next("close");
	libc.fstat = (fstat_fn)next("fstat");
	libc.fstat64 = (fstat_fn)next("fstat64");
	libc.fxstat = (fxstat_fn)next("__fxstat");
	libc.fxstat64 = (fxstat_fn)next("__fxstat64");
}

static void load_cm(void)
{
	void *h = vfab_preload_sibling(VFAB_CM_LIB);

	if (!h)
		return;
	cm.open = (cm_open_fn)dlsym(h, "vfab_cm_file_open");
	cm.write = (cm_write_fn)dlsym(h, "vfab_cm_file_write");
	cm.close = (cm_close_fn)dlsym(h, "vfab_cm_file_close");
	if (!cm.open || !cm.write || !cm.close)
		cm.open = NULL;
}

/* A successful open of the CM device: hand fd to the CM library, or fail as a missing device. */
static int adopt(int fd, close_fn real_close)
{
	int ret;

	if (fd < 0)
		return fd;
	pthread_once(&cm.once, load_cm);
	if (fd >= MAX_FD || (libc.fstat	   ? libc.fstat(fd, &cm_stat)
			     : libc.fxstat ? libc.fxstat(1, fd, &cm_stat)
					   : -1))
		ret = -ENODEV;
	else
		ret = cm.open ? cm.open(fd) : -ENODEV;
	if (ret) {
		real_close(fd);
		errno = -ret;
		return -1;
	}
	cm_fd[fd] = 1;
	return fd;
}

static int do_open(open_fn real, const char *name, const char *path, int flags, mode_t mode)
{
	int fd;

	if (!real) /* called by a constructor that ran before ours */
		real = (open_fn)next(name);
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	fd = real(path, flags, mode);
	if (fd < 0 || !path || strcmp(path, VFAB_CM_DEV_PATH) != 0)
		return fd;
	return adopt(fd, libc.close ? libc.close : (close_fn)next("close"));
}

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return do_open(libc.open, "open", path, flags, mode);
}

EXPORT int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return do_open(libc.open64, "open64", path, flags, mode);
}

EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	ssize_t ret;

	if (fd >= 0 && fd < MAX_FD && cm_fd[fd]) {
		ret = cm.write(fd, buf, len);
		if (ret < 0) {
			errno = (int)-ret;
			return -1;
		}
		return ret;
	}
	if (!libc.write)
		libc.write = (write_fn)next("write");
	return libc.write(fd, buf, len);
}

EXPORT int close(int fd)
{
	if (!libc.close)
		libc.close = (close_fn)next("close");
	if (fd >= 0 && fd < MAX_FD && cm_fd[fd]) {
		cm_fd[fd] = 0;
		cm.close(fd);
	}
	vfab_nl_shim_close(fd);
	return libc.close(fd);
}

/* x86-64: struct stat64 is struct stat. */
static int cm_fstat(void *st)
{
	memcpy(st, &cm_stat, sizeof(cm_stat));
	return 0;
}

static int is_cm(int fd)
{
	return fd >= 0 && fd < MAX_FD && cm_fd[fd];
}

EXPORT int fstat(int fd, struct stat *st)
{
	if (is_cm(fd))
		return cm_fstat(st);
	if (!libc.fstat)
		libc.fstat = (fstat_fn)next("fstat");
	return libc.fstat(fd, st);
}

EXPORT int fstat64(int fd, struct stat64 *st)
{
	if (is_cm(fd))
		return cm_fstat(st);
	if (!libc.fstat64)
		libc.fstat64 = (fstat_fn)next("fstat64");
	return libc.fstat64(fd, (struct stat *)st);
}

/* Programs built against glibc before 2.33 call these. */
EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
	if (is_cm(fd))
		return cm_fstat(st);
	if (!libc.fxstat)
		libc.fxstat = (fxstat_fn)next("__fxstat");
	return libc.fxstat(ver, fd, st);
}

EXPORT int __fxstat64(int ver, int fd, struct stat *st)
{
	if (is_cm(fd))
		return cm_fstat(st);
	if (!libc.fxstat64)
		libc.fxstat64 = (fxstat_fn)next("__fxstat64");
	return libc.fxstat64(ver, fd, st);
}
