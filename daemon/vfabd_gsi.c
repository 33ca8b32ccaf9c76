/* SPDX-License-Identifier: MIT */
/* QP1 of the ports on the RoCE wire: CM MADs to and from this machine (vfabd_gsi.h). */

#include "vfabd_gsi.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "base/paths.h"
#include "cm/cm_addr.h"
#include "cm/cm_dir.h"
#include "cm/cm_mad.h"
#include "cm/cm_path.h"

void vfabd_gsi_init(struct vfabd_gsi *g, const char *rundir)
{
	memset(g, 0, sizeof(*g));
	for (size_t s = 0; s < VFABD_GSI_SETS; s++)
		for (size_t w = 0; w < VFABD_GSI_WAYS; w++)
			g->ids[s][w].conn = -1;
	if (vfab_cm_dir(g->cmdir, sizeof(g->cmdir), rundir))
		g->cmdir[0] = 0; /* no listener is found: every REQ is rejected */
}

static uint32_t set_of(uint32_t id)
{
	return (id * 0x9e3779b1u) >> 18 & (VFABD_GSI_SETS - 1);
}

/*
 * Remember id as conn's (a process of user uid): false when another
 * connection's it is, or when its set holds no room conn may take. A full
 * set gives up conn's own oldest ID; failing that, the oldest ID of a user
 * who holds half the set or more, unless uid does too. The processes choose
 * their IDs, so one user could fill every set: this keeps room for others.
 */
static bool record(struct vfabd_gsi *g, uint32_t id, int32_t conn, uint32_t uid)
{
	typeof(g->ids[0][0]) *set = g->ids[set_of(id)];
	int way = -1, oldest = -1, victim = -1, mine = 0, most = 0;

	for (int w = 0; w < VFABD_GSI_WAYS; w++) {
		if (set[w].conn >= 0 && set[w].id == id)
			return set[w].conn == conn;
		if (set[w].conn < 0 && way < 0)
			way = w;
		if (set[w].conn == conn && (oldest < 0 || set[w].age < set[oldest].age))
			oldest = w;
		mine += set[w].conn >= 0 && set[w].uid == uid;
	}
	for (int w = 0; way < 0 && oldest < 0 && w < VFABD_GSI_WAYS; w++) {
		int held = 0;

		for (int v = 0; v < VFABD_GSI_WAYS; v++)
			held += set[v].uid == set[w].uid;
		if (set[w].uid != uid &&
		    (held > most || (held == most && set[w].age < set[victim].age))) {
			most = held;
			victim = w;
		}
	}
	if (way < 0)
		way = oldest;
	if (way < 0 && most >= VFABD_GSI_WAYS / 2 && mine < VFABD_GSI_WAYS / 2)
		way = victim;
	if (way < 0)
		return false;
	set[way].id = id;
	set[way].conn = conn;
	set[way].uid = uid;
	set[way].age = ++g->clock;
	return true;
}

static int32_t owner_of(const struct vfabd_gsi *g, uint32_t id)
{
	uint32_t s = set_of(id);

	for (int w = 0; w < VFABD_GSI_WAYS; w++)
		if (g->ids[s][w].conn >= 0 && g->ids[s][w].id == id)
			return g->ids[s][w].conn;
	return -1;
}

void vfabd_gsi_forget(struct vfabd_gsi *g, int32_t conn)
{
	for (size_t s = 0; s < VFABD_GSI_SETS; s++)
		for (size_t w = 0; w < VFABD_GSI_WAYS; w++)
			if (g->ids[s][w].conn == conn)
				g->ids[s][w].conn = -1;
}

/* A datagram to or from QP1 as ib_cm sends them: UD SEND, QP1's Q_Key, one MAD. */
static bool gsi_datagram(const struct roce_bth *bth, const struct roce_ext *x, uint32_t paylen)
{
	return bth->opcode == ROCE_OP_UD_SEND_ONLY && x->qkey == VFAB_CM_QP1_QKEY &&
	       paylen == VFAB_CM_MAD_BYTES;
}

enum vfabd_wire_drop vfabd_gsi_tx(struct vfabd_gsi *g, int32_t conn, uint32_t uid,
				  struct vfab_wire_msg *m, const uint8_t *payload)
{
	struct vfab_cm_mad_key k;

	if (!gsi_datagram(&m->bth, &m->ext, m->paylen) || vfab_cm_mad_key(payload, m->paylen, &k) ||
	    (k.own_id && !record(g, k.own_id, conn, uid)))
		return VFABD_WIRE_DROP_GSI;
	m->ext.src_qpn = VFAB_CM_MAD_QPN;
	return VFABD_WIRE_PASS;
}

/* The listener's entry for k's service, as the CM's own requester reads it. */
static bool listener(const struct vfabd_gsi *g, const struct vfab_cm_mad_key *k,
		     struct vfabd_gsi_to *to)
{
	struct sockaddr_storage ss;
	struct vfab_cm_entry e;
	char name[128];

	vfab_cm_sa_make(&ss, k->family, k->daddr, 0);
	if (!g->cmdir[0] ||
	    vfab_cm_dir_name(name, sizeof(name), k->ps, (struct sockaddr *)&ss, k->port) ||
	    vfab_cm_dir_check(g->cmdir, name, &e))
		return false;
	to->listener = true;
	to->qpn = e.cm_qpn;
	to->owner = (struct vfab_owner){.pid = e.pid, .start_ticks = e.start};
	return true;
}

enum vfabd_wire_drop vfabd_gsi_rx(const struct vfabd_gsi *g, const struct roce_pkt_view *v,
				  struct vfabd_gsi_to *to, bool *answer)
{
	struct vfab_cm_mad_key k;

	*answer = false;
	memset(to, 0, sizeof(*to));
	if (!gsi_datagram(&v->bth, &v->ext, v->paylen) || (v->ext.src_qpn & 0xffffff) != 1 ||
	    vfab_cm_mad_key(v->payload, v->paylen, &k))
		return VFABD_WIRE_DROP_GSI;
	if (k.type == VFAB_CM_REQ || k.type == VFAB_CM_SIDR_REQ) {
		if (listener(g, &k, to))
			return VFABD_WIRE_PASS;
		*answer = true;
		return VFABD_WIRE_DROP_UNBOUND;
	}
	to->conn = k.for_id ? owner_of(g, k.for_id) : -1;
	if (to->conn >= 0)
		return VFABD_WIRE_PASS;
	*answer = k.type == VFAB_CM_DREQ; /* cm_dreq_handler: the ID went, a DREP still goes */
	return VFABD_WIRE_DROP_UNBOUND;
}

int vfabd_gsi_answer(const struct roce_pkt_view *v, uint32_t hca, uint32_t port,
		     struct vfab_wire_msg *m, uint8_t *payload)
{
	struct vfab_cm_mad_key k;
	struct vfab_cm_msg r = {0};
	uint64_t tid = 0;
	int n;

	if (vfab_cm_mad_key(v->payload, v->paylen, &k))
		return -EBADMSG;
	if (k.type == VFAB_CM_REQ) {
		r.type = VFAB_CM_REJ;
		r.reason = VFAB_CM_REJ_INVALID_SERVICE_ID;
		r.mraed = VFAB_CM_REQ;
	} else if (k.type == VFAB_CM_SIDR_REQ) {
		r.type = VFAB_CM_SIDR_REP;
		r.reason = VFAB_CM_SIDR_UNSUPPORTED;
		r.ps = k.ps;
		r.sport = k.port;
	} else if (k.type == VFAB_CM_DREQ) {
		r.type = VFAB_CM_DREP;
		r.local_id = k.for_id;
	} else {
		return -EINVAL;
	}
	r.remote_id = k.own_id;
	/* An answer carries the transaction ID of what it answers (MAD header bytes 8..15). */
	for (int i = 8; i < 16; i++)
		tid = tid << 8 | v->payload[i];
	n = vfab_cm_mad_encode(&r, tid, 0, v->addr.sgid, payload, VFAB_CM_MAD_BYTES);
	if (n < 0)
		return n;
	memset(m, 0, sizeof(*m));
	m->type = VFAB_WIRE_TX;
	m->hca = hca;
	m->port = port;
	memcpy(m->sgid, v->addr.dgid, 16);
	memcpy(m->dgid, v->addr.sgid, 16);
	m->tclass = v->addr.tclass;
	m->bth.opcode = ROCE_OP_UD_SEND_ONLY;
	m->bth.pkey = ROCE_DEFAULT_PKEY;
	m->bth.dqpn = VFAB_CM_MAD_QPN;
	m->ext.qkey = VFAB_CM_QP1_QKEY;
	m->ext.src_qpn = VFAB_CM_MAD_QPN;
	m->paylen = (uint32_t)n;
	return 0;
}
