/* SPDX-License-Identifier: MIT */
#include "netns/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/paths.h"
#include "netns/etc_view.h"
#include "netns/fabric_net.h"
#include "netns/holder.h"
#include "netns/host_dirs.h"
#include "netns/launch_files.h"
#include "netns/netdev_device.h"
#include "netns/node_bin.h"
#include "netns/node_cpus.h"
#include "netns/node_gpus.h"
#include "netns/node_identity.h"
#include "netns/node_spawn.h"
#include "netns/node_sshd.h"
#include "netns/pci_view.h"
#include "netns/sysfs_view.h"
#include "netns/uplink.h"

static int write_libdirs(const struct vfab_sandbox *sb)
{
	char path[4096];
	size_t cap = 1, used = 0;
	char *buf;
	int ret;

	if (sb->nlibdirs == 0)
		return 0;
	for (unsigned i = 0; i < sb->nlibdirs; i++)
		cap += strlen(sb->libdirs[i]) + 1;
	if (vfab_pathf(path, sizeof(path), "%s/" VFAB_LIBDIRS_FILE, sb->rundir))
		return -ENAMETOOLONG;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (unsigned i = 0; i < sb->nlibdirs; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%s\n", sb->libdirs[i]);
	ret = vfab_write_file(path, buf, used, 0644);
	free(buf);
	return ret;
}

int vfab_sandbox_prepare(const struct vfab_sandbox *sb, char *err, size_t errlen)
{
	char nodes[4096];
	int ret;

	if (vfab_pathf(nodes, sizeof(nodes), "%s/nodes", sb->rundir))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "run dir path too long");
	ret = vfab_mkdir_p(nodes, 0755);
	if (ret)
		return vfab_fail(err, errlen, ret, "mkdir %s", nodes);
	/* No nodev: the uverbs device nodes of the views live here. */
	if (mount("vfab-nodes", nodes, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755"))
		return vfab_fail(err, errlen, -errno, "tmpfs on %s", nodes);
	/* Nodes bind their view on /dev/infiniband: the host needs the directory. */
	ret = vfab_host_dir_claim(sb->rundir, VFAB_HOST_DEVIB, VFAB_DEVIB_MARKER, 0755);
	if (ret)
		return vfab_fail(err, errlen, ret, "create " VFAB_HOST_DEVIB);
	ret = vfab_net_fabric_create(sb->fabric, sb->topo, err, errlen);
	if (ret)
		return ret;
	ret = vfab_net_uplink_create(sb->fabric, sb->cfg, sb->topo, err, errlen);
	if (ret)
		return ret;
	ret = vfab_launch_files_write(sb->rundir, sb->cfg);
	if (ret)
		return vfab_fail(err, errlen, ret, "write the hostfile and hosts list in %s",
				 sb->rundir);
	ret = write_libdirs(sb);
	if (ret)
		return vfab_fail(err, errlen, ret, "write %s/" VFAB_LIBDIRS_FILE, sb->rundir);
	ret = vfab_node_bin_write(sb->rundir);
	if (ret)
		return vfab_fail(err, errlen, ret, "write %s/" VFAB_NODE_BIN_DIR, sb->rundir);
	return sb->ssh ? vfab_ssh_prepare(sb->rundir, sb->cfg, err, errlen) : 0;
}

static const struct vfab_cfg_node *config_node(const struct vfab_config *cfg, const char *id,
					       uint32_t *index)
{
	for (uint32_t i = 0; i < cfg->nnodes; i++) {
		if (strcmp(cfg->nodes[i].id, id) == 0) {
			*index = i;
			return &cfg->nodes[i];
		}
	}
	return NULL;
}

static int write_etc_view(const struct vfab_sandbox *sb, uint32_t cfg_index, const char *upper)
{
	char ssh_config[4096];
	int ret = vfab_etc_view_write(upper, sb->cfg, cfg_index, sb->libdir, sb->preload_lib);

	if (ret == 0 && sb->nlibdirs)
		ret = vfab_etc_view_add_libdirs(upper, sb->libdirs, sb->nlibdirs);
	if (ret == 0)
		ret = vfab_etc_view_add_nccl_conf(upper, VFAB_HOST_NCCL_CONF);
	if (ret == 0 && sb->ssh) {
		if (vfab_pathf(ssh_config, sizeof(ssh_config), "%s/" VFAB_SSH_CONFIG, sb->rundir))
			return -ENAMETOOLONG;
		ret = vfab_etc_view_add_ssh(upper, ssh_config);
		/* Without root the user logs in, to an sshd that reads no shadow file. */
		if (ret == 0 && vfab_fabric_owner_uid() < 0)
			ret = vfab_etc_view_unlock_root_keys(upper, VFAB_HOST_SHADOW);
	}
	return ret;
}

static const char *find_ldconfig(void)
{
	static const char *const candidates[] = {"/sbin/ldconfig", "/usr/sbin/ldconfig",
						 "/usr/local/sbin/ldconfig"};

	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++)
		if (access(candidates[i], X_OK) == 0)
			return candidates[i];
	return "ldconfig";
}

/*
 * The node's own ld.so.cache, with the libdirs in it: ldconfig inside the
 * node writes through the node's /etc overlay. -X: the directories are the
 * user's, their links are left as they are.
 */
static int node_ldconfig(const struct vfab_sandbox *sb, const char *id, const char *nd, char *err,
			 size_t errlen)
{
	char *argv[] = {(char *)find_ldconfig(), "-X", NULL};
	char log[4096], out[400] = "";
	const char *failed = "run";
	int fd, ret, status = 0;

	if (vfab_pathf(log, sizeof(log), "%s/ldconfig.log", nd))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "node dir path too long");
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return vfab_fail(err, errlen, -errno, "create %s", log);
	ret = vfab_node_run(sb->rundir, id, argv, fd, &status, &failed);
	close(fd);
	if (ret)
		return vfab_fail(err, errlen, ret, "ldconfig in node %s: %s", id, failed);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	vfab_read_file(log, out, sizeof(out));
	return vfab_fail(err, errlen, -EIO, "ldconfig in node %s failed (status 0x%x): %s", id,
			 (unsigned)status, out);
}

/*
 * hcas[].gpu K of a node with GPUs of its own names its K-th GPU (cuda:K in
 * the node), as the same YAML block would on every server of a DGX cluster;
 * the PCI view wants the host GPU's PCI index. Other nodes see every host
 * GPU: K is that index already. VFAB_PCI_NO_GPU (said) when the node has
 * no GPU K or it has no PCI function.
 */
static int host_pci_gpu(const struct vfab_sandbox *sb, uint32_t cfg_index, const char *node,
			const char *hca, uint32_t k)
{
	const struct vfab_gpu_plan *p = sb->gpus;
	char text[256];
	int h;

	if (!p || cfg_index >= p->nnodes || p->node[cfg_index].all)
		return (int)k;
	h = vfab_gpu_plan_node_gpu(p, cfg_index, k);
	if (h >= 0 && p->host.gpu[h].pci_index >= 0)
		return p->host.gpu[h].pci_index;
	if (sb->note) {
		if (h < 0)
			snprintf(text, sizeof(text),
				 "node %s: %s: gpu %u: the node has %u GPU(s) of its own "
				 "(nodes[].gpus); the HCA gets a root port of its own",
				 node, hca, k, p->node[cfg_index].n);
		else
			snprintf(
			    text, sizeof(text),
			    "node %s: %s: gpu %u: host GPU %d has no PCI function in /sys; the "
			    "HCA gets a root port of its own",
			    node, hca, k, h);
		sb->note(text);
	}
	return VFAB_PCI_NO_GPU;
}

/*
 * The node's PCI layout (pci_view.h) against the host's /sys, with each
 * HCA's hcas[].gpu; a GPU the host lacks is said, not fatal (a config
 * written for a GPU server still comes up on a laptop).
 */
static int plan_pci(const struct vfab_sandbox *sb, uint32_t node, const struct vfab_cfg_node *cn,
		    uint32_t cfg_index, struct vfab_pci_layout *l)
{
	const struct vfab_node *rn = &sb->topo->nodes[node];
	int gpu_of[sizeof(rn->hcas) / sizeof(rn->hcas[0])], ret;

	for (uint32_t i = 0; i < rn->nhcas && i < sizeof(rn->hcas) / sizeof(rn->hcas[0]); i++) {
		const char *name = sb->topo->hcas[rn->hcas[i] % VFAB_MAX_HCAS].name;

		gpu_of[i] = VFAB_PCI_NO_GPU;
		for (uint32_t k = 0; k < cn->nhcas; k++)
			if (cn->hcas[k].has_gpu && strcmp(cn->hcas[k].name, name) == 0)
				gpu_of[i] =
				    host_pci_gpu(sb, cfg_index, rn->id, name, cn->hcas[k].gpu);
	}
	ret = vfab_pci_plan(sb->topo, node, gpu_of, VFAB_HOST_SYSFS, l);
	for (uint32_t m = 0; ret == 0 && sb->note && m < l->nmissing; m++) {
		char text[256];

		snprintf(text, sizeof(text),
			 "node %s: %s: gpu %u: the host has no such NVIDIA GPU (%u found); the HCA "
			 "gets a root port of its own",
			 rn->id, sb->topo->hcas[l->missing[m].hca].name, l->missing[m].gpu,
			 l->ngpus);
		sb->note(text);
	}
	return ret;
}

static int write_views(const struct vfab_sandbox *sb, uint32_t node, const struct vfab_cfg_node *cn,
		       uint32_t cfg_index, const char *nd, struct vfab_pci_layout *l, char *err,
		       size_t errlen)
{
	const char *id = sb->topo->nodes[node].id;
	int ret = plan_pci(sb, node, cn, cfg_index, l);

	if (ret)
		return vfab_fail(err, errlen, ret, "plan the PCI view of node %s", id);
	ret = vfab_pci_view_write(sb->topo, node, l, VFAB_HOST_SYSFS, nd);
	if (ret == 0)
		ret = vfab_pci_lists_write(l, VFAB_HOST_SYSFS, nd);
	if (ret)
		return vfab_fail(err, errlen, ret, "write the PCI view of node %s", id);
	ret = vfab_sysfs_view_write(sb->topo, node, l, nd);
	if (ret)
		return vfab_fail(err, errlen, ret, "write the sysfs view of node %s", id);
	return 0;
}

int vfab_sandbox_node_up(const struct vfab_sandbox *sb, uint32_t node, pid_t *holder, char *err,
			 size_t errlen)
{
	static struct vfab_pci_layout pci; /* ~20 KiB: not on the stack of every caller */
	const struct vfab_node *rn = &sb->topo->nodes[node];
	const struct vfab_cfg_node *cn;
	struct vfab_net_node net;
	char nd[4096], path[4096];
	uint32_t cfg_index;
	int ret;

	cn = config_node(sb->cfg, rn->id, &cfg_index);
	if (!cn)
		return vfab_fail(err, errlen, -ENOENT, "node %s of the region is not in the config",
				 rn->id);
	if (vfab_node_dir(nd, sizeof(nd), sb->rundir, rn->id))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "run dir path too long");
	ret = vfab_mkdir_p(nd, 0755);
	if (ret)
		return vfab_fail(err, errlen, ret, "mkdir %s", nd);
	ret = write_views(sb, node, cn, cfg_index, nd, &pci, err, errlen);
	if (ret)
		return ret;
	/* Before the holder: it reads the list when it sets up the node's /dev. */
	ret = sb->gpus ? vfab_node_gpus_write(sb->rundir, rn->id, sb->gpus, cfg_index) : 0;
	if (ret)
		return vfab_fail(err, errlen, ret, "write the GPU list of node %s", rn->id);
	if (vfab_pathf(path, sizeof(path), "%s/etc-upper", nd))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "run dir path too long");
	ret = write_etc_view(sb, cfg_index, path);
	if (ret == 0)
		ret = vfab_node_identity_write(nd, path);
	if (ret)
		return vfab_fail(err, errlen, ret, "write the /etc view of node %s", rn->id);
	if (vfab_pathf(path, sizeof(path), "%s/etc-work", nd))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "run dir path too long");
	ret = vfab_mkdir_p(path, 0755);
	if (ret == 0)
		ret = vfab_node_bin_node_dirs(nd);
	if (ret)
		return vfab_fail(err, errlen, ret, "mkdir %s", path);
	ret = vfab_net_plan_node(sb->topo, node, cn, cfg_index, &net);
	if (ret)
		return vfab_fail(err, errlen, ret, "netdevs of node %s", rn->id);

	if (vfab_region_path(sb->fabric, path, sizeof(path)))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "region path too long");
	ret = vfab_holder_start(sb->rundir, rn->id, path, holder, err, errlen);
	if (ret)
		return ret;
	/* Before anything runs in the node: what it starts inherits the CPUs. */
	ret = vfab_node_cpus_setup(sb->fabric, sb->rundir, rn->id, &rn->cpus, *holder, err, errlen);
	if (ret)
		return ret;
	ret = vfab_net_bind_ns(sb->fabric, rn->id, *holder);
	if (ret)
		return vfab_fail(err, errlen, ret, "publish the namespace of node %s", rn->id);
	ret = vfab_net_node_setup(sb->fabric, &net, err, errlen);
	if (ret == 0)
		ret = vfab_netdev_device_links(sb->rundir, sb->topo, node, &pci, err, errlen);
	if (ret == 0 && sb->nlibdirs)
		ret = node_ldconfig(sb, rn->id, nd, err, errlen);
	if (ret == 0 && sb->ssh)
		ret = vfab_ssh_node_start(sb->rundir, sb->cfg, cfg_index, err, errlen);
	return ret;
}
