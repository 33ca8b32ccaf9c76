/* SPDX-License-Identifier: MIT */
#include "cm/cm_shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_FD 65536

typedef int (*open_fn)(const char *, int, ...);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef int (*close_fn)(int);
typedef int (*cm_open_fn)(int);
typedef ssize_t (*cm_write_fn)(int, const void *, size_t);
typedef void (*cm_close_fn)(int);

/* Which fds are the CM's: one byte each, read on every write() and close(). */
static unsigned char cm_fd[MAX_FD];

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

static void load_cm(void)
{
	Dl_info info;
	char path[4096];
	const char *slash;
	void *h;

	if (!dladdr((void *)load_cm, &info) || !info.dli_fname)
		return;
	slash = strrchr(info.dli_fname, '/');
	if (!slash)
		return;
	snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
		 VFAB_CM_LIB);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
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
	ret = (fd < MAX_FD && cm.open) ? cm.open(fd) : -ENODEV;
	if (ret) {
		real_close(fd);
		errno = -ret;
		return -1;
	}
	cm_fd[fd] = 1;
	return fd;
}

static int do_open(const char *name, const char *path, int flags, mode_t mode)
{
	open_fn real = (open_fn)next(name);
	int fd;

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	fd = real(path, flags, mode);
	if (fd < 0 || !path || strcmp(path, VFAB_CM_DEV_PATH) != 0)
		return fd;
	return adopt(fd, (close_fn)next("close"));
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
	return do_open("open", path, flags, mode);
}

EXPORT int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return do_open("open64", path, flags, mode);
}

EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	static write_fn real;
	ssize_t ret;

	if (fd >= 0 && fd < MAX_FD && cm_fd[fd]) {
		ret = cm.write(fd, buf, len);
		if (ret < 0) {
			errno = (int)-ret;
			return -1;
		}
		return ret;
	}
	if (!real)
		real = (write_fn)next("write");
	return real(fd, buf, len);
}

EXPORT int close(int fd)
{
	static close_fn real;

	if (!real)
		real = (close_fn)next("close");
	if (fd >= 0 && fd < MAX_FD && cm_fd[fd]) {
		cm_fd[fd] = 0;
		cm.close(fd);
	}
	return real(fd);
}
