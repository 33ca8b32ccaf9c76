/* SPDX-License-Identifier: MIT */
/*
 * The fabric's names and paths, one function each (as iproute2 keeps its
 * netns paths in one header): every component that finds a fabric's files
 * asks here, so a layout change lands in one place. All return 0 or
 * -ENAMETOOLONG (-EINVAL for a bad name).
 */
#ifndef VFAB_BASE_PATHS_H
#define VFAB_BASE_PATHS_H

#include <stddef.h>

#define VFAB_RUN_ROOT "/run/vfab"	       /* root's run dirs: /run/vfab/<fabric> */
#define VFAB_NETNS_DIR "/run/netns"	       /* root's published namespaces, as `ip netns` */
#define VFAB_USER_RUN_ROOT "/run/user/%u/vfab" /* a rootless user's, when that dir is theirs */
#define VFAB_TMP_RUN_ROOT "/tmp/vfab-%u"       /* ... else (no login session: su, CI) */
#define VFAB_FABRIC_NS_SUFFIX "fab"	       /* reserved: no node may be called so */
#define VFAB_FABRIC_NAME_MAX 32		       /* letters, digits, '_' and '-' */
#define VFAB_DEFAULT_FABRIC "vfab"	       /* vfab and vfabd without --fabric */
#define VFAB_CTL_SOCK "vfabd.sock"	       /* in the run dir */
#define VFAB_WIRE_SOCK "wire.sock"	       /* in the run dir: fabric/roce_wire.h */
#define VFAB_VFABD_PID_FILE "vfabd.pid"	       /* in the run dir */
#define VFAB_HOLDER_PID_FILE "holder.pid"      /* in the run dir's nodes/<node>/ */
/* Room for a path below a run dir built from names of the config (ids are <= 64 bytes). */
#define VFAB_PATH_REL_MAX 512
/* The host's sysfs: what the nodes' PCI views copy and extend (netns/pci_view.h). */
#define VFAB_HOST_SYSFS "/sys"
/*
 * The provider, named as libibverbs loads it for the private ABI the build
 * detected (VFAB_PABI): the nodes' libibverbs.d names "<dir>/libvfab" and
 * libibverbs appends "-rdmav<ABI>.so". tools/layout.h says which dir.
 */
#define VFAB_STR2(x) #x
#define VFAB_STR(x) VFAB_STR2(x)
#define VFAB_PROVIDER_LIB "libvfab-rdmav" VFAB_STR(VFAB_PABI) ".so"
/* The completion-channel and RDMA CM interposer every node preloads. */
#define VFAB_PRELOAD_LIB "libvfab-preload.so"

/*
 * Whose fabrics this process sees. Root (euid 0 in the host's user
 * namespace) sees root's, under /run; anyone else, and every process of a
 * rootless fabric (inside the user namespace netns/userns.h makes, where
 * the user is root), the fabrics of its user. Returns that user's uid on
 * the host, or -1 for root's.
 */
long vfab_fabric_owner_uid(void);
/* The primary gid of that user on the host, -1 for root's fabrics. */
long vfab_fabric_owner_gid(void);

/*
 * The directory of run dirs: VFAB_RUN_ROOT for root's fabrics; for a
 * user's, $XDG_RUNTIME_DIR/vfab when that variable names a directory of the
 * user, else VFAB_USER_RUN_ROOT when /run/user/<uid> is one (a login
 * session), else VFAB_TMP_RUN_ROOT (netns/userns.c makes it mode 0700 and
 * refuses one that is not the user's own).
 */
int vfab_run_root(char *buf, size_t len);

/* Where namespaces are published: VFAB_NETNS_DIR for root's fabrics, <run root>/netns else. */
int vfab_netns_dir(char *buf, size_t len);

/*
 * A rootless fabric's anchor: <run root>/<fabric>.userns, "<pid> <start
 * time>" of the process that holds its user and mount namespaces.
 */
int vfab_userns_anchor_path(char *buf, size_t len, const char *fabric);

/* A fabric name: 1..VFAB_FABRIC_NAME_MAX letters, digits, '_' or '-' (it is a file name part). */
int vfab_fabric_name_check(const char *name);

/* The shared-memory region: /dev/shm/vfab-<fabric>. */
int vfab_region_path(const char *fabric, char *buf, size_t len);
/*
 * The directory of its users' shards, <region>.users (vfabd's, mode 0755),
 * and the shard of uid in it, <region>.users/u<uid> (that user's, 0600).
 */
int vfab_shard_dir(const char *region_path, char *buf, size_t len);
int vfab_shard_path(const char *region_path, unsigned uid, char *buf, size_t len);

/* The run dir: <run root>/<fabric> (/run/vfab/<fabric> for root). */
int vfab_run_dir(char *buf, size_t len, const char *fabric);

/* A published network namespace: <netns dir>/vfab-<fabric>-<suffix> (a node id or "fab"). */
int vfab_netns_path(char *buf, size_t len, const char *fabric, const char *suffix);

/*
 * The config a fabric was brought up with, copied by `vfab up` (root):
 * <rundir>/config.yaml. vfabd and the CLI build their own topology from it.
 */
int vfab_run_config_path(char *buf, size_t len, const char *rundir);
/* <rundir>/host: the hosts[] id `vfab up --host` brought up (multi-host only). */
int vfab_run_host_path(char *buf, size_t len, const char *rundir);

/* vfabd's control socket: <rundir>/vfabd.sock. */
int vfab_ctl_sock_path(char *buf, size_t len, const char *rundir);

/* vfabd's RoCE wire socket: <rundir>/wire.sock (fabric/roce_wire.h). */
int vfab_wire_sock_path(char *buf, size_t len, const char *rundir);

/* vfabd's pid file: <rundir>/vfabd.pid. */
int vfab_vfabd_pid_path(char *buf, size_t len, const char *rundir);

/*
 * A node's directory: <rundir>/nodes/<node>; the _rel form is the same below
 * the run dir ("nodes/<node>"), for root processes that open it with
 * base/beneath.h from a descriptor of the run dir.
 */
int vfab_node_dir(char *buf, size_t len, const char *rundir, const char *node);
int vfab_node_rel_dir(char *buf, size_t len, const char *node);

/*
 * The speed (Mb/s) of a node netdev an HCA port is bound to, as the node's
 * /sys/class/net/<netdev>/speed shows it (a bind of this file):
 * <rundir>/nodes/<node>/net-speed/<netdev>; written by `vfab up`, rewritten
 * in place by vfabd when the port is shaped (_rel: below the run dir).
 */
int vfab_netdev_speed_path(char *buf, size_t len, const char *rundir, const char *node,
			   const char *netdev);
int vfab_netdev_speed_rel(char *buf, size_t len, const char *node, const char *netdev);

/* A node's holder pid file: <rundir>/nodes/<node>/holder.pid (_rel: below the run dir). */
int vfab_holder_pid_path(char *buf, size_t len, const char *rundir, const char *node);
int vfab_holder_pid_rel(char *buf, size_t len, const char *node);

/*
 * A node's own GPUs: <rundir>/nodes/<node>/gpus, written by `vfab up` for a
 * node that lists gpus, read by its holder and by whoever enters it
 * (netns/node_gpus.h).
 */
int vfab_node_gpus_path(char *buf, size_t len, const char *rundir, const char *node);

/*
 * A node's cpuset cgroup under the hierarchy's top directory `top`:
 * <top>/vfab-<fabric>/<node>, or the fabric's <top>/vfab-<fabric> for node NULL.
 */
int vfab_cgroup_dir(char *buf, size_t len, const char *top, const char *fabric, const char *node);

/* The completion-channel and async-event FIFOs: <rundir>/fifo. */
int vfab_fifo_dir(char *buf, size_t len, const char *rundir);

/*
 * Packet capture sockets (fabric/capture.h): <rundir>/capture, and in it
 * <slot>.sock, bound by the capturing tool (root) for captures[slot].
 */
int vfab_capture_dir(char *buf, size_t len, const char *rundir);
int vfab_capture_sock(char *buf, size_t len, const char *rundir, unsigned int slot);

/* The RDMA CM's listener directory (service -> CM QP of its process): <rundir>/cm. */
int vfab_cm_dir(char *buf, size_t len, const char *rundir);

/*
 * The host's /proc as every node shows it: <rundir>/proc, a bind mount made
 * in each node's mount namespace over an empty directory (empty outside the
 * nodes). A process that entered a PID namespace of its own and mounted a
 * /proc of that namespace still finds the fabric's pids there.
 */
int vfab_host_proc_dir(char *buf, size_t len, const char *rundir);

/*
 * Where vfabd serves the ports' live counters (daemon/vfabd_countersfs.c):
 * <rundir>/counters, a FUSE mount holding <node>/<hca>/<port>/{counters,hw_counters}/;
 * each node binds its own over its view's (netns/ctrfs_view.h).
 */
int vfab_counters_fs_dir(char *buf, size_t len, const char *rundir);

#endif /* VFAB_BASE_PATHS_H */
