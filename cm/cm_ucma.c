/* SPDX-License-Identifier: MIT */
#include "cm/cm_ucma.h"

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <rdma/rdma_user_cm.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cm/cm_addr.h"
#include "cm/cm_agent.h"
#include "cm/cm_conn.h"
#include "cm/cm_id.h"
#include "cm/cm_listen.h"
#include "cm/cm_log.h"
#include "cm/cm_mcast.h"
#include "cm/cm_recv.h"
#include "cm/cm_resolve.h"
#include "cm/cm_timer.h"

#define EXPORT __attribute__((visibility("default")))

/* The command body after the header, zero-padded to the size we read. */
#define BODY(type, name)                                                                           \
	type name;                                                                                 \
	memset(&name, 0, sizeof(name));                                                            \
	memcpy(&name, body, in < sizeof(name) ? in : sizeof(name))

/* What the agent thread runs: the CM's messages, timers and address changes. */
static const struct vfab_cm_hooks hooks = {
    .recv = vfab_cm_recv,
    .timers = vfab_cm_timers,
    .addrs_changed = vfab_cm_listen_follow,
};

static int respond(uint64_t response, size_t out, const void *resp, size_t len)
{
	if (!response)
		return -EFAULT;
	memcpy((void *)(uintptr_t)response, resp, out < len ? out : len);
	return 0;
}

/*
 * The fd librdmacm opened is the node's character device; an eventfd takes
 * its number at once, so poll, epoll and O_NONBLOCK act on the event queue
 * as on the kernel's file (the preload library answers fstat for it).
 */
static int install(struct vfab_cm_file *f)
{
	int fl = fcntl(f->fd, F_GETFL);
	int efd;

	if (f->installed)
		return 0;
	efd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC |
			     (fl >= 0 && (fl & O_NONBLOCK) ? EFD_NONBLOCK : 0));
	if (efd < 0)
		return -errno;
	if (dup3(efd, f->fd, O_CLOEXEC) < 0) {
		int e = -errno;

		close(efd);
		return e;
	}
	close(efd);
	f->installed = 1;
	return 0;
}

static struct vfab_cm_id *my_id(struct vfab_cm_file *f, uint32_t handle)
{
	struct vfab_cm_id *id = vfab_cm_id_find(handle);

	return id && id->file == f ? id : NULL;
}

static void addr_out(struct sockaddr_in6 *dst, const struct sockaddr_storage *src)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst, src,
	       src->ss_family == AF_INET6  ? sizeof(struct sockaddr_in6)
	       : src->ss_family == AF_INET ? sizeof(struct sockaddr_in)
					   : 0);
}

/* ---- the commands, one function each: (file, body, its length, room for the answer) ---- */

static int cmd_create_id(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_create_id, c);
	struct rdma_ucm_create_id_resp r;
	struct vfab_cm_id *id;

	if (c.ps != RDMA_PS_TCP && c.ps != RDMA_PS_UDP && c.ps != RDMA_PS_IB &&
	    c.ps != RDMA_PS_IPOIB)
		return -EINVAL;
	id = vfab_cm_id_new(f, c.uid, c.ps, c.qp_type);
	if (!id)
		return -ENOMEM;
	r.id = id->handle;
	if (respond(c.response, out, &r, sizeof(r))) {
		vfab_cm_id_free(id);
		return -EFAULT;
	}
	return 0;
}

static int cmd_destroy_id(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_destroy_id, c);
	struct rdma_ucm_destroy_id_resp r;
	struct vfab_cm_id *id = my_id(f, c.id);

	if (!id)
		return -EINVAL;
	r.events_reported = id->events_reported;
	vfab_cm_destroy(id);
	return respond(c.response, out, &r, sizeof(r));
}

static int cmd_bind_ip(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_bind_ip, c);
	struct vfab_cm_id *id = my_id(f, c.id);

	(void)out;
	return id ? vfab_cm_bind(id, (struct sockaddr *)&c.addr) : -EINVAL;
}

static int cmd_bind(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_bind, c);
	struct vfab_cm_id *id = my_id(f, c.id);

	(void)out;
	return id ? vfab_cm_bind(id, (struct sockaddr *)&c.addr) : -EINVAL;
}

static int cmd_resolve_ip(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_resolve_ip, c);
	struct vfab_cm_id *id = my_id(f, c.id);

	(void)out;
	return id ? vfab_cm_resolve_addr(id, (struct sockaddr *)&c.src_addr,
					 (struct sockaddr *)&c.dst_addr, (int)c.timeout_ms)
		  : -EINVAL;
}

static int cmd_resolve_addr(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_resolve_addr, c);
	struct vfab_cm_id *id = my_id(f, c.id);

	(void)out;
	return id ? vfab_cm_resolve_addr(id, c.src_size ? (struct sockaddr *)&c.src_addr : NULL,
					 (struct sockaddr *)&c.dst_addr, (int)c.timeout_ms)
		  : -EINVAL;
}

static int cmd_resolve_route(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_resolve_route, c);
	struct vfab_cm_id *id = my_id(f, c.id);

	(void)out;
	return id ? vfab_cm_resolve_route(id) : -EINVAL;
}

static int cmd_query_route(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_query, c);
	struct rdma_ucm_query_route_resp r;
	struct vfab_cm_id *id = my_id(f, c.id);

	if (!id)
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	r.node_guid = id->have_dev ? vfab_cm_agent_guid(id->loc.dev) : 0;
	r.ibdev_index = UINT32_MAX; /* match by GUID */
	r.port_num = id->have_dev ? id->loc.port : 0;
	addr_out(&r.src_addr, &id->src);
	addr_out(&r.dst_addr, &id->dst);
	if (id->have_dev) {
		int mtu = id->qp.connected ? id->qp.mtu : id->loc.mtu;

		vfab_cm_path_fill(&r.ib_route[0], id->loc.gid, id->dgid, mtu, id->tos);
		if (id->route)
			r.num_paths = 1;
	}
	return respond(c.response, out, &r, sizeof(r));
}

static int cmd_connect(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_connect, c);
	struct vfab_cm_id *id = my_id(f, c.id);

	(void)out;
	if (!id)
		return -EINVAL;
	id->ece_vendor = c.ece.vendor_id;
	id->ece_options = c.ece.attr_mod;
	return vfab_cm_connect(id, &c.conn_param);
}

static int cmd_listen(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_listen, c);
	struct vfab_cm_id *id = my_id(f, c.id);

	(void)out;
	return id ? vfab_cm_listen(id) : -EINVAL;
}

static int cmd_accept(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_accept, c);
	struct vfab_cm_id *id = my_id(f, c.id);

	(void)out;
	if (!id)
		return -EINVAL;
	id->ece_vendor = c.ece.vendor_id;
	id->ece_options = c.ece.attr_mod;
	return vfab_cm_accept(id, c.uid, &c.conn_param);
}

static int cmd_reject(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_reject, c);
	struct vfab_cm_id *id = my_id(f, c.id);

	(void)out;
	return id ? vfab_cm_reject(id, c.reason, c.private_data, c.private_data_len) : -EINVAL;
}

static int cmd_disconnect(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_disconnect, c);
	struct vfab_cm_id *id = my_id(f, c.id);

	(void)out;
	return id ? vfab_cm_disconnect(id) : -EINVAL;
}

static int cmd_init_qp_attr(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_init_qp_attr, c);
	struct ib_uverbs_qp_attr r;
	struct vfab_cm_id *id = my_id(f, c.id);
	int ret;

	if (!id || !id->have_dev)
		return -EINVAL;
	if (!id->qp.port) { /* before any connection: what the ID knows */
		id->qp.ud = id->qp_type == IBV_QPT_UD;
		id->qp.port = id->loc.port;
		id->qp.qkey = VFAB_CM_UDP_QKEY;
	}
	ret = vfab_cm_qp_attr(&id->qp, (int)c.qp_state, &r);
	return ret ? ret : respond(c.response, out, &r, sizeof(r));
}

/* The options rdma_set_option sets on an ID, as the kernel's ucma_set_option_id takes them. */
static int set_option(struct vfab_cm_id *id, const struct rdma_ucm_set_option *c)
{
	uint8_t v = 0;

	if (c->level != RDMA_OPTION_ID)
		return -ENOSYS; /* RDMA_OPTION_IB_PATH: no SA here */
	if (c->optlen && c->optval)
		memcpy(&v, (const void *)(uintptr_t)c->optval, 1);
	switch (c->optname) {
	case RDMA_OPTION_ID_TOS: /* the active side's path (a passive one's comes with the REQ) */
		id->tos = v;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
	case RDMA_OPTION_ID_AFONLY:
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT: /* rdma_set_ack_timeout: RC only */
		if (id->qp_type != IBV_QPT_RC)
			return -EINVAL;
		id->ack_timeout = v;
		/* Either side: connect copies it, a passive ID's RTS reads it here. */
		id->qp.timeout = v;
		return 0;
	default:
		return -ENOSYS;
	}
}

static int cmd_set_option(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_set_option, c);
	struct vfab_cm_id *id = my_id(f, c.id);

	(void)out;
	return id ? set_option(id, &c) : -EINVAL;
}

static int cmd_notify(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_notify, c);
	struct vfab_cm_id *id = my_id(f, c.id);

	(void)out;
	return id ? vfab_cm_notify(id, (int)c.event) : -EINVAL;
}

static int cmd_migrate_id(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_migrate_id, c);
	struct vfab_cm_file *from = vfab_cm_file_find((int)c.fd);
	struct vfab_cm_id *id = from ? my_id(from, c.id) : NULL;
	struct rdma_ucm_migrate_resp r;

	if (!id)
		return -EINVAL;
	id->file = f;
	vfab_cm_event_move(id, from);
	r.events_reported = id->events_reported;
	return respond(c.response, out, &r, sizeof(r));
}

/* ucma_process_join: the membership's handle is the answer (a create_id answer's shape). */
static int join(struct vfab_cm_file *f, uint32_t handle, const struct sockaddr *addr,
		uint32_t addr_size, uint64_t uid, uint32_t join_flags, uint64_t response,
		size_t out)
{
	struct rdma_ucm_create_id_resp r;
	struct vfab_cm_id *id = my_id(f, handle);
	uint32_t mc;
	int ret;

	if (out < sizeof(r))
		return -ENOSPC;
	if (!id)
		return -EINVAL;
	ret = vfab_cm_mc_join(id, addr, addr_size, uid, join_flags, &mc);
	if (ret)
		return ret;
	r.id = mc;
	if (respond(response, out, &r, sizeof(r))) {
		uint32_t reported;

		vfab_cm_mc_leave(f, mc, &reported);
		return -EFAULT;
	}
	return 0;
}

/* rdma_join_multicast when AF_IB is not offered (as here): a full member, the family's size. */
static int cmd_join_ip_mcast(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_join_ip_mcast, c);
	struct sockaddr_storage ss;

	vfab_cm_sa_copy(&ss, (const struct sockaddr *)&c.addr);
	return join(f, c.id, (const struct sockaddr *)&ss,
		    vfab_cm_sa_len((const struct sockaddr *)&ss), c.uid,
		    RDMA_MC_JOIN_FLAG_FULLMEMBER, c.response, out);
}

static int cmd_join_mcast(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_join_mcast, c);

	return join(f, c.id, (const struct sockaddr *)&c.addr, c.addr_size, c.uid, c.join_flags,
		    c.response, out);
}

static int cmd_leave_mcast(struct vfab_cm_file *f, const void *body, size_t in, size_t out)
{
	BODY(struct rdma_ucm_destroy_id, c);
	struct rdma_ucm_destroy_id_resp r;
	int ret;

	if (out < sizeof(r))
		return -ENOSPC;
	ret = vfab_cm_mc_leave(f, c.id, &r.events_reported);
	return ret ? ret : respond(c.response, out, &r, sizeof(r));
}

typedef int (*cmd_fn)(struct vfab_cm_file *f, const void *body, size_t in, size_t out);

/*
 * The commands served here (GET_EVENT blocks, so it runs outside the lock:
 * vfab_cm_file_write). Not offered, ENOSYS: QUERY (the AF_IB queries),
 * GET_OPTION.
 */
static const cmd_fn cmds[] = {
    [RDMA_USER_CM_CMD_CREATE_ID] = cmd_create_id,
    [RDMA_USER_CM_CMD_DESTROY_ID] = cmd_destroy_id,
    [RDMA_USER_CM_CMD_BIND_IP] = cmd_bind_ip,
    [RDMA_USER_CM_CMD_RESOLVE_IP] = cmd_resolve_ip,
    [RDMA_USER_CM_CMD_RESOLVE_ROUTE] = cmd_resolve_route,
    [RDMA_USER_CM_CMD_QUERY_ROUTE] = cmd_query_route,
    [RDMA_USER_CM_CMD_CONNECT] = cmd_connect,
    [RDMA_USER_CM_CMD_LISTEN] = cmd_listen,
    [RDMA_USER_CM_CMD_ACCEPT] = cmd_accept,
    [RDMA_USER_CM_CMD_REJECT] = cmd_reject,
    [RDMA_USER_CM_CMD_DISCONNECT] = cmd_disconnect,
    [RDMA_USER_CM_CMD_INIT_QP_ATTR] = cmd_init_qp_attr,
    [RDMA_USER_CM_CMD_SET_OPTION] = cmd_set_option,
    [RDMA_USER_CM_CMD_NOTIFY] = cmd_notify,
    [RDMA_USER_CM_CMD_MIGRATE_ID] = cmd_migrate_id,
    [RDMA_USER_CM_CMD_BIND] = cmd_bind,
    [RDMA_USER_CM_CMD_RESOLVE_ADDR] = cmd_resolve_addr,
    [RDMA_USER_CM_CMD_JOIN_IP_MCAST] = cmd_join_ip_mcast,
    [RDMA_USER_CM_CMD_LEAVE_MCAST] = cmd_leave_mcast,
    [RDMA_USER_CM_CMD_JOIN_MCAST] = cmd_join_mcast,
};

static int get_event(struct vfab_cm_file *f, uint64_t response, size_t out)
{
	for (;;) {
		struct vfab_cm_event *e;
		eventfd_t v;

		if (eventfd_read(f->fd, &v))
			return -errno;
		vfab_cm_lock();
		e = vfab_cm_event_pop(f);
		vfab_cm_unlock();
		if (e) {
			int ret = respond(response, out, &e->resp, sizeof(e->resp));

			free(e);
			return ret;
		}
		/* A token of an event dropped with its ID: wait for the next. */
	}
}

/* What goes with an ID: its connection's resources, its multicast memberships. */
static void id_gone(struct vfab_cm_id *id)
{
	vfab_cm_conn_forget(id);
	vfab_cm_mc_forget(id);
}

EXPORT int vfab_cm_file_open(int fd)
{
	struct vfab_cm_file *f;
	int ret;

	vfab_cm_id_on_free(id_gone);
	ret = vfab_cm_agent_start(&hooks);
	if (ret)
		return ret;
	vfab_cm_lock();
	f = vfab_cm_file_add(fd);
	ret = f ? install(f) : -ENOMEM;
	if (ret && f)
		vfab_cm_file_free(f);
	vfab_cm_unlock();
	return ret;
}

EXPORT ssize_t vfab_cm_file_write(int fd, const void *buf, size_t len)
{
	const struct rdma_ucm_cmd_hdr *h = buf;
	const uint8_t *body = (const uint8_t *)buf + sizeof(*h);
	struct vfab_cm_file *f;
	int ret;

	if (len < sizeof(*h) || h->in + sizeof(*h) > len)
		return -EINVAL;
	vfab_cm_lock();
	f = vfab_cm_file_find(fd);
	ret = f ? 0 : -EBADF;
	if (!ret && h->cmd != RDMA_USER_CM_CMD_GET_EVENT)
		ret = h->cmd < sizeof(cmds) / sizeof(cmds[0]) && cmds[h->cmd]
			  ? cmds[h->cmd](f, body, h->in, h->out)
			  : -ENOSYS;
	vfab_cm_dbg("fd %d command %u: %d", fd, h->cmd, ret);
	vfab_cm_unlock();
	if (!ret && h->cmd == RDMA_USER_CM_CMD_GET_EVENT) {
		struct rdma_ucm_get_event c = {0};

		memcpy(&c, body, h->in < sizeof(c) ? h->in : sizeof(c));
		ret = get_event(f, c.response, h->out);
	}
	return ret ? ret : (ssize_t)len;
}

EXPORT void vfab_cm_file_close(int fd)
{
	struct vfab_cm_file *f;
	struct vfab_cm_id *id;

	vfab_cm_lock();
	f = vfab_cm_file_find(fd);
	while (f) {
		/* One at a time: destroying an ID may free others (requests it queued). */
		for (id = vfab_cm_id_next(NULL); id && id->file != f; id = vfab_cm_id_next(id))
			;
		if (!id)
			break;
		vfab_cm_destroy(id);
	}
	if (f)
		vfab_cm_file_free(f);
	vfab_cm_unlock();
}
