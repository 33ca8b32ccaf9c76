/* SPDX-License-Identifier: MIT */
/*
 * The requester's half of packet capture (fabric/capture.h): one record per
 * attempt of a message whose source or destination port is captured. The
 * inline test is all a message pays while no capture runs.
 */
#ifndef VFAB_PROVIDER_CAPTURE_H
#define VFAB_PROVIDER_CAPTURE_H

#include "provider/vfab_resp.h"

static inline bool vfab_cap_on(const struct vfab_region *r)
{
	return __builtin_expect(atomic_load_explicit(&r->captures_on, memory_order_relaxed) != 0,
				0);
}

/*
 * An attempt of WR w of the RC, UC or XRC QP qp to its destination, len
 * bytes from PSN w->psn, and what came of it: result and syndrome as enum
 * vfab_cap_result and the AETH say, orig an atomic's old value, lost_pkt
 * the packet a loss took. iov/n hold its payload: the local segments (a
 * READ's after its data landed).
 */
void vfab_cap_rc(const struct vfab_qp *qp, const struct vfab_swqe *w, uint64_t len, uint8_t result,
		 uint8_t syndrome, uint64_t orig, uint32_t lost_pkt, const struct iovec *iov,
		 unsigned int n);

/* What a responder's answer res to an RC attempt is on the wire (result, syndrome). */
void vfab_cap_answer(const struct vfab_resp *res, uint8_t *result, uint8_t *syndrome);

/* A UD datagram m of qp to QP qpn (m as vfab_resp_ud_send builds it). */
void vfab_cap_ud(const struct vfab_qp *qp, const struct vfab_msg *m, uint32_t qpn);

#endif /* VFAB_PROVIDER_CAPTURE_H */
