/* SPDX-License-Identifier: MIT */
/*
 * QP1 of the ports on the RoCE wire (vfabd_wire.h): what the kernel's ib_cm
 * is to a NIC, for CM MADs (cm/cm_mad.h) between this machine's processes
 * and other machines. A process's CM QP sends its MADs to QP1 of the peer;
 * vfabd sends them from QP1 if they are CM MADs whose communication ID is
 * the process's, and hands each MAD that arrives for QP1 to one process:
 *   - a REQ or SIDR REQ to the CM QP that the listener directory (cm_dir.h)
 *     names for its service and address, when that entry is the live
 *     process bound to the CM QP; with no listener, vfabd answers as ib_cm
 *     does (REJ "invalid service ID", SIDR REP "unsupported");
 *   - any other to the connection that sent the ID it is for; a DREQ for
 *     an ID nobody holds any more gets ib_cm's DREP.
 * A process learns of a peer's MADs only what the kernel's CM would tell it.
 *
 * The IDs a connection sent are remembered while it lives, VFABD_GSI_WAYS
 * per set of a fixed table. A full set forgets the sending connection's own
 * oldest ID, or else the oldest ID of a user who holds half the set or more
 * (when the sender's user does not), or else refuses the new ID (the MAD is
 * dropped, as a MAD the kernel cannot allocate for): the processes choose
 * their IDs, and one user filling the table must not lock others out.
 */
#ifndef VFAB_DAEMON_VFABD_GSI_H
#define VFAB_DAEMON_VFABD_GSI_H

#include <stdbool.h>
#include <stdint.h>

#include "cm/cm_mad.h"
#include "fabric/roce_pkt.h"
#include "fabric/roce_wire.h"
#include "fabric/region.h"

#include "vfabd_wirepkt.h"

#define VFABD_GSI_SETS 16384 /* a power of two */
#define VFABD_GSI_WAYS 8

struct vfabd_gsi {
	char cmdir[512]; /* <rundir>/cm */
	struct {
		uint32_t id;
		int32_t conn; /* -1: free */
		uint32_t uid; /* the connection's user, from the kernel */
		uint32_t age; /* for forgetting the oldest */
	} ids[VFABD_GSI_SETS][VFABD_GSI_WAYS];
	uint32_t clock;
};

/* Where an arrived CM MAD goes. */
struct vfabd_gsi_to {
	bool listener;		 /* REQ, SIDR REQ: to the CM QP qpn of process owner */
	uint32_t qpn;		 /* listener */
	struct vfab_owner owner; /* listener */
	int32_t conn;		 /* else: the connection that sent the ID */
};

void vfabd_gsi_init(struct vfabd_gsi *g, const char *rundir);

/*
 * A packet connection conn (of a process of user uid) sends to QP1 (m and
 * payload, checked by vfabd_wire_tx_check): PASS after remembering its ID
 * and naming QP1 its source, or VFABD_WIRE_DROP_GSI.
 */
enum vfabd_wire_drop vfabd_gsi_tx(struct vfabd_gsi *g, int32_t conn, uint32_t uid,
				  struct vfab_wire_msg *m, const uint8_t *payload);

/* Connection conn closed: its IDs are nobody's. */
void vfabd_gsi_forget(struct vfabd_gsi *g, int32_t conn);

/*
 * A parsed frame v for QP1: PASS and *to; VFABD_WIRE_DROP_GSI when it is no
 * CM MAD vfab takes; VFABD_WIRE_DROP_UNBOUND when nobody here has its ID or
 * listens for its service (*answer: ib_cm answers it, vfabd_gsi_answer).
 */
enum vfabd_wire_drop vfabd_gsi_rx(const struct vfabd_gsi *g, const struct roce_pkt_view *v,
				  struct vfabd_gsi_to *to, bool *answer);

/*
 * What ib_cm answers for nobody: to a REQ or SIDR REQ nobody listens for,
 * a REJ (invalid service ID) or SIDR REP (unsupported); to a DREQ for an
 * ID nobody holds (its process is gone), a DREP. As a TX message from QP1
 * of the port it came in on (hca, port) into m and payload
 * (VFAB_CM_MAD_BYTES).
 */
int vfabd_gsi_answer(const struct roce_pkt_view *v, uint32_t hca, uint32_t port,
		     struct vfab_wire_msg *m, uint8_t *payload);

#endif /* VFAB_DAEMON_VFABD_GSI_H */
