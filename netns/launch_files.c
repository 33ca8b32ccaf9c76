/* SPDX-License-Identifier: MIT */
#include "netns/launch_files.h"

#include <arpa/inet.h>
#include <pwd.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/paths.h"
#include "netns/etc_view.h"

/* A growing text buffer: the files are a few hundred bytes per node. */
struct text {
	char *buf;
	size_t len, cap;
	int error;
};

static void add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->error)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt,
			      ap);
		va_end(ap);
		if (n < 0) {
			t->error = -EINVAL;
			return;
		}
		if (t->buf && t->len + (size_t)n < t->cap) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = (t->cap ? t->cap : 1024) * 2 + (size_t)n;
		char *nb = realloc(t->buf, cap);

		if (!nb) {
			t->error = -ENOMEM;
			return;
		}
		t->buf = nb;
		t->cap = cap;
	}
}

static int save(struct text *t, const char *path, mode_t mode)
{
	int ret = t->error ? t->error : vfab_write_file(path, t->buf, t->len, mode);

	free(t->buf);
	*t = (struct text){0};
	return ret;
}

static int addr_text(const struct vfab_cfg_addr *a, char *buf, size_t len)
{
	return inet_ntop(a->family, a->addr, buf, (socklen_t)len) ? 0 : -errno;
}

int vfab_node_main_addr(const struct vfab_cfg_node *n, char *buf, size_t len)
{
	const struct vfab_cfg_netdev *eth0;

	if (n->nnetdevs == 0 || n->netdevs[0].naddrs == 0)
		return -ENOENT;
	eth0 = &n->netdevs[0];
	for (uint32_t k = 0; k < eth0->naddrs; k++)
		if (eth0->addrs[k].family == AF_INET)
			return addr_text(&eth0->addrs[k], buf, len);
	return addr_text(&eth0->addrs[0], buf, len);
}

int vfab_launch_files_write(const char *rundir, const struct vfab_config *cfg)
{
	struct text hostfile = {0}, hosts = {0};
	char path[4096];
	uint32_t count;
	const struct vfab_cfg_node *all = vfab_config_cluster(cfg, &count);
	int ret;

	/* A launcher spans the cluster: the other hosts' nodes too, in file order. */
	for (uint32_t i = 0; i < count; i++) {
		const struct vfab_cfg_node *n = &all[i];

		/* slots = processes per node, as the config's ranks say. */
		add(&hostfile, "%s slots=%u\n", n->id, n->nranks ? n->nranks : 1);
		add(&hosts, "%s\n", n->id);
	}
	if (vfab_pathf(path, sizeof(path), "%s/" VFAB_HOSTFILE, rundir)) {
		free(hostfile.buf);
		free(hosts.buf);
		return -ENAMETOOLONG;
	}
	ret = save(&hostfile, path, 0644);
	snprintf(path, sizeof(path), "%s/" VFAB_HOSTS_LIST, rundir);
	if (ret == 0)
		ret = save(&hosts, path, 0644);
	free(hosts.buf);
	return ret;
}

/*
 * Who logs in: root, or in a fabric without root the user, whose sshd runs
 * as that user (node_sshd.c) and lets only that user in.
 */
static int login_user(char *buf, size_t len)
{
	long uid = vfab_fabric_owner_uid();
	struct passwd *pw;

	if (uid < 0)
		return vfab_pathf(buf, len, "root");
	pw = getpwuid((uid_t)uid);
	return pw ? vfab_pathf(buf, len, "%s", pw->pw_name) : -ENOENT;
}

int vfab_ssh_client_config_write(const char *rundir, const struct vfab_config *cfg)
{
	struct text t = {0};
	char path[4096], addr[INET6_ADDRSTRLEN], user[256];

	if (login_user(user, sizeof(user)))
		return -ENOENT;

	if (vfab_pathf(path, sizeof(path), "%s/" VFAB_SSH_CONFIG, rundir))
		return -ENAMETOOLONG;
	add(&t, "# vfab up --ssh: the nodes of this fabric (ssh -F %s NODE)\n", path);
	for (uint32_t i = 0; i < cfg->nnodes; i++) {
		const struct vfab_cfg_node *n = &cfg->nodes[i];

		if (vfab_node_main_addr(n, addr, sizeof(addr)))
			continue;
		/* Everything per host: included from a node's ssh_config, it touches no other host.
		 */
		add(&t,
		    "Host %s %s%s %s\n"
		    "\tHostName %s\n"
		    "\tPort %d\n"
		    "\tUser %s\n"
		    "\tIdentityFile %s/" VFAB_SSH_DIR "/" VFAB_SSH_CLIENT_KEY "\n"
		    "\tIdentitiesOnly yes\n"
		    "\tStrictHostKeyChecking no\n"
		    "\tUserKnownHostsFile /dev/null\n"
		    "\tLogLevel ERROR\n",
		    n->id, n->id, VFAB_HOSTS_DOMAIN, addr, addr, VFAB_SSH_PORT, user, rundir);
	}
	return save(&t, path, 0644);
}

int vfab_sshd_config_write(const char *rundir, const struct vfab_config *cfg, uint32_t node,
			   char *path, size_t len)
{
	const struct vfab_cfg_node *n;
	char addr[INET6_ADDRSTRLEN];
	struct text t = {0};
	int listens = 0;

	if (node >= cfg->nnodes)
		return -EINVAL;
	n = &cfg->nodes[node];
	if (vfab_pathf(path, len, "%s/" VFAB_SSH_DIR "/sshd-%s.conf", rundir, n->id))
		return -ENAMETOOLONG;
	add(&t, "# vfab up --ssh: sshd of node %s\n", n->id);
	for (uint32_t k = 0; n->nnetdevs && k < n->netdevs[0].naddrs; k++) {
		const struct vfab_cfg_addr *a = &n->netdevs[0].addrs[k];

		if (addr_text(a, addr, sizeof(addr)))
			continue;
		add(&t, a->family == AF_INET6 ? "ListenAddress [%s]:%d\n" : "ListenAddress %s:%d\n",
		    addr, VFAB_SSH_PORT);
		listens++;
	}
	if (!listens) {
		free(t.buf);
		return -EADDRNOTAVAIL;
	}
	add(&t,
	    "HostKey %s/" VFAB_SSH_DIR "/" VFAB_SSH_HOST_KEY "\n"
	    "AuthorizedKeysFile %s/" VFAB_SSH_DIR "/" VFAB_SSH_AUTHORIZED_KEYS "\n"
	    "PidFile %s/" VFAB_SSH_DIR "/sshd-%s.pid\n"
	    "PermitRootLogin prohibit-password\n"
	    "PubkeyAuthentication yes\n"
	    "PasswordAuthentication no\n"
	    "KbdInteractiveAuthentication no\n"
	    "UsePAM no\n"
	    "%s"
	    "X11Forwarding no\n"
	    "PrintMotd no\n"
	    "PrintLastLog no\n"
	    "AcceptEnv LANG LC_*\n"
	    "Subsystem sftp internal-sftp\n",
	    rundir, rundir, rundir, n->id,
	    /*
	     * Without root sshd runs as the user in a nested user namespace
	     * (node_sshd.c), where root's directories (/, /tmp) show as nobody's:
	     * StrictModes would refuse every key. The keys lie in the run root,
	     * which vfab up makes mode 0700 (netns/userns.c).
	     */
	    vfab_fabric_owner_uid() >= 0 ? "StrictModes no\n" : "");
	return save(&t, path, 0644);
}
