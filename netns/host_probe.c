/* SPDX-License-Identifier: MIT */
/* The host probes of `vfab doctor` (host_probe.h). */
#include "netns/host_probe.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/paths.h"
#include "fabric/region.h"
#include "netns/ip_shape.h"
#include "netns/netcfg.h"
#include "netns/userns.h"

/* Where the child probes mount what they try: hidden by their own mount namespace. */
#define PROBE_MNT "/mnt"

static void say(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/*
 * Runs fn in a child process and waits for it: fn's 0 or -errno comes back
 * as its exit status, its detail through a pipe. The child never returns
 * into the caller, whatever namespaces it entered.
 */
static int in_child(int (*fn)(char *detail, size_t len), char *detail, size_t len)
{
	int pfd[2], status, ret;
	ssize_t n;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return ret;
	}
	if (pid == 0) {
		char text[256] = "";

		close(pfd[0]);
		/* Not root: what a rootless fabric's user namespace allows (netns/userns.h). */
		ret = vfab_userns_outside() ? vfab_userns_unshare(0) : 0;
		if (ret)
			say(text, sizeof(text), "a user namespace of its own: %s", strerror(-ret));
		else
			ret = fn(text, sizeof(text));
		if (write(pfd[1], text, strlen(text)) < 0)
			_exit(255);
		_exit(ret < 0 && ret > -255 ? -ret : (ret ? 255 : 0));
	}
	close(pfd[1]);
	n = read(pfd[0], detail, len - 1);
	detail[n > 0 ? n : 0] = '\0';
	close(pfd[0]);
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	if (!WIFEXITED(status))
		return -EINTR;
	return -WEXITSTATUS(status);
}

/* A mount namespace of its own whose changes never propagate to the host. */
static int private_mounts(char *d, size_t len)
{
	if (unshare(CLONE_NEWNS))
		return say(d, len, "unshare(CLONE_NEWNS): %s", strerror(errno)), -errno;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return say(d, len, "make / private: %s", strerror(errno)), -errno;
	return 0;
}

static int probe_namespaces(char *d, size_t len)
{
	if (unshare(CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC))
		return say(d, len, "unshare(net, mount, uts, ipc): %s", strerror(errno)), -errno;
	say(d, len, "network, mount, UTS and IPC namespaces");
	return 0;
}

static int probe_pidns(char *d, size_t len)
{
	int status;
	pid_t pid;

	if (unshare(CLONE_NEWPID))
		return say(d, len, "unshare(CLONE_NEWPID): %s", strerror(errno)), -errno;
	pid = fork();
	if (pid < 0)
		return say(d, len, "fork into it: %s", strerror(errno)), -errno;
	if (pid == 0)
		_exit(getpid() == 1 ? 0 : 1);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return say(d, len, "the first process of the namespace is not pid 1"), -EPERM;
	say(d, len, "a PID namespace whose first process is pid 1");
	return 0;
}

static int probe_veth(char *d, size_t len)
{
	struct nl_sock *sk;
	int ret;

	if (unshare(CLONE_NEWNET))
		return say(d, len, "unshare(CLONE_NEWNET): %s", strerror(errno)), -errno;
	ret = vfab_nl_open(&sk);
	if (ret)
		return say(d, len, "NETLINK_ROUTE socket: %s", strerror(-ret)), ret;
	ret = vfab_nl_bridge_add(sk, "vfprobe0", 1500);
	if (ret)
		return say(d, len, "bridge: %s", strerror(-ret)), ret;
	ret = vfab_nl_veth_add(sk, "vfprobe1", "vfprobe2");
	if (ret)
		return say(d, len, "veth pair: %s", strerror(-ret)), ret;
	say(d, len, "a bridge and a veth pair in a network namespace (libnl-route)");
	return 0;
}

/*
 * The IP side of the wires (ip_shape.h): HTB on a veth, loss by a classifier
 * program, latency by netem, else by vfabd's delay line (a tap and two
 * classifier programs). Without either vfab works, without IP latency:
 * -EOPNOTSUPP, a warning.
 */
static int probe_ipshape(char *d, size_t len)
{
	struct vfab_ip_plan p = {.htb = true, .rate_Bps = 125000000, .burst_bytes = 65536};
	struct nl_sock *sk;
	int ret, veth, netem, tap, tap_ifindex;

	if (unshare(CLONE_NEWNET))
		return say(d, len, "unshare(CLONE_NEWNET): %s", strerror(errno)), -errno;
	ret = vfab_nl_open(&sk);
	if (!ret)
		ret = vfab_nl_veth_add(sk, "vfprobe1", "vfprobe2");
	veth = ret ? ret : vfab_nl_ifindex(sk, "vfprobe1");
	if (veth < 0)
		return say(d, len, "veth pair: %s", strerror(-veth)), veth;
	ret = vfab_ip_egress_apply(sk, veth, &p);
	if (ret)
		return say(d, len, "HTB (rates): %s", strerror(-ret)), ret;
	netem = vfab_ip_netem_probe(sk, veth);
	if (netem > 0)
		return say(d, len, "HTB rates, netem latency and loss"), 0;
	ret = vfab_ip_loss_bpf(sk, veth, 1u << 24);
	/* Without root (no CAP_BPF) rates stand and RDMA is shaped whole: a limit. */
	if (ret == -EPERM && vfab_fabric_owner_uid() >= 0)
		return say(d, len,
			   "HTB rates; IP latency and loss need netem (not in this kernel) or "
			   "CAP_BPF, which a fabric without root lacks: RDMA only"),
		       -EOPNOTSUPP;
	if (ret)
		return say(d, len, "loss by a clsact classifier program: %s", strerror(-ret)), ret;
	/* No netem: latency through vfabd's delay line, a tap and two programs. */
	tap = vfab_ip_delay_tap(0, &tap_ifindex);
	ret = tap < 0 ? tap : vfab_ip_delay_bpf(sk, veth, tap_ifindex);
	if (tap >= 0)
		close(tap);
	if (ret)
		return say(d, len,
			   "HTB rates and loss; no netem (sch_netem) and no delay line (%s): IP "
			   "latency is not modelled",
			   strerror(-ret)),
		       -EOPNOTSUPP;
	say(d, len, "HTB rates, loss; latency by vfabd's delay line (no netem here)");
	return 0;
}

/*
 * What vfab up writes in the fabric's network namespace (fabric_net.c): a
 * container's read-only /proc/sys refuses it with EROFS.
 */
static int probe_net_sysctl(char *d, size_t len)
{
	int ret;

	if (unshare(CLONE_NEWNET))
		return say(d, len, "unshare(CLONE_NEWNET): %s", strerror(errno)), -errno;
	ret = vfab_net_sysctl("ipv4/conf/all/rp_filter", "0");
	if (!ret)
		ret = vfab_net_sysctl("ipv4/ip_forward", "1");
	if (ret == -EROFS)
		return say(d, len,
			   "/proc/sys is read-only (a container's default: podman "
			   "--security-opt unmask=/proc/sys, docker --security-opt "
			   "systempaths=unconfined, or --privileged)"),
		       ret;
	if (ret)
		return say(d, len, "write /proc/sys/net/ipv4/ip_forward: %s", strerror(-ret)), ret;
	say(d, len, "a network namespace's /proc/sys/net written");
	return 0;
}

/* The nodes' /dev/infiniband entries are character devices (sysfs_view.c): CAP_MKNOD. */
static int probe_mknod(char *d, size_t len)
{
	int ret = private_mounts(d, len);

	if (ret)
		return ret;
	if (mount("tmpfs", PROBE_MNT, "tmpfs", 0, "size=64k"))
		return say(d, len, "tmpfs on " PROBE_MNT ": %s", strerror(errno)), -errno;
	if (mknod(PROBE_MNT "/uverbs0", S_IFCHR | 0666, makedev(1, 7)) == 0) {
		say(d, len, "a character device made in a tmpfs");
		return 0;
	}
	if (errno != EPERM)
		return say(d, len, "mknod of a character device: %s%s", strerror(errno),
			   errno == EPERM ? " (no CAP_MKNOD: a container needs --cap-add MKNOD)"
					  : ""),
		       -errno;
	/* Without root the host's node is bound instead (sysfs_view.c). */
	if (close(open(PROBE_MNT "/uverbs0", O_WRONLY | O_CREAT, 0666)) ||
	    mount("/dev/full", PROBE_MNT "/uverbs0", NULL, MS_BIND, NULL))
		return say(d, len, "bind /dev/full on a file: %s", strerror(errno)), -errno;
	say(d, len, "no CAP_MKNOD: the host's /dev/full bound on a file instead");
	return 0;
}

static int probe_sysfs(char *d, size_t len)
{
	int ret;

	if (unshare(CLONE_NEWNET))
		return say(d, len, "unshare(CLONE_NEWNET): %s", strerror(errno)), -errno;
	ret = private_mounts(d, len);
	if (ret)
		return ret;
	if (mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return say(d, len, "a fresh sysfs on /sys: %s", strerror(errno)), -errno;
	if (access("/sys/class/net/lo", F_OK))
		return say(d, len, "the fresh sysfs does not show the namespace's own netdevs"),
		       -ENOENT;
	if (mount("tmpfs", "/sys/class", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=64k"))
		return say(d, len, "tmpfs on /sys/class: %s", strerror(errno)), -errno;
	say(d, len, "a namespace's own sysfs, a tmpfs over /sys/class in it");
	return 0;
}

static int probe_overlay(char *d, size_t len)
{
	static const char *const dirs[] = {PROBE_MNT "/l", PROBE_MNT "/u", PROBE_MNT "/w",
					   PROBE_MNT "/m"};
	int ret = private_mounts(d, len);

	if (ret)
		return ret;
	if (mount("tmpfs", PROBE_MNT, "tmpfs", 0, "size=64k"))
		return say(d, len, "tmpfs on " PROBE_MNT ": %s", strerror(errno)), -errno;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (mkdir(dirs[i], 0755))
			return say(d, len, "mkdir %s: %s", dirs[i], strerror(errno)), -errno;
	if (mount("overlay", PROBE_MNT "/m", "overlay", 0,
		  "lowerdir=" PROBE_MNT "/l,upperdir=" PROBE_MNT "/u,workdir=" PROBE_MNT "/w"))
		return say(d, len, "overlay: %s", strerror(errno)), -errno;
	say(d, len, "overlayfs over a tmpfs");
	return 0;
}

static int probe_pvm(char *d, size_t len)
{
	static volatile unsigned long word;
	unsigned long v = 0x76666162ul;
	struct iovec l = {.iov_base = &v, .iov_len = sizeof(v)};
	struct iovec r = {.iov_base = (void *)&word, .iov_len = sizeof(word)};
	int go[2], done[2], status;
	char c = 0;
	pid_t pid;

	if (pipe(go) || pipe(done))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* The peer: waits until written into, then says what it found. */
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		c = word == 0x76666162ul ? 'y' : 'n';
		_exit(write(done[1], &c, 1) == 1 && c == 'y' ? 0 : 1);
	}
	if (process_vm_writev(pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof(v)) {
		int e = errno;

		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return say(d, len, "process_vm_writev: %s", strerror(e)), -e;
	}
	if (write(go[1], "g", 1) != 1 || read(done[0], &c, 1) != 1 || c != 'y' ||
	    waitpid(pid, &status, 0) != pid)
		return say(d, len, "the bytes did not arrive"), -EIO;
	say(d, len, "process_vm_writev between two processes");
	return 0;
}

typedef int (*probe_fn)(char *detail, size_t len);

static int in_child_status; /* the last child_probe's result */

static void child_probe(struct vfab_probe_result *p, const char *name, const char *needed_by,
			probe_fn fn)
{
	int ret;

	p->name = name;
	p->needed_by = needed_by;
	ret = in_child_status = in_child(fn, p->detail, sizeof(p->detail));
	p->verdict = ret ? VFAB_PROBE_FAIL : VFAB_PROBE_OK;
	if (ret && !p->detail[0])
		say(p->detail, sizeof(p->detail), "%s", strerror(-ret));
}

/* A probe whose -EOPNOTSUPP is a limit (a warning), not a failure. */
static void child_probe_limited(struct vfab_probe_result *p, const char *name,
				const char *needed_by, probe_fn fn)
{
	child_probe(p, name, needed_by, fn);
	if (p->verdict == VFAB_PROBE_FAIL && in_child_status == -EOPNOTSUPP)
		p->verdict = VFAB_PROBE_WARN;
}

static void probe_root(struct vfab_probe_result *p)
{
	p->name = "root";
	p->needed_by = "vfab up (namespaces, mounts, veths)";
	p->verdict = geteuid() == 0 ? VFAB_PROBE_OK : VFAB_PROBE_WARN;
	say(p->detail, sizeof(p->detail), "effective uid %u%s", (unsigned)geteuid(),
	    geteuid() ? ": fabrics without root, each in a user namespace of its own (the "
			"probes below ran in one)"
		      : "");
}

/* The knobs distributions put on unprivileged user namespaces, read as they stand. */
static int read_knob(const char *path)
{
	char text[32];

	return vfab_read_file(path, text, sizeof(text)) > 0 ? atoi(text) : -1;
}

static int try_userns(char *d, size_t len)
{
	int ret = vfab_userns_unshare(0);

	if (ret)
		say(d, len, "a user namespace of its own: %s", strerror(-ret));
	return ret;
}

static void probe_userns(struct vfab_probe_result *p)
{
	int max = read_knob("/proc/sys/user/max_user_namespaces");
	int clone = read_knob("/proc/sys/kernel/unprivileged_userns_clone");
	int aa = read_knob("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
	char text[256] = "";
	int ret;

	p->name = "user namespaces";
	p->needed_by = "vfab without root (a user namespace per fabric)";
	ret = in_child(try_userns, text, sizeof(text));
	if (max == 0)
		say(p->detail, sizeof(p->detail),
		    "user.max_user_namespaces is 0 (sysctl "
		    "user.max_user_namespaces=15000 allows them)");
	else if (clone == 0)
		say(p->detail, sizeof(p->detail),
		    "kernel.unprivileged_userns_clone is 0 (Debian: sysctl "
		    "kernel.unprivileged_userns_clone=1 allows them)");
	else if (aa == 1 && ret)
		say(p->detail, sizeof(p->detail),
		    "kernel.apparmor_restrict_unprivileged_userns is 1 (Ubuntu 24.04): an "
		    "AppArmor profile for vfab with 'userns,' allows them, or sysctl "
		    "kernel.apparmor_restrict_unprivileged_userns=0");
	else if (ret)
		say(p->detail, sizeof(p->detail), "%s", text);
	else
		say(p->detail, sizeof(p->detail),
		    "allowed to users who are not root "
		    "(user.max_user_namespaces %d)",
		    max);
	if (ret && !p->detail[0])
		say(p->detail, sizeof(p->detail), "%s", strerror(-ret));
	/* Root needs none: a warning there, what a user's fabric needs otherwise. */
	p->verdict = !ret ? VFAB_PROBE_OK : geteuid() ? VFAB_PROBE_FAIL : VFAB_PROBE_WARN;
}

static void probe_ptrace(struct vfab_probe_result *p)
{
	char text[16];
	int scope = 0;

	p->name = "ptrace scope";
	p->needed_by = "the data path (process_vm_writev between users' processes)";
	p->verdict = VFAB_PROBE_OK;
	if (vfab_read_file("/proc/sys/kernel/yama/ptrace_scope", text, sizeof(text)) > 0)
		scope = atoi(text);
	if (scope == 2)
		p->verdict = VFAB_PROBE_WARN;
	else if (scope >= 3)
		p->verdict = VFAB_PROBE_FAIL;
	say(p->detail, sizeof(p->detail), "Yama ptrace_scope %d%s", scope,
	    scope == 1	 ? " (the provider names its peers with PR_SET_PTRACER)"
	    : scope == 2 ? ": only root processes can move data"
	    : scope >= 3 ? ": no process may copy into another"
			 : "");
}

static void probe_shm(struct vfab_probe_result *p)
{
	struct statvfs st;
	unsigned long long avail;

	p->name = "/dev/shm";
	p->needed_by = "the fabric region and its ring pool";
	if (statvfs("/dev/shm", &st)) {
		p->verdict = VFAB_PROBE_FAIL;
		say(p->detail, sizeof(p->detail), "statvfs: %s", strerror(errno));
		return;
	}
	avail = (unsigned long long)st.f_bavail * st.f_frsize;
	p->verdict = avail >= VFAB_POOL_BYTES_MIN ? VFAB_PROBE_OK : VFAB_PROBE_FAIL;
	say(p->detail, sizeof(p->detail), "%llu MiB free (a fabric takes at least %llu MiB)",
	    avail >> 20, (unsigned long long)(VFAB_POOL_BYTES_MIN >> 20));
}

static void probe_cpuset(struct vfab_probe_result *p)
{
	char text[512] = "";
	bool v2 = vfab_read_file("/sys/fs/cgroup/cgroup.controllers", text, sizeof(text)) > 0 &&
		  strstr(text, "cpuset");
	bool v1 = !access("/sys/fs/cgroup/cpuset/cpuset.cpus", F_OK);

	/* A container mounts it read-only unless privileged: vfab up falls back then. */
	bool ro = (v1 || v2) && access(v1 ? "/sys/fs/cgroup/cpuset" : "/sys/fs/cgroup", W_OK);

	p->name = "cpuset cgroup";
	p->needed_by = "each node's own CPUs (nproc, hwloc, MPI binding)";
	p->verdict = (v1 || v2) && !ro ? VFAB_PROBE_OK : VFAB_PROBE_WARN;
	say(p->detail, sizeof(p->detail), "%s%s",
	    v2	 ? "cgroup v2 with the cpuset controller"
	    : v1 ? "cgroup v1 cpuset hierarchy"
		 : "none: nodes get CPU affinity only",
	    ro ? ", read-only here: nodes get CPU affinity only" : "");
}

/* A FUSE mount as vfabd makes its counters file system (daemon/vfabd_countersfs.c). */
static int try_fuse(char *d, size_t len)
{
	char opts[128];
	int fd, ret = private_mounts(d, len);

	if (ret)
		return ret;
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return say(d, len, "open /dev/fuse: %s", strerror(errno)), -errno;
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other,default_permissions", fd);
	if (mount("vfab-probe", PROBE_MNT, "fuse.vfab",
		  MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, opts))
		return say(d, len, "mount a FUSE file system: %s", strerror(errno)), -errno;
	/* Nothing serves it: gone before anything could ask (the namespace dies too). */
	umount2(PROBE_MNT, MNT_DETACH);
	close(fd);
	say(d, len, "a FUSE mount: port counters are computed at every read");
	return 0;
}

static void probe_fuse(struct vfab_probe_result *p)
{
	char detail[sizeof(p->detail)];
	int ret = in_child(try_fuse, detail, sizeof(detail));

	p->name = "/dev/fuse";
	p->needed_by = "port counters exact at every read (vfabd's counters file system)";
	p->verdict = ret ? VFAB_PROBE_WARN : VFAB_PROBE_OK;
	say(p->detail, sizeof(p->detail), "%s%s", detail[0] ? detail : strerror(-ret),
	    ret ? ": vfabd refreshes the counter files every 250 ms instead" : "");
}

static void probe_verbs(struct vfab_probe_result *p)
{
	void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);

	p->name = "libibverbs";
	p->needed_by = "every RDMA program in the nodes, and vfab's provider";
	if (!h) {
		p->verdict = VFAB_PROBE_FAIL;
		say(p->detail, sizeof(p->detail),
		    "%s (install rdma-core, or unpack its .debs and "
		    "pass their lib dir to `vfab up --libdir`)",
		    dlerror());
		return;
	}
	p->verdict = dlsym(h, "verbs_register_driver_34") ? VFAB_PROBE_OK : VFAB_PROBE_FAIL;
	say(p->detail, sizeof(p->detail), "%s",
	    p->verdict == VFAB_PROBE_OK
		? "libibverbs.so.1 with the provider ABI 34 (rdma-core 36-56)"
		: "libibverbs.so.1 without the provider ABI 34: vfab's "
		  "provider cannot register");
	dlclose(h);
}

size_t vfab_host_probe_run(struct vfab_probe_result *out)
{
	size_t n = 0;

	memset(out, 0, VFAB_HOST_PROBES * sizeof(*out));
	probe_root(&out[n++]);
	probe_userns(&out[n++]);
	child_probe(&out[n++], "namespaces", "node sandboxes", probe_namespaces);
	child_probe(&out[n++], "pid namespace",
		    "processes in PID namespaces of their own (containers)", probe_pidns);
	child_probe(&out[n++], "veth and bridge", "the nodes' eth0 and the leaves", probe_veth);
	child_probe(&out[n++], "net sysctls", "routing between the leaves (vfab up)",
		    probe_net_sysctl);
	child_probe(&out[n++], "sysfs views", "the nodes' /sys (HCAs, PCI view)", probe_sysfs);
	child_probe(&out[n++], "device nodes", "the nodes' /dev/infiniband (uverbs, rdma_cm)",
		    probe_mknod);
	child_probe(&out[n++], "overlayfs", "the nodes' /etc (libibverbs.d, hosts, preload)",
		    probe_overlay);
	child_probe(&out[n++], "process_vm_writev", "the data path", probe_pvm);
	probe_ptrace(&out[n++]);
	probe_shm(&out[n++]);
	probe_cpuset(&out[n++]);
	child_probe_limited(&out[n++], "IP shaping",
			    "the IP side of the wires (docs/LINK_MODEL.md)", probe_ipshape);
	probe_fuse(&out[n++]);
	probe_verbs(&out[n++]);
	return n;
}

const char *vfab_probe_verdict_name(enum vfab_probe_verdict v)
{
	return v == VFAB_PROBE_OK ? "ok" : v == VFAB_PROBE_WARN ? "warn" : "FAIL";
}
