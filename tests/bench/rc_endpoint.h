/* SPDX-License-Identifier: MIT */
/*
 * One RC queue pair connected to a peer process in another node, the way
 * perftest does it: the endpoints (QPN, PSN, GID, one buffer's address and
 * rkey) are swapped over a TCP connection, then both sides move their QP to
 * RTS. Used by the shaping benchmark's helper programs (lossy_verify), which
 * need a verbs connection of their own where perftest's fixed behaviour does
 * not check what they check. Functions return 0 or a negative errno.
 */
#ifndef VFAB_RC_ENDPOINT_H
#define VFAB_RC_ENDPOINT_H

#include <infiniband/verbs.h>

#include <stddef.h>
#include <stdint.h>

/* What one side tells the other (sent as is: both sides are this program). */
struct rc_wire {
	uint32_t qpn;
	uint32_t psn;
	uint8_t gid[16];
	uint64_t addr;
	uint64_t len;
	uint32_t rkey;
	uint32_t mtu; /* enum ibv_mtu of the sender's port */
};

struct rc_opts {
	const char *dev;   /* HCA name, NULL: the first device */
	int gid_index;	   /* source GID (perftest -x) */
	uint8_t timeout;   /* local ACK timeout exponent: 4.096 us * 2^timeout */
	uint8_t retry_cnt; /* retransmissions before IBV_WC_RETRY_EXC_ERR */
	uint32_t cq_depth; /* completions the CQ holds */
	uint32_t max_wr;   /* send and receive queue depth */
	size_t buf_len;	   /* the registered buffer */
};

struct rc_endpoint {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	unsigned char *buf;
	size_t buf_len;
	struct rc_wire self, peer;
};

/* Opens the device and creates PD, CQ, QP (INIT) and the buffer's MR. */
int rc_open(struct rc_endpoint *e, const struct rc_opts *o);
/* Moves the QP to RTR then RTS towards e->peer. */
int rc_connect(struct rc_endpoint *e, const struct rc_opts *o);
void rc_close(struct rc_endpoint *e);

/*
 * TCP: a listening socket on port, one accepted connection, a connection to
 * host:port. Whole messages: bench_read_full/bench_write_full (bench_util.h).
 */
int tcp_listen_on(const char *port);
int tcp_accept_one(int lfd);
int tcp_connect_to(const char *host, const char *port, int retry_seconds);

/* Sends e->self and reads e->peer on a connected socket. */
int rc_exchange(struct rc_endpoint *e, int fd);

/* Waits for one completion for at most ms milliseconds: 1 got one, 0 none, <0 error. */
int rc_poll_one(struct ibv_cq *cq, struct ibv_wc *wc, int ms);

#endif /* VFAB_RC_ENDPOINT_H */
