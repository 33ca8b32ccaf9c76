/* SPDX-License-Identifier: MIT */
/*
 * vfab capture's frames: a record the requesters sent (fabric/capture.h),
 * checked with vfab_cap_rec_sound, becomes the RoCE frames a sniffer on the
 * wire would have seen: its request packets and the responder's answer.
 */
#ifndef VFAB_TOOLS_CAPTURE_FRAMES_H
#define VFAB_TOOLS_CAPTURE_FRAMES_H

#include <stdint.h>

#include "fabric/capture.h"
#include "fabric/region.h"

struct vfab_capture_frames {
	/* The HCAs a record's indices name (their MACs and node GUIDs): nhcas of them. */
	const struct vfab_hca *hcas;
	uint32_t nhcas;
	uint32_t snaplen; /* bytes kept of a frame */
	/* Takes a frame: len bytes on the wire, the first incl of them here. */
	void (*put)(void *arg, uint64_t ts_ns, const uint8_t *frame, uint32_t len, uint32_t incl);
	void *arg;
	uint64_t frames, records, mads;
	uint32_t msn[1024]; /* responders' message counts for AETH, by a hash of the QP */
};

/* The frames of record r (sound for o->nhcas) with its payload pay. */
void vfab_capture_frames(struct vfab_capture_frames *o, const struct vfab_cap_rec *r,
			 const uint8_t *pay);

#endif /* VFAB_TOOLS_CAPTURE_FRAMES_H */
