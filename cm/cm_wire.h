/* SPDX-License-Identifier: MIT */
/*
 * The CM's messages on the wire: vfab's own encoding of the fields of the
 * IB CM MADs (REQ, MRA, REP, RTU, REJ, DREQ, DREP, SIDR REQ/REP) that a RoCE
 * connection needs, carried as UD datagrams between CM QPs. Pure: no I/O.
 */
#ifndef VFAB_CM_WIRE_H
#define VFAB_CM_WIRE_H

#include <stddef.h>
#include <stdint.h>

enum vfab_cm_msg_type {
	VFAB_CM_REQ = 1,
	VFAB_CM_REP,
	VFAB_CM_RTU,
	VFAB_CM_REJ,
	VFAB_CM_DREQ,
	VFAB_CM_DREP,
	VFAB_CM_SIDR_REQ,
	VFAB_CM_SIDR_REP,
	VFAB_CM_MRA,
	VFAB_CM_MSG_TYPES
};

/* IBA 12.6.7.2 reject reasons vfab's CM sends (Linux enum ib_cm_rej_reason). */
#define VFAB_CM_REJ_TIMEOUT 4
#define VFAB_CM_REJ_INVALID_SERVICE_ID 8 /* cm.c: REQ for a service nobody listens on */
#define VFAB_CM_REJ_CONSUMER_DEFINED 28	 /* rdma_reject() */
/* SIDR REP status: no listener for the service ID (IB_SIDR_UNSUPPORTED). */
#define VFAB_CM_SIDR_UNSUPPORTED 1

/* Largest private data of any message; rdma_cm's per-message limits below. */
#define VFAB_CM_PD_MAX 224

/* Wire size of an encoded message (fixed: header fields + VFAB_CM_PD_MAX). */
#define VFAB_CM_MSG_BYTES 340

struct vfab_cm_msg {
	uint8_t type;	  /* enum vfab_cm_msg_type */
	uint8_t reason;	  /* REJ reason, SIDR REP status */
	uint8_t pd_len;	  /* bytes of pd that the consumer gave */
	uint8_t mtu;	  /* enum ibv_mtu of the path (REQ: the requester's) */
	uint8_t resp_res; /* responder_resources */
	uint8_t init_depth;
	uint8_t retry;
	uint8_t rnr_retry;
	uint8_t srq;
	uint8_t flow_control;
	uint8_t family; /* AF_INET or AF_INET6 of the addresses */
	uint8_t tclass;
	uint8_t mraed;	     /* MRA, REJ: the message it answers (VFAB_CM_REQ or VFAB_CM_REP) */
	uint8_t svc_timeout; /* MRA: until the answer comes, 4.096 us * 2^svc_timeout */
	uint32_t local_id;   /* sender's communication id */
	uint32_t remote_id;  /* receiver's, 0 in a REQ */
	uint32_t qpn;	     /* the consumer's QP (REQ, REP, SIDR REP) */
	uint32_t psn;	     /* its starting PSN */
	uint32_t qkey;	     /* SIDR REP */
	uint32_t cm_qpn;     /* the sender's CM QP: where answers go */
	uint32_t pid;	     /* the sender process, for its CM's liveness */
	uint32_t ece_vendor; /* the sender's enhanced connection establishment options */
	uint32_t ece_options;
	uint64_t start; /* the sender's start time: with pid, one process across pid reuse */
	uint16_t ps;	/* port space (RDMA_PS_TCP, RDMA_PS_UDP, ...) */
	uint16_t sport; /* IP ports, host order */
	uint16_t dport;
	uint8_t saddr[16]; /* IPv4 in the first 4 bytes */
	uint8_t daddr[16];
	uint8_t sgid[16]; /* the sender's GID (its RoCE v2 GID of saddr) */
	uint8_t pd[VFAB_CM_PD_MAX];
};

/* Encode into buf (at least VFAB_CM_MSG_BYTES); returns the length. */
size_t vfab_cm_msg_encode(const struct vfab_cm_msg *m, uint8_t *buf, size_t len);

/* Decode; -EBADMSG when buf is short or the type/lengths are invalid. */
int vfab_cm_msg_decode(struct vfab_cm_msg *m, const uint8_t *buf, size_t len);

/*
 * Private data a consumer may send in a message of `type` over rdma_cm
 * (RoCE: the REQ/SIDR REQ lose 36 bytes to the rdma_cm header), and the
 * length the receiver's event reports (the kernel reports the whole field).
 */
int vfab_cm_pd_limit(int type);
int vfab_cm_pd_reported(int type);

/* The type's name, for debug output. */
const char *vfab_cm_msg_name(int type);

#endif /* VFAB_CM_WIRE_H */
