/* SPDX-License-Identifier: MIT */
#include "cm/cm_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/proc.h"
#include "cm/cm_dir.h"
#include "cm/cm_log.h"
#include "cm/cm_port.h"

#define MAX_DEVS 16
#define MAX_PORTS 2
#define NS_PER_MS 1000000ull
#define TICK_MS 50
#define RECHECK_NS 100000ull /* a REQ still "on its way" looks again after 100 us */
#define IB_SIDR_REJECT 2

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int start_err;
static struct ibv_device **devlist;
static struct ibv_context *ctxs[MAX_DEVS];
static int nctx;
static struct vfab_cm_port ports[MAX_DEVS][MAX_PORTS];
static char rundir[512];
static int wake_fd = -1; /* tells the agent thread that a port opened */

void vfab_cm_lock(void)
{
	pthread_mutex_lock(&lock);
}

void vfab_cm_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

/* ---- addresses ---- */

static socklen_t sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static uint16_t sa_port(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)ss)->sin6_port
					       : ((const struct sockaddr_in *)ss)->sin_port);
}

static void sa_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
}

/* The address bytes (4 or 16) into a[16]; and back into a sockaddr. */
static void sa_bytes(const struct sockaddr_storage *ss, uint8_t a[16])
{
	memset(a, 0, 16);
	if (ss->ss_family == AF_INET6)
		memcpy(a, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	else
		memcpy(a, &((const struct sockaddr_in *)ss)->sin_addr, 4);
}

static void sa_make(struct sockaddr_storage *ss, int family, const uint8_t a[16], uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	ss->ss_family = (sa_family_t)family;
	if (family == AF_INET6)
		memcpy(&((struct sockaddr_in6 *)ss)->sin6_addr, a, 16);
	else
		memcpy(&((struct sockaddr_in *)ss)->sin_addr, a, 4);
	sa_set_port(ss, port);
}

static uint16_t ephemeral_port(void)
{
	uint16_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint16_t)rand();
	return (uint16_t)(32768 + v % (61000 - 32768));
}

static uint32_t random_psn(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint32_t)rand();
	return v & 0xffffff;
}

/* ---- the agent ---- */

static struct vfab_cm_port *port_of(int dev, uint8_t port_num)
{
	struct vfab_cm_port *p;

	if (dev < 0 || dev >= nctx || port_num < 1 || port_num > MAX_PORTS)
		return NULL;
	p = &ports[dev][port_num - 1];
	if (!p->qp) {
		if (vfab_cm_port_open(p, ctxs[dev], port_num))
			return NULL;
		eventfd_write(wake_fd, 1); /* poll its fd from now on */
	}
	return p;
}

static void handle_msg(struct vfab_cm_port *p, int dev, const struct vfab_cm_msg *m);
static uint64_t run_timers(uint64_t now);
static void send_first_req(struct vfab_cm_id *id, uint64_t now);

static void *agent_main(void *arg)
{
	uint64_t next = 0;

	(void)arg;
	for (;;) {
		struct pollfd pfd[MAX_DEVS * MAX_PORTS + 1];
		struct vfab_cm_msg msgs[16];
		eventfd_t v;
		int n = 1;

		pfd[0] = (struct pollfd){wake_fd, POLLIN, 0};
		vfab_cm_lock();
		for (int d = 0; d < nctx; d++)
			for (int i = 0; i < MAX_PORTS; i++)
				if (ports[d][i].qp)
					pfd[n++] = (struct pollfd){vfab_cm_port_fd(&ports[d][i]),
								   POLLIN, 0};
		vfab_cm_unlock();
		struct timespec ts = {0, TICK_MS * 1000000L};
		uint64_t now = vfab_mono_ns();

		if (next && next < now + TICK_MS * NS_PER_MS)
			ts.tv_nsec = next > now ? (long)(next - now) : 0;
		ppoll(pfd, (nfds_t)n, &ts, NULL);
		if (pfd[0].revents)
			eventfd_read(wake_fd, &v);
		vfab_cm_lock();
		for (int d = 0; d < nctx; d++)
			for (int i = 0; i < MAX_PORTS; i++) {
				struct vfab_cm_port *p = &ports[d][i];
				int got;

				if (!p->qp)
					continue;
				while ((got = vfab_cm_port_recv(p, msgs, 16)) > 0)
					for (int k = 0; k < got; k++)
						handle_msg(p, d, &msgs[k]);
			}
		next = run_timers(vfab_mono_ns());
		vfab_cm_unlock();
	}
	return NULL;
}

static void agent_init(void)
{
	pthread_t t;
	pthread_attr_t a;
	int n = 0;

	wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wake_fd < 0) {
		start_err = -errno;
		return;
	}
	devlist = ibv_get_device_list(&n);
	if (!devlist || n == 0) {
		start_err = -ENODEV;
		return;
	}
	for (int i = 0; i < n && nctx < MAX_DEVS; i++) {
		ctxs[nctx] = ibv_open_device(devlist[i]);
		if (!ctxs[nctx])
			continue;
		if (!rundir[0])
			vfab_cm_dir_rundir(ibv_get_device_name(devlist[i]), rundir, sizeof(rundir));
		nctx++;
	}
	if (!nctx || !rundir[0]) {
		start_err = -ENODEV;
		return;
	}
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	start_err = pthread_create(&t, &a, agent_main, NULL) ? -EAGAIN : 0;
	pthread_attr_destroy(&a);
}

int vfab_cm_agent_start(void)
{
	pthread_once(&once, agent_init);
	return start_err;
}

uint64_t vfab_cm_node_guid(const struct vfab_cm_id *id)
{
	if (!id->have_dev)
		return 0;
	return (uint64_t)ibv_get_device_guid(ctxs[id->loc.dev]->device);
}

/* ---- events ---- */

static void event_conn(struct vfab_cm_id *id, uint64_t uid, uint32_t handle, int ev, int status,
		       const struct vfab_cm_msg *m)
{
	struct rdma_ucm_event_resp r;

	memset(&r, 0, sizeof(r));
	r.uid = uid;
	r.id = handle;
	r.event = (uint32_t)ev;
	r.status = (uint32_t)status;
	if (m) {
		int len = vfab_cm_pd_reported(m->type);

		r.param.conn.private_data_len = (uint8_t)len;
		memcpy(r.param.conn.private_data, m->pd, (size_t)len);
		r.param.conn.qp_num = m->qpn;
		r.param.conn.srq = m->srq;
		/* What the peer offers, seen from here: its depth is our resources. */
		r.param.conn.responder_resources = m->init_depth;
		r.param.conn.initiator_depth = m->resp_res;
		r.param.conn.flow_control = m->flow_control;
		r.param.conn.retry_count = m->retry;
		r.param.conn.rnr_retry_count = m->rnr_retry;
	}
	vfab_cm_event_push(id, &r);
}

static void event_simple(struct vfab_cm_id *id, int ev, int status)
{
	event_conn(id, id->uid, id->handle, ev, status, NULL);
}

/* A UD event on owner's queue: the address handle (from id's port), QPN and Q_Key of the peer. */
static void event_ud(struct vfab_cm_id *id, struct vfab_cm_id *owner, uint64_t uid, uint32_t handle,
		     int ev, const struct vfab_cm_msg *m, uint32_t qkey)
{
	struct rdma_ucm_event_resp r;
	struct ib_uverbs_ah_attr *ah = &r.param.ud.ah_attr;
	int len = vfab_cm_pd_reported(m->type);

	memset(&r, 0, sizeof(r));
	r.uid = uid;
	r.id = handle;
	r.event = (uint32_t)ev;
	memcpy(ah->grh.dgid, m->sgid, 16);
	ah->grh.sgid_index = id->loc.gid_index;
	ah->grh.hop_limit = VFAB_CM_HOP_LIMIT;
	ah->grh.traffic_class = id->tos;
	ah->is_global = 1;
	ah->port_num = id->loc.port;
	r.param.ud.qp_num = m->qpn;
	r.param.ud.qkey = qkey;
	r.param.ud.private_data_len = (uint8_t)len;
	memcpy(r.param.ud.private_data, m->pd, (size_t)len);
	vfab_cm_event_push(owner, &r);
}

/* ---- messages ---- */

static void msg_init(const struct vfab_cm_id *id, struct vfab_cm_msg *m, int type)
{
	struct vfab_cm_port *p = &ports[id->loc.dev][id->loc.port - 1];

	memset(m, 0, sizeof(*m));
	m->type = (uint8_t)type;
	m->local_id = id->local_id;
	m->remote_id = id->remote_id;
	m->cm_qpn = p->qp ? p->qp->qp_num : 0;
	m->pid = (uint32_t)getpid();
	m->ps = id->ps;
	m->family = (uint8_t)id->src.ss_family;
	m->sport = sa_port(&id->src);
	m->dport = sa_port(&id->dst);
	sa_bytes(&id->src, m->saddr);
	sa_bytes(&id->dst, m->daddr);
	memcpy(m->sgid, id->loc.gid, 16);
	m->tclass = id->tos;
}

static int send_to(struct vfab_cm_id *id, const uint8_t dgid[16], uint32_t dqpn,
		   const struct vfab_cm_msg *m)
{
	struct vfab_cm_port *p = port_of(id->loc.dev, id->loc.port);
	int ret = p ? vfab_cm_port_send(p, id->loc.gid_index, dgid, dqpn, m) : -ENODEV;

	vfab_cm_dbg("send %s to CM QP %u ids %08x->%08x port %u->%u: %d", vfab_cm_msg_name(m->type),
		    dqpn, m->local_id, m->remote_id, m->sport, m->dport, ret);
	return ret;
}

static int send_msg(struct vfab_cm_id *id, const struct vfab_cm_msg *m)
{
	return send_to(id, id->remote_gid, id->remote_cm_qpn, m);
}

/* Send m and keep it for resending until the answer comes. */
static int send_tracked(struct vfab_cm_id *id, const struct vfab_cm_msg *m)
{
	id->sent = *m;
	id->retries = VFAB_CM_RETRIES;
	id->resend_ns = vfab_mono_ns() + VFAB_CM_TRY_MS * NS_PER_MS;
	return send_msg(id, m);
}

/* An answer to a message whose sender has no ID here (REJ or SIDR REP). */
static void answer_stray(struct vfab_cm_port *p, int dev, const struct vfab_cm_msg *in, int type,
			 uint8_t reason)
{
	struct vfab_cm_local loc;
	struct vfab_cm_msg m;
	struct sockaddr_storage d;

	sa_make(&d, in->family, in->daddr, 0);
	if (vfab_cm_route_local(&ctxs[dev], 1, (struct sockaddr *)&d, &loc))
		return;
	memset(&m, 0, sizeof(m));
	m.type = (uint8_t)type;
	m.reason = reason;
	m.remote_id = in->local_id;
	m.cm_qpn = p->qp->qp_num;
	m.pid = (uint32_t)getpid();
	m.family = in->family;
	memcpy(m.sgid, loc.gid, 16);
	vfab_cm_port_send(p, loc.gid_index, in->sgid, in->cm_qpn, &m);
}

static struct vfab_cm_id *find_listener(const struct vfab_cm_msg *m)
{
	struct vfab_cm_id *id = NULL;
	uint8_t a[16];

	while ((id = vfab_cm_id_next(id)) != NULL) {
		if (id->state != VFAB_CS_LISTEN || id->ps != m->ps ||
		    sa_port(&id->src) != m->dport || id->src.ss_family != m->family)
			continue;
		sa_bytes(&id->src, a);
		if (vfab_cm_addr_any((struct sockaddr *)&id->src) || !memcmp(a, m->daddr, 16))
			return id;
	}
	return NULL;
}

/* A REQ or SIDR REQ we already made an ID for (a resent one). */
static struct vfab_cm_id *find_passive(const struct vfab_cm_msg *m)
{
	struct vfab_cm_id *id = NULL;

	while ((id = vfab_cm_id_next(id)) != NULL)
		if (id->listener && id->remote_id == m->local_id && id->remote_pid == (pid_t)m->pid)
			return id;
	return NULL;
}

static void on_req(struct vfab_cm_port *p, int dev, const struct vfab_cm_msg *m)
{
	int ud = m->type == VFAB_CM_SIDR_REQ;
	struct vfab_cm_id *l, *c = find_passive(m);
	struct sockaddr_storage local;

	if (c) { /* our answer was lost: say it again */
		if (c->state == VFAB_CS_REP_SENT)
			send_msg(c, &c->sent);
		return;
	}
	l = find_listener(m);
	if (!l) {
		answer_stray(p, dev, m, ud ? VFAB_CM_SIDR_REP : VFAB_CM_REJ,
			     ud ? VFAB_CM_SIDR_UNSUPPORTED : VFAB_CM_REJ_INVALID_SERVICE_ID);
		return;
	}
	c = vfab_cm_id_new(l->file, 0, l->ps, l->qp_type);
	if (!c)
		return;
	sa_make(&local, m->family, m->daddr, m->dport);
	sa_make(&c->dst, m->family, m->saddr, m->sport);
	c->src = local;
	if (vfab_cm_route_local(ctxs, nctx, (struct sockaddr *)&local, &c->loc)) {
		vfab_cm_id_free(c);
		return;
	}
	c->have_dev = 1;
	c->route = 1;
	c->listener = l->handle;
	c->state = VFAB_CS_REQ_RCVD;
	c->remote_id = m->local_id;
	c->remote_cm_qpn = m->cm_qpn;
	c->remote_pid = (pid_t)m->pid;
	memcpy(c->remote_gid, m->sgid, 16);
	memcpy(c->dgid, m->sgid, 16);
	c->tos = m->tclass;
	c->qp = (struct vfab_cm_qp_params){
	    .ud = ud,
	    .connected = 1,
	    .port = c->loc.port,
	    .sgid_index = c->loc.gid_index,
	    .hop_limit = VFAB_CM_HOP_LIMIT,
	    .tclass = m->tclass,
	    .mtu = m->mtu < c->loc.mtu ? m->mtu : c->loc.mtu,
	    .qkey = VFAB_CM_UDP_QKEY,
	    .remote_qpn = m->qpn,
	    .remote_psn = m->psn,
	    .local_psn = random_psn(),
	    .resp_res = m->init_depth,
	    .init_depth = m->resp_res,
	    .retry = m->retry,
	    .rnr_retry = m->rnr_retry,
	    .timeout = VFAB_CM_PACKET_LIFETIME + 2,
	};
	memcpy(c->qp.dgid, m->sgid, 16);
	if (ud)
		event_ud(c, l, l->uid, c->handle, VFAB_EV_CONNECT_REQUEST, m, m->qkey);
	else
		event_conn(l, l->uid, c->handle, VFAB_EV_CONNECT_REQUEST, 0, m);
}

static void on_rep(const struct vfab_cm_msg *m)
{
	struct vfab_cm_id *id = vfab_cm_id_by_local(m->remote_id);

	if (!id)
		return;
	if (id->state == VFAB_CS_ESTABLISHED && id->remote_id == m->local_id) {
		struct vfab_cm_msg rtu;

		msg_init(id, &rtu, VFAB_CM_RTU); /* our RTU was lost */
		send_msg(id, &rtu);
		return;
	}
	if (id->state != VFAB_CS_REQ_SENT)
		return;
	id->remote_id = m->local_id;
	id->remote_cm_qpn = m->cm_qpn;
	id->remote_pid = (pid_t)m->pid;
	id->qp.connected = 1;
	id->qp.remote_qpn = m->qpn;
	id->qp.remote_psn = m->psn;
	id->qp.resp_res = m->init_depth;
	id->qp.init_depth = m->resp_res;
	id->qp.rnr_retry = m->rnr_retry;
	id->qp.mtu = m->mtu < id->qp.mtu ? m->mtu : id->qp.mtu;
	id->state = VFAB_CS_REP_RCVD;
	event_conn(id, id->uid, id->handle, VFAB_EV_CONNECT_RESPONSE, 0, m);
}

static void on_sidr_rep(const struct vfab_cm_msg *m)
{
	struct vfab_cm_id *id = vfab_cm_id_by_local(m->remote_id);

	if (!id || id->state != VFAB_CS_REQ_SENT)
		return;
	id->state = VFAB_CS_ROUTE_RESOLVED;
	if (m->reason) {
		event_simple(id, VFAB_EV_UNREACHABLE, m->reason);
		return;
	}
	event_ud(id, id, id->uid, id->handle, VFAB_EV_ESTABLISHED, m, m->qkey);
}

static void on_rtu(const struct vfab_cm_msg *m)
{
	struct vfab_cm_id *id = vfab_cm_id_by_local(m->remote_id);

	if (!id || id->state != VFAB_CS_REP_SENT || id->remote_id != m->local_id)
		return;
	id->state = VFAB_CS_ESTABLISHED;
	id->alive_check_ns = vfab_mono_ns() + VFAB_CM_ALIVE_MS * NS_PER_MS;
	event_simple(id, VFAB_EV_ESTABLISHED, 0);
}

static void on_rej(const struct vfab_cm_msg *m)
{
	struct vfab_cm_id *id = vfab_cm_id_by_local(m->remote_id);

	if (!id || (id->state != VFAB_CS_REQ_SENT && id->state != VFAB_CS_REP_SENT &&
		    id->state != VFAB_CS_REP_RCVD))
		return;
	id->state = VFAB_CS_ROUTE_RESOLVED;
	event_conn(id, id->uid, id->handle, VFAB_EV_REJECTED, m->reason, m);
}

/*
 * The connection is over: DISCONNECTED now, TIMEWAIT_EXIT once the kernel's
 * CM would leave time wait (the ID may be destroyed before).
 */
static void disconnected(struct vfab_cm_id *id)
{
	id->state = VFAB_CS_DISCONNECTED;
	id->timewait_ns = vfab_mono_ns() + VFAB_CM_TIMEWAIT_MS * NS_PER_MS;
	event_simple(id, VFAB_EV_DISCONNECTED, 0);
}

static void on_dreq(struct vfab_cm_port *p, int dev, const struct vfab_cm_msg *m)
{
	struct vfab_cm_id *id = vfab_cm_id_by_local(m->remote_id);
	struct vfab_cm_msg drep;

	if (!id || id->remote_id != m->local_id) {
		answer_stray(p, dev, m, VFAB_CM_DREP, 0); /* gone already: still answer */
		return;
	}
	msg_init(id, &drep, VFAB_CM_DREP);
	send_msg(id, &drep);
	if (id->state == VFAB_CS_ESTABLISHED || id->state == VFAB_CS_REP_SENT ||
	    id->state == VFAB_CS_DREQ_SENT) {
		disconnected(id);
	}
}

static void on_drep(const struct vfab_cm_msg *m)
{
	struct vfab_cm_id *id = vfab_cm_id_by_local(m->remote_id);

	if (!id || id->state != VFAB_CS_DREQ_SENT)
		return;
	disconnected(id);
}

static void handle_msg(struct vfab_cm_port *p, int dev, const struct vfab_cm_msg *m)
{
	vfab_cm_dbg("recv %s from pid %u ids %08x->%08x ps %04x port %u->%u reason %u",
		    vfab_cm_msg_name(m->type), m->pid, m->local_id, m->remote_id, m->ps, m->sport,
		    m->dport, m->reason);
	switch (m->type) {
	case VFAB_CM_REQ:
	case VFAB_CM_SIDR_REQ:
		on_req(p, dev, m);
		break;
	case VFAB_CM_REP:
		on_rep(m);
		break;
	case VFAB_CM_SIDR_REP:
		on_sidr_rep(m);
		break;
	case VFAB_CM_RTU:
		on_rtu(m);
		break;
	case VFAB_CM_REJ:
		on_rej(m);
		break;
	case VFAB_CM_DREQ:
		on_dreq(p, dev, m);
		break;
	case VFAB_CM_DREP:
		on_drep(m);
		break;
	default:
		break;
	}
}

/* A try ran out: resend, or give up as the kernel's CM does. */
static void expire(struct vfab_cm_id *id, uint64_t now)
{
	if (id->retries-- > 0) {
		id->resend_ns = now + VFAB_CM_TRY_MS * NS_PER_MS;
		send_msg(id, &id->sent);
		return;
	}
	id->resend_ns = 0;
	switch (id->state) {
	case VFAB_CS_REQ_SENT:
	case VFAB_CS_REP_SENT:
		id->state = VFAB_CS_ROUTE_RESOLVED;
		event_simple(id, VFAB_EV_UNREACHABLE, -ETIMEDOUT);
		break;
	case VFAB_CS_DREQ_SENT:
		disconnected(id);
		break;
	default:
		break;
	}
}

/* Run what is due; returns when the next retry is due (0: none). */
static uint64_t run_timers(uint64_t now)
{
	struct vfab_cm_id *id = NULL;
	uint64_t next = 0;

	while ((id = vfab_cm_id_next(id)) != NULL) {
		int waiting = id->state == VFAB_CS_REQ_SENT || id->state == VFAB_CS_REP_SENT ||
			      id->state == VFAB_CS_DREQ_SENT;

		if (id->state == VFAB_CS_REQ_SENT && !id->remote_cm_qpn && id->resend_ns &&
		    now >= id->resend_ns)
			send_first_req(id, now);
		else if (waiting && id->resend_ns && now >= id->resend_ns)
			expire(id, now);
		/* A peer process that is gone cannot send its DREQ; its kernel would have. */
		if ((id->state == VFAB_CS_ESTABLISHED || id->state == VFAB_CS_REP_RCVD) &&
		    now >= id->alive_check_ns) {
			id->alive_check_ns = now + VFAB_CM_ALIVE_MS * NS_PER_MS;
			if (id->remote_pid && !vfab_pid_alive(id->remote_pid)) {
				disconnected(id);
			}
		}
		if ((id->state == VFAB_CS_REQ_SENT || id->state == VFAB_CS_REP_SENT ||
		     id->state == VFAB_CS_DREQ_SENT) &&
		    id->resend_ns && (!next || id->resend_ns < next))
			next = id->resend_ns;
		if (id->timewait_ns && now >= id->timewait_ns) {
			id->timewait_ns = 0;
			event_simple(id, VFAB_EV_TIMEWAIT_EXIT, 0);
		}
		if (id->timewait_ns && (!next || id->timewait_ns < next))
			next = id->timewait_ns;
	}
	return next;
}

/* ---- operations ---- */

static int use_local(struct vfab_cm_id *id, const struct sockaddr *addr)
{
	int ret = vfab_cm_route_local(ctxs, nctx, addr, &id->loc);

	if (ret)
		return ret;
	if (!port_of(id->loc.dev, id->loc.port))
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
	int ret = vfab_cm_route_loopback(ctxs, nctx, &id->loc);

	if (ret)
		return ret;
	if (!port_of(id->loc.dev, id->loc.port))
		return -ENODEV;
	sa_make(src, src->ss_family, src->ss_family == AF_INET6 ? lo6 : lo4, 0);
	id->have_dev = 1;
	id->loopback = 1;
	return 0;
}

int vfab_cm_bind(struct vfab_cm_id *id, const struct sockaddr *addr)
{
	int ret;

	if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	if (id->state != VFAB_CS_IDLE)
		return -EINVAL;
	if (!vfab_cm_addr_any(addr)) {
		ret = use_local(id, addr);
		if (ret)
			return ret == -EADDRNOTAVAIL ? -EADDRNOTAVAIL : ret;
	}
	memset(&id->src, 0, sizeof(id->src));
	memcpy(&id->src, addr, sa_len(addr));
	if (!sa_port(&id->src))
		sa_set_port(&id->src, ephemeral_port());
	return 0;
}

struct resolve_job {
	uint32_t handle;
	int timeout_ms;
	struct sockaddr_storage src, dst;
};

static void *resolve_main(void *arg)
{
	struct resolve_job *j = arg;
	struct vfab_cm_id *id;
	/* A wildcard or loopback destination is the kernel's loopback: no route. */
	int loop = vfab_cm_addr_any((struct sockaddr *)&j->dst), ret = 0;

	if (!loop && vfab_cm_addr_any((struct sockaddr *)&j->src))
		ret = vfab_cm_route_src((struct sockaddr *)&j->dst, &j->src);
	if (!loop && !ret)
		ret = vfab_cm_route_neigh((struct sockaddr *)&j->dst, j->timeout_ms);
	vfab_cm_lock();
	id = vfab_cm_id_find(j->handle);
	if (id && id->state == VFAB_CS_ADDR_QUERY) {
		uint16_t port = sa_port(&id->src);

		if (loop && !id->have_dev)
			ret = use_loopback(id, &j->src);
		else if (!ret && !id->have_dev)
			ret = use_local(id, (struct sockaddr *)&j->src);
		if (!ret) {
			id->src = j->src;
			sa_set_port(&id->src, port ? port : ephemeral_port());
			id->dst = j->dst;
			if (id->loopback) /* cma_resolve_loopback: the destination is us */
				memcpy(id->dgid, id->loc.gid, 16);
			else
				vfab_cm_gid_of((struct sockaddr *)&id->dst, id->dgid);
			memcpy(id->remote_gid, id->dgid, 16);
			id->state = VFAB_CS_ADDR_RESOLVED;
			event_simple(id, VFAB_EV_ADDR_RESOLVED, 0);
		} else {
			id->state = VFAB_CS_IDLE;
			event_simple(id, VFAB_EV_ADDR_ERROR, ret);
		}
	}
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
	memcpy(&j->dst, dst, sa_len(dst));
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
	event_simple(id, VFAB_EV_ROUTE_RESOLVED, 0);
	return 0;
}

/* Publish addr (one address of the listener) if an HCA of this node has it. */
static int publish_one(struct vfab_cm_id *id, const struct sockaddr *addr)
{
	struct vfab_cm_local loc;
	struct vfab_cm_port *p;

	if (vfab_cm_route_local(ctxs, nctx, addr, &loc))
		return 0;
	p = port_of(loc.dev, loc.port);
	if (!p)
		return -ENODEV;
	return vfab_cm_dir_publish(rundir, id->ps, addr, sa_port(&id->src), p->qp->qp_num,
				   getpid());
}

/* Each address of the node the listener covers; f(id, addr) for each. */
static int for_each_addr(struct vfab_cm_id *id,
			 int (*f)(struct vfab_cm_id *, const struct sockaddr *))
{
	struct ifaddrs *ifa, *i;
	int ret = 0;

	if (!vfab_cm_addr_any((struct sockaddr *)&id->src))
		return f(id, (struct sockaddr *)&id->src);
	if (getifaddrs(&ifa))
		return -errno;
	for (i = ifa; i && !ret; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == id->src.ss_family)
			ret = f(id, i->ifa_addr);
	freeifaddrs(ifa);
	return ret;
}

static int unpublish_one(struct vfab_cm_id *id, const struct sockaddr *addr)
{
	vfab_cm_dir_remove(rundir, id->ps, addr, sa_port(&id->src));
	return 0;
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
		sa_set_port(&id->src, ephemeral_port());
	}
	ret = for_each_addr(id, publish_one);
	if (ret) {
		for_each_addr(id, unpublish_one);
		return ret;
	}
	id->published = 1;
	id->state = VFAB_CS_LISTEN;
	vfab_cm_dbg("listen ps %04x port %u", id->ps, sa_port(&id->src));
	return 0;
}

int vfab_cm_connect(struct vfab_cm_id *id, const struct rdma_ucm_conn_param *cp)
{
	int ud = id->qp_type == IBV_QPT_UD;
	int type = ud ? VFAB_CM_SIDR_REQ : VFAB_CM_REQ;
	struct vfab_cm_msg m;

	if (id->state != VFAB_CS_ROUTE_RESOLVED)
		return -EINVAL;
	if (cp->private_data_len > vfab_cm_pd_limit(type))
		return -EINVAL;
	id->qpn = cp->qp_num;
	id->qp = (struct vfab_cm_qp_params){
	    .ud = ud,
	    .connected = 0,
	    .port = id->loc.port,
	    .sgid_index = id->loc.gid_index,
	    .hop_limit = VFAB_CM_HOP_LIMIT,
	    .tclass = id->tos,
	    .mtu = id->loc.mtu,
	    .qkey = VFAB_CM_UDP_QKEY,
	    .local_psn = random_psn(),
	    .resp_res = cp->responder_resources,
	    .init_depth = cp->initiator_depth,
	    .retry = cp->retry_count & 7,
	    .rnr_retry = cp->rnr_retry_count & 7,
	    .timeout = id->ack_timeout ? id->ack_timeout : VFAB_CM_PACKET_LIFETIME + 2,
	};
	memcpy(id->qp.dgid, id->dgid, 16);
	msg_init(id, &m, type);
	m.qpn = cp->qp_num;
	m.psn = id->qp.local_psn;
	m.qkey = VFAB_CM_UDP_QKEY;
	m.mtu = (uint8_t)id->loc.mtu;
	m.resp_res = cp->responder_resources;
	m.init_depth = cp->initiator_depth;
	m.retry = cp->retry_count & 7;
	m.rnr_retry = cp->rnr_retry_count & 7;
	m.srq = cp->srq;
	m.flow_control = cp->flow_control;
	m.pd_len = cp->private_data_len;
	memcpy(m.pd, cp->private_data, cp->private_data_len);
	/*
	 * The REQ leaves from the agent thread, as the kernel's leaves from its
	 * MAD work queue: the answer (REP, or REJ when nobody listens) always
	 * comes as an event, after the time a REQ takes to reach the peer's CM.
	 */
	id->state = VFAB_CS_REQ_SENT;
	id->sent = m;
	id->remote_cm_qpn = 0;
	id->retries = VFAB_CM_RETRIES;
	id->resend_ns = vfab_mono_ns();
	id->req_deadline_ns = id->resend_ns + VFAB_CM_REQ_ARRIVAL_NS;
	eventfd_write(wake_fd, 1);
	return 0;
}

/* The first REQ of id: to the listener's CM QP, or the REJ its CM would send. */
static void send_first_req(struct vfab_cm_id *id, uint64_t now)
{
	int ud = id->qp.ud;
	uint32_t qpn;
	pid_t pid;

	if (vfab_cm_dir_lookup(rundir, id->ps, (struct sockaddr *)&id->dst, sa_port(&id->dst), &qpn,
			       &pid)) {
		if (now < id->req_deadline_ns) {
			id->resend_ns = now + RECHECK_NS; /* still on its way */
			return;
		}
		vfab_cm_dbg("connect: nobody listens on ps %04x port %u", id->ps,
			    sa_port(&id->dst));
		id->state = VFAB_CS_ROUTE_RESOLVED;
		id->resend_ns = 0;
		if (ud)
			event_simple(id, VFAB_EV_UNREACHABLE, VFAB_CM_SIDR_UNSUPPORTED);
		else
			event_conn(id, id->uid, id->handle, VFAB_EV_REJECTED,
				   VFAB_CM_REJ_INVALID_SERVICE_ID,
				   &(struct vfab_cm_msg){.type = VFAB_CM_REJ});
		return;
	}
	id->remote_cm_qpn = qpn;
	id->resend_ns = now + VFAB_CM_TRY_MS * NS_PER_MS;
	send_msg(id, &id->sent);
}

int vfab_cm_accept(struct vfab_cm_id *id, uint64_t uid, const struct rdma_ucm_conn_param *cp)
{
	struct vfab_cm_msg m;

	if (id->state == VFAB_CS_REP_RCVD) { /* active side: the RTU */
		msg_init(id, &m, VFAB_CM_RTU);
		id->state = VFAB_CS_ESTABLISHED;
		id->alive_check_ns = vfab_mono_ns() + VFAB_CM_ALIVE_MS * NS_PER_MS;
		return send_msg(id, &m);
	}
	if (id->state != VFAB_CS_REQ_RCVD)
		return -EINVAL;
	if (uid)
		id->uid = uid;
	if (id->qp.ud) {
		msg_init(id, &m, VFAB_CM_SIDR_REP);
		m.qpn = cp->qp_num;
		m.qkey = cp->qkey ? cp->qkey : VFAB_CM_UDP_QKEY;
		m.pd_len = cp->private_data_len;
		memcpy(m.pd, cp->private_data, cp->private_data_len);
		id->state = VFAB_CS_ESTABLISHED;
		return send_msg(id, &m);
	}
	if (cp->private_data_len > vfab_cm_pd_limit(VFAB_CM_REP))
		return -EINVAL;
	id->qpn = cp->qp_num;
	id->qp.resp_res = cp->responder_resources;
	id->qp.init_depth = cp->initiator_depth;
	id->qp.rnr_retry = cp->rnr_retry_count & 7;
	msg_init(id, &m, VFAB_CM_REP);
	m.qpn = cp->qp_num;
	m.psn = id->qp.local_psn;
	m.mtu = (uint8_t)id->qp.mtu;
	m.resp_res = cp->responder_resources;
	m.init_depth = cp->initiator_depth;
	m.rnr_retry = cp->rnr_retry_count & 7;
	m.srq = cp->srq;
	m.flow_control = cp->flow_control;
	m.pd_len = cp->private_data_len;
	memcpy(m.pd, cp->private_data, cp->private_data_len);
	id->state = VFAB_CS_REP_SENT;
	return send_tracked(id, &m);
}

int vfab_cm_reject(struct vfab_cm_id *id, uint8_t reason, const uint8_t *pd, uint8_t len)
{
	struct vfab_cm_msg m;
	int type = id->qp.ud ? VFAB_CM_SIDR_REP : VFAB_CM_REJ;

	if (id->state != VFAB_CS_REQ_RCVD)
		return -EINVAL;
	if (len > vfab_cm_pd_limit(type))
		return -EINVAL;
	msg_init(id, &m, type);
	m.reason = id->qp.ud ? IB_SIDR_REJECT : (reason ? reason : VFAB_CM_REJ_CONSUMER_DEFINED);
	m.pd_len = len;
	memcpy(m.pd, pd, len);
	id->state = VFAB_CS_IDLE;
	return send_msg(id, &m);
}

int vfab_cm_disconnect(struct vfab_cm_id *id)
{
	struct vfab_cm_msg m;

	switch (id->state) {
	case VFAB_CS_ESTABLISHED:
	case VFAB_CS_REP_SENT:
	case VFAB_CS_REP_RCVD:
		msg_init(id, &m, VFAB_CM_DREQ);
		id->state = VFAB_CS_DREQ_SENT;
		return send_tracked(id, &m);
	case VFAB_CS_DREQ_SENT:
	case VFAB_CS_DISCONNECTED:
		return 0;
	default:
		return -EINVAL;
	}
}

int vfab_cm_notify(struct vfab_cm_id *id, int event)
{
	if (event == IBV_EVENT_COMM_EST && id->state == VFAB_CS_REP_SENT) {
		id->state = VFAB_CS_ESTABLISHED;
		id->alive_check_ns = vfab_mono_ns() + VFAB_CM_ALIVE_MS * NS_PER_MS;
		event_simple(id, VFAB_EV_ESTABLISHED, 0);
	}
	return 0;
}

void vfab_cm_destroy(struct vfab_cm_id *id)
{
	struct vfab_cm_msg m;

	switch (id->state) {
	case VFAB_CS_ESTABLISHED:
		msg_init(id, &m, VFAB_CM_DREQ);
		send_msg(id, &m);
		break;
	case VFAB_CS_REQ_SENT:
	case VFAB_CS_REQ_RCVD:
	case VFAB_CS_REP_SENT:
	case VFAB_CS_REP_RCVD:
		if (id->qp.ud || !id->remote_cm_qpn)
			break;
		msg_init(id, &m, VFAB_CM_REJ);
		m.reason = id->state == VFAB_CS_REQ_SENT ? VFAB_CM_REJ_TIMEOUT
							 : VFAB_CM_REJ_CONSUMER_DEFINED;
		send_msg(id, &m);
		break;
	default:
		break;
	}
	if (id->published)
		for_each_addr(id, unpublish_one);
	vfab_cm_dbg("destroy id %u state %d", id->handle, id->state);
	vfab_cm_id_free(id);
}
