/* SPDX-License-Identifier: MIT */
/*
 * QP1 on vfabd's RoCE wire (daemon/vfabd_gsi.h): what a process's CM QP may
 * send to another machine's QP1, and which process a CM MAD arriving for
 * QP1 reaches: a REQ the listener the directory names (a real entry of this
 * process in a directory of the test's), anything else the connection that
 * sent its ID; a REQ nobody listens for is answered with ib_cm's REJ, a
 * DREQ for an ID nobody holds with its DREP; a user who fills the ID table
 * does not keep another user's IDs out.
 */
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/proc.h"
#include "cm/cm_dir.h"
#include "cm/cm_path.h"
#include "daemon/vfabd_gsi.h"

#define CM_QPN 0x2345
#define PORT 18611
#define PS_TCP 0x0106

static const uint8_t here[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 1, 2};
static const uint8_t there[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 1};
static char rundir[] = "/tmp/test-vfabd-gsi-XXXXXX";

static int setup(void **state)
{
	struct vfabd_gsi *g = malloc(sizeof(*g));
	char cm[128];

	if (!g || !mkdtemp(rundir))
		return -1;
	snprintf(cm, sizeof(cm), "%s/cm", rundir);
	if (mkdir(cm, 01777))
		return -1;
	vfabd_gsi_init(g, rundir);
	*state = g;
	return 0;
}

static int teardown(void **state)
{
	char cmd[160];

	free(*state);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", rundir);
	return system(cmd);
}

/* A CM message of type from "there" to "here" (IDs: its sender's, its receiver's). */
static struct vfab_cm_msg msg(int type, uint32_t local_id, uint32_t remote_id)
{
	struct vfab_cm_msg m = {
	    .type = (uint8_t)type, .local_id = local_id, .remote_id = remote_id};

	m.family = AF_INET;
	m.ps = PS_TCP;
	m.sport = 40000;
	m.dport = PORT;
	memcpy(m.saddr, there + 12, 4);
	memcpy(m.daddr, here + 12, 4);
	memcpy(m.sgid, there, 16);
	m.mtu = 5;
	return m;
}

/* Process p's TX message of m to QP1 from its CM QP. */
static void tx_of(const struct vfab_cm_msg *cm, struct vfab_wire_msg *w, uint8_t *mad)
{
	memset(w, 0, sizeof(*w));
	w->type = VFAB_WIRE_TX;
	w->qpn = CM_QPN;
	w->bth.opcode = ROCE_OP_UD_SEND_ONLY;
	w->bth.dqpn = VFAB_CM_MAD_QPN;
	w->ext.qkey = VFAB_CM_QP1_QKEY;
	w->ext.src_qpn = CM_QPN;
	w->paylen = VFAB_CM_MAD_BYTES;
	assert_int_equal(vfab_cm_mad_encode(cm, 7, 0, there, mad, VFAB_CM_MAD_BYTES),
			 VFAB_CM_MAD_BYTES);
}

/* A parsed frame of m from "there" to QP1 "here". */
static void rx_of(const struct vfab_cm_msg *cm, struct roce_pkt_view *v, uint8_t *mad)
{
	memset(v, 0, sizeof(*v));
	memcpy(v->addr.sgid, there, 16);
	memcpy(v->addr.dgid, here, 16);
	v->bth.opcode = ROCE_OP_UD_SEND_ONLY;
	v->bth.dqpn = VFAB_CM_MAD_QPN;
	v->ext.qkey = VFAB_CM_QP1_QKEY;
	v->ext.src_qpn = VFAB_CM_MAD_QPN;
	assert_int_equal(vfab_cm_mad_encode(cm, 0x99, 0, here, mad, VFAB_CM_MAD_BYTES),
			 VFAB_CM_MAD_BYTES);
	v->payload = mad;
	v->paylen = VFAB_CM_MAD_BYTES;
}

static void tx_rules(void **state)
{
	struct vfabd_gsi *g = *state;
	struct vfab_cm_msg req = msg(VFAB_CM_REQ, 0x1111, 0);
	struct vfab_wire_msg w;
	uint8_t mad[VFAB_CM_MAD_BYTES];

	/* A CM MAD of the process's own ID goes, from QP1. */
	tx_of(&req, &w, mad);
	assert_int_equal(vfabd_gsi_tx(g, 3, 1000, &w, mad), VFABD_WIRE_PASS);
	assert_int_equal(w.ext.src_qpn, VFAB_CM_MAD_QPN);
	/* Again from the same connection (a resend): still its own. */
	tx_of(&req, &w, mad);
	assert_int_equal(vfabd_gsi_tx(g, 3, 1000, &w, mad), VFABD_WIRE_PASS);
	/* The same ID from another connection: it speaks for nobody else's. */
	tx_of(&req, &w, mad);
	assert_int_equal(vfabd_gsi_tx(g, 4, 1000, &w, mad), VFABD_WIRE_DROP_GSI);
	assert_int_equal(w.ext.src_qpn, CM_QPN);
	/* Once the first connection closed, the ID is free. */
	vfabd_gsi_forget(g, 3);
	assert_int_equal(vfabd_gsi_tx(g, 4, 1000, &w, mad), VFABD_WIRE_PASS);
	/* Not a CM MAD, not QP1's Q_Key, not one whole MAD, not a SEND: refused. */
	tx_of(&req, &w, mad);
	mad[1] = 0x03; /* the SA's class */
	assert_int_equal(vfabd_gsi_tx(g, 4, 1000, &w, mad), VFABD_WIRE_DROP_GSI);
	tx_of(&req, &w, mad);
	w.ext.qkey = 0x11111111;
	assert_int_equal(vfabd_gsi_tx(g, 4, 1000, &w, mad), VFABD_WIRE_DROP_GSI);
	tx_of(&req, &w, mad);
	w.paylen = 200;
	assert_int_equal(vfabd_gsi_tx(g, 4, 1000, &w, mad), VFABD_WIRE_DROP_GSI);
	tx_of(&req, &w, mad);
	w.bth.opcode = ROCE_OP_UD_SEND_ONLY_IMM;
	assert_int_equal(vfabd_gsi_tx(g, 4, 1000, &w, mad), VFABD_WIRE_DROP_GSI);
}

static void rx_by_id(void **state)
{
	struct vfabd_gsi *g = *state;
	struct vfab_cm_msg req = msg(VFAB_CM_REQ, 0x2222, 0),
			   rep = msg(VFAB_CM_REP, 0x7777, 0x2222);
	struct vfab_cm_msg back;
	struct vfab_wire_msg w;
	struct roce_pkt_view v;
	struct vfabd_gsi_to to;
	uint8_t mad[VFAB_CM_MAD_BYTES], in[VFAB_CM_MAD_BYTES];
	bool answer;

	tx_of(&req, &w, mad);
	assert_int_equal(vfabd_gsi_tx(g, 9, 1000, &w, mad), VFABD_WIRE_PASS);
	/* The answer to ID 0x2222 reaches the connection that sent it. */
	rx_of(&rep, &v, in);
	assert_int_equal(vfabd_gsi_rx(g, &v, &to, &answer), VFABD_WIRE_PASS);
	assert_false(to.listener);
	assert_int_equal(to.conn, 9);
	assert_false(answer);
	/* One for an ID nobody here sent reaches nobody, and is not answered. */
	rep.remote_id = 0x3333;
	rx_of(&rep, &v, in);
	assert_int_equal(vfabd_gsi_rx(g, &v, &to, &answer), VFABD_WIRE_DROP_UNBOUND);
	assert_false(answer);
	/* A DREQ for an ID that went with its process: ib_cm's DREP answers. */
	rep = msg(VFAB_CM_DREQ, 0x7777, 0x5555);
	rx_of(&rep, &v, in);
	assert_int_equal(vfabd_gsi_rx(g, &v, &to, &answer), VFABD_WIRE_DROP_UNBOUND);
	assert_true(answer);
	assert_int_equal(vfabd_gsi_answer(&v, 2, 1, &w, mad), 0);
	assert_int_equal(vfab_cm_mad_decode(&back, mad, sizeof(mad), here, there), 0);
	assert_int_equal(back.type, VFAB_CM_DREP);
	assert_int_equal(back.local_id, 0x5555);
	assert_int_equal(back.remote_id, 0x7777);
	/* QP1 takes only QP1's datagrams: another source QP, another Q_Key. */
	rep = msg(VFAB_CM_REP, 0x7777, 0x2222);
	rx_of(&rep, &v, in);
	v.ext.src_qpn = 0x55;
	assert_int_equal(vfabd_gsi_rx(g, &v, &to, &answer), VFABD_WIRE_DROP_GSI);
	rx_of(&rep, &v, in);
	v.ext.qkey = 0;
	assert_int_equal(vfabd_gsi_rx(g, &v, &to, &answer), VFABD_WIRE_DROP_GSI);
	vfabd_gsi_forget(g, 9);
}

static void rx_req(void **state)
{
	struct vfabd_gsi *g = *state;
	struct vfab_cm_msg req = msg(VFAB_CM_REQ, 0x4444, 0), rej;
	struct vfab_cm_entry e = {.cm_qpn = CM_QPN, .pid = getpid()};
	struct roce_pkt_view v;
	struct vfabd_gsi_to to;
	struct vfab_wire_msg out;
	uint8_t in[VFAB_CM_MAD_BYTES], ans[VFAB_CM_MAD_BYTES];
	char dir[160], tmp[256], name[64], state_letter;
	bool answer;

	/* Nobody listens: no process, and ib_cm's REJ "invalid service ID" goes back. */
	rx_of(&req, &v, in);
	assert_int_equal(vfabd_gsi_rx(g, &v, &to, &answer), VFABD_WIRE_DROP_UNBOUND);
	assert_true(answer);
	assert_int_equal(vfabd_gsi_answer(&v, 2, 1, &out, ans), 0);
	assert_int_equal(out.type, VFAB_WIRE_TX);
	assert_int_equal(out.hca, 2);
	assert_int_equal(out.port, 1);
	assert_memory_equal(out.sgid, here, 16);
	assert_memory_equal(out.dgid, there, 16);
	assert_int_equal(out.bth.dqpn, VFAB_CM_MAD_QPN);
	assert_int_equal(out.ext.src_qpn, VFAB_CM_MAD_QPN);
	assert_int_equal(out.ext.qkey, VFAB_CM_QP1_QKEY);
	assert_int_equal(out.paylen, VFAB_CM_MAD_BYTES);
	assert_memory_equal(ans + 8, in + 8, 8); /* the REQ's transaction ID */
	assert_int_equal(vfab_cm_mad_decode(&rej, ans, sizeof(ans), here, there), 0);
	assert_int_equal(rej.type, VFAB_CM_REJ);
	assert_int_equal(rej.reason, VFAB_CM_REJ_INVALID_SERVICE_ID);
	assert_int_equal(rej.remote_id, 0x4444);

	/* This process listens on 198.18.1.2:PORT: the REQ goes to its CM QP. */
	assert_int_equal(vfab_proc_self_stat(&state_letter, &e.start), 0);
	snprintf(dir, sizeof(dir), "%s/cm", rundir);
	snprintf(name, sizeof(name), "%04x-198.18.1.2-%u", PS_TCP, PORT);
	assert_int_equal(vfab_cm_dir_prepare(dir, &e, tmp, sizeof(tmp)), 0);
	assert_int_equal(vfab_cm_dir_publish(dir, tmp, name, &e), 0);
	unlink(tmp);
	assert_int_equal(vfabd_gsi_rx(g, &v, &to, &answer), VFABD_WIRE_PASS);
	assert_false(answer);
	assert_true(to.listener);
	assert_int_equal(to.qpn, CM_QPN);
	assert_int_equal(to.owner.pid, getpid());
	assert_int_equal(to.owner.start_ticks, e.start);
	/* Another port, another service: nobody. */
	req.dport = PORT + 1;
	rx_of(&req, &v, in);
	assert_int_equal(vfabd_gsi_rx(g, &v, &to, &answer), VFABD_WIRE_DROP_UNBOUND);
	assert_true(answer);
	vfab_cm_dir_remove(dir, name, &e);
}

/* Whether an answer to ID id reaches connection conn. */
static bool routes_to(struct vfabd_gsi *g, uint32_t id, int32_t conn)
{
	struct vfab_cm_msg rep = msg(VFAB_CM_REP, 0x7777, id);
	struct roce_pkt_view v;
	struct vfabd_gsi_to to;
	uint8_t in[VFAB_CM_MAD_BYTES];
	bool answer;

	rx_of(&rep, &v, in);
	return vfabd_gsi_rx(g, &v, &to, &answer) == VFABD_WIRE_PASS && to.conn == conn;
}

static enum vfabd_wire_drop send_id(struct vfabd_gsi *g, int32_t conn, uint32_t uid, uint32_t id)
{
	struct vfab_cm_msg req = msg(VFAB_CM_REQ, id, 0);
	struct vfab_wire_msg w;
	uint8_t mad[VFAB_CM_MAD_BYTES];

	tx_of(&req, &w, mad);
	return vfabd_gsi_tx(g, conn, uid, &w, mad);
}

static void fair_share(void **state)
{
	struct vfabd_gsi *g = *state;
	/* IDs above the other cases' (whose connection 4 keeps 0x1111). */
	const uint32_t base = 0x100000, fill = 3 * VFABD_GSI_SETS * VFABD_GSI_WAYS,
		       id_b = base + fill + 7;

	/* User 1000 (connection 3) sends IDs until every set is full of its own. */
	for (uint32_t id = base; id < base + fill; id++)
		assert_int_equal(send_id(g, 3, 1000, id), VFABD_WIRE_PASS);
	/* Another of its connections finds no room: the sets are its user's. */
	assert_int_equal(send_id(g, 4, 1000, id_b), VFABD_WIRE_DROP_GSI);
	/* User 2000's ID takes the place of user 1000's oldest in its set. */
	assert_int_equal(send_id(g, 5, 2000, id_b), VFABD_WIRE_PASS);
	assert_true(routes_to(g, id_b, 5));
	/* User 1000 fills on: it gives up its own IDs, never user 2000's. */
	for (uint32_t id = base + fill + 100; id < base + 2 * fill; id++)
		assert_int_equal(send_id(g, 3, 1000, id), VFABD_WIRE_PASS);
	assert_true(routes_to(g, id_b, 5));
	vfabd_gsi_forget(g, 3);
	vfabd_gsi_forget(g, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(tx_rules),
	    cmocka_unit_test(rx_by_id),
	    cmocka_unit_test(rx_req),
	    cmocka_unit_test(fair_share),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
