/* SPDX-License-Identifier: MIT */
/*
 * The RoCE wire between machines (issue 25, docs/DESIGN.md "Beyond one
 * host"): what a process and vfabd say to each other on <rundir>/wire.sock
 * (VFAB_WIRE_SOCK, SOCK_SEQPACKET). A QP whose peer is on another machine
 * runs its requester, completer and responder (fabric/roce_rc.h) in its
 * owner's process, as rxe runs them in the kernel; vfabd owns what a user
 * must not: the port's UDP 4791, raw frames, the IP header and the ICRC.
 *
 * One connection per QP. Its first message is VFAB_WIRE_BIND for that QP,
 * answered with one VFAB_WIRE_BIND whose err is 0 or -errno: vfabd binds
 * only a QP its object table says the caller (SO_PEERCRED) owns, on a port
 * with a netdev, once. Then:
 *   - process -> vfabd, VFAB_WIRE_TX: one packet of this QP. vfabd sends it
 *     from the port's netdev as RoCE v2 (IPv4 when both GIDs are IPv4-mapped,
 *     else IPv6) only if sgid is an address of that netdev and, for UD, the
 *     DETH's source QP is the bound QP; otherwise it drops it (counted).
 *   - vfabd -> process, VFAB_WIRE_RX: one packet whose BTH names the bound QP
 *     (hca, qpn), arrived on the port's netdev and passed every check of
 *     roce_pkt_parse (ICRC included).
 * The connection's end is the binding's: closing it unbinds the QP.
 */
#ifndef VFAB_ROCE_WIRE_H
#define VFAB_ROCE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric/roce_pkt.h"

/* The largest payload one packet carries: path MTU 4096. */
#define VFAB_WIRE_MAX_PAYLOAD 4096u

enum vfab_wire_type {
	VFAB_WIRE_BIND = 1,
	VFAB_WIRE_TX = 2,
	VFAB_WIRE_RX = 3,
};

/* Every message: this header, then paylen payload bytes. */
struct vfab_wire_msg {
	uint32_t type; /* enum vfab_wire_type */
	int32_t err;   /* BIND's answer: 0 or -errno; else 0 */
	uint32_t hca;  /* device index in the fabric */
	uint32_t port; /* from 1 */
	uint32_t qpn;  /* the bound QP */
	/* TX: source (one of the port's addresses) and destination; RX: as received. */
	uint8_t sgid[16], dgid[16]; /* IPv6, or IPv4-mapped ::ffff:a.b.c.d */
	uint16_t udp_sport;	    /* 0: ROCE_V2_UDP_SPORT_DEFAULT */
	uint8_t tclass;
	uint8_t hop_limit; /* 0: 64 */
	uint32_t flow_label;
	struct roce_bth bth;
	struct roce_ext ext;
	uint32_t paylen;
};

/* Whether n bytes read from the socket are one whole message of a known type. */
static inline bool vfab_wire_msg_ok(const struct vfab_wire_msg *m, size_t n)
{
	return n >= sizeof(*m) && m->type >= VFAB_WIRE_BIND && m->type <= VFAB_WIRE_RX &&
	       m->paylen <= VFAB_WIRE_MAX_PAYLOAD && n == sizeof(*m) + m->paylen;
}

/* Whether a GID is IPv4-mapped (::ffff:a.b.c.d): the packet goes as RoCE v2 over IPv4. */
static inline bool vfab_wire_gid_v4(const uint8_t gid[16])
{
	static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return __builtin_memcmp(gid, pfx, sizeof(pfx)) == 0;
}

#endif /* VFAB_ROCE_WIRE_H */
