/* SPDX-License-Identifier: MIT */
/*
 * Internal declarations of the vfab libibverbs provider: the process-local
 * wrappers around libibverbs' objects and the functions the files of the
 * provider call in each other. Everything a peer process must reach lives in
 * the shared region (fabric/region.h); what is here is private to a process.
 */
#ifndef VFAB_PROVIDER_H
#define VFAB_PROVIDER_H

#include "fabric/ktab.h"
#include "fabric/link_model.h"
#include "fabric/region.h"
#include "provider/verbs_abi.h"
#include "provider/vfab_device.h"
#include "provider/vfab_owner.h"
#include "provider/vfab_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Device limits, ConnectX-6 like where the region allows it. */
#define VFAB_MAX_QP_WR 32768
#define VFAB_MAX_CQE 4194303
#define VFAB_MAX_SRQ_WR 32767
#define VFAB_MAX_SRQ_SGE 31
/* Owners a UD QP keeps handles on: a few peers without a reopen per datagram. */
#define VFAB_UD_PEERS 4
#define VFAB_MAX_INLINE 512
#define VFAB_MAX_RD_ATOM 16
#define VFAB_MAX_MSG_SZ 0x40000000u
#define VFAB_GRH_BYTES 40
#define VFAB_UD_QKEY_HIGH_BIT 0x80000000u
#define VFAB_PSN_MASK 0xffffffu

/* The process's view of one mapped region, shared by all its devices. */
struct vfab_qp;
struct vfab_rmap {
	struct vfab_rmap *next;
	char path[256];
	dev_t dev; /* the region file mapped */
	ino_t ino;
	struct vfab_region *r;
	/* vfabd's object table beside it (<rundir>/objects), read-only. */
	const struct vfab_ktab *k;
	uint64_t map_bytes; /* the region mapping's length: the ring pool's bound */
	int refcnt;
	/* This process's QPs by slot index: poll_cq retires send WQEs with it. */
	_Atomic(struct vfab_qp *) qps[VFAB_MAX_QPS];
};

struct vfab_context {
	struct verbs_context vctx;
	struct vfab_device *dev;
	struct vfab_rmap *map;
	struct vfab_region *r;
	const struct vfab_ktab *k; /* the map's: what peers' objects are (fabric/ktab.h) */
	uint64_t map_bytes;	   /* the map's */
	struct vfab_hca *hca;
	uint32_t hca_idx;
	uint32_t copy_engines;	 /* threads one large copy may use (vfab_dma_configure) */
	struct vfab_owner owner; /* pid, ctx_id */
	struct vfab_pidview pv;	 /* which proc names the fabric's pids (vfab_owner.h) */
	uint32_t async_id;	 /* FIFO <rundir>/fifo/<pid>.<async_id> */
	char async_path[320];
	int ctl_fd;		  /* vfabd connection (vfab_ctl.c), -1 if none */
	pthread_mutex_t ctl_lock; /* one request at a time on ctl_fd */
};

struct vfab_pd {
	struct ibv_pd ibv;
	int slot;
	atomic_int users; /* MRs, QPs, SRQs, AHs, parent domains on it */
	/*
	 * A parent domain (ibv_alloc_parent_domain): the PD it wraps, which
	 * every object made on it belongs to; NULL for a PD.
	 */
	struct vfab_pd *protection;
	struct ibv_td *td;
};

struct vfab_td {
	struct ibv_td ibv;
	atomic_int users; /* parent domains on it */
};

struct vfab_mr {
	struct vabi_mr vmr;
	int slot;
	struct vfab_pd *pd;
	struct vfab_dm *dm; /* ibv_reg_dm_mr: the device memory it covers */
};

/*
 * Device memory (ibv_alloc_dm): a ConnectX's on-chip memory, here memory of
 * the allocating process that only ibv_memcpy_to_dm/from_dm and MRs
 * registered on it reach (vfab_dm.c).
 */
struct vfab_dm {
	struct vabi_dm vdm;
	void *buf;
	uint64_t length;
	atomic_int users; /* MRs registered on it */
};

/* A memory window: a key of the MR table (fabric/region.h vfab_mr_slot, kind). */
struct vfab_mw {
	struct ibv_mw mw;
	int slot;
	struct vfab_pd *pd;
};

/*
 * The owner's view of one of its receive rings (vfab_recv.c), in its own
 * memory: the ring's place and shape as read, once, at the first post, and
 * how far requesters had consumed when last looked (read again only when
 * the ring looks full), so that posting leaves the requesters' cache line
 * of the slot alone.
 */
struct vfab_rq_geo {
	uint64_t off;
	uint32_t cap, wqe_size, max_sge;
};

struct vfab_rq_own {
	struct vfab_rq_geo g;
	uint64_t head_seen;
	/*
	 * Receive completions of this queue's WQEs that the owner's polls
	 * took (vfab_cq.c): each was consumed first, so it bounds head from
	 * below, and it is what libmlx5 frees a receive queue's slots by.
	 * A post that finds the ring full by head_seen looks here before it
	 * reads the ring's head, a line the requesters write per message.
	 */
	_Atomic uint64_t polled;
	bool known;
};

struct vfab_cq {
	struct vabi_cq vcq;
	struct vfab_context *ctx;
	int slot;
	struct vfab_cq_slot *s;
	struct vfab_cqe *ring;
	struct vfab_cqe_scatter *scat; /* the ring's scatter entries (fabric/region.h) */
	uint32_t mask;
	pthread_spinlock_t poll_lock; /* consumers of this process */
	uint64_t head;		      /* the ring's consumer position (only the owner moves it) */
	_Atomic uint32_t polls; /* calls to poll it: whether a QP's SENDs stream (vfab_req.c) */
	atomic_int users;	/* QPs that complete into it */
	atomic_int raw_feeds;	/* raw packet QPs with flows receiving into it */
	/* Extended polling (ibv_cq_ex): the entry being looked at, its tag matching info. */
	struct vfab_cqe cur;
	struct ibv_wc_tm_info cur_tm;
	uint64_t wc_flags;
};

struct vfab_srq {
	struct vabi_srq vsrq;
	struct vfab_context *ctx;
	struct vfab_pd *pd;
	struct vfab_xrcd *xrcd; /* XRC: its domain and the CQ its receives complete into */
	struct vfab_cq *cq;
	int slot;
	struct vfab_srq_slot *s;
	pthread_mutex_t post_lock;
	struct vfab_rq_own own; /* under post_lock */
	uint32_t max_wr;
	uint32_t max_sge;
	atomic_int users;
	/* A TM SRQ: its tag table as the region gave it at creation (vfab_tm.c). */
	char *tm_ring;
	uint32_t tm_tags, tm_entry_bytes;
};

/*
 * A work queue (ibv_create_wq, IBV_WQT_RQ, vfab_wq.c): the ring of a basic
 * SRQ no QP attaches to; its receives complete into its own CQ.
 */
struct vfab_wq {
	struct ibv_wq ib;
	struct vfab_srq *rq;
	struct vfab_cq *cq;
	_Atomic uint32_t state; /* enum ibv_wq_state: frames land in RDY only */
	atomic_int users;	/* indirection tables holding it */
};

/* A receive work queue indirection table: what an RSS QP's hash indexes. */
struct vfab_rwq_ind {
	struct ibv_rwq_ind_table ib;
	uint32_t size; /* a power of two */
	struct vfab_wq **wqs;
	atomic_int users; /* RSS QPs on it */
};

/*
 * An XRC domain. Its id names it in the region (the SRQs and XRC_RECV QPs
 * made in it): opened on a file, every context that opens that file gets
 * the same id (from its device and inode), as the kernel gives every
 * opener of an inode one domain; opened without, a new id.
 */
struct vfab_xrcd {
	struct vabi_xrcd vxrcd;
	struct vfab_context *ctx;
	uint32_t id;
	atomic_int users; /* SRQs and QPs made in it */
};

struct vfab_ah {
	struct ibv_ah ibv;
	struct vfab_pd *pd;
	uint8_t port;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint32_t flow_label;
	uint8_t sl;
	uint8_t dgid[16];
	/*
	 * Resolved destination, packed so that concurrent senders read it in
	 * one load: valid bit 63, source GID type bits 48-49, port bits 40-41,
	 * hca bits 32-39, source and destination port GID generations (low 16
	 * bits) at 16 and 0.
	 */
	_Atomic uint64_t route;
};

/*
 * Where a work request stands in the requester's send queue. A QP's queue
 * is always: WRs whose ACK is due (ACKED), WRs on the wire of a shaped path
 * (FLIGHT), then at most one WR that waits for a timer or has failed, with
 * the WRs posted after it (QUEUED) behind it, all in posting order. A WR is
 * delivered only once every WR before it is ACKED (the cursor): a lossless
 * link never lets a later message of a QP overtake an earlier one, however
 * early the link model says the later one arrives. A wire QP's queue
 * (vfab_wire.h) is instead: ACKED, then WIRE (its RoCE requester keeps the
 * order and retries itself), then QUEUED while that requester is full.
 */
enum vfab_stage {
	VFAB_ST_QUEUED,	      /* not sent: behind a waiting or failed WR */
	VFAB_ST_FLIGHT,	      /* booked on the link model; delivered at due_ns */
	VFAB_ST_ACKED,	      /* delivered; completes at due_ns (its ACK) */
	VFAB_ST_WAIT_RNR,     /* RNR NAK: resent at due_ns */
	VFAB_ST_WAIT_TIMEOUT, /* no answer: the ACK timer expires at due_ns */
	VFAB_ST_FAILED,	      /* completes with status once the WRs before it have */
	VFAB_ST_WIRE,	      /* a wire QP's (vfab_wire.h): its completer decides */
};

/*
 * Why a WR in VFAB_ST_WAIT_TIMEOUT waits, which decides when it is sent
 * again (IBA 9.7.5.1): nothing answers it (the ACK timer expires), its
 * attempt was lost with its last packet (the ACK timer, unless a later
 * packet of the QP reaches the responder first and draws a NAK), or a later
 * packet did reach the responder (the PSN sequence error NAK comes back
 * about a round trip after the loss).
 */
enum vfab_wait {
	VFAB_WAIT_NO_ANSWER,
	VFAB_WAIT_LOST_TAIL,
	VFAB_WAIT_NAK_SEQ,
};

/*
 * A send work request as the requester keeps it: converted from ibv_send_wr
 * or built by the ibv_wr_* API, inline data already copied.
 */
struct vfab_swqe {
	struct vfab_swqe *next;
	uint64_t wr_id;
	uint32_t opcode;   /* enum ibv_wr_opcode */
	uint32_t flags;	   /* enum ibv_send_flags */
	uint32_t imm_data; /* network byte order */
	uint32_t rkey;
	uint64_t remote_addr;
	uint64_t compare_add;
	uint64_t swap;
	struct vfab_ah *ah;
	uint32_t remote_qpn;
	uint32_t remote_qkey;
	uint32_t remote_srqn; /* XRC_SEND: the SRQ of the target's domain it goes to */
	uint32_t sq_index;    /* position in the send queue, for retirement */
	uint32_t num_sge;
	uint32_t inline_len;
	bool is_inline;
	/* Progress through the fabric. */
	uint8_t stage; /* enum vfab_stage */
	uint8_t retries_left;
	uint8_t rnr_left;
	uint8_t wait;	   /* VFAB_ST_WAIT_TIMEOUT: enum vfab_wait */
	uint32_t status;   /* VFAB_ST_FAILED: the completion status */
	uint32_t byte_len; /* for the completion */
	uint32_t psn, npkts;
	uint64_t due_ns;
	/*
	 * FLIGHT: when the ACK comes back after delivery; WAIT_LOST_TAIL: when
	 * the lost attempt would have arrived (nothing sent later arrives before)
	 */
	uint64_t ack_ns;
	/* IBV_WR_BIND_MW: the window, its new key (rkey) and where it goes. */
	struct ibv_mw *mw;
	struct ibv_mr *bind_mr;
	uint64_t bind_addr, bind_len;
	uint32_t bind_access;
	uint32_t inv_rkey; /* IBV_WR_LOCAL_INV, IBV_WR_SEND_WITH_INV */
	/* A tag matching rendezvous it started ended: its FIN follows its completion. */
	bool tm_fin;
	uint64_t tm_fin_tag;
	struct ibv_sge sge[VFAB_MAX_SGE];
	uint8_t inline_data[VFAB_MAX_INLINE];
};

/* Where an RC QP sends, as resolved from its RTR attributes. */
struct vfab_dest {
	bool valid;
	uint32_t hca, port, slot, qpn;
	uint32_t port_gen, src_gen;  /* GID table generations it was resolved with */
	struct fabric_path fwd, rev; /* link-model hops there and back */
	/*
	 * Both paths without rate, latency or loss: messages skip the link model
	 * and only count on the links. Valid while the region's link_gen equals
	 * link_gen and plain_known holds (cleared when the destination changes).
	 */
	bool plain_known, plain;
	uint32_t link_gen;
	int memfd;    /* the owner's /proc/<pid>/mem for small copies, -1 none */
	int pidfd;    /* the owner's pidfd, opened while its start time matched; -1 none */
	bool refused; /* the kernel refuses copies into the owner (struct vfab_owner_fds) */
	/* The destination as vfabd sealed it, copied at the resolution: its owner, PD, CQ, SRQ. */
	struct vfab_qp_slot kq;
};

/*
 * A QP of this process, grouped as Linux rxe groups its QP: what is fixed at
 * creation, then one part per subsystem that owns it.
 */
struct vfab_raw;
struct vfab_rss;
struct vfab_wire;

struct vfab_qp {
	struct vabi_qp vqp;
	struct vfab_context *ctx;
	int slot;
	struct vfab_qp_slot *s; /* the region's slot: what peers see (responder side) */
	/* The same as vfabd sealed it (fabric/ktab.h): its CQs, SRQ, PD and FIFO. */
	const struct vfab_qp_slot *k;
	uint32_t qpn;
	struct vfab_pd *pd;	   /* NULL for XRC_RECV, which has no PD, CQ or queue */
	struct vfab_cq *scq, *rcq; /* XRC_SEND: rcq is scq (it receives nothing) */
	struct vfab_srq *srq;
	struct vfab_xrcd *xrcd; /* XRC_RECV: its domain */
	struct ibv_qp_cap cap;
	bool sq_sig_all;
	/* IBV_QP_CREATE_BLOCK_SELF_MCAST_LB: no copy of its own multicast sends. */
	bool block_self_mcast;
	struct vfab_raw *raw; /* a raw packet QP's wire and flows (vfab_raw.c); else NULL */
	struct vfab_rss *rss; /* an RSS QP's table and hash (vfab_raw.c); else NULL */
	/* A QP whose peer is on another machine: its RoCE wire (vfab_wire.c); else NULL. */
	struct vfab_wire *wire;
	uint64_t send_ops_flags;

	/* Under sq.lock: this side's view of the state (the slot is authoritative). */
	enum ibv_qp_state state;
	struct ibv_qp_attr attr; /* last values set by modify_qp */

	/* The send queue (vfab_sq.c, retired by vfab_comp.c), under its lock. */
	struct vfab_qp_sq {
		pthread_mutex_t lock; /* also guards state, attr, req and batch */
		uint32_t posted;
		_Atomic uint32_t retired; /* advanced by poll_cq */
		/* WRs not complete yet (enum vfab_stage), and spares. */
		struct vfab_swqe *head, *tail;
		struct vfab_swqe *cursor; /* first WR not ACKED yet, NULL if none */
		struct vfab_swqe *spare;
		uint32_t nspare;
		/*
		 * Small WRITEs and streamed SENDs held back by post_send
		 * (vfab_req.c) since the last flush: they go out together, in
		 * one copy.
		 */
		uint32_t batched;
		/*
		 * SENDs posted one by one with no poll of the QP's CQs in
		 * between (vfab_req.c), and those CQs' polls when counted.
		 */
		uint32_t send_streak;
		uint32_t send_polls;
		/*
		 * Held WRs that the engine, not the application, had to send:
		 * the application waits without polling (on memory the peer
		 * writes, on a channel), or was not run for the engine's
		 * backstop. This QP holds nothing until hold_off_ns, for
		 * twice as long at each such miss in a row (vfab_engine.c).
		 */
		uint64_t hold_off_ns;
		uint32_t hold_misses;
		/*
		 * A WR waits in VFAB_WAIT_LOST_TAIL: the next WR posted draws
		 * the NAK that ends its wait (vfab_sq_nak_lost).
		 */
		bool lost_tail;
	} sq;

	/* The requester (vfab_req.c, vfab_attempt.c, vfab_chain.c, vfab_dest.c). */
	struct vfab_qp_req {
		uint32_t psn; /* next PSN to send */
		uint32_t mtu_bytes;
		struct vfab_dest dest;
		uint64_t rng; /* loss draws */
		/* post_send converts a list into this, VFAB_CHAIN_MAX WRs at a time. */
		struct vfab_swqe *post_buf;
		/* The local segments of a chain (vfab_attempt_chain), VFAB_CHAIN_IOV. */
		struct iovec *chain_iov;
		/* UD: handles on the last owners datagrams went to (vfab_dest_ud_owner). */
		struct vfab_owner_fds ud_peers[VFAB_UD_PEERS];
		uint32_t ud_next; /* the entry replaced next */
	} req;

	/* ibv_wr_* batch between wr_start and wr_complete (vfab_qp_ex.c). */
	struct vfab_qp_batch {
		struct vfab_swqe *wqe;
		uint32_t len, cap;
		int err;
	} batch;

	/* Receive side producers of this process (vfab_recv.c). */
	struct vfab_qp_rq {
		pthread_spinlock_t lock; /* a post holds it for a few stores */
		struct vfab_rq_own own;
	} rq;

	/* Engine bookkeeping (vfab_engine.c), under the engine lock. */
	struct vfab_qp_eng {
		struct vfab_qp *next, *prev;
		bool listed;
		int busy;
		uint64_t due_ns;
	} eng;
};

static inline struct vfab_context *to_vctx(struct ibv_context *c)
{
	return (struct vfab_context *)((char *)c - offsetof(struct vfab_context, vctx.context));
}
/* The protection domain of a PD or of a parent domain. */
static inline struct vfab_pd *to_vpd(struct ibv_pd *pd)
{
	struct vfab_pd *p = (struct vfab_pd *)pd;

	return p->protection ? p->protection : p;
}
static inline struct vfab_cq *to_vcq(struct ibv_cq *cq)
{
	return (struct vfab_cq *)cq;
}
static inline struct vfab_qp *to_vqp(struct ibv_qp *qp)
{
	return (struct vfab_qp *)qp;
}
static inline struct vfab_srq *to_vsrq(struct ibv_srq *srq)
{
	return (struct vfab_srq *)srq;
}
static inline struct vfab_xrcd *to_vxrcd(struct ibv_xrcd *x)
{
	return (struct vfab_xrcd *)x;
}
static inline struct vfab_ah *to_vah(struct ibv_ah *ah)
{
	return (struct vfab_ah *)ah;
}

/* ---- vfab_context.c ---- */
struct verbs_context *vfab_alloc_context(struct ibv_device *ibdev, int cmd_fd, void *private_data);

/* ---- vfab_fifo.c: completion channel and async event FIFOs ---- */
/*
 * The FIFO directory of region r: <rundir>/fifo of the HCA's device/vfab
 * locator (root's), never the region's rundir. Once per region mapping.
 */
int vfab_fifo_attach(const struct vfab_region *r, const char *rundir);
/* ---- vfab_ctl.c: the context's connection to vfabd ---- */
/* HELLO at the context's start (ctl_fd -1 when vfabd does not answer); BYE at its end. */
void vfab_ctl_hello(struct vfab_context *ctx);
void vfab_ctl_bye(struct vfab_context *ctx);
/*
 * SEAL one of the context's objects: what vfabd records of it, as
 * "name=value ..." (docs/DESIGN.md; ctx= and hca= are added here), from
 * this process's own memory, never from the region's slot, which any user
 * may be rewriting. 0, or -errno (-EPERM, -EBUSY, -EINVAL: vfabd refused;
 * -ENOMEM; -EIO: no answer from vfabd).
 */
int vfab_ctl_seal(struct vfab_context *ctx, enum vfab_obj kind, uint32_t slot, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* UNSEAL: vfabd's record of the object withdrawn; as above. */
int vfab_ctl_unseal(struct vfab_context *ctx, enum vfab_obj kind, uint32_t slot);
void vfab_fifo_detach(const struct vfab_region *r);
/* <rundir>/fifo/<pid>.<id> as a path (for HELLO's async=). */
int vfab_fifo_path(char *buf, size_t len, const char *rundir, int32_t pid, uint32_t id);
/* Makes this process's FIFO <pid>.<id> (mode 0600) and returns its read end, or -errno. */
int vfab_fifo_create(const struct vfab_region *r, int32_t pid, uint32_t id);
void vfab_fifo_remove(const struct vfab_region *r, int32_t pid, uint32_t id);
/* Writes buf into FIFO <pid>.<id> when it is one (numbers from any slot: see vfab_fifo.c). */
void vfab_fifo_send(const struct vfab_region *r, int32_t pid, uint32_t id, const void *buf,
		    size_t len);
void vfab_async_event(struct vfab_region *r, int32_t pid, uint32_t id, uint64_t element,
		      uint32_t event_type);

/* ---- vfab_channel.c ---- */
int vfab_create_channel(struct ibv_context *ctx, struct ibv_comp_channel **out);
int vfab_destroy_channel(struct ibv_comp_channel *ch);
/* 0 and the FIFO id of a provider-made channel, -EINVAL for a foreign one. */
int vfab_channel_id(struct ibv_comp_channel *ch, uint32_t *id);

/* ---- vfab_query.c ---- */
int vfab_query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *values);
int vfab_query_device_ex(struct ibv_context *ctx, const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size);
int vfab_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
const struct vfab_gid *vfab_port_gid(const struct vfab_port *p, uint32_t index);

/* ---- vfab_pd.c ---- */
struct ibv_pd *vfab_alloc_pd(struct ibv_context *ctx);
int vfab_dealloc_pd(struct ibv_pd *pd);

/* ---- vfab_mr.c ---- */
struct ibv_mr *vfab_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
			   int access);
/*
 * The registration of a range already known to be mapped as access needs
 * (vfab_reg_mr checks it first; device memory is the provider's own). A
 * zero length registers a key that no access passes.
 */
struct ibv_mr *vfab_mr_register(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
				int access);
int vfab_rereg_mr(struct vabi_mr *vmr, int flags, struct ibv_pd *pd, void *addr, size_t length,
		  int access);
int vfab_dereg_mr(struct vabi_mr *vmr);
/*
 * Asks vfabd to record MR (or window) slot as m says (key, pd, access,
 * addr, length, iova, kind, parent_key, qpn): vfab_ctl_seal.
 */
int vfab_mr_seal(struct vfab_context *ctx, int slot, const struct vfab_mr_slot *m);
/*
 * The registration (or window) behind key as vfabd sealed it, copied whole
 * into *out, while the region's slot still holds it (not revoked,
 * invalidated or freed): out, or NULL. Every check of a key reads this,
 * never the region's slot, which any user can write.
 */
const struct vfab_mr_slot *vfab_mr_find(struct vfab_region *r, const struct vfab_ktab *k,
					uint32_t key, struct vfab_mr_slot *out);
/*
 * The same for a key this context's own QP or PD uses locally (a gather's
 * lkey, a bind's MR, an advice): vfabd's record itself, with no copy. A
 * key whose record is not of this context's PD fails the check after it
 * (vfabd recorded each MR with a PD of the process that registered it);
 * the record changes only through this process's own rereg or bind.
 */
static inline const struct vfab_mr_slot *vfab_mr_own(const struct vfab_context *ctx, uint32_t key)
{
	return vfab_kmr(ctx->k, key);
}
/*
 * The same for a copy into or out of the memory: the region slot is pinned
 * first (*pin; vfab_mr_unpin after the copy), so ibv_dereg_mr waits for it.
 * On NULL nothing stays pinned.
 */
static inline const struct vfab_mr_slot *vfab_mr_find_pinned(struct vfab_region *r,
							     const struct vfab_ktab *k,
							     uint32_t key, struct vfab_mr_slot *out,
							     struct vfab_mr_slot **pin)
{
	struct vfab_mr_slot *rs = vfab_mr_lookup(r, key);

	*pin = NULL;
	if (!rs)
		return NULL;
	vfab_mr_pin(rs);
	if (!rs->length || !vfab_kmr_copy(k, key, out)) {
		vfab_mr_unpin(rs);
		return NULL;
	}
	*pin = rs;
	return out;
}
int vfab_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		   struct ibv_sge *sg, uint32_t num_sge);

/* ---- vfab_mw.c: memory windows ---- */
struct ibv_mw *vfab_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int vfab_dealloc_mw(struct ibv_mw *mw);
/* The WRs an HCA runs on its own keys, with no message on the wire. */
static inline bool vfab_local_op(uint32_t opcode)
{
	return opcode == IBV_WR_BIND_MW || opcode == IBV_WR_LOCAL_INV;
}
/* Runs a local op of the QP (sq.lock held): the status of its completion. */
enum ibv_wc_status vfab_mw_exec(struct vfab_qp *qp, const struct vfab_swqe *w);
/*
 * The responder's half of SEND_WITH_INV on QP kq (vfabd's record) of HCA
 * hca: whether rkey may be invalidated (check only), or invalidates it (apply).
 */
bool vfab_mw_remote_inv(const struct vfab_rmap *map, uint32_t hca, const struct vfab_qp_slot *kq,
			uint32_t rkey, bool apply);

/* ---- vfab_cq.c ---- */
struct ibv_pd *vfab_alloc_parent_domain(struct ibv_context *ctx,
					struct ibv_parent_domain_init_attr *attr);
struct ibv_td *vfab_alloc_td(struct ibv_context *ctx, struct ibv_td_init_attr *attr);
int vfab_dealloc_td(struct ibv_td *td);
struct ibv_cq *vfab_create_cq(struct ibv_context *ctx, int cqe, struct ibv_comp_channel *ch,
			      int vector);
struct ibv_cq_ex *vfab_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr);
int vfab_destroy_cq(struct ibv_cq *cq);
int vfab_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int vfab_resize_cq(struct ibv_cq *cq, int cqe);
int vfab_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/* ---- vfab_cqe.c: producing completions into a CQ ring ---- */
/*
 * Appends a CQE (seq is filled here) to CQ slot cq_slot of any process, if
 * vfabd sealed it for owner (a QP's owner: the CQ is taken from its sealed
 * record; NULL: the slot is this process's own sealed QP's): -ENOENT if
 * not, or if its ring does not lie in the pool. The cookie and FIFOs a
 * wake-up uses are the sealed record's.
 */
int vfab_cq_push(const struct vfab_rmap *map, uint32_t cq_slot, const struct vfab_owner *owner,
		 struct vfab_cqe *e, bool solicited);
/*
 * The same for n entries in order (solicited[i] for e[i]); entries that
 * overflow are dropped. An entry marked VFAB_WC_SCATTERED takes sc[i] as
 * its scatter entry (sc may be NULL when none is marked).
 */
int vfab_cq_push_n(const struct vfab_rmap *map, uint32_t cq_slot, const struct vfab_owner *owner,
		   struct vfab_cqe *e, uint32_t n, const bool *solicited,
		   const struct vfab_cqe_scatter *sc);
/* Drops the CQEs of one QP still queued in a CQ of this process. */
void vfab_cq_clean(struct vfab_cq *cq, uint32_t qpn);
uint32_t vfab_vendor_err(enum ibv_wc_status status);

/*
 * ---- vfab_recv.c: receive rings (QP RQ and SRQ) ----
 * A ring's place and shape are the region's word, which any user can
 * rewrite: every access reads them once and touches the ring only when it
 * lies in the pool of this process's mapping and holds whole WQEs.
 */
int vfab_rq_post(const struct vfab_rmap *map, struct vfab_rq *rq, struct vfab_rq_own *own,
		 const struct ibv_recv_wr *wr, uint32_t limit);
/* The owner's RESET of its QP's RQ: nothing posted, no stale WQE left to match. */
void vfab_rq_reset(const struct vfab_rmap *map, struct vfab_rq *rq, struct vfab_rq_own *own);
/*
 * Copies the i-th posted WQE after the next one (0: the next) out of the
 * ring: its wr_id and at most max SGEs into sge (*num_sge of them). 0, or
 * -ENOENT when fewer are posted (or the ring is not sound).
 */
int vfab_rq_copy(const struct vfab_rmap *map, struct vfab_rq *rq, uint32_t i, uint64_t *wr_id,
		 struct vfab_sge *sge, uint32_t max, uint32_t *num_sge);
void vfab_rq_consume(struct vfab_rq *rq);
/* Takes n WQEs at once (a chain of messages, after their copy). */
void vfab_rq_consume_n(struct vfab_rq *rq, uint32_t n);
/* Completes every posted WQE with WR_FLUSH_ERR into kq's receive CQ; caller holds the lock. */
void vfab_rq_flush(const struct vfab_rmap *map, struct vfab_rq *rq, const struct vfab_qp_slot *kq);
int vfab_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
/*
 * "QP slot d enters ERR" (slot lock held): receives flushed, the owner
 * told; kq is d as vfabd sealed it (its SRQ, receive CQ and FIFO).
 */
void vfab_qp_slot_error(const struct vfab_rmap *map, struct vfab_qp_slot *d,
			const struct vfab_qp_slot *kq, bool announce, enum ibv_event_type ev);

/* ---- vfab_srq.c ---- */
struct ibv_srq *vfab_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
struct ibv_srq *vfab_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *attr);
/* ---- vfab_tm.c: tag matching SRQs, the owner's list operations ---- */
void vfab_tm_caps(struct ibv_tm_caps *caps);
/* Whether a TM SRQ's tm_cap is within tm_caps. */
bool vfab_tm_caps_ok(const struct ibv_tm_cap *cap);
/*
 * A new TM SRQ's tag table of tags entries in slot s, where the region put
 * it, checked once (later reads of the slot are not trusted): 0 or -EIO.
 */
int vfab_tm_table(struct vfab_srq *srq, const struct vfab_context *ctx,
		  const struct vfab_srq_slot *s, uint32_t tags);
int vfab_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *op, struct ibv_ops_wr **bad);
/* ---- vfab_wq.c: work queues and indirection tables (RSS) ---- */
struct ibv_wq *vfab_create_wq(struct ibv_context *ctx, struct ibv_wq_init_attr *attr);
int vfab_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr);
int vfab_destroy_wq(struct ibv_wq *wq);
struct ibv_rwq_ind_table *vfab_create_rwq_ind_table(struct ibv_context *ctx,
						    struct ibv_rwq_ind_table_init_attr *attr);
int vfab_destroy_rwq_ind_table(struct ibv_rwq_ind_table *table);
/* ---- vfab_dm.c ---- */
struct ibv_dm *vfab_alloc_dm(struct ibv_context *ctx, struct ibv_alloc_dm_attr *attr);
int vfab_free_dm(struct ibv_dm *dm);
struct ibv_mr *vfab_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t offset, size_t length,
			      unsigned int access);
/* ---- vfab_xrcd.c ---- */
struct ibv_xrcd *vfab_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr);
int vfab_close_xrcd(struct ibv_xrcd *xrcd);
int vfab_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int vfab_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int vfab_destroy_srq(struct ibv_srq *srq);
int vfab_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int vfab_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
/*
 * After a requester consumed a WQE of SRQ s (its lock held; ks: as vfabd
 * sealed it): fires the limit event once the WQEs left drop below it.
 */
void vfab_srq_check_limit(struct vfab_region *r, struct vfab_srq_slot *s,
			  const struct vfab_srq_slot *ks);

/* ---- vfab_ah.c ---- */
struct ibv_ah *vfab_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int vfab_destroy_ah(struct ibv_ah *ah);
/* Destination port of a UD send through this AH: 0 or -errno (unreachable). */
int vfab_ah_route(struct vfab_ah *ah, struct vfab_region *r, uint32_t src_hca, uint32_t *hca,
		  uint32_t *port, uint8_t *sgid_type);

/* ---- vfab_route.c: GID addressing between ports ---- */
struct vfab_route {
	uint32_t hca, port; /* destination port (1-based) */
	uint32_t port_gen;  /* destination port's gid_gen when resolved */
	uint8_t sgid_type;  /* enum vfab_gid_type of the source GID */
};
int vfab_route_resolve(struct vfab_region *r, uint32_t src_hca, uint32_t src_port,
		       uint32_t sgid_index, const uint8_t dgid[16], struct vfab_route *out);
/* Type of the GID at sysfs index idx of a port, VFAB_GID_EMPTY if none. */
uint8_t vfab_sgid_type(struct vfab_region *r, uint32_t hca, uint32_t port, uint32_t idx);

/* ---- vfab_qp.c / vfab_qp_modify.c ---- */
struct ibv_qp *vfab_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *vfab_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
int vfab_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init);
int vfab_destroy_qp(struct ibv_qp *qp);
int vfab_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
void vfab_qp_ex_init(struct vfab_qp *qp);
void vfab_qp_ex_fini(struct vfab_qp *qp);

/* ---- vfab_mcast.c: UD multicast (fabric/mcast.h holds the groups) ---- */
int vfab_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
int vfab_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
/*
 * A UD WR to a multicast GID with remote QPN 0xFFFFFF (vfab_attempt): its
 * copies booked (booked false) and, when due, delivered; behind: a WR
 * before it is still in flight. Returns the stage it leaves w in.
 */
enum vfab_stage vfab_mcast_attempt(struct vfab_qp *qp, struct vfab_swqe *w, uint64_t now,
				   bool booked, bool behind, struct iovec *iov, unsigned int n,
				   uint64_t len);

/* ---- vfab_req.c: posting ---- */
int vfab_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
/* ibv_bind_mw: a type 1 window's bind, posted as a BIND_MW WR. */
int vfab_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);
/*
 * What post_send refuses outright (sq.lock held): 0 or an errno value.
 * ahead: WRs of the same post already accepted but not submitted yet.
 */
int vfab_req_check_post(struct vfab_qp *qp, const struct vfab_swqe *wqe, uint32_t ahead);
/*
 * Starts validated WRs in order (sq.lock held); 0 or an errno value, with
 * *posted the number of WRs that were posted before the one that failed.
 */
int vfab_req_submit(struct vfab_qp *qp, struct vfab_swqe *wqe, uint32_t n, uint32_t *posted);

/* ---- vfab_attempt.c: one WR on the wire ---- */
/*
 * Sends the WR (or again, after a wait); sets stage (and returns it), due_ns
 * and friends.
 * now 0: the clock is read only when needed (a shaped path, a timer); a WR
 * delivered at once then gets due_ns 0.
 */
enum vfab_stage vfab_attempt(struct vfab_qp *qp, struct vfab_swqe *wqe, uint64_t now);
/* A FLIGHT WR reaches its destination at now. */
enum vfab_stage vfab_deliver(struct vfab_qp *qp, struct vfab_swqe *wqe, uint64_t now);
/* The WR's local segments, checked against this HCA's keys, into iov. */
enum ibv_wc_status vfab_gather(struct vfab_qp *qp, const struct vfab_swqe *w, struct iovec *iov,
			       unsigned int *n, uint64_t *len);
/* Packets of a message of len bytes at this MTU (at least one). */
uint32_t vfab_packets(uint64_t len, uint32_t mtu);

/* ---- vfab_chain.c ---- */
/*
 * Most WRs one chain delivers with a single copy; NCCL posts up to 8 WRITEs
 * plus a WRITE with immediate, perftest --post_list as many as asked.
 */
#define VFAB_CHAIN_MAX 64
/* Local segments of one chain: process_vm_writev's IOV_MAX. */
#define VFAB_CHAIN_IOV 1024
/* Whether a WR of this opcode may travel in a chain: RDMA WRITEs and SENDs. */
static inline bool vfab_chain_op(uint32_t opcode)
{
	return opcode == IBV_WR_RDMA_WRITE || opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
	       opcode == IBV_WR_SEND || opcode == IBV_WR_SEND_WITH_IMM;
}
/*
 * A chain of RDMA WRITEs and SENDs (vfab_chain_op) of an RC QP with nothing
 * queued, on an unshaped path to another process: delivers the longest
 * prefix that passes every check with one copy and returns its length;
 * those WRs are ACKED with due_ns 0. The first WR left out has had no
 * effect anywhere and must be started on its own (vfab_attempt).
 */
uint32_t vfab_attempt_chain(struct vfab_qp *qp, struct vfab_swqe *const *w, uint32_t n);
/*
 * The same for datagrams of a UD QP (SENDs, with or without immediate)
 * through one AH to one QP of another process, with one Q_Key, on an
 * unshaped path: the longest prefix its receive queue takes whole goes with
 * one copy, those WRs ACKED; the first left out must be attempted on its
 * own (vfab_attempt delivers or drops it).
 */
uint32_t vfab_attempt_ud_chain(struct vfab_qp *qp, struct vfab_swqe *const *w, uint32_t n);

/* ---- vfab_sq.c: the send queue of WRs not complete yet (sq.lock held) ---- */
int vfab_sq_append(struct vfab_qp *qp, const struct vfab_swqe *wqe);
/* Whether new WRs must queue behind a waiting or failed one. */
bool vfab_sq_blocked(const struct vfab_qp *qp);
/* Takes the oldest WR off the queue; NULL when empty. */
struct vfab_swqe *vfab_sq_pop(struct vfab_qp *qp);
/* Keeps a popped WR for a later append (or frees it). */
void vfab_sq_recycle(struct vfab_qp *qp, struct vfab_swqe *wqe);
/*
 * A WR is posted behind one whose attempt lost its last packet: its first
 * packet reaches the responder out of sequence, whose NAK brings the lost
 * WR back about a round trip later instead of at the ACK timeout.
 */
void vfab_sq_nak_lost(struct vfab_qp *qp, uint64_t now);
/* Sends, delivers or resends in order what is due at now; stops at a blocked WR. */
void vfab_sq_advance(struct vfab_qp *qp, uint64_t now);
/* When the next event of the queue is due, 0 when nothing is pending. */
uint64_t vfab_sq_next_due(const struct vfab_qp *qp);
/* Frees the queue without completions (RESET, destroy). */
void vfab_sq_drop(struct vfab_qp *qp);

/* ---- vfab_engine.c ---- */
void vfab_engine_schedule(struct vfab_qp *qp, uint64_t due_ns);
/* The same from post_send: the application's own threads are at work. */
void vfab_engine_schedule_posted(struct vfab_qp *qp, uint64_t due_ns);
void vfab_engine_cancel(struct vfab_qp *qp);
/* From poll_cq: runs due timed work of this process if any (never blocks). */
void vfab_engine_poll(const _Atomic uint32_t *cq_armed);
/* A thread goes to sleep on a completion channel: no polling to count on. */
void vfab_engine_kick(void);
/* Whether this thread polls CQs that are not armed: it will poll for what it posts. */
bool vfab_engine_thread_polls(void);
/* The thread that runs wire QPs (vfab_wire_wait), started once per process. */
void vfab_engine_wire_start(void);

#endif /* VFAB_PROVIDER_H */
