/* SPDX-License-Identifier: MIT */
/*
 * REPORT: one JSON document with the fabric's links, ports (with their
 * counters), live QPs and the fault log; the schema is docs/REPORT_SCHEMA.md.
 * It is read from the region while traffic runs, without locks: each number
 * is read whole, but the document is not a snapshot of one instant.
 */
#include "vfabd_report.h"

#include "daemon/vfabd_json.h"
#include "base/proc.h"
#include "fabric/ktab.h"
#include "fabric/topology.h"
#include "netns/sysfs_view.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vfabd.h"
#include "vfabd_conn.h"
#include "vfabd_faultlog.h"
#include "vfabd_reaper.h"
#include "vfabd_wire.h"

#define REPORT_SCHEMA "vfab-report/1"
#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)

static const char *link_kind(uint32_t kind)
{
	switch (kind) {
	case VFAB_LINK_NODE_UP:
		return "node_up";
	case VFAB_LINK_NODE_DOWN:
		return "node_down";
	case VFAB_LINK_LEAF_UP:
		return "leaf_up";
	case VFAB_LINK_LEAF_DOWN:
		return "leaf_down";
	case VFAB_LINK_LOOPBACK:
		return "loopback";
	default:
		return "unknown";
	}
}

static const char *port_state(uint32_t s)
{
	static const char *const names[] = {"NOP",   "DOWN",   "INIT",
					    "ARMED", "ACTIVE", "ACTIVE_DEFER"};

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "UNKNOWN";
}

static const char *qp_type(uint32_t t)
{
	switch (t) {
	case 2:
		return "RC";
	case 3:
		return "UC";
	case 4:
		return "UD";
	case 8:
		return "RAW_PACKET";
	case 9:
		return "XRC_SEND";
	case 10:
		return "XRC_RECV";
	default:
		return "OTHER";
	}
}

static const char *qp_state(uint32_t s)
{
	static const char *const names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "UNKNOWN";
}

/* RFC 3339 UTC with milliseconds: 2024-05-01T12:00:00.123Z */
static void iso_time(uint64_t unix_ms, char buf[40])
{
	time_t t = (time_t)(unix_ms / 1000);
	struct tm tm;
	size_t n;

	gmtime_r(&t, &tm);
	n = strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, 40 - n, ".%03uZ", (unsigned)(unix_ms % 1000));
}

static void links(struct vjson_buf *b, const struct vfabd *d)
{
	bool first = true;

	vjson_text(b, ",\n\"links\":[");
	for (uint32_t i = 0; i < d->t->nlinks && i < VFAB_MAX_LINKS; i++) {
		const struct vfab_link *own = &d->t->links[i], *l = &d->r->links[i];
		struct vfab_link_clock sum;

		if (!own->in_use)
			continue;
		vfab_link_stats_sum(d->r, i, &sum);
		vjson_printf(b, "%s\n{\"index\":%u,\"name\":", first ? "" : ",", i);
		vjson_str(b, own->name);
		vjson_printf(b,
			     ",\"kind\":\"%s\",\"rate_bps\":%llu,\"latency_ns\":%u,"
			     "\"spike_ns\":%u,\"loss_ppm\":%u,\"bytes\":%llu,\"msgs\":%llu,"
			     "\"queue_ns\":%llu,\"drops\":%llu}",
			     link_kind(own->kind), (unsigned long long)LOAD(l->rate_bps),
			     LOAD(l->latency_ns), d->faults.spike_add_ns[i], LOAD(l->loss_ppm),
			     (unsigned long long)sum.bytes, (unsigned long long)sum.msgs,
			     (unsigned long long)sum.queue_ns, (unsigned long long)sum.drops);
		first = false;
	}
	vjson_text(b, "\n]");
}

static void port(struct vjson_buf *b, const struct vfabd *d, uint32_t h, uint32_t p, bool first)
{
	/* Names and wiring from vfabd's own topology; state and counters from the region. */
	const struct vfab_hca *hca = &d->t->hcas[h];
	const struct vfab_port *own = &hca->ports[p - 1], *pt = &d->r->hcas[h].ports[p - 1];
	struct vfab_port_counters c;
	uint64_t v[VFAB_NCOUNTERS];
	uint32_t state = atomic_load(&pt->state);
	char rate[64];

	if (vfab_topology_sysfs_rate(pt, rate, sizeof(rate)) < 0)
		rate[0] = '\0';
	vjson_text(b, first ? "\n{\"node\":" : ",\n{\"node\":");
	vjson_str(b, d->t->nodes[hca->node].id);
	vjson_text(b, ",\"hca\":");
	vjson_str(b, hca->name);
	vjson_printf(b, ",\"hca_index\":%u,\"port\":%u,\"state\":\"%s\",\"state_num\":%u,", h, p,
		     port_state(state), state);
	vjson_printf(b, "\"speed_mbps\":%u,\"rate\":", LOAD(pt->speed_mbps));
	vjson_str(b, rate);
	vjson_text(b, ",\"netdev\":");
	vjson_str(b, own->netdev);
	vjson_printf(b, ",\"link_up\":%u,\"link_down\":%u,\"counters\":{", own->link_up,
		     own->link_down);
	vfab_port_counters_sum(d->r, h, p, &c);
	vfab_sysfs_counter_values(&c, d->link.downed[h][p - 1], v);
	for (int i = 0; i < VFAB_NCOUNTERS; i++)
		vjson_printf(b, "%s\"%s\":%llu", i ? "," : "", vfab_sysfs_counter_names[i],
			     (unsigned long long)v[i]);
	vjson_text(b, "}}");
}

static void ports(struct vjson_buf *b, const struct vfabd *d)
{
	bool first = true;

	vjson_text(b, ",\n\"ports\":[");
	for (uint32_t h = 0; h < d->t->nhcas && h < VFAB_MAX_HCAS; h++) {
		if (!d->t->hcas[h].in_use || d->t->hcas[h].node >= VFAB_MAX_NODES)
			continue;
		for (uint32_t p = 1; p <= d->t->hcas[h].nports && p <= VFAB_MAX_PORTS; p++) {
			port(b, d, h, p, first);
			first = false;
		}
	}
	vjson_text(b, "\n]");
}

/* vfabd's record of the QP numbered qpn, NULL when none is sealed under it. */
static const struct vfab_qp_slot *sealed_qp(const struct vfabd *d, uint32_t qpn)
{
	uint32_t i = vfab_qpn_slot(qpn);
	const struct vfab_qp_slot *k;

	if (!vfab_ktab_live(d->k, VFAB_OBJ_QP, i))
		return NULL;
	k = &d->k->qps[i];
	return vfab_ktab_used(&k->state) && k->qpn == qpn ? k : NULL;
}

/* A port of ours is up; hca and port come from a region slot, so they are checked. */
static bool port_up(const struct vfabd *d, uint32_t hca, uint32_t port)
{
	return hca < d->t->nhcas && hca < VFAB_MAX_HCAS && port >= 1 && port <= VFAB_MAX_PORTS &&
	       atomic_load_explicit(&d->r->hcas[hca].ports[port - 1].state, memory_order_relaxed) ==
		   IBV_PORT_ACTIVE;
}

/* Receives posted and not yet consumed on a QP's own RQ; -1 with an SRQ. */
static long long recv_posted(const struct vfab_qp_slot *q, const struct vfab_qp_slot *k)
{
	uint64_t head = atomic_load_explicit(&q->rq.head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&q->rq.tail, memory_order_relaxed);

	if (k->srq >= 0)
		return -1;
	return tail >= head && tail - head <= q->rq.cap ? (long long)(tail - head) : 0;
}

/*
 * What a QP waits for, as far as the fabric's state tells: its own state
 * and port, and for a connected QP in RTS its peer's record, process, port,
 * state and receive queue. "" when nothing stands in its way. A requester's
 * outstanding WRs are its own memory: this cannot say which it waits on.
 */
static const char *qp_waits(const struct vfabd *d, const struct vfab_qp_slot *q,
			    const struct vfab_qp_slot *k)
{
	uint32_t st = atomic_load_explicit(&q->qp_state, memory_order_relaxed), dst_st;
	const struct vfab_qp_slot *pk, *p;

	if (!vfabd_owner_alive(&k->owner))
		return "its process is gone";
	if (st == IBV_QPS_ERR)
		return "error state: work requests flush";
	if (st == IBV_QPS_SQE)
		return "send queue error";
	if (st == IBV_QPS_RESET || st == IBV_QPS_INIT)
		return "not connected yet";
	if (!port_up(d, q->hca, q->port))
		return "its port is down";
	if (k->qp_type != IBV_QPT_RC && k->qp_type != IBV_QPT_UC && k->qp_type != VFAB_QPT_XRC_SEND)
		return "";
	if (st == IBV_QPS_RTR)
		return "receives only (RTR)";
	pk = sealed_qp(d, q->dest_qpn);
	if (!pk)
		return "peer QP gone";
	if (!vfabd_owner_alive(&pk->owner))
		return "peer process gone";
	p = &d->r->qps[vfab_qpn_slot(q->dest_qpn)];
	if (!port_up(d, p->hca, p->port))
		return "peer port down";
	dst_st = atomic_load_explicit(&p->qp_state, memory_order_relaxed);
	if (dst_st != IBV_QPS_RTR && dst_st != IBV_QPS_RTS && dst_st != IBV_QPS_SQD)
		return dst_st == IBV_QPS_ERR ? "peer in error state" : "peer not ready to receive";
	/* An XRC SEND names its SRQ per message: no queue of the peer QP to judge. */
	if (k->qp_type != VFAB_QPT_XRC_SEND && recv_posted(p, pk) == 0)
		return "peer has no receive posted (a SEND waits: RNR)";
	return "";
}

static void qps(struct vjson_buf *b, const struct vfabd *d)
{
	bool first = true;

	vjson_text(b, ",\n\"qps\":[");
	for (uint32_t i = vfab_slot_next(d->r, VFAB_OBJ_QP, 0); i != VFAB_SLOT_END;
	     i = vfab_slot_next(d->r, VFAB_OBJ_QP, i + 1)) {
		const struct vfab_qp_slot *q = &d->r->qps[i], *k;
		const struct vfab_hca *h;
		char comm[32] = "";

		if (atomic_load_explicit(&q->state, memory_order_acquire) != VFAB_SLOT_USED ||
		    q->hca >= VFAB_MAX_HCAS)
			continue;
		/* Owner, type and SRQ from vfabd's own record; a slot it never sealed is left out.
		 */
		k = sealed_qp(d, q->qpn);
		if (!k)
			continue;
		/* The slot's HCA index is any user's to write: it only picks a name of ours. */
		h = &d->t->hcas[q->hca];
		vfab_pid_comm(k->owner.pid, comm, sizeof(comm));
		vjson_printf(b, "%s\n{\"qpn\":%u,\"node\":", first ? "" : ",", q->qpn);
		vjson_str(b, h->in_use && h->node < VFAB_MAX_NODES ? d->t->nodes[h->node].id : "");
		vjson_text(b, ",\"hca\":");
		vjson_str(b, h->name);
		vjson_printf(b,
			     ",\"port\":%u,\"pid\":%d,\"type\":\"%s\",\"state\":\"%s\","
			     "\"dest_qpn\":%u,\"epsn\":%u,\"recv_posted\":%lld,\"comm\":",
			     q->port, (int)k->owner.pid, qp_type(k->qp_type),
			     qp_state(atomic_load_explicit(&q->qp_state, memory_order_relaxed)),
			     q->dest_qpn, atomic_load_explicit(&q->epsn, memory_order_relaxed),
			     recv_posted(q, k));
		vjson_str(b, comm);
		vjson_text(b, ",\"waits\":");
		vjson_str(b, qp_waits(d, q, k));
		vjson_text(b, "}");
		first = false;
	}
	vjson_text(b, "\n]");
}

static void faults(struct vjson_buf *b, const struct vfabd *d)
{
	char when[40];

	vjson_text(b, ",\n\"faults\":[");
	for (size_t i = 0; i < d->log.nevents; i++) {
		const struct vfabd_event *e = &d->log.events[i];

		iso_time(e->unix_ms, when);
		vjson_printf(b, "%s\n{\"unix_ms\":%llu,\"time\":\"%s\",\"kind\":", i ? "," : "",
			     (unsigned long long)e->unix_ms, when);
		vjson_str(b, e->kind);
		vjson_text(b, ",\"target\":");
		vjson_str(b, e->target);
		vjson_text(b, ",\"params\":");
		vjson_str(b, e->params);
		vjson_text(b, ",\"detail\":");
		vjson_str(b, e->detail);
		vjson_text(b, "}");
	}
	vjson_printf(b, "\n],\n\"faults_dropped\":%llu", (unsigned long long)d->log.dropped);
}

static void paused(struct vjson_buf *b, const struct vfabd *d)
{
	bool first = true;

	vjson_text(b, ",\n\"paused\":[");
	for (uint32_t i = 0; i < d->t->nnodes && i < VFAB_MAX_NODES; i++) {
		if (!d->faults.pauses[i].active)
			continue;
		if (!first)
			vjson_text(b, ",");
		vjson_str(b, d->t->nodes[i].id);
		first = false;
	}
	vjson_text(b, "]");
}

static void wire(struct vjson_buf *b, const struct vfabd *d)
{
	struct vfabd_wire_counts n;

	vfabd_wire_counts(d, &n);
	vjson_printf(b,
		     ",\n\"wire\":{\"open\":%d,\"qps_bound\":%llu,\"refused\":%llu,\"sent\":%llu,"
		     "\"received\":%llu,\"delivered\":%llu,\"dropped\":{",
		     n.open, (unsigned long long)n.binds, (unsigned long long)n.refused,
		     (unsigned long long)n.sent, (unsigned long long)n.received,
		     (unsigned long long)n.delivered);
	for (int i = VFABD_WIRE_PASS + 1; i < VFABD_WIRE_DROP_REASONS; i++)
		vjson_printf(b, "%s\"%s\":%llu", i > VFABD_WIRE_PASS + 1 ? "," : "",
			     vfabd_wire_drop_name((enum vfabd_wire_drop)i),
			     (unsigned long long)n.dropped[i]);
	vjson_text(b, "}}");
}

void vfabd_req_report(struct vfabd *d, struct vfabd_conn *c)
{
	struct vjson_buf b = {0};
	struct timespec ts;
	uint64_t now_ms;
	unsigned clients = vfabd_conn_clients(d->srv.conns, d->srv.nconns);
	char when[40];

	clock_gettime(CLOCK_REALTIME, &ts);
	now_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	iso_time(now_ms, when);
	vjson_text(&b, "{\"schema\":\"" REPORT_SCHEMA "\",\n\"fabric\":");
	vjson_str(&b, d->fabric);
	vjson_printf(&b,
		     ",\n\"time\":\"%s\",\n\"unix_ms\":%llu,\n\"vfabd_pid\":%d,\n\"clients\":%u",
		     when, (unsigned long long)now_ms, (int)getpid(), clients);
	links(&b, d);
	ports(&b, d);
	qps(&b, d);
	faults(&b, d);
	paused(&b, d);
	wire(&b, d);
	vjson_text(&b, "\n}\n");
	if (b.oom) {
		free(b.p);
		vfabd_reply_err(c, -ENOMEM, "no memory for the report");
		return;
	}
	vfabd_reply_body(c, b.p, b.len);
}
