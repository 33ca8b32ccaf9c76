/* SPDX-License-Identifier: MIT */
/*
 * Packet capture (vfab capture): what a port sends and receives, recorded
 * by the requesters that move the messages and turned into RoCE frames by
 * the capturing tool (tools/cmd_capture.c, fabric/roce_pkt.h).
 *
 * A capture is a slot of the region's captures[] table and a Unix datagram
 * socket, <rundir>/capture/<slot>.sock (base/paths.h), that the tool (root)
 * binds before it marks the slot active. Every requester whose message
 * leaves or enters the slot's port sends the tool a record of the message
 * with the first pkt_bytes of each of its packets, gathered straight from
 * the message's buffers: one datagram for as many packets as fit
 * VFAB_CAP_DGRAM_PAYLOAD. A send waits a bounded time for room; what the
 * socket cannot take then is dropped and counted in the slot.
 *
 * The payload never passes through the region, which every local user can
 * read: only the tool reads the socket. The slot can be rewritten by any
 * user, which at worst makes requesters send records the tool does not
 * want (it keeps only its port's) or none; the socket's path comes from
 * the HCA's locator, never from the region. A local user can send the
 * tool forged records, as one could send traffic a sniffer sees; the tool
 * checks each datagram's size and fields before it believes them.
 * Nothing here costs a message anything while no capture runs: requesters
 * test captures_on (struct vfab_region), which shares link_gen's line.
 */
#ifndef VFAB_CAPTURE_H
#define VFAB_CAPTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VFAB_CAPTURES 8

/* SETUP: a tool took the slot and is filling it; requesters act on ACTIVE only. */
enum vfab_cap_state { VFAB_CAP_FREE = 0, VFAB_CAP_ACTIVE = 1, VFAB_CAP_SETUP = 2 };

struct vfab_capture {
	_Alignas(64) _Atomic uint32_t state; /* enum vfab_cap_state */
	uint32_t hca;			     /* the captured port */
	uint32_t port;			     /* 1-based */
	/* Payload bytes sent per packet: the snap length's share (0: none). */
	uint32_t pkt_bytes;
	int32_t tool_pid; /* the capturing tool, so a killed one's slot can be taken over */
	uint32_t pad;
	uint64_t tool_start; /* its start time (/proc/<pid>/stat, clock ticks) */
};

/* What became of an attempt, as the requester learnt it. */
enum vfab_cap_result {
	VFAB_CAP_ACKED = 0,  /* answered: ACK, READ response, atomic ACK */
	VFAB_CAP_UNANSWERED, /* UD, UC, a silent drop, no answer */
	VFAB_CAP_RNR,	     /* RNR NAK (syndrome carries the timer) */
	VFAB_CAP_NAK,	     /* NAK: syndrome as on the wire (0x60 + code) */
	VFAB_CAP_LOST,	     /* the link lost packet lost_pkt of it */
};

#define VFAB_CAP_MAGIC 0x70616376u /* "vcap" */

/* Payload bytes (packets' shares, whole) and packets one datagram carries at most. */
#define VFAB_CAP_DGRAM_PAYLOAD (60u << 10)
#define VFAB_CAP_DGRAM_PKTS 4096u

/*
 * One datagram: this header, then, for each of its packets pkt ..
 * pkt + pkt_count - 1 in order, the first min(packet's payload, pkt_bytes)
 * bytes of that packet's payload (a READ's: its responses' data); cap_len
 * bytes in all. Integers in host order.
 */
struct vfab_cap_rec {
	uint32_t magic;
	uint8_t result;	  /* enum vfab_cap_result */
	uint8_t syndrome; /* AETH syndrome of a NAK or RNR NAK */
	uint8_t l3;	  /* enum roce_l3 of the sender's GID (fabric/roce_pkt.h) */
	uint8_t qp_type;  /* enum ibv_qp_type of the sender */
	uint64_t ts_ns;	  /* CLOCK_REALTIME of the attempt */
	uint32_t src_hca, src_port, dst_hca, dst_port;
	uint8_t sgid[16], dgid[16];
	uint8_t wr_opcode; /* enum ibv_wr_opcode */
	uint8_t pmtu;	   /* enum ibv_mtu */
	uint8_t solicited;
	uint8_t pad0;
	uint32_t sqpn, dqpn;
	uint32_t psn;	    /* the message's first packet's */
	uint32_t npkts;	    /* packets of the message's data (the READ's response) */
	uint32_t pkt;	    /* the datagram's first packet */
	uint32_t pkt_count; /* and how many */
	uint32_t pkt_bytes; /* payload bytes kept of each packet, at most */
	uint32_t lost_pkt;  /* VFAB_CAP_LOST: the packet the link lost */
	uint32_t msg_len;   /* the message's payload (a READ's length; 0 for atomics) */
	uint32_t pay_off;   /* where this packet's payload starts in the message */
	uint32_t cap_len;   /* payload bytes that follow (at most pkt_bytes) */
	uint32_t rkey;
	uint64_t va;
	uint32_t imm;	   /* immediate (big-endian, as verbs holds it) or the invalidated rkey */
	uint32_t qkey;	   /* UD */
	uint64_t swap_add; /* atomics; the result in orig */
	uint64_t compare;
	uint64_t orig;
	uint32_t xrc_srqn;
};

/* Bytes of an MTU (enum ibv_mtu 1..5), 0 for anything else. */
static inline uint32_t vfab_cap_mtu_bytes(uint32_t pmtu)
{
	return pmtu >= 1 && pmtu <= 5 ? 128u << pmtu : 0;
}

/* Payload bytes a record keeps of packet pkt of a len-byte message. */
static inline uint32_t vfab_cap_pkt_kept(uint64_t len, uint32_t mtu, uint32_t pkt,
					 uint32_t pkt_bytes)
{
	uint64_t off = (uint64_t)pkt * mtu, chunk = off < len ? len - off : 0;

	chunk = chunk < mtu ? chunk : mtu;
	return (uint32_t)(chunk < pkt_bytes ? chunk : pkt_bytes);
}

/* Packets of a message of len bytes with mtu-byte packets: at least one. */
static inline uint32_t vfab_cap_npkts(uint64_t len, uint32_t mtu)
{
	return len ? (uint32_t)((len + mtu - 1) / mtu) : 1;
}

/*
 * Whether a datagram of got bytes is a sound record (*r copied from it):
 * magic, sizes, packets within the message, indices below max_hca and
 * VFAB_MAX_PORTS, a known MTU, cap_len the sum of its packets' shares.
 */
bool vfab_cap_rec_sound(const struct vfab_cap_rec *r, size_t got, uint32_t max_hca);

#endif /* VFAB_CAPTURE_H */
