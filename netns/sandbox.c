/* SPDX-License-Identifier: MIT */
#include "netns/sandbox.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fabric/topology.h"
#include "netns/etc_view.h"
#include "netns/fabric_net.h"
#include "netns/fsutil.h"
#include "netns/holder.h"
#include "netns/host_dirs.h"
#include "netns/sysfs_view.h"

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return ret;
}

int vfab_sandbox_prepare(const struct vfab_sandbox *sb, char *err, size_t errlen)
{
	char nodes[4096];
	int ret;

	if (vfab_pathf(nodes, sizeof(nodes), "%s/nodes", sb->rundir))
		return fail(err, errlen, -ENAMETOOLONG, "run dir path too long");
	ret = vfab_mkdir_p(nodes, 0755);
	if (ret)
		return fail(err, errlen, ret, "mkdir %s", nodes);
	/* No nodev: the uverbs device nodes of the views live here. */
	if (mount("vfab-nodes", nodes, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755"))
		return fail(err, errlen, -errno, "tmpfs on %s", nodes);
	/* Nodes bind their view on /dev/infiniband: the host needs the directory. */
	ret = vfab_host_dir_claim(sb->rundir, VFAB_HOST_DEVIB, VFAB_DEVIB_MARKER, 0755);
	if (ret)
		return fail(err, errlen, ret, "create " VFAB_HOST_DEVIB);
	return vfab_net_fabric_create(sb->fabric, sb->cfg->mtu, err, errlen);
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

static int build_net_spec(const struct vfab_sandbox *sb, uint32_t cfg_index,
			  const struct vfab_cfg_node *cn, struct vfab_net_node *out)
{
	int ret;

	memset(out, 0, sizeof(*out));
	out->id = cn->id;
	for (uint32_t k = 0; k < cn->nnetdevs && k < VFAB_NET_MAX_IFACES; k++) {
		struct vfab_net_iface *ifc = &out->iface[out->niface++];

		snprintf(ifc->name, sizeof(ifc->name), "%s", cn->netdevs[k].name);
		ret = vfab_net_host_end_name(ifc->host_end, sizeof(ifc->host_end), cn->id,
					     cfg_index, k);
		if (ret)
			return ret;
		/* The same MAC the region's GIDs were derived from. */
		ret = vfab_topology_netdev_mac(sb->fabric, sb->cfg, cfg_index, ifc->name, ifc->mac);
		if (ret)
			return ret;
		ifc->mtu = sb->cfg->mtu;
		ifc->naddrs = cn->netdevs[k].naddrs;
		ifc->addrs = cn->netdevs[k].addrs;
	}
	return 0;
}

int vfab_sandbox_node_up(const struct vfab_sandbox *sb, uint32_t node, pid_t *holder, char *err,
			 size_t errlen)
{
	struct vfab_node *rn = &sb->region->nodes[node];
	const struct vfab_cfg_node *cn;
	struct vfab_net_node net;
	char nd[4096], path[4096];
	uint32_t cfg_index;
	int ret;

	cn = config_node(sb->cfg, rn->id, &cfg_index);
	if (!cn)
		return fail(err, errlen, -ENOENT, "node %s of the region is not in the config",
			    rn->id);
	if (vfab_pathf(nd, sizeof(nd), "%s/nodes/%s", sb->rundir, rn->id))
		return fail(err, errlen, -ENAMETOOLONG, "run dir path too long");
	ret = vfab_mkdir_p(nd, 0755);
	if (ret)
		return fail(err, errlen, ret, "mkdir %s", nd);
	ret = vfab_sysfs_view_write(sb->region, node, nd);
	if (ret)
		return fail(err, errlen, ret, "write the sysfs view of node %s", rn->id);
	if (vfab_pathf(path, sizeof(path), "%s/etc-upper", nd))
		return fail(err, errlen, -ENAMETOOLONG, "run dir path too long");
	ret = vfab_etc_view_write(path, sb->cfg, cfg_index, sb->libdir, sb->preload_lib);
	if (ret)
		return fail(err, errlen, ret, "write the /etc view of node %s", rn->id);
	if (vfab_pathf(path, sizeof(path), "%s/etc-work", nd))
		return fail(err, errlen, -ENAMETOOLONG, "run dir path too long");
	ret = vfab_mkdir_p(path, 0755);
	if (ret)
		return fail(err, errlen, ret, "mkdir %s", path);
	ret = build_net_spec(sb, cfg_index, cn, &net);
	if (ret)
		return fail(err, errlen, ret, "netdevs of node %s", rn->id);

	ret = vfab_holder_start(sb->rundir, rn->id, holder, err, errlen);
	if (ret)
		return ret;
	atomic_store(&rn->holder_pid, (int32_t)*holder);
	ret = vfab_net_bind_ns(sb->fabric, rn->id, *holder);
	if (ret)
		return fail(err, errlen, ret, "publish the namespace of node %s", rn->id);
	return vfab_net_node_setup(sb->fabric, &net, err, errlen);
}
