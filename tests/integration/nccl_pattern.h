/* SPDX-License-Identifier: MIT */
/*
 * nccl_pattern: verbs exactly as NCCL's IB transport (net_ib) uses them, see
 * nccl_pattern.c. This header is shared by its three files: the program and
 * its out-of-band exchange (nccl_pattern.c), the device and connection set-up
 * (nccl_pattern_ib.c) and the traffic (nccl_pattern_flow.c).
 */
#ifndef NCCL_PATTERN_H
#define NCCL_PATTERN_H

#include <infiniband/verbs.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NP_PORT 1
#define NP_SLOTS 16	     /* requests in flight (NCCL: MAX_REQUESTS) */
#define NP_SLOT_BYTES 262144 /* largest message of a round */
#define NP_FIFO_ENTRY 64     /* bytes of one CTS entry, idx in the last 8 */
#define NP_MAX_CHAIN 8	     /* WRITEs before the WRITE_WITH_IMM */
#define NP_SEND_DEPTH 512    /* NCCL's QP sizes */
#define NP_RECV_DEPTH 256
#define NP_CTS_SIGNAL_EVERY 256 /* the receiver signals 1 CTS write in 256 */
#define NP_FLUSH_EVERY 16	/* rounds between GDR-style flush READs */
/*
 * --bench SIZE: every round SIZE bytes in one WRITE_WITH_IMM, NCCL_STEPS (8)
 * in flight as NCCL's proxy keeps them per channel, the bytes checked (and
 * written by the sender) in one round of NP_BENCH_CHECK_EVERY only, so that
 * the program's own loops do not stand between the fabric and the rate.
 */
#define NP_BENCH_DEPTH 8
#define NP_BENCH_CHECK_EVERY 64
#define NP_BENCH_MAX (4u << 20)

/* Access NCCL registers its buffers with (through ibv_reg_mr_iova2). */
#define NP_MR_ACCESS                                                                               \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_RELAXED_ORDERING)

/* One CTS entry as the receiver writes it into the sender's FIFO. */
struct np_cts {
	uint64_t addr; /* where the data goes */
	uint32_t rkey;
	uint32_t size;
	uint64_t tag; /* NP_TAG ^ round */
	uint8_t pad[32];
	uint64_t idx; /* round + 1, written last (ascending address order) */
};
#define NP_TAG 0x6e63636c70617474ull

/* What the two sides exchange out of band, as NCCL's connection handles. */
struct np_info {
	uint32_t qpn;
	uint8_t port;
	uint8_t mtu; /* enum ibv_mtu, active */
	uint8_t pad[2];
	uint8_t gid[16];
	uint64_t data_addr; /* receiver: the data slots */
	uint32_t data_rkey;
	uint32_t fifo_rkey; /* sender: the CTS FIFO */
	uint64_t fifo_addr;
};

/* One side: a context, its buffers, the connection QP and the event thread. */
struct np_side {
	const char *role; /* "sender" or "receiver", prefixes every check line */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp *flush_qp; /* receiver: connected to itself */
	int gid_index;
	union ibv_gid gid;
	enum ibv_mtu mtu;
	/* Receiver: data slots on a /dev/shm mapping; sender: pinned sources. */
	uint8_t *data;
	size_t data_len;
	struct ibv_mr *data_mr;
	/* Sender: the FIFO the receiver writes; receiver: its staging entries. */
	struct np_cts *fifo;
	struct ibv_mr *fifo_mr;
	/* Receiver: the 4 bytes a flush READ lands in. */
	uint32_t *flush_buf;
	struct ibv_mr *flush_mr;
	struct np_info peer;
	/* Rounds: bench_size 0 for the mix of sizes; slots of slot_bytes, depth in flight. */
	uint32_t bench_size, slot_bytes, depth;
	/* The ibv_get_async_event thread and what it saw. */
	pthread_t async_thread;
	bool async_started;
	volatile int async_events;
	volatile int async_last;
};

/* ---- nccl_pattern.c ---- */
/* Prints "ok   [role] NAME" or "FAIL [role] NAME: why"; returns ok. */
bool np_check(const struct np_side *s, bool ok, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
double np_now_ms(void);
int np_send_all(int fd, const void *buf, size_t len);
int np_recv_all(int fd, void *buf, size_t len);

/* ---- nccl_pattern_ib.c ---- */
/* Opens the device, picks the GID as NCCL does (or takes want_gid >= 0). */
int np_open(struct np_side *s, struct ibv_device *dev, int want_gid);
/* Registers the buffers; the receiver's data is a /dev/shm mapping. */
int np_register(struct np_side *s, bool receiver);
/* The connection QP (and the receiver's flush QP), in INIT. */
int np_create_qps(struct np_side *s, bool receiver);
/* Fills what the peer needs to know. */
void np_local_info(const struct np_side *s, struct np_info *out);
/* RTR and RTS towards s->peer (and the flush QP towards itself). */
int np_connect(struct np_side *s);
void np_async_start(struct np_side *s);
void np_async_stop(struct np_side *s);
/* Destroys everything, checking each verb's answer. */
void np_teardown(struct np_side *s, const char *when);

/* ---- nccl_pattern_flow.c ---- */
int np_run_sender(struct np_side *s, uint32_t rounds);
int np_run_receiver(struct np_side *s, uint32_t rounds);

#endif /* NCCL_PATTERN_H */
