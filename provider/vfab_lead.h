/* SPDX-License-Identifier: MIT */
/* When a timed delivery starts so that it lands on its due time (vfab_lead.c). */
#ifndef VFAB_LEAD_H
#define VFAB_LEAD_H

#include <stdint.h>

/* When delivering a message of len bytes due at due must start. */
uint64_t vfab_lead_start_ns(uint32_t len, uint64_t due);
/* A lone message of len bytes, due at due, started and landed at those times. */
void vfab_lead_learn(uint32_t len, uint64_t due, uint64_t started, uint64_t landed);
/* Back to no lead at all, as a new process starts. */
void vfab_lead_forget(void);

#endif
