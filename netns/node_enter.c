/* SPDX-License-Identifier: MIT */
#include "netns/node_enter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/paths.h"
#include "netns/holder.h"
#include "netns/node_cpus.h"

#ifndef NETLINK_RDMA
#define NETLINK_RDMA 20
#endif

#if defined(__x86_64__)
#define VFAB_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define VFAB_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define VFAB_AUDIT_ARCH AUDIT_ARCH_PPC64LE
#elif defined(__riscv) && __riscv_xlen == 64
#define VFAB_AUDIT_ARCH AUDIT_ARCH_RISCV64
#else
#error "vfab: add the AUDIT_ARCH value of this architecture to node_enter.c"
#endif

/* Offset of the low 32 bits of syscall argument i in struct seccomp_data. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#else
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i) + 4)
#endif

static int have_cap_sys_admin(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return 0;
	return (data[CAP_SYS_ADMIN / 32].effective >> (CAP_SYS_ADMIN % 32)) & 1;
}

int vfab_node_block_rdma_netlink(void)
{
	/*
	 * Other architectures' calls (a 32-bit program's socketcall) pass
	 * untouched: the filter only has to stop the native libibverbs.
	 */
	struct sock_filter insns[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, VFAB_AUDIT_ARCH, 0, 7),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 5),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 0, 3),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NETLINK_RDMA, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPROTONOSUPPORT & SECCOMP_RET_DATA)),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(insns) / sizeof(insns[0]), .filter = insns};

	/* Without CAP_SYS_ADMIN the kernel accepts a filter only under no_new_privs. */
	if (!have_cap_sys_admin() && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0))
		return -errno;
	return 0;
}

static int open_ns(pid_t pid, const char *kind)
{
	char path[64];
	int fd;

	if (vfab_pathf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, kind))
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int vfab_node_enter(const char *rundir, const char *node)
{
	static const struct {
		const char *name;
		int type;
	} kinds[] = {{"net", CLONE_NEWNET},
		     {"uts", CLONE_NEWUTS},
		     {"ipc", CLONE_NEWIPC},
		     {"mnt", CLONE_NEWNS}};
	enum { NKINDS = sizeof(kinds) / sizeof(kinds[0]) };
	int fds[NKINDS] = {-1, -1, -1, -1};
	char path[4096], *cwd;
	pid_t holder;
	int ret = 0;

	if (strchr(node, '/') || node[0] == '.' || node[0] == '\0')
		return -ENOENT;
	if (vfab_holder_pid_path(path, sizeof(path), rundir, node))
		return -ENAMETOOLONG;
	ret = vfab_read_pid_file(path, &holder);
	if (ret)
		return ret == -ENOENT ? -ENOENT : ret;
	if (!vfab_holder_is_alive(holder))
		return -ESRCH;

	/* Open every namespace first: after the mount switch /proc may differ. */
	for (int i = 0; i < NKINDS; i++) {
		fds[i] = open_ns(holder, kinds[i].name);
		if (fds[i] < 0) {
			ret = fds[i] == -ENOENT ? -ESRCH : fds[i];
			goto out;
		}
	}
	cwd = getcwd(path, sizeof(path));
	/* Mount last: it resets root and cwd, which the others do not need. */
	for (int i = 0; i < NKINDS; i++) {
		if (setns(fds[i], kinds[i].type)) {
			ret = -errno;
			goto out;
		}
	}
	if (!cwd || chdir(cwd))
		ret = chdir("/") ? -errno : 0;
	if (ret == 0)
		ret = vfab_node_cpus_join(rundir, node);
	if (ret == 0)
		ret = vfab_node_block_rdma_netlink();
out:
	for (int i = 0; i < NKINDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return ret;
}
