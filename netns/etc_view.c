/* SPDX-License-Identifier: MIT */
#include "netns/etc_view.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/fsutil.h"

#define HOST_DRIVERS_DIR "/etc/libibverbs.d"

static int write_hosts(const char *path, const struct vfab_config *cfg)
{
	uint32_t count;
	const struct vfab_cfg_node *all = vfab_config_cluster(cfg, &count);
	size_t cap = 256 + (size_t)count * VFAB_CFG_MAX_ADDRS * 128, used = 0;
	char *buf = malloc(cap);
	int ret;

	if (!buf)
		return -ENOMEM;
	used += (size_t)snprintf(buf, cap,
				 "127.0.0.1\tlocalhost\n"
				 "::1\tlocalhost ip6-localhost ip6-loopback\n"
				 "ff02::1\tip6-allnodes\n"
				 "ff02::2\tip6-allrouters\n");
	/* Every node of the cluster, on this host or another. */
	for (uint32_t i = 0; i < count; i++) {
		const struct vfab_cfg_node *n = &all[i];

		if (n->nnetdevs == 0)
			continue;
		/* eth0 is the node's name on the fabric (NCCL's OOB interface). */
		for (uint32_t k = 0; k < n->netdevs[0].naddrs; k++) {
			const struct vfab_cfg_addr *a = &n->netdevs[0].addrs[k];
			char txt[INET6_ADDRSTRLEN];

			if (!inet_ntop(a->family, a->addr, txt, sizeof(txt)))
				continue;
			used += (size_t)snprintf(buf + used, cap - used, "%s\t%s %s%s\n", txt,
						 n->id, n->id, VFAB_HOSTS_DOMAIN);
		}
	}
	ret = used < cap ? vfab_write_file(path, buf, used, 0644) : -EOVERFLOW;
	free(buf);
	return ret;
}

/*
 * Hide the host's *.driver files: an opaque upper directory, or, where the
 * upper file system has no trusted xattrs, one whiteout per host file.
 */
static int hide_host_drivers(const char *dir)
{
	char path[4096];
	struct dirent *de;
	DIR *d;
	int ret = 0;

	if (setxattr(dir, "trusted.overlay.opaque", "y", 1, 0) == 0)
		return 0;
	d = opendir(HOST_DRIVERS_DIR);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d)) && ret == 0) {
		if (de->d_name[0] == '.' || strcmp(de->d_name, "vfab.driver") == 0)
			continue;
		if (vfab_pathf(path, sizeof(path), "%s/%s", dir, de->d_name))
			ret = -ENAMETOOLONG;
		else if (mknod(path, S_IFCHR | 0000, makedev(0, 0)) && errno != EEXIST)
			ret = -errno;
	}
	closedir(d);
	return ret;
}

int vfab_etc_view_write(const char *upper, const struct vfab_config *cfg, uint32_t node,
			const char *libdir, const char *preload_lib)
{
	char path[4096];
	int ret;

	if (node >= cfg->nnodes)
		return -EINVAL;
	/* Leaves room for every name below, so the snprintf calls cannot truncate. */
	if (strlen(upper) > sizeof(path) - 64)
		return -ENAMETOOLONG;
	ret = vfab_mkdir_p(upper, 0755);
	if (ret)
		return ret;
	if (vfab_pathf(path, sizeof(path), "%s/hostname", upper))
		return -ENAMETOOLONG;
	ret = vfab_write_filef(path, "%s\n", cfg->nodes[node].id);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/hosts", upper);
	ret = write_hosts(path, cfg);
	if (ret)
		return ret;
	if (preload_lib && access(preload_lib, R_OK) == 0) {
		snprintf(path, sizeof(path), "%s/ld.so.preload", upper);
		ret = vfab_write_filef(path, "%s\n", preload_lib);
		if (ret)
			return ret;
	}
	snprintf(path, sizeof(path), "%s/libibverbs.d", upper);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	ret = hide_host_drivers(path);
	if (ret)
		return ret;
	if (vfab_pathf(path, sizeof(path), "%s/libibverbs.d/vfab.driver", upper))
		return -ENAMETOOLONG;
	/* libibverbs turns an absolute name into <name>-rdmav<PABI>.so. */
	return vfab_write_filef(path, "driver %s/libvfab\n", libdir);
}

int vfab_etc_view_add_libdirs(const char *upper, const char *const *dirs, unsigned ndirs)
{
	char path[4096];
	size_t cap = 128, used = 0;
	char *buf;
	int ret;

	for (unsigned i = 0; i < ndirs; i++) {
		/* One directory per line: a newline would split it. */
		if (strchr(dirs[i], '\n') || dirs[i][0] != '/')
			return -EINVAL;
		cap += strlen(dirs[i]) + 1;
	}
	if (vfab_pathf(path, sizeof(path), "%s/ld.so.conf.d", upper))
		return -ENAMETOOLONG;
	ret = vfab_mkdir_p(path, 0755);
	if (ret)
		return ret;
	if (vfab_pathf(path, sizeof(path), "%s/ld.so.conf.d/" VFAB_LIBDIRS_CONF, upper))
		return -ENAMETOOLONG;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	used = (size_t)snprintf(buf, cap, "# vfab up --libdir: libraries carried for this node\n");
	for (unsigned i = 0; i < ndirs; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%s\n", dirs[i]);
	ret = vfab_write_file(path, buf, used, 0644);
	free(buf);
	return ret;
}

int vfab_etc_view_add_ssh(const char *upper, const char *ssh_config)
{
	char path[4096];
	int ret;

	if (vfab_pathf(path, sizeof(path), "%s/ssh/ssh_config.d", upper))
		return -ENAMETOOLONG;
	ret = vfab_mkdir_p(path, 0755);
	if (ret)
		return ret;
	if (vfab_pathf(path, sizeof(path), "%s/ssh/ssh_config.d/" VFAB_SSH_CONF_INCLUDE, upper))
		return -ENAMETOOLONG;
	return vfab_write_filef(
	    path, "# the fabric's nodes: plain 'ssh node1' works here\nInclude %s\n", ssh_config);
}

/* The password field of root's line in a shadow file's text, or NULL. */
static char *root_password_field(char *text)
{
	for (char *line = text; line && *line;) {
		if (strncmp(line, "root:", 5) == 0)
			return line + 5;
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return NULL;
}

int vfab_etc_view_unlock_root_keys(const char *upper, const char *shadow)
{
	char path[4096], *text, *field;
	struct stat st;
	ssize_t n;
	int ret;

	if (stat(shadow, &st))
		return errno == ENOENT ? 0 : -errno;
	text = malloc((size_t)st.st_size + 2);
	if (!text)
		return -ENOMEM;
	n = vfab_read_file(shadow, text, (size_t)st.st_size + 2);
	if (n < 0) {
		free(text);
		return (int)n;
	}
	field = root_password_field(text);
	if (!field || field[0] != '!') {
		free(text);
		return 0;
	}
	/* "!hash" or "!" -> "*": still no password login, but no longer "locked". */
	field[0] = '*';
	if (field[1] != ':') {
		char *end = strchr(field, ':');

		if (!end) {
			free(text);
			return -EINVAL;
		}
		memmove(field + 1, end, strlen(end) + 1);
	}
	ret = vfab_pathf(path, sizeof(path), "%s/shadow", upper);
	if (ret == 0)
		ret = vfab_write_file(path, text, strlen(text), st.st_mode & 07777);
	if (ret == 0 && (chown(path, st.st_uid, st.st_gid) || chmod(path, st.st_mode & 07777)))
		ret = -errno;
	free(text);
	return ret;
}

int vfab_etc_view_add_nccl_conf(const char *upper, const char *host_conf)
{
	static const char line[] =
	    "# vfab: NCCL 2.28.7-2.28.9 crash without it on HCAs not driven by "
	    "libmlx5 (NVIDIA/nccl#1881)\nNCCL_GIN_TYPE=2\n";
	char path[4096], *text;
	struct stat st;
	size_t len = 0;
	ssize_t n;
	int ret;

	if (stat(host_conf, &st) == 0) {
		len = (size_t)st.st_size;
	} else if (errno != ENOENT) {
		return -errno;
	}
	text = malloc(len + sizeof(line) + 1);
	if (!text)
		return -ENOMEM;
	n = len ? vfab_read_file(host_conf, text, len + 1) : 0;
	if (n < 0) {
		free(text);
		return (int)n;
	}
	len = (size_t)n < len ? (size_t)n : len;
	if (len && text[len - 1] != '\n')
		text[len++] = '\n';
	memcpy(text + len, line, sizeof(line));
	ret = vfab_pathf(path, sizeof(path), "%s/nccl.conf", upper);
	if (ret == 0)
		ret = vfab_write_file(path, text, len + sizeof(line) - 1, 0644);
	free(text);
	return ret;
}
