/* SPDX-License-Identifier: MIT */
#include "cm/cm_listen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm/cm_addr.h"
#include "cm/cm_agent.h"
#include "cm/cm_dir.h"
#include "cm/cm_local.h"
#include "cm/cm_log.h"
#include "fabric/ctl.h"

/* This process's listeners: a REQ looks here, not through every ID. */
static struct vfab_cm_id *listeners;

struct vfab_cm_id *vfab_cm_listener_find(uint16_t ps, int family, const uint8_t addr[16],
					 uint16_t port)
{
	uint8_t a[16];

	for (struct vfab_cm_id *id = listeners; id; id = id->listen_next) {
		if (id->ps != ps || vfab_cm_sa_port(&id->src) != port ||
		    id->src.ss_family != family)
			continue;
		vfab_cm_sa_bytes(&id->src, a);
		if (vfab_cm_addr_any((struct sockaddr *)&id->src) || !memcmp(a, addr, 16))
			return id;
	}
	return NULL;
}

/* What the listener's entry for one of its addresses says, and its name. */
static int entry_for(struct vfab_cm_id *id, const struct sockaddr *addr, struct vfab_cm_pub *pub,
		     struct vfab_cm_entry *e)
{
	struct vfab_cm_local loc;
	struct vfab_cm_port *p;
	int ret = vfab_cm_local_find(addr, &loc);

	if (ret)
		return ret;
	p = vfab_cm_agent_port(loc.dev, loc.port);
	if (!p)
		return -ENODEV;
	e->cm_qpn = p->qp->qp_num;
	e->pid = vfab_cm_agent_pid();
	e->start = vfab_cm_agent_start_time();
	pub->cm_qpn = e->cm_qpn;
	return vfab_cm_dir_name(pub->name, sizeof(pub->name), id->ps, addr,
				vfab_cm_sa_port(&id->src));
}

/*
 * A gone listener of another user holds the name: only its owner or root
 * may remove it from the sticky directory, so vfabd (root) is asked to
 * remove it if it is indeed stale.
 */
static int ask_vfabd_free(const char *name)
{
	char line[160], reply[128];
	int fd = vfab_ctl_connect(vfab_cm_agent_rundir()), ret;

	if (fd < 0)
		return fd;
	snprintf(line, sizeof(line), "CMFREE %s", name);
	ret = vfab_ctl_request(fd, line, reply, sizeof(reply));
	close(fd);
	if (ret < 0)
		return ret;
	vfab_cm_dbg("CMFREE %s: %s", name, reply);
	return strncmp(reply, "OK", 2) ? -EADDRINUSE : 0;
}

static int publish(struct vfab_cm_id *id, const struct sockaddr *addr)
{
	const char *dir = vfab_cm_agent_dir();
	struct vfab_cm_pub pub, *grown;
	struct vfab_cm_entry e;
	char tmp[700];
	int ret = entry_for(id, addr, &pub, &e);

	if (ret == -EADDRNOTAVAIL)
		return 0; /* no HCA has it: nobody can send a REQ there */
	if (ret)
		return ret;
	grown = realloc(id->pub, sizeof(*id->pub) * (size_t)(id->npub + 1));
	if (!grown)
		return -ENOMEM;
	id->pub = grown;
	ret = vfab_cm_dir_prepare(dir, &e, tmp, sizeof(tmp));
	if (ret)
		return ret;
	ret = vfab_cm_dir_publish(dir, tmp, pub.name, &e);
	if (ret == -EPERM && ask_vfabd_free(pub.name) == 0)
		ret = vfab_cm_dir_publish(dir, tmp, pub.name, &e);
	unlink(tmp);
	if (ret == -EPERM)
		ret = -EADDRINUSE;
	if (!ret)
		id->pub[id->npub++] = pub;
	return ret;
}

static void unpublish(const struct vfab_cm_pub *pub)
{
	struct vfab_cm_entry e = {pub->cm_qpn, vfab_cm_agent_pid(), vfab_cm_agent_start_time()};

	vfab_cm_dir_remove(vfab_cm_agent_dir(), pub->name, &e);
}

void vfab_cm_unlisten(struct vfab_cm_id *id)
{
	struct vfab_cm_id **pp;

	for (pp = &listeners; *pp && *pp != id; pp = &(*pp)->listen_next)
		;
	if (*pp)
		*pp = id->listen_next;
	for (int i = 0; i < id->npub; i++)
		unpublish(&id->pub[i]);
	free(id->pub);
	id->pub = NULL;
	id->npub = 0;
}

/* Publish every address id covers that it has not yet published. */
static int publish_all(struct vfab_cm_id *id)
{
	struct sockaddr_storage ss;
	int ret = 0;

	if (!vfab_cm_addr_any((struct sockaddr *)&id->src))
		return id->npub ? 0 : publish(id, (struct sockaddr *)&id->src);
	for (int i = 0; !ret && vfab_cm_local_addr(id->src.ss_family, i, &ss) == 0; i++) {
		struct vfab_cm_pub pub;
		struct vfab_cm_entry e;
		int k;

		if (entry_for(id, (struct sockaddr *)&ss, &pub, &e))
			continue;
		for (k = 0; k < id->npub && strcmp(id->pub[k].name, pub.name); k++)
			;
		if (k == id->npub)
			ret = publish(id, (struct sockaddr *)&ss);
	}
	return ret;
}

int vfab_cm_listen(struct vfab_cm_id *id)
{
	int ret;

	if (id->state == VFAB_CS_LISTEN)
		return 0;
	if (id->state != VFAB_CS_IDLE)
		return -EINVAL;
	if (!id->src.ss_family) { /* listen without bind: any IPv4 address */
		id->src.ss_family = AF_INET;
		vfab_cm_sa_set_port(&id->src, vfab_cm_ephemeral_port());
	}
	ret = publish_all(id);
	if (ret) {
		vfab_cm_unlisten(id);
		return ret;
	}
	id->state = VFAB_CS_LISTEN;
	id->listen_next = listeners;
	listeners = id;
	vfab_cm_dbg("listen ps %04x port %u: %d entries", id->ps, vfab_cm_sa_port(&id->src),
		    id->npub);
	return 0;
}

/* Keep the entries of addresses the node still has; remove the others. */
static void drop_gone(struct vfab_cm_id *id)
{
	int kept = 0;

	for (int i = 0; i < id->npub; i++) {
		struct sockaddr_storage ss;
		struct vfab_cm_pub pub;
		struct vfab_cm_entry e;
		int found = 0;

		for (int k = 0; !found && vfab_cm_local_addr(id->src.ss_family, k, &ss) == 0; k++)
			found = entry_for(id, (struct sockaddr *)&ss, &pub, &e) == 0 &&
				!strcmp(pub.name, id->pub[i].name) &&
				pub.cm_qpn == id->pub[i].cm_qpn;
		if (found)
			id->pub[kept++] = id->pub[i];
		else
			unpublish(&id->pub[i]);
	}
	id->npub = kept;
}

void vfab_cm_listen_follow(void)
{
	for (struct vfab_cm_id *id = listeners; id; id = id->listen_next) {
		if (!vfab_cm_addr_any((struct sockaddr *)&id->src))
			continue;
		drop_gone(id);
		if (publish_all(id))
			vfab_cm_dbg("listener %u: cannot publish every new address", id->handle);
	}
}
