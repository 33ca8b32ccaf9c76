/* SPDX-License-Identifier: MIT */
/*
 * The RC transport as RoCE carries it between hosts (issue 25): the state
 * machines of one QP's requester (roce_req.c: segmentation by path MTU,
 * PSNs, AckReq), completer (roce_comp.c: ACK and NAK, the ACK timer, go-back-
 * N retransmission, retry_cnt) and responder (roce_resp.c: ePSN, duplicates,
 * opcode sequence, the NAK codes), as the IB specification (C9) gives them
 * and rxe implements them. No I/O and no clock of their own: the caller hands
 * packets in (parsed by roce_pkt_parse) and asks for packets to send (built
 * by roce_pkt_build), passes the time in ns, and places payload through
 * struct roce_resp_ops. So a vfabd endpoint, or a unit test's lossy channel,
 * drives them alike.
 *
 * Covered: SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM and RDMA_READ of any length
 * including 0, the two atomics (executed once: a repeated request gets the
 * first answer again), and RNR NAKs.
 */
#ifndef VFAB_ROCE_RC_H
#define VFAB_ROCE_RC_H

#include <stdbool.h>
#include <stdint.h>

#include "fabric/roce_pkt.h"

#define ROCE_PSN_MASK 0xffffffu
/* Work requests one requester holds until they complete. */
#define ROCE_RC_MAX_WR 64
/* Packets in flight unacknowledged at most: rxe's window. */
#define ROCE_RC_MAX_UNACKED 128
/* A long message asks for an ACK at least this often, so the window moves. */
#define ROCE_RC_ACK_EVERY 32

/* AETH syndromes (IBA 9.7.5.1): ACK with no credit count, and the NAKs. */
#define ROCE_AETH_ACK 0x1f
#define ROCE_AETH_RNR_NAK 0x20 /* | the responder's min_rnr_timer encoding */
#define ROCE_AETH_NAK_PSN_SEQ 0x60
#define ROCE_AETH_NAK_INV_REQ 0x61
#define ROCE_AETH_NAK_REM_ACCESS 0x62
#define ROCE_AETH_NAK_REM_OP 0x63

/* Completion statuses: the values of enum ibv_wc_status. */
enum roce_wc_status {
	ROCE_WC_SUCCESS = 0,
	ROCE_WC_WR_FLUSH_ERR = 5,
	ROCE_WC_BAD_RESP_ERR = 8,
	ROCE_WC_REM_INV_REQ_ERR = 9,
	ROCE_WC_REM_ACCESS_ERR = 10,
	ROCE_WC_REM_OP_ERR = 11,
	ROCE_WC_RETRY_EXC_ERR = 12,
	ROCE_WC_RNR_RETRY_EXC_ERR = 13,
};

/* rnr_retry 7: an RNR NAK is retried for ever. */
#define ROCE_RNR_RETRY_FOREVER 7

/* How long an RNR NAK's timer field (min_rnr_timer, 0..31) says to wait. */
static inline uint64_t roce_rnr_timer_ns(uint32_t timer)
{
	/* The IB encoding, in 10 us: 0 is the longest, 655.36 ms. */
	static const uint32_t t10us[32] = {
	    65536, 1,	 2,    3,    4,	   6,	  8,	 12,	16,    24,    32,
	    48,	   64,	 96,   128,  192,  256,	  384,	 512,	768,   1024,  1536,
	    2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
	};

	return (uint64_t)t10us[timer & 31] * 10000ull;
}

/* a + n and a - b (signed) in the 24-bit PSN space. */
static inline uint32_t roce_psn_add(uint32_t a, uint32_t n)
{
	return (a + n) & ROCE_PSN_MASK;
}

static inline int32_t roce_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

#define ROCE_WR_READ 4	    /* IBV_WR_RDMA_READ */
#define ROCE_WR_CMP_SWAP 5  /* IBV_WR_ATOMIC_CMP_AND_SWP */
#define ROCE_WR_FETCH_ADD 6 /* IBV_WR_ATOMIC_FETCH_AND_ADD */
#define ROCE_WR_SEND_INV 9  /* IBV_WR_SEND_WITH_INV */
/* Atomic results a responder keeps for repeated requests: max_dest_rd_atomic's limit. */
#define ROCE_RC_ATOMIC_REPLAY 16

/* One work request; data stays the caller's until it completes. */
struct roce_wr {
	uint64_t wr_id;
	/*
	 * ibv_wr_opcode: 0 RDMA_WRITE, 1 ..._WITH_IMM, 2 SEND, 3 SEND_WITH_IMM,
	 * 4 RDMA_READ, 5 ATOMIC_CMP_AND_SWP, 6 ATOMIC_FETCH_AND_ADD, 9 SEND_WITH_INV
	 */
	uint32_t opcode;
	const uint8_t *data; /* what is sent; RDMA_READ, atomics: none (roce_req.place stores) */
	uint32_t len;	     /* bytes; an atomic's: 8 */
	uint64_t va;	     /* RDMA_WRITE*, RDMA_READ, atomics: remote address */
	uint32_t rkey;	     /* RDMA_WRITE*, RDMA_READ, atomics: its R_Key */
	uint32_t imm;	     /* *_WITH_IMM: network order */
	uint32_t inv_rkey;   /* SEND_WITH_INV: the R_Key the responder invalidates */
	uint64_t swap_add;   /* CMP_SWAP: the swap value; FETCH_ADD: what is added */
	uint64_t compare;    /* CMP_SWAP: the compare value */
	/* The requester's: the message's PSNs. */
	uint32_t first_psn, npkts;
};

/* One packet to send: its BTH, extension headers and payload (in a WR's data). */
struct roce_tx {
	struct roce_bth bth;
	struct roce_ext ext;
	const uint8_t *payload;
	uint32_t len;
};

/* A requester's completion. */
struct roce_wc {
	uint64_t wr_id;
	uint32_t opcode; /* the WR's */
	enum roce_wc_status status;
};

struct roce_req_stats {
	uint64_t packets;	/* sent, retransmissions included */
	uint64_t retransmitted; /* packets sent again */
	uint64_t timeouts;	/* ACK timer expiries */
	uint64_t seq_naks;	/* PSN sequence error NAKs received */
	uint64_t rnr_naks;	/* RNR NAKs received */
};

struct roce_req {
	uint32_t dqpn;
	uint32_t pmtu_bytes; /* 256..4096 */
	uint16_t pkey;
	uint8_t retry_cnt; /* 0..7: retries after a timeout or sequence NAK */
	uint8_t rnr_retry; /* 0..7 (ROCE_RNR_RETRY_FOREVER, init's): set after init */
	uint64_t timeout_ns;
	struct roce_wr wr[ROCE_RC_MAX_WR];
	uint32_t head, cur, tail; /* ring positions: oldest, being sent, next free */
	uint32_t una_psn;	  /* oldest unacknowledged PSN */
	uint32_t psn;		  /* next PSN to send */
	uint32_t next_psn;	  /* after the last posted WR's */
	uint32_t max_sent_psn;	  /* after the furthest packet ever sent */
	uint32_t since_ackreq;	  /* packets sent without AckReq */
	uint32_t retries;	  /* left */
	bool retrying;		  /* went back for a loss and made no progress since */
	uint32_t rnr_used;	  /* RNR NAKs since the last progress */
	uint64_t hold_ns;	  /* an RNR NAK: nothing is sent before this */
	/*
	 * RDMA_READ replies: the owner stores off.. of WR w's reply (in the
	 * requester's memory) as it arrives in order; an atomic's original
	 * value arrives as 8 bytes in host order at off 0. Set after init.
	 */
	void (*place)(void *ctx, const struct roce_wr *w, uint32_t off, const uint8_t *p,
		      uint32_t len);
	void *place_ctx;
	uint64_t deadline_ns;	   /* of the ACK timer; 0: stopped */
	enum roce_wc_status error; /* once not SUCCESS the QP is in error */
	struct roce_req_stats st;
};

/* Ready to send from psn; retry_cnt 0..7, pmtu_bytes a power of two 256..4096. */
int roce_req_init(struct roce_req *q, uint32_t dqpn, uint32_t pmtu_bytes, uint32_t psn,
		  uint8_t retry_cnt, uint64_t timeout_ns);
/* Queues a WR: 0, -ENOMEM when ROCE_RC_MAX_WR wait, -EINVAL for another opcode. */
int roce_req_post(struct roce_req *q, const struct roce_wr *wr);
/* The next packet to send at now_ns into *tx: 1, or 0 when none may go now. */
int roce_req_next(struct roce_req *q, uint64_t now_ns, struct roce_tx *tx);

/*
 * A response arrived at now_ns: an ACK or NAK (its AETH in x), or a packet of
 * an RDMA READ's reply (payload, len). Completions go to wc[0..max), max at
 * least ROCE_RC_MAX_WR, in posting order; returns how many.
 */
int roce_comp_rx(struct roce_req *q, const struct roce_bth *bth, const struct roce_ext *x,
		 const uint8_t *payload, uint32_t len, uint64_t now_ns, struct roce_wc *wc,
		 int max);
/*
 * The ACK timer at now_ns: a retry rewinds to the oldest unacknowledged PSN;
 * with none left the oldest WR completes with RETRY_EXC_ERR and the rest are
 * flushed. Returns the completions written.
 */
int roce_comp_timer(struct roce_req *q, uint64_t now_ns, struct roce_wc *wc, int max);

/* Where the responder places payload: the endpoint's rules and memory. */
struct roce_resp_ops {
	/*
	 * len bytes of an RDMA WRITE at va under rkey: 0, or -EACCES when the
	 * rkey, bounds or rights refuse it (nothing is written then).
	 */
	int (*write)(void *ctx, uint32_t rkey, uint64_t va, const uint8_t *p, uint32_t len);
	/*
	 * len bytes of a SEND at offset into the receive buffer; offset 0 starts a
	 * message (takes the next receive WQE). A WRITE with immediate takes its
	 * receive with (0, NULL, 0) at its last packet. -ENOBUFS: no receive
	 * posted (an RNR NAK: the requester tries again later); -EMSGSIZE: the
	 * buffer is too short.
	 */
	int (*recv)(void *ctx, uint32_t offset, const uint8_t *p, uint32_t len);
	/*
	 * len bytes at va under rkey into buf for an RDMA READ; buf NULL: only
	 * whether the rkey, bounds and rights allow the whole range. -EACCES.
	 */
	int (*read)(void *ctx, uint32_t rkey, uint64_t va, uint8_t *buf, uint32_t len);
	/*
	 * A message ended: its BTH opcode (the last packet's), bytes, and its
	 * immediate or, for a SEND with invalidate, the R_Key it invalidated
	 * (verbs keep both in one field).
	 */
	void (*done)(void *ctx, uint8_t opcode, uint32_t len, bool has_imm, uint32_t imm);
	/*
	 * An atomic (ROCE_WR_CMP_SWAP or ROCE_WR_FETCH_ADD) on the 8 bytes at
	 * va under rkey, executed atomically: *orig the value found. 0,
	 * -EACCES (rkey, bounds, rights), -EINVAL (va not 8-byte aligned).
	 */
	int (*atomic)(void *ctx, uint32_t op, uint32_t rkey, uint64_t va, uint64_t swap_add,
		      uint64_t compare, uint64_t *orig);
	/*
	 * A SEND with invalidate names rkey: whether the endpoint may invalidate
	 * it (commit false: asked at the message's last packet, before its
	 * bytes are received; -EINVAL draws an invalid request NAK), then, once
	 * the message is received, invalidate it (commit true).
	 */
	int (*invalidate)(void *ctx, uint32_t rkey, bool commit);
};

struct roce_resp_stats {
	uint64_t duplicates; /* packets before ePSN, acknowledged again */
	uint64_t out_of_seq; /* packets after ePSN, dropped */
	uint64_t naks;	     /* NAKs sent, RNR NAKs included */
	uint64_t rnr_naks;   /* RNR NAKs sent */
	uint64_t messages;   /* completed */
};

struct roce_resp {
	uint32_t dqpn; /* the requester's QP: ACKs go there */
	uint32_t pmtu_bytes;
	uint16_t pkey;
	uint8_t min_rnr_timer; /* 0..31 (0, init's: 655.36 ms): set after init */
	uint32_t epsn;	       /* expected PSN */
	uint32_t msn;	       /* messages completed, 24 bits */
	bool nak_sent;	       /* a sequence NAK is out: no second one until ePSN arrives */
	bool error;	       /* an invalid request or access error ended the QP */
	bool in_msg;	       /* a message is being received, which msg_op began */
	uint8_t msg_op;
	uint64_t va; /* WRITE: where the next packet goes */
	uint32_t rkey;
	uint32_t done_bytes, total_bytes; /* so far; WRITE: the RETH's length */
	/* An RDMA READ's reply still to send: from rd_psn, rd_left bytes at rd_va. */
	bool rd_on;
	uint32_t rd_psn, rd_rkey, rd_left, rd_total;
	uint64_t rd_va;
	/* The last atomics executed: a repeated one is answered from here. */
	struct {
		bool used;
		uint32_t psn;
		uint64_t orig;
	} replay[ROCE_RC_ATOMIC_REPLAY];
	uint32_t replay_next;
	struct roce_resp_stats st;
};

int roce_resp_init(struct roce_resp *r, uint32_t dqpn, uint32_t pmtu_bytes, uint32_t epsn);
/*
 * One request packet (payload, len as parsed). Returns 1 with *ack set when
 * an ACK or NAK must be sent, 0 when nothing is. After an RDMA READ request
 * (new or repeated) its reply waits: call roce_resp_next until it gives 0.
 */
int roce_resp_rx(struct roce_resp *r, const struct roce_bth *bth, const struct roce_ext *x,
		 const uint8_t *payload, uint32_t len, const struct roce_resp_ops *ops, void *ctx,
		 struct roce_tx *ack);

/*
 * The next packet of an RDMA READ's reply into *tx, its payload read through
 * ops->read into buf (pmtu_bytes at least): 1, or 0 when none waits.
 */
int roce_resp_next(struct roce_resp *r, const struct roce_resp_ops *ops, void *ctx, uint8_t *buf,
		   struct roce_tx *tx);

#endif /* VFAB_ROCE_RC_H */
