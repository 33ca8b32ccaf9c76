/* SPDX-License-Identifier: MIT */
/* RC connection set-up over TCP (see rc_endpoint.h). */
#include "rc_endpoint.h"
#include "bench_util.h"

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	if (!list)
		return NULL;
	for (int i = 0; list[i]; i++) {
		if (!name || !strcmp(ibv_get_device_name(list[i]), name)) {
			ctx = ibv_open_device(list[i]);
			break;
		}
	}
	ibv_free_device_list(list);
	return ctx;
}

static uint32_t random_psn(void)
{
	return (uint32_t)(bench_now_ns() * 2654435761u) & 0xffffff;
}

int rc_open(struct rc_endpoint *e, const struct rc_opts *o)
{
	struct ibv_qp_init_attr qia = {0};
	struct ibv_qp_attr a = {0};
	struct ibv_port_attr pa;
	union ibv_gid gid;

	memset(e, 0, sizeof(*e));
	e->ctx = open_device(o->dev);
	if (!e->ctx)
		return -ENODEV;
	if (ibv_query_port(e->ctx, 1, &pa) || ibv_query_gid(e->ctx, 1, o->gid_index, &gid))
		return -EINVAL;
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, (int)o->cq_depth, NULL, NULL, 0);
	/* Anonymous memory starts as zeros: an undelivered byte never looks written. */
	e->buf = mmap(NULL, o->buf_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!e->pd || !e->cq || e->buf == MAP_FAILED) {
		e->buf = NULL;
		return -ENOMEM;
	}
	e->buf_len = o->buf_len;
	e->mr =
	    ibv_reg_mr(e->pd, e->buf, o->buf_len,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!e->mr)
		return -errno;
	qia.send_cq = e->cq;
	qia.recv_cq = e->cq;
	qia.qp_type = IBV_QPT_RC;
	qia.cap.max_send_wr = o->max_wr;
	qia.cap.max_recv_wr = o->max_wr;
	qia.cap.max_send_sge = 1;
	qia.cap.max_recv_sge = 1;
	e->qp = ibv_create_qp(e->pd, &qia);
	if (!e->qp)
		return -errno;
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	if (ibv_modify_qp(e->qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -errno;
	e->self.qpn = e->qp->qp_num;
	e->self.psn = random_psn();
	memcpy(e->self.gid, gid.raw, sizeof(e->self.gid));
	e->self.addr = (uintptr_t)e->buf;
	e->self.len = o->buf_len;
	e->self.rkey = e->mr->rkey;
	e->self.mtu = pa.active_mtu;
	return 0;
}

int rc_connect(struct rc_endpoint *e, const struct rc_opts *o)
{
	struct ibv_qp_attr a = {0};

	a.qp_state = IBV_QPS_RTR;
	/* The path MTU both ports can carry, as perftest negotiates it. */
	a.path_mtu = e->self.mtu < e->peer.mtu ? e->self.mtu : e->peer.mtu;
	a.dest_qp_num = e->peer.qpn;
	a.rq_psn = e->peer.psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.sgid_index = (uint8_t)o->gid_index;
	memcpy(a.ah_attr.grh.dgid.raw, e->peer.gid, sizeof(e->peer.gid));
	if (ibv_modify_qp(e->qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = o->timeout;
	a.retry_cnt = o->retry_cnt;
	a.rnr_retry = 7; /* a receiver that falls behind is waited for, not an error */
	a.sq_psn = e->self.psn;
	a.max_rd_atomic = 16;
	if (ibv_modify_qp(e->qp, &a,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return -errno;
	return 0;
}

void rc_close(struct rc_endpoint *e)
{
	if (e->qp)
		ibv_destroy_qp(e->qp);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->buf)
		munmap(e->buf, e->buf_len);
	if (e->cq)
		ibv_destroy_cq(e->cq);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->ctx)
		ibv_close_device(e->ctx);
	memset(e, 0, sizeof(*e));
}

int tcp_listen_on(const char *port)
{
	struct addrinfo hints = {.ai_family = AF_INET,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE},
			*res;
	int fd, one = 1, rc;

	rc = getaddrinfo(NULL, port, &hints, &res);
	if (rc)
		return -EINVAL;
	fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, 1)) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return rc;
	}
	freeaddrinfo(res);
	return fd;
}

int tcp_accept_one(int lfd)
{
	int fd;

	do
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : fd;
}

int tcp_connect_to(const char *host, const char *port, int retry_seconds)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
	uint64_t deadline = bench_now_ns() + (uint64_t)retry_seconds * 1000000000ull;
	int fd, rc;

	if (getaddrinfo(host, port, &hints, &res))
		return -EINVAL;
	for (;;) {
		fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			rc = -errno;
			break;
		}
		if (!connect(fd, res->ai_addr, res->ai_addrlen)) {
			rc = fd;
			break;
		}
		rc = -errno;
		close(fd);
		/* The server may still be opening its device: try again for a while. */
		if (bench_now_ns() > deadline)
			break;
		nanosleep(&(struct timespec){.tv_nsec = 50000000}, NULL);
	}
	freeaddrinfo(res);
	return rc;
}

int rc_exchange(struct rc_endpoint *e, int fd)
{
	int rc = bench_write_full(fd, &e->self, sizeof(e->self));

	return rc ? rc : bench_read_full(fd, &e->peer, sizeof(e->peer));
}

int rc_poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	uint64_t deadline = bench_now_ns() + (uint64_t)ms * 1000000ull;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n < 0 ? -EIO : 1;
		if (bench_now_ns() > deadline)
			return 0;
		bench_cpu_relax();
	}
}
