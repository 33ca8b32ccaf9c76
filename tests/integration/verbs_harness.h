/* SPDX-License-Identifier: MIT */
/*
 * The harness of verbs_errors (see verbs_errors.c): opening a vfab device
 * through the public libibverbs API, RC connections between QPs, waiting for
 * completions and async events, and the "ok"/"FAIL" check lines.
 */
#ifndef VERBS_HARNESS_H
#define VERBS_HARNESS_H

#include <infiniband/verbs.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BUF 65536
#define PORT 1
#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define ALL (RW | IBV_ACCESS_REMOTE_ATOMIC)

extern struct ibv_device *dev;
extern int gid_index;
extern union ibv_gid gid;
extern int failures, checks;

/* One context with a PD, a CQ, a registered BUF-byte buffer and maybe a QP. */
struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;
};

/* How a QP is connected (RTR/RTS attributes). */
struct conn {
	int access;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint32_t dest_qpn;
	union ibv_gid dgid;
};

/* Set-up failures end the program with exit status 2. */
void die(const char *what);
/* Prints "ok NAME" or "FAIL NAME: why"; returns ok. */
bool check(bool ok, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
double now_ms(void);

void side_open(struct side *s, int access);
void qp_open(struct side *s, enum ibv_qp_type type);
void side_close(struct side *s);
/* Default attributes for a connection to peer (NULL: fill dest_qpn later). */
struct conn conn_to(struct ibv_qp *peer);
int rc_connect(struct ibv_qp *qp, const struct conn *c);
/* Two sides of two contexts, RC-connected; ca overrides a's attributes. */
void pair_open(struct side *a, struct side *b, int b_access, const struct conn *ca);
void pair_close(struct side *a, struct side *b);

/* 0 when a completion arrived within ms, -1 otherwise. */
int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int ms);
bool wait_async(struct ibv_context *ctx, enum ibv_event_type type, int ms);
bool expect_wc(struct ibv_cq *cq, const char *name, enum ibv_wc_status st, int ms);
int post(struct side *s, enum ibv_wr_opcode op, struct ibv_sge *sge, int nsge, uint64_t raddr,
	 uint32_t rkey, unsigned int flags);
int post_recv(struct side *s, uint64_t wr_id, struct ibv_sge *sge, int nsge);
struct ibv_sge sge_of(struct side *s, size_t off, uint32_t len);
enum ibv_qp_state qp_state(struct ibv_qp *qp);
/* The first RoCE v2 IPv4 GID of PORT, -1 if none. */
int find_gid(struct ibv_context *ctx);

/* The groups of checks. */
void test_bad_post(void);
void test_loc_prot(void);
void test_rem_access(void);
void test_receive_errors(void);
void test_rnr(void);
void test_retry_exceeded(void);
void test_flush(void);
void test_send_variants(void);
void test_rdma_and_atomics(void);
void test_ud(void);
void test_comp_channel(void);
void test_rnr_order(void);
void test_error_counters(void);
void test_timestamps(void);
void test_resize_cq(void);
void test_scatter_cqe(void);
void test_rereg(void);
/* Memory windows (verbs_errors_mw.c). */
void test_mw(void);
void test_odp(void);
void test_parent_domain(void);
void test_uc(void);
/* XRC domains, SRQs and QPs (verbs_errors_xrc.c). */
void test_xrc(void);
/* Device memory (verbs_errors_dm.c). */
void test_dm(void);
/* Raw packet QPs, flows and RSS (verbs_errors_raw.c). */
void test_raw(void);
/* Tag matching SRQs (verbs_errors_tm.c). */
void test_tm(void);
void test_cq_overflow(void);
void test_srq_limit(void);
/* Starts `self --peer` and moves bytes to it, then kills it. */
void test_cross_process(const char *self);
int peer_main(void);
/* Chains of WRITEs to `self --chain-peer` (verbs_errors_chain.c). */
void test_chains(const char *self);
int chain_peer_main(void);
/* The node's port down and up again through vfabd (verbs_errors_port.c). */
void test_port_down(void);

#endif /* VERBS_HARNESS_H */
