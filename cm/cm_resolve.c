/* SPDX-License-Identifier: MIT */
#include "cm/cm_resolve.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/proc.h"
#include "cm/cm_addr.h"
#include "cm/cm_agent.h"
#include "cm/cm_event.h"
#include "cm/cm_local.h"
#include "cm/cm_route.h"

#define CAP_NET_BIND_SERVICE 10 /* linux/capability.h */

static int use_local(struct vfab_cm_id *id, const struct sockaddr *addr)
{
	int ret = vfab_cm_local_find(addr, &id->loc);

	if (ret)
		return ret;
	if (!vfab_cm_agent_port(id->loc.dev, id->loc.port))
		return -ENODEV;
	id->have_dev = 1;
	return 0;
}

/*
 * An unbound ID resolving a loopback destination: the kernel's
 * cma_bind_loopback (first active port, GID index 0, source address the
 * loopback one). It has no netdev, which RoCE route resolution then needs.
 */
static int use_loopback(struct vfab_cm_id *id, struct sockaddr_storage *src)
{
	static const uint8_t lo6[16] = {[15] = 1};
	const uint8_t lo4[16] = {127, 0, 0, 1};
	int n, ret;
	struct ibv_context *const *ctxs = vfab_cm_agent_ctxs(&n);

	ret = vfab_cm_route_loopback(ctxs, n, &id->loc);
	if (ret)
		return ret;
	if (!vfab_cm_agent_port(id->loc.dev, id->loc.port))
		return -ENODEV;
	vfab_cm_sa_make(src, src->ss_family, src->ss_family == AF_INET6 ? lo6 : lo4, 0);
	id->have_dev = 1;
	id->loopback = 1;
	return 0;
}

/* cma_use_port: a port below PROT_SOCK needs CAP_NET_BIND_SERVICE. */
static int port_allowed(uint16_t port)
{
	struct vfab_proc_creds c;

	if (!port || port >= VFAB_CM_PROT_SOCK)
		return 0;
	if (vfab_proc_creds(0, &c))
		return -EACCES;
	return c.cap_eff & (1ull << CAP_NET_BIND_SERVICE) ? 0 : -EACCES;
}

int vfab_cm_bind(struct vfab_cm_id *id, const struct sockaddr *addr)
{
	struct sockaddr_storage ss;
	int ret;

	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	if (id->state != VFAB_CS_IDLE)
		return -EINVAL;
	vfab_cm_sa_copy(&ss, addr);
	ret = port_allowed(vfab_cm_sa_port(&ss));
	if (ret)
		return ret;
	if (!vfab_cm_addr_any(addr)) {
		ret = use_local(id, addr);
		if (ret)
			return ret;
	}
	id->src = ss;
	if (!vfab_cm_sa_port(&id->src))
		vfab_cm_sa_set_port(&id->src, vfab_cm_ephemeral_port());
	return 0;
}

struct resolve_job {
	uint32_t handle;
	int timeout_ms;
	struct sockaddr_storage src, dst;
};

/* The answer of a resolution, under the lock (the ID may be gone or moved on). */
static void resolved(struct resolve_job *j, int loop, int ret)
{
	struct vfab_cm_id *id = vfab_cm_id_find(j->handle);
	uint16_t port;

	if (!id || id->state != VFAB_CS_ADDR_QUERY)
		return;
	port = vfab_cm_sa_port(&id->src);
	if (loop && !id->have_dev)
		ret = use_loopback(id, &j->src);
	else if (!ret && !id->have_dev)
		ret = use_local(id, (struct sockaddr *)&j->src);
	if (ret) {
		id->state = VFAB_CS_IDLE;
		vfab_cm_ev(id, VFAB_EV_ADDR_ERROR, ret);
		return;
	}
	id->src = j->src;
	vfab_cm_sa_set_port(&id->src, port ? port : vfab_cm_ephemeral_port());
	id->dst = j->dst;
	if (id->loopback) /* cma_resolve_loopback: the destination is us */
		memcpy(id->dgid, id->loc.gid, 16);
	else
		vfab_cm_gid_of((struct sockaddr *)&id->dst, id->dgid);
	memcpy(id->remote_gid, id->dgid, 16);
	id->state = VFAB_CS_ADDR_RESOLVED;
	vfab_cm_ev(id, VFAB_EV_ADDR_RESOLVED, 0);
}

static void *resolve_main(void *arg)
{
	struct resolve_job *j = arg;
	/* A wildcard or loopback destination is the kernel's loopback: no route. */
	int loop = vfab_cm_addr_any((struct sockaddr *)&j->dst), ret = 0;

	if (!loop && vfab_cm_addr_any((struct sockaddr *)&j->src))
		ret = vfab_cm_route_src((struct sockaddr *)&j->dst, &j->src);
	if (!loop && !ret)
		ret = vfab_cm_route_neigh((struct sockaddr *)&j->dst, j->timeout_ms);
	vfab_cm_lock();
	resolved(j, loop, ret);
	vfab_cm_unlock();
	free(j);
	return NULL;
}

int vfab_cm_resolve_addr(struct vfab_cm_id *id, const struct sockaddr *src,
			 const struct sockaddr *dst, int timeout_ms)
{
	struct resolve_job *j;
	pthread_attr_t a;
	pthread_t t;
	int ret;

	if (dst->sa_family != AF_INET && dst->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	if (id->state != VFAB_CS_IDLE && id->state != VFAB_CS_ADDR_RESOLVED)
		return -EINVAL;
	if (src && src->sa_family && !vfab_cm_addr_any(src) && id->state == VFAB_CS_IDLE &&
	    !id->have_dev) {
		ret = vfab_cm_bind(id, src);
		if (ret)
			return ret;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->handle = id->handle;
	j->timeout_ms = timeout_ms;
	if (id->have_dev)
		j->src = id->src;
	else
		j->src.ss_family = dst->sa_family;
	vfab_cm_sa_copy(&j->dst, dst);
	id->state = VFAB_CS_ADDR_QUERY;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&t, &a, resolve_main, j);
	pthread_attr_destroy(&a);
	if (ret) {
		id->state = VFAB_CS_IDLE;
		free(j);
		return -ret;
	}
	return 0;
}

int vfab_cm_resolve_route(struct vfab_cm_id *id)
{
	if (id->state != VFAB_CS_ADDR_RESOLVED && id->state != VFAB_CS_ROUTE_RESOLVED)
		return -EINVAL;
	if (id->loopback) /* cma_resolve_iboe_route: no bound netdev */
		return -ENODEV;
	id->route = 1;
	id->state = VFAB_CS_ROUTE_RESOLVED;
	vfab_cm_ev(id, VFAB_EV_ROUTE_RESOLVED, 0);
	return 0;
}
