/* SPDX-License-Identifier: MIT */
/*
 * What vfabd's RoCE wire (vfabd_wire.h) decides about one packet, apart
 * from any socket: whether a process may send a VFAB_WIRE_TX, the frame it
 * becomes, where it goes, and the VFAB_WIRE_RX a received frame becomes.
 * Pure functions, unit-tested (tests/unit/test_vfabd_wire.c).
 */
#ifndef VFAB_DAEMON_VFABD_WIREPKT_H
#define VFAB_DAEMON_VFABD_WIREPKT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fabric/roce_pkt.h"
#include "fabric/roce_wire.h"

/* Why a packet was not sent or delivered: the module counts each. */
enum vfabd_wire_drop {
	VFABD_WIRE_PASS = 0,
	VFABD_WIRE_DROP_BINDING,  /* TX: hca, port or qpn not the connection's binding */
	VFABD_WIRE_DROP_SGID,	  /* TX: sgid is no address of the port's netdev */
	VFABD_WIRE_DROP_DGID,	  /* TX: one GID IPv4-mapped and the other not */
	VFABD_WIRE_DROP_SRC_QP,	  /* TX: a UD packet whose DETH names another source QP */
	VFABD_WIRE_DROP_UNSEALED, /* TX/RX: the bound QP is no longer sealed by its owner */
	VFABD_WIRE_DROP_BUILD,	  /* TX: roce_pkt_build refused it (opcode, lengths) */
	VFABD_WIRE_DROP_SEND,	  /* TX: the raw socket refused it (no route, full queue) */
	VFABD_WIRE_DROP_PARSE,	  /* RX: roce_pkt_parse refused the frame (ICRC, lengths, ...) */
	VFABD_WIRE_DROP_UNBOUND,  /* RX: no connection bound to (hca, port, dqpn) */
	VFABD_WIRE_DROP_FULL,	  /* RX: the bound process's socket was full */
	VFABD_WIRE_DROP_GSI,	  /* TX/RX: to or from QP1, but no CM MAD of the sender's IDs */
	VFABD_WIRE_DROP_REASONS
};

/* A connection's binding: the one QP it speaks for. */
struct vfabd_wire_bind {
	uint32_t hca, port, qpn;
};

/* The largest frame a message becomes: headers, payload, pad, ICRC. */
#define VFABD_WIRE_FRAME_MAX (ROCE_MAX_HDR_LEN + VFAB_WIRE_MAX_PAYLOAD + 3 + ROCE_ICRC_LEN)

/* A drop reason's name for logs and reports ("sgid", "parse", ...). */
const char *vfabd_wire_drop_name(enum vfabd_wire_drop why);

/*
 * May the bound connection b send m (a whole message, vfab_wire_msg_ok)?
 * addrs[0..naddrs) are the port's netdev addresses as GIDs (IPv4-mapped
 * for IPv4), as the kernel reports them. VFABD_WIRE_PASS or the reason.
 */
enum vfabd_wire_drop vfabd_wire_tx_check(const struct vfab_wire_msg *m,
					 const struct vfabd_wire_bind *b,
					 const uint8_t (*addrs)[16], size_t naddrs);

/*
 * The RoCE v2 frame of a checked TX message m (payload: its m->paylen
 * bytes) into buf[0..cap): IPv4 when both GIDs are IPv4-mapped, else IPv6,
 * MACs zero. ip_id is the IPv4 identification and must not be 0: the kernel
 * replaces a 0 id of a header-included packet with its own, which the ICRC
 * (computed here) does not cover. Returns the frame's length, Ethernet
 * header included (what goes to a raw IP socket starts ROCE_ETH_HLEN bytes
 * in), or -errno as roce_pkt_build (-EINVAL also for ip_id 0).
 */
int vfabd_wire_tx_frame(const struct vfab_wire_msg *m, const void *payload, uint16_t ip_id,
			uint8_t *buf, size_t cap);

/*
 * The destination of a frame to dgid as a raw IP socket's sendto address:
 * AF_INET for an IPv4-mapped GID, else AF_INET6 (link-local: scoped to
 * ifindex). Returns the family; *len is the address's length.
 */
int vfabd_wire_dst(const uint8_t dgid[16], int ifindex, struct sockaddr_storage *sa,
		   socklen_t *len);

/* The VFAB_WIRE_RX header for a parsed frame v delivered to binding b (payload: v->payload). */
void vfabd_wire_rx_msg(const struct roce_pkt_view *v, const struct vfabd_wire_bind *b,
		       struct vfab_wire_msg *m);

#endif /* VFAB_DAEMON_VFABD_WIREPKT_H */
