/* SPDX-License-Identifier: MIT */
/*
 * Opening a file below a directory without ever following a link: what a
 * root process (vfabd, the CLI run as root) uses for every file below a run
 * dir. Each component is opened on its own with openat and O_NOFOLLOW (a
 * directory component with O_DIRECTORY as well, so a symbolic link there
 * ends the walk with -ENOTDIR, a link as the last component with -ELOOP);
 * no component may be empty, "." or "..". The result therefore always lies
 * below dirfd, whatever anyone wrote into the directories on the way.
 */
#ifndef VFAB_BASE_BENEATH_H
#define VFAB_BASE_BENEATH_H

#include <sys/types.h>

/*
 * openat(dirfd, rel, flags | O_NOFOLLOW | O_CLOEXEC, mode) one component at a
 * time. rel is relative ("nodes/node0/class"); returns the fd or -errno
 * (-EINVAL for an absolute path or a component that is empty, "." or "..").
 */
int vfab_open_beneath(int dirfd, const char *rel, int flags, mode_t mode);

/* Reads up to len-1 bytes of dirfd/rel (opened as above) and NUL-terminates; length or -errno. */
ssize_t vfab_read_beneath(int dirfd, const char *rel, char *buf, size_t len);

#endif /* VFAB_BASE_BENEATH_H */
