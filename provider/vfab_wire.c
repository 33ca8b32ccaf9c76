/* SPDX-License-Identifier: MIT */
/* RC and UD QPs on the RoCE wire (see vfab_wire.h). */
#include "provider/vfab_wire.h"
#include "base/paths.h"
#include "fabric/roce_rc.h"
#include "fabric/roce_wire.h"
#include "provider/vfab_counters.h"
#include "provider/vfab_resp_check.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* How long vfabd may take to answer a BIND. */
#define BIND_WAIT_MS 2000
/* The thread looks at closed QPs and timers at least this often. */
#define LOOK_MS 100
#define SNDBUF_BYTES (4 << 20)

/* A READ's local buffers, where its reply lands. */
struct wire_rd {
	struct iovec iov[VFAB_MAX_SGE + 1];
	unsigned int n;
};

struct vfab_wire {
	struct vfab_wire *next; /* the process's list (wires_lock) */
	int fd;			/* the QP's wire.sock connection */
	bool dead;		/* vfabd hung up: no more packets either way */
	pthread_mutex_t lock;	/* everything below */
	struct vfab_qp *qp;	/* NULL once closed: the thread frees the rest */
	uint32_t hca, port, qpn;
	uint8_t sgid[16], dgid[16];
	uint16_t sport;
	uint8_t tclass, hop_limit;
	uint32_t flow_label;
	bool req_on; /* RTS reached: the requester runs */
	struct roce_req req;
	struct roce_resp resp;
	/* Per requester ring position: a gathered copy to send, a READ's buffers. */
	void *bounce[ROCE_RC_MAX_WR];
	struct wire_rd rd[ROCE_RC_MAX_WR];
	uint32_t slot_head; /* ring position of the oldest WR not complete */
	/*
	 * What the completer decided that the send queue has not taken: so
	 * many WRs acknowledged, then (when not 0) the status of the one that
	 * failed. The WRs after a failed one are the send queue's to flush.
	 */
	uint32_t acked;
	uint32_t failed;
	/* The responder's SEND in progress: its receive WQE and buffers (pinned). */
	bool rw_on;
	struct vfab_resp_rwqe rw;
	struct iovec riov[VFAB_MAX_SRQ_SGE];
	struct vfab_mr_slot *rpins[VFAB_MAX_SRQ_SGE];
	unsigned int rn;
	uint64_t rcap;
	bool se; /* the request being handled asks for a solicited event */
	/* The request as the responder's rules read it (vfab_resp_check.h). */
	struct vfab_swqe req_wqe;
};

static pthread_mutex_t wires_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vfab_wire *wires;
static int wires_ep = -1;
/* The waiting thread's: the send queue of a QP has news (vfab_wire_wait). */
static void (*wire_news)(struct vfab_qp *qp);

/* ---- the responder's memory, through the rules in-host requests meet ---- */

static void msg_of(struct vfab_wire *x, struct vfab_msg *m)
{
	const struct vfab_qp *qp = x->qp;
	const struct vfab_context *ctx = qp->ctx;

	memset(m, 0, sizeof(*m));
	m->r = ctx->r;
	m->map = ctx->map;
	m->wqe = &x->req_wqe;
	m->self_pid = ctx->owner.pid;
	m->src_qpn = x->resp.dqpn;
	m->qp_type = IBV_QPT_RC;
	m->d = qp->s;
	m->kq = qp->k;
	m->memfd = -1;
	m->dst_hca = x->hca;
	m->dst_port = x->port;
}

/* The QP owner's bytes behind rkey at va (this process's own memory): pinned, or -EACCES. */
static int remote_range(struct vfab_wire *x, uint32_t access, uint32_t rkey, uint64_t va,
			uint32_t len, struct iovec *io, struct vfab_mr_slot **pin)
{
	enum ibv_wc_status st;
	struct vfab_msg m;

	x->req_wqe.rkey = rkey;
	x->req_wqe.remote_addr = va;
	msg_of(x, &m);
	return vfab_resp_check_rkey(&m, access, len, io, &st, pin) == VFAB_RESP_PASS ? 0 : -EACCES;
}

static int op_write(void *c, uint32_t rkey, uint64_t va, const uint8_t *p, uint32_t len)
{
	struct vfab_mr_slot *pin;
	struct iovec io;

	if (remote_range(c, IBV_ACCESS_REMOTE_WRITE, rkey, va, len, &io, &pin))
		return -EACCES;
	memcpy(io.iov_base, p, len);
	vfab_mr_unpin(pin);
	return 0;
}

static int op_read(void *c, uint32_t rkey, uint64_t va, uint8_t *buf, uint32_t len)
{
	struct vfab_mr_slot *pin;
	struct iovec io;

	if (remote_range(c, IBV_ACCESS_REMOTE_READ, rkey, va, len, &io, &pin))
		return -EACCES;
	if (buf)
		memcpy(buf, io.iov_base, len);
	vfab_mr_unpin(pin);
	return 0;
}

/* len bytes at p into the buffers iov[0..n), off bytes into them. */
static void scatter(const struct iovec *iov, unsigned int n, uint64_t off, const uint8_t *p,
		    uint32_t len)
{
	uint32_t at = 0;

	for (unsigned int i = 0; i < n && at < len; i++) {
		uint64_t l = iov[i].iov_len;

		if (off >= l) {
			off -= l;
			continue;
		}
		l -= off;
		if (l > len - at)
			l = len - at;
		memcpy((uint8_t *)iov[i].iov_base + off, p + at, l);
		at += (uint32_t)l;
		off = 0;
	}
}

/*
 * Atomic with respect to every vfab atomic on the same memory
 * (IBV_ATOMIC_HCA): under the lock of the MR's shard, as in-host atomics.
 */
static int op_atomic(void *c, uint32_t op, uint32_t rkey, uint64_t va, uint64_t swap_add,
		     uint64_t compare, uint64_t *orig)
{
	struct vfab_wire *x = c;
	struct vfab_region *r = x->qp->ctx->r;
	struct vfab_mr_slot *pin;
	pthread_mutex_t *lock;
	struct iovec io;
	uint64_t v;

	if (va % 8)
		return -EINVAL;
	if (remote_range(x, IBV_ACCESS_REMOTE_ATOMIC, rkey, va, 8, &io, &pin))
		return -EACCES;
	lock = &r->shard[vfab_shard_of_ptr(r, pin)].atomic_lock;
	if (vfab_lock(lock)) {
		vfab_mr_unpin(pin);
		return -EACCES;
	}
	memcpy(&v, io.iov_base, 8);
	*orig = v;
	if (op == ROCE_WR_FETCH_ADD)
		v += swap_add;
	else if (v == compare)
		v = swap_add;
	memcpy(io.iov_base, &v, 8);
	vfab_unlock(lock);
	vfab_mr_unpin(pin);
	return 0;
}

static void recv_end(struct vfab_wire *x)
{
	if (x->rw_on)
		vfab_resp_unpin_list(x->rpins, x->rn);
	x->rw_on = false;
}

/* The receive WQE taken completes with st (its buffers refused the message). */
static void recv_fail(struct vfab_wire *x, enum ibv_wc_status st)
{
	struct vfab_msg m;

	recv_end(x);
	msg_of(x, &m);
	vfab_resp_push_recv(&m, &x->rw, st, IBV_WC_RECV, 0, 0);
}

static int op_recv(void *c, uint32_t off, const uint8_t *p, uint32_t len)
{
	struct vfab_wire *x = c;
	struct vfab_msg m;

	if (off == 0) {
		recv_end(x);
		msg_of(x, &m);
		if (vfab_resp_check_rq(&m, &x->rw) != VFAB_RESP_PASS)
			return -ENOBUFS;
		if (vfab_resp_scatter_list(&m, &x->rw, x->riov, x->rpins, &x->rn, &x->rcap) !=
		    IBV_WC_SUCCESS) {
			x->rn = 0;
			x->rw_on = true;
			recv_fail(x, IBV_WC_LOC_PROT_ERR);
			return -EIO;
		}
		x->rw_on = true;
	}
	if (!x->rw_on)
		return -EIO;
	if ((uint64_t)off + len > x->rcap) {
		recv_fail(x, IBV_WC_LOC_LEN_ERR);
		return -EMSGSIZE;
	}
	scatter(x->riov, x->rn, off, p, len);
	return 0;
}

/* A SEND with invalidate's R_Key: a type 2 window of this QP, as in-host (vfab_resp.c). */
static int op_invalidate(void *c, uint32_t rkey, bool commit)
{
	struct vfab_wire *x = c;
	const struct vfab_context *ctx = x->qp->ctx;

	return vfab_mw_remote_inv(ctx->map, x->hca, x->qp->k, rkey, commit) ? 0 : -EINVAL;
}

static void op_done(void *c, uint8_t opcode, uint32_t len, bool has_imm, uint32_t imm)
{
	struct vfab_wire *x = c;
	uint8_t op = opcode & 0x1f;
	struct vfab_msg m;

	x->req_wqe.imm_data = imm;
	x->req_wqe.flags = x->se ? IBV_SEND_SOLICITED : 0;
	if (op >= ROCE_OP_WRITE_FIRST && op <= ROCE_OP_WRITE_ONLY_IMM) {
		if (!has_imm || !x->rw_on)
			return;
		/* Its receive was taken at its last packet (op_recv of no bytes). */
		x->req_wqe.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		msg_of(x, &m);
		vfab_resp_push_recv(&m, &x->rw, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, len, 0);
		recv_end(x);
		return;
	}
	x->req_wqe.opcode = has_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	if (op == ROCE_OP_SEND_LAST_INV || op == ROCE_OP_SEND_ONLY_INV) {
		x->req_wqe.opcode = IBV_WR_SEND_WITH_INV; /* the CQE says so (vfab_resp_recv_cqe) */
		x->req_wqe.inv_rkey = imm;
	}
	msg_of(x, &m);
	vfab_resp_push_recv(&m, &x->rw, IBV_WC_SUCCESS, IBV_WC_RECV, len, 0);
	recv_end(x);
}

static const struct roce_resp_ops resp_ops = {
    .write = op_write,
    .recv = op_recv,
    .read = op_read,
    .done = op_done,
    .atomic = op_atomic,
    .invalidate = op_invalidate,
};

/* ---- packets ---- */

/* The QP's port's counters (lock held, QP open), as mlx5 counts them. */
static struct vfab_port_counters *cnt(const struct vfab_wire *x)
{
	return vfab_cnt(x->qp->ctx->r, x->hca, x->port);
}

/* What the state machines did since *rq and *rs, into the port's error counters. */
static void count_events(struct vfab_wire *x, const struct roce_req_stats *rq,
			 const struct roce_resp_stats *rs)
{
	struct vfab_port_counters *c = cnt(x);

	vfab_count_event(&c->local_ack_timeout_err, x->req.st.timeouts - rq->timeouts);
	vfab_count_event(&c->packet_seq_err, x->req.st.seq_naks - rq->seq_naks);
	vfab_count_event(&c->rnr_nak_retry_err, x->req.st.rnr_naks - rq->rnr_naks);
	vfab_count_event(&c->out_of_sequence, x->resp.st.out_of_seq - rs->out_of_seq);
	vfab_count_event(&c->duplicate_request, x->resp.st.duplicates - rs->duplicates);
	vfab_count_event(&c->out_of_buffer, x->resp.st.rnr_naks - rs->rnr_naks);
}

/* Packets of the QP vfabd takes with one system call. */
#define TX_BATCH 16

/* The TX message of packet t, described in mh (its header in *m, iov[2] its parts). */
static void tx_msg(const struct vfab_wire *x, const struct roce_tx *t, struct vfab_wire_msg *m,
		   struct iovec *iov, struct mmsghdr *mh)
{
	*m = (struct vfab_wire_msg){
	    .type = VFAB_WIRE_TX,
	    .hca = x->hca,
	    .port = x->port,
	    .qpn = x->qpn,
	    .udp_sport = x->sport,
	    .tclass = x->tclass,
	    .hop_limit = x->hop_limit,
	    .flow_label = x->flow_label,
	    .bth = t->bth,
	    .ext = t->ext,
	    .paylen = t->len,
	};
	memcpy(m->sgid, x->sgid, 16);
	memcpy(m->dgid, x->dgid, 16);
	iov[0] = (struct iovec){m, sizeof(*m)};
	iov[1] = (struct iovec){(void *)t->payload, t->len};
	*mh = (struct mmsghdr){.msg_hdr = {.msg_iov = iov, .msg_iovlen = t->len ? 2 : 1}};
	vfab_count_port(cnt(x), true, t->len, 1);
}

/* n messages to vfabd (lock held). A loss here is a loss on the wire. */
static void tx_send(struct vfab_wire *x, struct mmsghdr *mh, unsigned int n)
{
	while (n && !x->dead) {
		int k = sendmmsg(x->fd, mh, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		mh += k;
		n -= (unsigned int)k;
	}
}

/* One packet of the QP (lock held): an ACK, a READ's reply, a datagram. */
static void tx(struct vfab_wire *x, const struct roce_tx *t)
{
	struct vfab_wire_msg m;
	struct iovec iov[2];
	struct mmsghdr mh;

	tx_msg(x, t, &m, iov, &mh);
	tx_send(x, &mh, 1);
}

/* Whatever the requester may send now, TX_BATCH packets per system call. */
static void pump(struct vfab_wire *x, uint64_t now)
{
	struct vfab_wire_msg m[TX_BATCH];
	struct iovec iov[TX_BATCH][2];
	struct mmsghdr mh[TX_BATCH];
	unsigned int n = 0;
	struct roce_tx t;

	while (x->req_on && roce_req_next(&x->req, now, &t) == 1) {
		tx_msg(x, &t, &m[n], iov[n], &mh[n]);
		if (++n == TX_BATCH) {
			tx_send(x, mh, n);
			n = 0;
		}
	}
	tx_send(x, mh, n);
}

/* Completions, in posting order, for the send queue to take (vfab_wire_reap). */
static void record(struct vfab_wire *x, const struct roce_wc *wc, int n)
{
	for (int i = 0; i < n; i++) {
		uint32_t slot = x->slot_head++ % ROCE_RC_MAX_WR;

		free(x->bounce[slot]);
		x->bounce[slot] = NULL;
		if (x->failed)
			continue;
		if (wc[i].status == ROCE_WC_SUCCESS)
			x->acked++;
		else
			x->failed = wc[i].status;
	}
	if (n && wire_news)
		wire_news(x->qp);
}

/* A READ's reply packet into the WR's local buffers, off bytes into it. */
static void place(void *c, const struct roce_wr *w, uint32_t off, const uint8_t *p, uint32_t len)
{
	struct vfab_wire *x = c;
	const struct wire_rd *rd = &x->rd[(uint32_t)(w - x->req.wr)];

	scatter(rd->iov, rd->n, off, p, len);
}

/* A datagram: into the next receive behind its GRH, as an in-host one (vfab_resp_ud). */
static void ud_rx(struct vfab_wire *x, const struct vfab_wire_msg *w, const uint8_t *p)
{
	struct iovec iov = {(void *)p, w->paylen};
	struct vfab_msg m;

	vfab_count_port(cnt(x), false, w->paylen, 1);
	x->req_wqe.opcode =
	    w->bth.opcode == ROCE_OP_UD_SEND_ONLY_IMM ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	x->req_wqe.imm_data = w->ext.imm;
	x->req_wqe.flags = w->bth.se ? IBV_SEND_SOLICITED : 0;
	/* The Q_Key as sent: a controlled one (high bit) is taken as it is. */
	x->req_wqe.remote_qkey = w->ext.qkey;
	msg_of(x, &m);
	m.qp_type = IBV_QPT_UD;
	m.src_qpn = w->ext.src_qpn & 0xffffff;
	m.src_qkey = w->ext.qkey;
	m.liov = &iov;
	m.nliov = w->paylen ? 1 : 0;
	m.len = w->paylen;
	m.sgid = w->sgid;
	m.dgid = w->dgid;
	m.sgid_type = VFAB_GID_ROCE_V2;
	m.traffic_class = w->tclass;
	m.hop_limit = w->hop_limit;
	m.flow_label = w->flow_label;
	vfab_resp_ud(&m);
}

/*
 * The responder's fatal NAK ends its own QP too, as in-host (vfab_resp.c):
 * receives flushed, the owner told (QP_ACCESS_ERR or QP_REQ_ERR).
 */
static void resp_fatal(struct vfab_wire *x, uint8_t syndrome)
{
	struct vfab_qp *qp = x->qp;
	bool access = syndrome == ROCE_AETH_NAK_REM_ACCESS;

	if (access)
		vfab_count_event(&cnt(x)->resp_remote_access_errors, 1);
	if (vfab_lock(&qp->s->lock))
		return;
	vfab_qp_slot_error(qp->ctx->map, qp->s, qp->k, true,
			   access ? IBV_EVENT_QP_ACCESS_ERR : IBV_EVENT_QP_REQ_ERR);
	vfab_unlock(&qp->s->lock);
}

static bool is_response(uint8_t op)
{
	return op >= ROCE_OP_READ_RESP_FIRST && op <= ROCE_OP_ATOMIC_ACK;
}

/* One packet vfabd delivered (lock held, QP open). */
static void rx(struct vfab_wire *x, const struct vfab_wire_msg *m, const uint8_t *p)
{
	struct roce_req_stats rq = x->req.st;
	struct roce_resp_stats rs = x->resp.st;
	struct roce_wc wc[ROCE_RC_MAX_WR];
	uint8_t buf[VFAB_WIRE_MAX_PAYLOAD];
	uint64_t now = vfab_mono_ns();
	struct roce_tx t;

	if ((m->bth.opcode & 0xe0) == ROCE_OP_UD) {
		if (x->qp->vqp.qp.qp_type == IBV_QPT_UD)
			ud_rx(x, m, p);
		return;
	}
	/* The connection's peer only, at the QP's own address (rxe's check_addr). */
	if (memcmp(m->sgid, x->dgid, 16) || memcmp(m->dgid, x->sgid, 16) ||
	    (m->bth.opcode & 0xe0) != ROCE_OP_RC)
		return;
	vfab_count_port(cnt(x), false, m->paylen, 1);
	if (is_response(m->bth.opcode & 0x1f)) {
		if (x->req_on)
			record(x, wc,
			       roce_comp_rx(&x->req, &m->bth, &m->ext, p, m->paylen, now, wc,
					    ROCE_RC_MAX_WR));
		pump(x, now);
	} else if (vfab_resp_receiving(atomic_load(&x->qp->s->qp_state))) {
		bool was_error = x->resp.error;

		x->se = m->bth.se;
		if (roce_resp_rx(&x->resp, &m->bth, &m->ext, p, m->paylen, &resp_ops, x, &t))
			tx(x, &t);
		while (roce_resp_next(&x->resp, &resp_ops, x, buf, &t))
			tx(x, &t);
		if (!was_error && x->resp.error)
			resp_fatal(x, t.ext.aeth_syndrome);
	}
	count_events(x, &rq, &rs);
}

/* Packets read from a connection with one system call. */
#define RX_BATCH 16

/*
 * Everything waiting on the connection; hung up: dead. Only the wire
 * thread drains, so its buffers are static.
 */
static void drain(struct vfab_wire *x)
{
	static _Alignas(8)
	    uint8_t buf[RX_BATCH][sizeof(struct vfab_wire_msg) + VFAB_WIRE_MAX_PAYLOAD];
	struct iovec iov[RX_BATCH];
	struct mmsghdr mh[RX_BATCH];
	int n;

	do {
		for (int i = 0; i < RX_BATCH; i++) {
			iov[i] = (struct iovec){buf[i], sizeof(buf[i])};
			mh[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &iov[i], .msg_iovlen = 1}};
		}
		n = recvmmsg(x->fd, mh, RX_BATCH, MSG_DONTWAIT, NULL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		for (int i = 0; i < n; i++) {
			const struct vfab_wire_msg *m = (const void *)buf[i];

			if (!mh[i].msg_len) {
				n = -1; /* end of file: vfabd went */
				break;
			}
			if (vfab_wire_msg_ok(m, mh[i].msg_len) && m->type == VFAB_WIRE_RX)
				rx(x, m, buf[i] + sizeof(*m));
		}
		if (n <= 0) {
			x->dead = true;
			epoll_ctl(wires_ep, EPOLL_CTL_DEL, x->fd, NULL);
			return;
		}
	} while (n == RX_BATCH);
}

void vfab_wire_atfork_child(void)
{
	/* Not freed: the child's copies of the parent's QPs still point at them. */
	for (struct vfab_wire *x = wires; x; x = x->next)
		close(x->fd);
	wires = NULL;
	if (wires_ep >= 0)
		close(wires_ep);
	wires_ep = -1;
	pthread_mutex_init(&wires_lock, NULL);
}

/* ACK and RNR timers; closed QPs freed. Returns ms until the next timer. */
static int look(void)
{
	struct vfab_wire **pp, *x, *gone = NULL;
	struct roce_wc wc[ROCE_RC_MAX_WR];
	uint64_t now = vfab_mono_ns(), next = now + LOOK_MS * 1000000ull;

	pthread_mutex_lock(&wires_lock);
	for (pp = &wires; (x = *pp);) {
		pthread_mutex_lock(&x->lock);
		if (!x->qp) {
			pthread_mutex_unlock(&x->lock);
			*pp = x->next;
			x->next = gone;
			gone = x;
			continue;
		}
		if (x->req_on) {
			struct roce_req_stats rq = x->req.st;

			if (x->req.deadline_ns && x->req.deadline_ns <= now)
				record(x, wc, roce_comp_timer(&x->req, now, wc, ROCE_RC_MAX_WR));
			pump(x, now);
			count_events(x, &rq, &x->resp.st);
			if (x->req.deadline_ns && x->req.deadline_ns < next)
				next = x->req.deadline_ns;
			if (x->req.hold_ns > now && x->req.hold_ns < next)
				next = x->req.hold_ns;
		}
		pthread_mutex_unlock(&x->lock);
		pp = &x->next;
	}
	pthread_mutex_unlock(&wires_lock);
	while ((x = gone)) {
		gone = x->next;
		if (!x->dead)
			epoll_ctl(wires_ep, EPOLL_CTL_DEL, x->fd, NULL);
		close(x->fd);
		for (uint32_t i = 0; i < ROCE_RC_MAX_WR; i++)
			free(x->bounce[i]);
		pthread_mutex_destroy(&x->lock);
		free(x);
	}
	now = vfab_mono_ns();
	return next <= now ? 0 : (int)((next - now + 999999) / 1000000);
}

void vfab_wire_wait(void (*news)(struct vfab_qp *qp))
{
	static int wait;
	struct epoll_event ev[32];
	int n = epoll_wait(wires_ep, ev, 32, wait);

	wire_news = news;
	for (int i = 0; i < n; i++) {
		struct vfab_wire *x = ev[i].data.ptr;

		pthread_mutex_lock(&x->lock);
		if (x->qp && !x->dead)
			drain(x);
		pthread_mutex_unlock(&x->lock);
	}
	wait = look();
}

/* ---- binding ---- */

/* A connection to vfabd's wire bound to the QP: its fd, or -errno. */
static int bind_qp(const struct vfab_context *ctx, uint32_t port, uint32_t qpn)
{
	struct vfab_wire_msg m = {
	    .type = VFAB_WIRE_BIND, .hca = ctx->hca_idx, .port = port, .qpn = qpn};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct pollfd pf;
	int fd, rc, sz = SNDBUF_BYTES;
	ssize_t n;

	if (vfab_wire_sock_path(sa.sun_path, sizeof(sa.sun_path), ctx->dev->rundir))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    send(fd, &m, sizeof(m), MSG_NOSIGNAL) != (ssize_t)sizeof(m)) {
		rc = -errno;
		goto fail;
	}
	pf = (struct pollfd){.fd = fd, .events = POLLIN};
	rc = -ETIMEDOUT;
	if (poll(&pf, 1, BIND_WAIT_MS) != 1)
		goto fail;
	n = recv(fd, &m, sizeof(m), 0);
	rc = -EPROTO;
	if (!vfab_wire_msg_ok(&m, n > 0 ? (size_t)n : 0) || m.type != VFAB_WIRE_BIND)
		goto fail;
	rc = m.err;
	if (rc)
		goto fail;
	return fd;
fail:
	close(fd);
	return rc < 0 ? rc : -EPROTO;
}

int vfab_wire_rtr(struct vfab_qp *qp)
{
	struct vfab_context *ctx = qp->ctx;
	const struct ibv_qp_attr *a = &qp->attr;
	bool ud = qp->vqp.qp.qp_type == IBV_QPT_UD;
	uint32_t port = qp->s->port;
	const struct vfab_gid *g = NULL;
	struct epoll_event ev;
	struct vfab_route rt;
	struct vfab_wire *x;
	int fd, rc = 0;

	if (qp->wire || !port || port > ctx->hca->nports)
		return -EINVAL;
	/* A UD QP may hear from another machine whatever it sends to: always bound. */
	if (!ud && !vfab_route_resolve(ctx->r, ctx->hca_idx, port, a->ah_attr.grh.sgid_index,
				       a->ah_attr.grh.dgid.raw, &rt))
		return -ENOENT;
	if (!ud && !(g = vfab_port_gid(&ctx->hca->ports[port - 1], a->ah_attr.grh.sgid_index)))
		return -EINVAL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	fd = bind_qp(ctx, port, qp->qpn);
	if (fd < 0) {
		vfab_dbg("qp %u: no RoCE wire to the destination: %s", qp->qpn, strerror(-fd));
		free(x);
		return fd;
	}
	x->fd = fd;
	pthread_mutex_init(&x->lock, NULL);
	x->qp = qp;
	x->hca = ctx->hca_idx;
	x->port = port;
	x->qpn = qp->qpn;
	/* RoCE v2's flow entropy: one UDP source port per connection. */
	x->sport = (uint16_t)(ROCE_V2_UDP_SPORT_DEFAULT | ((qp->qpn ^ a->dest_qp_num) & 0x3fff));
	if (!ud) {
		memcpy(x->sgid, g->raw, 16);
		memcpy(x->dgid, a->ah_attr.grh.dgid.raw, 16);
		rc = roce_resp_init(&x->resp, a->dest_qp_num, qp->req.mtu_bytes, a->rq_psn);
	}
	x->tclass = a->ah_attr.grh.traffic_class;
	/*
	 * The kernel replaces a RoCE AV's hop limit with its route's
	 * (ib_resolve_eth_dmac): ibv_rc_pingpong's 1 would die at the first router.
	 */
	x->hop_limit = 0;
	x->flow_label = a->ah_attr.grh.flow_label;
	x->resp.min_rnr_timer = a->min_rnr_timer;
	pthread_mutex_lock(&wires_lock);
	if (!rc && wires_ep < 0 && (wires_ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
		rc = -errno;
	ev = (struct epoll_event){.events = EPOLLIN, .data.ptr = x};
	if (!rc && epoll_ctl(wires_ep, EPOLL_CTL_ADD, fd, &ev))
		rc = -errno;
	if (!rc) {
		x->next = wires;
		wires = x;
	}
	pthread_mutex_unlock(&wires_lock);
	if (rc) {
		close(fd);
		pthread_mutex_destroy(&x->lock);
		free(x);
		return rc;
	}
	qp->wire = x;
	return 0;
}

void vfab_wire_rts(struct vfab_qp *qp)
{
	struct vfab_wire *x = qp->wire;
	const struct ibv_qp_attr *a = &qp->attr;
	/* 4.096 us * 2^timeout; 0 is infinite: no timer. */
	uint64_t t = a->timeout ? 4096ull << a->timeout : UINT64_MAX / 4;

	if (!x)
		return;
	pthread_mutex_lock(&x->lock);
	if (!x->req_on && !roce_req_init(&x->req, a->dest_qp_num, qp->req.mtu_bytes, qp->req.psn,
					 a->retry_cnt, t)) {
		x->req.rnr_retry = a->rnr_retry;
		x->req.place = place;
		x->req.place_ctx = x;
		x->req_on = true;
	}
	pthread_mutex_unlock(&x->lock);
}

void vfab_wire_close(struct vfab_qp *qp)
{
	struct vfab_wire *x = qp->wire;

	if (!x)
		return;
	qp->wire = NULL;
	pthread_mutex_lock(&x->lock);
	recv_end(x);
	x->qp = NULL;
	pthread_mutex_unlock(&x->lock);
	/* The thread wakes to the hang-up and frees it. */
	shutdown(x->fd, SHUT_RDWR);
}

/* ---- the send queue's side ---- */

bool vfab_wire_ud_send(struct vfab_qp *qp, const struct vfab_swqe *w, const struct iovec *iov,
		       unsigned int n, uint64_t len)
{
	struct vfab_context *ctx = qp->ctx;
	struct vfab_wire *x = qp->wire;
	const struct vfab_ah *ah = w->ah;
	uint8_t buf[VFAB_WIRE_MAX_PAYLOAD];
	const struct vfab_gid *g;
	struct vfab_route rt;
	struct roce_tx t = {0};
	uint64_t at = 0;

	/* Another machine's GID only: a local one the in-host path reaches or not. */
	if (!ah || ah->port != x->port || len > sizeof(buf) ||
	    !vfab_route_resolve(ctx->r, ctx->hca_idx, ah->port, ah->sgid_index, ah->dgid, &rt) ||
	    !(g = vfab_port_gid(&ctx->hca->ports[ah->port - 1], ah->sgid_index)))
		return false;
	for (unsigned int i = 0; i < n; i++) {
		memcpy(buf + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	t.bth.opcode =
	    w->opcode == IBV_WR_SEND_WITH_IMM ? ROCE_OP_UD_SEND_ONLY_IMM : ROCE_OP_UD_SEND_ONLY;
	t.bth.se = (w->flags & IBV_SEND_SOLICITED) != 0;
	t.bth.pkey = ROCE_DEFAULT_PKEY;
	t.bth.dqpn = w->remote_qpn;
	t.bth.psn = w->psn;
	/* IBA 10.2.5: a Q_Key with its high bit set stands for the QP's own. */
	t.ext.qkey = (w->remote_qkey & VFAB_UD_QKEY_HIGH_BIT) ? qp->attr.qkey : w->remote_qkey;
	t.ext.src_qpn = qp->qpn;
	t.ext.imm = w->imm_data;
	t.payload = len ? buf : NULL;
	t.len = (uint32_t)len;
	pthread_mutex_lock(&x->lock);
	memcpy(x->sgid, g->raw, 16);
	memcpy(x->dgid, ah->dgid, 16);
	x->tclass = ah->traffic_class;
	x->flow_label = ah->flow_label;
	tx(x, &t);
	pthread_mutex_unlock(&x->lock);
	return true;
}

/* WRITE*, SEND*, READ, the two atomics: not LOCAL_INV or BIND_MW, which stay local. */
static bool wire_op(uint32_t op)
{
	return op <= IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_SEND_WITH_INV;
}

/* What the responder answers with data: the WR's buffers are written, not read. */
static bool fetches(uint32_t op)
{
	return op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static enum vfab_stage fail(struct vfab_swqe *w, enum ibv_wc_status st)
{
	w->stage = VFAB_ST_FAILED;
	w->status = st;
	return VFAB_ST_FAILED;
}

enum vfab_stage vfab_wire_attempt(struct vfab_qp *qp, struct vfab_swqe *w, const struct iovec *iov,
				  unsigned int n, uint64_t len)
{
	struct vfab_wire *x = qp->wire;
	struct roce_wr r = {0};
	uint32_t slot;

	if (!wire_op(w->opcode))
		return fail(w, IBV_WC_LOC_QP_OP_ERR);
	pthread_mutex_lock(&x->lock);
	if (!x->req_on || x->req.error) {
		pthread_mutex_unlock(&x->lock);
		return fail(w, IBV_WC_WR_FLUSH_ERR);
	}
	if (x->req.tail - x->req.head == ROCE_RC_MAX_WR) {
		pthread_mutex_unlock(&x->lock);
		return VFAB_ST_QUEUED;
	}
	slot = x->req.tail % ROCE_RC_MAX_WR;
	r.wr_id = w->wr_id;
	r.opcode = w->opcode;
	r.len = (uint32_t)len;
	r.va = w->remote_addr;
	r.rkey = w->rkey;
	r.imm = w->imm_data;
	r.inv_rkey = w->inv_rkey;
	/* ibv: FETCH_ADD's addend is compare_add; CMP_SWAP compares compare_add, swaps swap. */
	r.swap_add = w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? w->swap : w->compare_add;
	r.compare = w->compare_add;
	if (fetches(w->opcode)) {
		memcpy(x->rd[slot].iov, iov, n * sizeof(iov[0]));
		x->rd[slot].n = n;
	} else if (n == 1 && !w->is_inline) {
		r.data = iov[0].iov_base;
	} else if (len) {
		/* Several segments, or inline bytes that live in the WR being posted. */
		uint8_t *b = malloc(len);
		uint64_t at = 0;

		if (!b) {
			pthread_mutex_unlock(&x->lock);
			return fail(w, IBV_WC_LOC_QP_OP_ERR);
		}
		for (unsigned int i = 0; i < n; i++) {
			memcpy(b + at, iov[i].iov_base, iov[i].iov_len);
			at += iov[i].iov_len;
		}
		x->bounce[slot] = b;
		r.data = b;
	}
	w->psn = x->req.next_psn;
	roce_req_post(&x->req, &r);
	w->npkts = x->req.wr[slot].npkts;
	w->byte_len = (uint32_t)len;
	pump(x, vfab_mono_ns());
	pthread_mutex_unlock(&x->lock);
	w->stage = VFAB_ST_WIRE;
	w->due_ns = 0;
	return VFAB_ST_WIRE;
}

void vfab_wire_reap(struct vfab_qp *qp)
{
	struct vfab_wire *x = qp->wire;
	uint32_t acked, failed;
	struct vfab_swqe *w;

	pthread_mutex_lock(&x->lock);
	acked = x->acked;
	failed = x->failed;
	x->acked = 0;
	x->failed = 0;
	pthread_mutex_unlock(&x->lock);
	for (w = qp->sq.head; w && (acked || failed); w = w->next) {
		if (w->stage != VFAB_ST_WIRE)
			continue;
		if (acked) {
			w->stage = VFAB_ST_ACKED;
			w->due_ns = 0;
			acked--;
		} else {
			w->stage = VFAB_ST_FAILED;
			w->status = failed;
			failed = 0;
		}
	}
}
