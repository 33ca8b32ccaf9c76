/* SPDX-License-Identifier: MIT */
/*
 * The CM's messages as IB CM MADs (IBA 12.6), what the kernel's ib_cm sends
 * on QP1 and what crosses between machines: a 24-byte MAD header (base
 * version 1, class 0x07, class version 2, method Send) and the message, 256
 * bytes in all, with rdma_cm's 36-byte header (version, IP version, source
 * port, source and destination address) opening a REQ's and a SIDR REQ's
 * private data, and the service ID in RDMA_PS space (0x01000000 | ps << 16
 * | port). Between processes of one host the CM keeps cm_wire.h's encoding;
 * a peer reached through the wire answers on QP1 (docs/DESIGN.md "RDMA CM").
 * Pure: no I/O.
 */
#ifndef VFAB_CM_MAD_H
#define VFAB_CM_MAD_H

#include <stddef.h>
#include <stdint.h>

#include "cm/cm_wire.h"

#define VFAB_CM_MAD_BYTES 256
#define VFAB_CM_MAD_QPN 1 /* the GSI QP every CM MAD goes to and comes from */

/*
 * Encode m as a CM MAD into buf (at least VFAB_CM_MAD_BYTES): tid is its
 * transaction ID, guid (network order) the local CA GUID a REQ and a REP
 * carry, dgid the GID it goes to (a REQ's primary remote port GID). Returns
 * VFAB_CM_MAD_BYTES, or -EINVAL for a type without a MAD or a short buf.
 */
int vfab_cm_mad_encode(const struct vfab_cm_msg *m, uint64_t tid, uint64_t guid,
		       const uint8_t dgid[16], uint8_t *buf, size_t len);

/*
 * Decode a CM MAD that arrived with GRH source sgid and destination dgid
 * into m as cm_wire.h's decoder would fill it: cm_qpn VFAB_CM_MAD_QPN, pid
 * and start 0 (another machine's process), addresses from rdma_cm's header
 * (REQ, SIDR REQ) or from the GIDs (the others), pd_len the field's whole
 * length. 0, or -EBADMSG when it is no CM MAD vfab's CM takes (class,
 * versions, method, attribute, length, a REQ outside rdma_cm's service IDs).
 */
int vfab_cm_mad_decode(struct vfab_cm_msg *m, const uint8_t *buf, size_t len,
		       const uint8_t sgid[16], const uint8_t dgid[16]);

/* What vfabd dispatches a CM MAD by, read without decoding all of it. */
struct vfab_cm_mad_key {
	int type;	 /* enum vfab_cm_msg_type */
	uint32_t own_id; /* the sender's ID: a local comm ID, a SIDR REQ's request ID; 0 none */
	uint32_t for_id; /* the receiver's: a remote comm ID, a SIDR REP's request ID; 0 none */
	/* REQ and SIDR REQ: the service and the address it is asked of */
	uint16_t ps, port;
	uint8_t family; /* AF_INET or AF_INET6 */
	uint8_t daddr[16];
};

/* 0 and *k, or -EBADMSG as vfab_cm_mad_decode would. */
int vfab_cm_mad_key(const uint8_t *buf, size_t len, struct vfab_cm_mad_key *k);

#endif /* VFAB_CM_MAD_H */
