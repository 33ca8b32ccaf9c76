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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/paths.h"
#include "netns/holder.h"
#include "netns/node_cpus.h"
#include "netns/node_gpus.h"

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

/*
 * The GPU filter, built per node: its kept minors vary. Jumps to the final
 * "allow" are patched once its index is known (BPF jumps go forward only).
 */
struct bpf_prog_buf {
	struct sock_filter insns[32 + VFAB_GPU_MAX];
	uint32_t n;
	uint32_t patch[16 + VFAB_GPU_MAX]; /* index << 1 | 1 when jt, else jf, aims at allow */
	uint32_t npatch;
};

static void emit(struct bpf_prog_buf *b, struct sock_filter insn)
{
	b->insns[b->n++] = insn;
}

/* A conditional jump whose true (jt_allow) or false branch goes to "allow". */
static void emit_to_allow(struct bpf_prog_buf *b, uint32_t op, uint32_t k, int jt_allow)
{
	b->patch[b->npatch++] = b->n << 1 | (jt_allow ? 1u : 0u);
	emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | op | BPF_K, k, 0, 0));
}

/* mode argument `mode_arg` is a character device: on to the dev argument `dev_arg`. */
static void emit_chr_check(struct bpf_prog_buf *b, unsigned mode_arg, unsigned dev_arg)
{
	emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(mode_arg)));
	emit(b, (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, S_IFMT));
	emit_to_allow(b, BPF_JEQ, S_IFCHR, 0);
	emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(dev_arg)));
}

int vfab_node_block_gpu_mknod(const uint32_t *keep, uint32_t nkeep)
{
	/* glibc's makedev(195, m) for m < 256, as the syscall's 32-bit dev carries it. */
	const uint32_t first = VFAB_GPU_NVIDIA_MAJOR << 8, last = first | VFAB_GPU_MAX_MINOR;
	static struct bpf_prog_buf b;
	struct sock_fprog prog;
	uint32_t to_dev = 0;

	if (nkeep > VFAB_GPU_MAX)
		return -EINVAL;
	memset(&b, 0, sizeof(b));
	emit(&b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch)));
	emit_to_allow(&b, BPF_JEQ, VFAB_AUDIT_ARCH, 0);
	emit(&b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr)));
#ifdef SYS_mknod
	/* mknodat: on at the next-but-one; mknod: past mknodat's block (5 below). */
	emit(&b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mknodat, 1, 0));
	emit_to_allow(&b, BPF_JEQ, SYS_mknod, 0);
	b.insns[b.n - 1].jt = 5;
#else
	emit_to_allow(&b, BPF_JEQ, SYS_mknodat, 0);
#endif
	emit_chr_check(&b, 2, 3); /* mknodat(dirfd, path, mode, dev): 4 instructions */
#ifdef SYS_mknod
	to_dev = b.n;
	emit(&b, (struct sock_filter)BPF_STMT(BPF_JMP | BPF_JA, 0));
	emit_chr_check(&b, 1, 2); /* mknod(path, mode, dev) */
	b.insns[to_dev].k = b.n - to_dev - 1;
#endif
	(void)to_dev;
	/* Below or above major 195's GPU minors, or a minor of the node's own: allowed. */
	emit_to_allow(&b, BPF_JGE, first, 0);
	emit_to_allow(&b, BPF_JGT, last, 1);
	for (uint32_t i = 0; i < nkeep; i++)
		emit_to_allow(&b, BPF_JEQ, first | (keep[i] & 0xff), 1);
	emit(&b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)));
	for (uint32_t i = 0; i < b.npatch; i++) {
		uint32_t at = b.patch[i] >> 1;

		if (b.patch[i] & 1)
			b.insns[at].jt = (uint8_t)(b.n - at - 1);
		else
			b.insns[at].jf = (uint8_t)(b.n - at - 1);
	}
	emit(&b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
	prog = (struct sock_fprog){.len = (unsigned short)b.n, .filter = b.insns};
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
	struct vfab_node_gpus gpus;
	char path[4096], *cwd;
	int ret = 0, own_gpus;
	pid_t holder;

	if (strchr(node, '/') || node[0] == '.' || node[0] == '\0')
		return -ENOENT;
	if (vfab_holder_pid_path(path, sizeof(path), rundir, node))
		return -ENAMETOOLONG;
	ret = vfab_read_pid_file(path, &holder);
	if (ret)
		return ret == -ENOENT ? -ENOENT : ret;
	if (!vfab_holder_is_alive(holder))
		return -ESRCH;

	own_gpus = vfab_node_gpus_load(rundir, node, &gpus);
	if (own_gpus && own_gpus != -ENOENT)
		return own_gpus;
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
	if (ret == 0 && own_gpus == 0)
		ret = vfab_node_block_gpu_mknod(gpus.keep, gpus.nkeep);
out:
	for (int i = 0; i < NKINDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return ret;
}
