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

#include "cm/cm_conn.h"
#include "cm/cm_id.h"
#include "cm/cm_log.h"

#define EXPORT __attribute__((visibility("default")))

/* The command body after the header, zero-padded to the size we read. */
#define BODY(type, name)                                                                           \
	type name;                                                                                 \
	memset(&name, 0, sizeof(name));                                                            \
	memcpy(&name, body, in < sizeof(name) ? in : sizeof(name))

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

static int query_route(struct vfab_cm_id *id, struct rdma_ucm_query_route_resp *r)
{
	memset(r, 0, sizeof(*r));
	r->node_guid = vfab_cm_node_guid(id);
	r->ibdev_index = UINT32_MAX; /* match by GUID */
	r->port_num = id->have_dev ? id->loc.port : 0;
	addr_out(&r->src_addr, &id->src);
	addr_out(&r->dst_addr, &id->dst);
	if (id->have_dev) {
		int mtu = id->qp.connected ? id->qp.mtu : id->loc.mtu;

		vfab_cm_path_fill(&r->ib_route[0], id->loc.gid, id->dgid, mtu, id->tos);
		if (id->route)
			r->num_paths = 1;
	}
	return 0;
}

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

static int set_option(struct vfab_cm_id *id, const struct rdma_ucm_set_option *c)
{
	uint8_t v = 0;

	if (c->level != RDMA_OPTION_ID)
		return -ENOSYS; /* RDMA_OPTION_IB_PATH: no SA here */
	if (c->optlen && c->optval)
		memcpy(&v, (const void *)(uintptr_t)c->optval, 1);
	switch (c->optname) {
	case RDMA_OPTION_ID_TOS:
		id->tos = v;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
	case RDMA_OPTION_ID_AFONLY:
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		id->ack_timeout = v;
		/* A passive side's QP parameters came with the REQ: RTS reads them. */
		id->qp.timeout = v;
		return 0;
	default:
		return -ENOSYS;
	}
}

static int migrate(struct vfab_cm_file *f, const struct rdma_ucm_migrate_id *c, size_t out)
{
	struct vfab_cm_file *from = vfab_cm_file_find((int)c->fd);
	struct vfab_cm_id *id = from ? my_id(from, c->id) : NULL;
	struct rdma_ucm_migrate_resp r;

	if (!id)
		return -EINVAL;
	id->file = f;
	vfab_cm_event_move(id, from);
	r.events_reported = id->events_reported;
	return respond(c->response, out, &r, sizeof(r));
}

static int command(struct vfab_cm_file *f, uint32_t cmd, const void *body, size_t in, size_t out)
{
	struct vfab_cm_id *id;

	switch (cmd) {
	case RDMA_USER_CM_CMD_CREATE_ID: {
		BODY(struct rdma_ucm_create_id, c);
		struct rdma_ucm_create_id_resp r;

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
	case RDMA_USER_CM_CMD_DESTROY_ID: {
		BODY(struct rdma_ucm_destroy_id, c);
		struct rdma_ucm_destroy_id_resp r;

		id = my_id(f, c.id);
		if (!id)
			return -EINVAL;
		r.events_reported = id->events_reported;
		vfab_cm_destroy(id);
		return respond(c.response, out, &r, sizeof(r));
	}
	case RDMA_USER_CM_CMD_BIND_IP: {
		BODY(struct rdma_ucm_bind_ip, c);

		id = my_id(f, c.id);
		return id ? vfab_cm_bind(id, (struct sockaddr *)&c.addr) : -EINVAL;
	}
	case RDMA_USER_CM_CMD_BIND: {
		BODY(struct rdma_ucm_bind, c);

		id = my_id(f, c.id);
		return id ? vfab_cm_bind(id, (struct sockaddr *)&c.addr) : -EINVAL;
	}
	case RDMA_USER_CM_CMD_RESOLVE_IP: {
		BODY(struct rdma_ucm_resolve_ip, c);

		id = my_id(f, c.id);
		return id ? vfab_cm_resolve_addr(id, (struct sockaddr *)&c.src_addr,
						 (struct sockaddr *)&c.dst_addr, (int)c.timeout_ms)
			  : -EINVAL;
	}
	case RDMA_USER_CM_CMD_RESOLVE_ADDR: {
		BODY(struct rdma_ucm_resolve_addr, c);

		id = my_id(f, c.id);
		return id ? vfab_cm_resolve_addr(id,
						 c.src_size ? (struct sockaddr *)&c.src_addr : NULL,
						 (struct sockaddr *)&c.dst_addr, (int)c.timeout_ms)
			  : -EINVAL;
	}
	case RDMA_USER_CM_CMD_RESOLVE_ROUTE: {
		BODY(struct rdma_ucm_resolve_route, c);

		id = my_id(f, c.id);
		return id ? vfab_cm_resolve_route(id) : -EINVAL;
	}
	case RDMA_USER_CM_CMD_QUERY_ROUTE: {
		BODY(struct rdma_ucm_query, c);
		struct rdma_ucm_query_route_resp r;

		id = my_id(f, c.id);
		if (!id)
			return -EINVAL;
		query_route(id, &r);
		return respond(c.response, out, &r, sizeof(r));
	}
	case RDMA_USER_CM_CMD_CONNECT: {
		BODY(struct rdma_ucm_connect, c);

		id = my_id(f, c.id);
		return id ? vfab_cm_connect(id, &c.conn_param) : -EINVAL;
	}
	case RDMA_USER_CM_CMD_LISTEN: {
		BODY(struct rdma_ucm_listen, c);

		id = my_id(f, c.id);
		return id ? vfab_cm_listen(id) : -EINVAL;
	}
	case RDMA_USER_CM_CMD_ACCEPT: {
		BODY(struct rdma_ucm_accept, c);

		id = my_id(f, c.id);
		return id ? vfab_cm_accept(id, c.uid, &c.conn_param) : -EINVAL;
	}
	case RDMA_USER_CM_CMD_REJECT: {
		BODY(struct rdma_ucm_reject, c);

		id = my_id(f, c.id);
		return id ? vfab_cm_reject(id, c.reason, c.private_data, c.private_data_len)
			  : -EINVAL;
	}
	case RDMA_USER_CM_CMD_DISCONNECT: {
		BODY(struct rdma_ucm_disconnect, c);

		id = my_id(f, c.id);
		return id ? vfab_cm_disconnect(id) : -EINVAL;
	}
	case RDMA_USER_CM_CMD_INIT_QP_ATTR: {
		BODY(struct rdma_ucm_init_qp_attr, c);
		struct ib_uverbs_qp_attr r;
		int ret;

		id = my_id(f, c.id);
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
	case RDMA_USER_CM_CMD_SET_OPTION: {
		BODY(struct rdma_ucm_set_option, c);

		id = my_id(f, c.id);
		return id ? set_option(id, &c) : -EINVAL;
	}
	case RDMA_USER_CM_CMD_NOTIFY: {
		BODY(struct rdma_ucm_notify, c);

		id = my_id(f, c.id);
		return id ? vfab_cm_notify(id, (int)c.event) : -EINVAL;
	}
	case RDMA_USER_CM_CMD_MIGRATE_ID: {
		BODY(struct rdma_ucm_migrate_id, c);

		return migrate(f, &c, out);
	}
	default:
		/* QUERY (AF_IB), GET_OPTION, multicast: not offered. */
		return -ENOSYS;
	}
}

EXPORT int vfab_cm_file_open(int fd)
{
	struct vfab_cm_file *f;
	int ret = vfab_cm_agent_start();

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
		ret = command(f, h->cmd, body, h->in, h->out);
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
