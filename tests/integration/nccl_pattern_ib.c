/* SPDX-License-Identifier: MIT */
/*
 * nccl_pattern (see nccl_pattern.c): opening the device, registering
 * buffers and connecting QPs with the calls and attributes NCCL's net_ib
 * uses (notes: NCCL 2.21-2.30), each checked on the way.
 */
#include "nccl_pattern.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The kernel's gid_attrs/types/<i> for port 1, "" when unreadable. */
static void gid_type(struct np_side *s, int i, char *out, size_t len)
{
	char path[256];
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/gid_attrs/types/%d",
		 ibv_get_device_name(s->ctx->device), NP_PORT, i);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
}

static bool ipv4_mapped(const union ibv_gid *g)
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(g->raw, prefix, sizeof(prefix));
}

/*
 * NCCL's auto-selection: every index up to gid_tbl_len is queried and must
 * answer; the IPv4 GID whose sysfs type says RoCE v2 wins.
 */
static int pick_gid(struct np_side *s, int tbl_len)
{
	int i, bad = 0, pick = -1;
	char type[32];

	for (i = 0; i < tbl_len; i++) {
		union ibv_gid g;

		if (ibv_query_gid(s->ctx, NP_PORT, i, &g)) {
			bad++;
			continue;
		}
		if (pick >= 0 || !ipv4_mapped(&g))
			continue;
		gid_type(s, i, type, sizeof(type));
		if (!strcmp(type, "RoCE v2"))
			pick = i;
	}
	np_check(s, bad == 0 && pick >= 0, "GID auto-selection: all indices answer, IPv4 RoCE v2",
		 "%d failed ibv_query_gid, picked %d", bad, pick);
	return pick;
}

int np_open(struct np_side *s, struct ibv_device *dev, int want_gid)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	int pick;

	s->ctx = ibv_open_device(dev);
	if (!np_check(s, s->ctx != NULL, "ibv_open_device", "%s", strerror(errno)))
		return -1;
	if (!np_check(s, !ibv_query_device(s->ctx, &da) && da.phys_port_cnt >= 1 && da.max_qp > 0,
		      "ibv_query_device", "no usable attributes") ||
	    !np_check(s,
		      !ibv_query_port(s->ctx, NP_PORT, &pa) && pa.state == IBV_PORT_ACTIVE &&
			  pa.link_layer == IBV_LINK_LAYER_ETHERNET && pa.gid_tbl_len > 0,
		      "port ACTIVE, link layer Ethernet (RoCE)", "state %d link layer %d", pa.state,
		      pa.link_layer))
		return -1;
	s->mtu = pa.active_mtu;
	pick = pick_gid(s, pa.gid_tbl_len);
	s->gid_index = want_gid >= 0 ? want_gid : pick;
	if (want_gid >= 0)
		np_check(s, pick == want_gid, "auto-selected GID is the one asked for",
			 "picked %d, asked %d", pick, want_gid);
	if (s->gid_index < 0 || ibv_query_gid(s->ctx, NP_PORT, s->gid_index, &s->gid))
		return -1;
	s->pd = ibv_alloc_pd(s->ctx);
	return np_check(s, s->pd != NULL, "ibv_alloc_pd", "%s", strerror(errno)) ? 0 : -1;
}

static struct ibv_mr *reg(struct np_side *s, void *addr, size_t len, const char *what)
{
	struct ibv_mr *mr = ibv_reg_mr_iova2(s->pd, addr, len, (uintptr_t)addr, NP_MR_ACCESS);

	np_check(s, mr != NULL, what, "%s", strerror(errno));
	return mr;
}

/* A /dev/shm file mapping, as NCCL's host buffers for the network often are. */
static void *shm_buffer(size_t len)
{
	char path[64];
	void *p;
	int fd;

	snprintf(path, sizeof(path), "/dev/shm/nccl_pattern.%d", (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	unlink(path);
	if (ftruncate(fd, (off_t)len)) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* Page-locked memory, as cudaHostAlloc gives. */
static void *pinned_buffer(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (mlock(p, len))
		memset(p, 0, len); /* no RLIMIT_MEMLOCK: at least every page present */
	return p;
}

int np_register(struct np_side *s, bool receiver)
{
	struct ibv_mr *mr;
	size_t fifo_len = NP_SLOTS * sizeof(struct np_cts);

	s->slot_bytes = s->bench_size ? s->bench_size : NP_SLOT_BYTES;
	s->depth = s->bench_size ? NP_BENCH_DEPTH : NP_SLOTS;

	errno = 0;
	mr = ibv_reg_dmabuf_mr(s->pd, 0, 0, 0, -1, 0);
	np_check(s, !mr && (errno == EOPNOTSUPP || errno == EPROTONOSUPPORT),
		 "DMA-BUF probe ibv_reg_dmabuf_mr(pd,0,0,0,-1,0) says unsupported", "%s, errno %s",
		 mr ? "registered" : "failed", strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);

	s->data_len = (size_t)s->depth * s->slot_bytes;
	s->data = receiver ? shm_buffer(s->data_len) : pinned_buffer(s->data_len);
	if (!s->data)
		return -1;
	s->data_mr = reg(s, s->data, s->data_len,
			 receiver ? "ibv_reg_mr_iova2 RELAXED_ORDERING on a /dev/shm mapping"
				  : "ibv_reg_mr_iova2 RELAXED_ORDERING on pinned memory");
	if (posix_memalign((void **)&s->fifo, 4096, fifo_len))
		return -1;
	memset(s->fifo, 0, fifo_len);
	s->fifo_mr = reg(s, s->fifo, fifo_len, "ibv_reg_mr_iova2 on a posix_memalign'd FIFO");
	if (!s->data_mr || !s->fifo_mr)
		return -1;
	if (!receiver)
		return 0;
	if (posix_memalign((void **)&s->flush_buf, 4096, 4096))
		return -1;
	s->flush_mr =
	    ibv_reg_mr(s->pd, s->flush_buf, sizeof(*s->flush_buf), IBV_ACCESS_LOCAL_WRITE);
	return np_check(s, s->flush_mr != NULL, "4-byte flush buffer registered", "%s",
			strerror(errno))
		   ? 0
		   : -1;
}

static int to_init(struct ibv_qp *qp, int access)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
				.pkey_index = 0,
				.port_num = NP_PORT,
				.qp_access_flags = (unsigned int)access};

	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static struct ibv_qp *create_rc(struct np_side *s, uint32_t send_depth, uint32_t recv_depth)
{
	struct ibv_qp_init_attr a = {
	    .send_cq = s->cq,
	    .recv_cq = s->cq,
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = send_depth,
		    .max_recv_wr = recv_depth,
		    .max_send_sge = 1,
		    .max_recv_sge = 1,
		    .max_inline_data = 0},
	};

	return ibv_create_qp(s->pd, &a);
}

int np_create_qps(struct np_side *s, bool receiver)
{
	struct ibv_ece ece;
	int rc;

	/* One CQ for sends and receives, polled only: no completion channel. */
	s->cq = ibv_create_cq(s->ctx, 2 * (NP_SEND_DEPTH + NP_RECV_DEPTH), NULL, NULL, 0);
	if (!np_check(s, s->cq != NULL, "ibv_create_cq without a channel", "%s", strerror(errno)))
		return -1;
	s->qp = create_rc(s, NP_SEND_DEPTH, NP_RECV_DEPTH);
	if (!np_check(s, s->qp != NULL, "RC QP: 1 SGE, no inline, send 512, recv 256, one CQ", "%s",
		      strerror(errno)))
		return -1;
	memset(&ece, 0, sizeof(ece));
	rc = ibv_query_ece(s->qp, &ece);
	np_check(s, rc == EOPNOTSUPP || rc == ENOTSUP, "ibv_query_ece says unsupported",
		 "returned %d", rc);
	if (!np_check(s,
		      !to_init(s->qp, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
					  IBV_ACCESS_REMOTE_ATOMIC),
		      "INIT: pkey 0, port 1, REMOTE_WRITE|READ|ATOMIC", "%s", strerror(errno)))
		return -1;
	if (!receiver)
		return 0;
	s->flush_qp = create_rc(s, 64, 1);
	return np_check(s,
			s->flush_qp &&
			    !to_init(s->flush_qp, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ),
			"flush QP created and in INIT", "%s", strerror(errno))
		   ? 0
		   : -1;
}

void np_local_info(const struct np_side *s, struct np_info *out)
{
	memset(out, 0, sizeof(*out));
	out->qpn = s->qp->qp_num;
	out->port = NP_PORT;
	out->mtu = (uint8_t)s->mtu;
	memcpy(out->gid, s->gid.raw, sizeof(out->gid));
	out->data_addr = (uintptr_t)s->data;
	out->data_rkey = s->data_mr->rkey;
	out->fifo_addr = (uintptr_t)s->fifo;
	out->fifo_rkey = s->fifo_mr->rkey;
}

/* RTR and RTS with NCCL's values; the AV's port is the remote side's port. */
static int rtr_rts(struct np_side *s, struct ibv_qp *qp, const struct np_info *to)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)(to->mtu < s->mtu ? to->mtu : s->mtu);
	a.dest_qp_num = to->qpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	memcpy(a.ah_attr.grh.dgid.raw, to->gid, sizeof(to->gid));
	a.ah_attr.grh.flow_label = 0;
	a.ah_attr.grh.sgid_index = (uint8_t)s->gid_index;
	a.ah_attr.grh.hop_limit = 255;
	a.ah_attr.grh.traffic_class = 0;
	a.ah_attr.sl = 0;
	a.ah_attr.src_path_bits = 0;
	a.ah_attr.port_num = to->port;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 20;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

int np_connect(struct np_side *s)
{
	struct np_info self;

	if (!np_check(s, !rtr_rts(s, s->qp, &s->peer),
		      "RTR (global, hop limit 255, peer's port) and RTS (timeout 20, 7/7)", "%s",
		      strerror(errno)))
		return -1;
	if (!s->flush_qp)
		return 0;
	np_local_info(s, &self);
	self.qpn = s->flush_qp->qp_num;
	return np_check(s, !rtr_rts(s, s->flush_qp, &self),
			"flush QP connected to itself (own QPN, own GID)", "%s", strerror(errno))
		   ? 0
		   : -1;
}

/* NCCL's async thread: blocks in ibv_get_async_event until the end. */
static void *async_main(void *arg)
{
	struct np_side *s = arg;
	struct ibv_async_event ev;

	while (!ibv_get_async_event(s->ctx, &ev)) {
		s->async_last = ev.event_type;
		s->async_events++;
		ibv_ack_async_event(&ev);
	}
	return NULL;
}

void np_async_start(struct np_side *s)
{
	s->async_started = !pthread_create(&s->async_thread, NULL, async_main, s);
	np_check(s, s->async_started, "a thread blocks in ibv_get_async_event", "no thread");
}

void np_async_stop(struct np_side *s)
{
	if (!s->async_started)
		return;
	/* read() is a cancellation point: the thread leaves the blocked call. */
	pthread_cancel(s->async_thread);
	pthread_join(s->async_thread, NULL);
	s->async_started = false;
}

void np_teardown(struct np_side *s, const char *when)
{
	char name[128];
	int rc = 0;

	np_check(s, s->async_events == 0, "no async event during the run", "%d event(s), last %s",
		 s->async_events, ibv_event_type_str((enum ibv_event_type)s->async_last));
	np_async_stop(s);
	if (s->flush_qp)
		rc |= ibv_destroy_qp(s->flush_qp);
	snprintf(name, sizeof(name), "ibv_destroy_qp while the peer is %s", when);
	np_check(s, !ibv_destroy_qp(s->qp) && !rc, name, "failed");
	rc = ibv_dereg_mr(s->data_mr) | ibv_dereg_mr(s->fifo_mr);
	if (s->flush_mr)
		rc |= ibv_dereg_mr(s->flush_mr);
	snprintf(name, sizeof(name), "ibv_dereg_mr while the peer is %s", when);
	np_check(s, !rc, name, "failed");
	rc = ibv_destroy_cq(s->cq) | ibv_dealloc_pd(s->pd);
	snprintf(name, sizeof(name), "ibv_destroy_cq, ibv_dealloc_pd while the peer is %s", when);
	np_check(s, !rc, name, "failed");
	snprintf(name, sizeof(name), "ibv_close_device while the peer is %s", when);
	np_check(s, !ibv_close_device(s->ctx), name, "failed");
	munmap(s->data, s->data_len);
	free(s->fifo);
	free(s->flush_buf);
}
