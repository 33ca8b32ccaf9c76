/* SPDX-License-Identifier: MIT */
/*
 * region_scribble REGION names STAGE
 * region_scribble REGION count WORDS
 *
 * What an unprivileged local user can do to a fabric's region, for
 * tests/integration/hostile.sh: rewrite the shards it may write (its own;
 * root: every one), never the topology (vfabd's, mode 0644):
 *   names  points node0's id, its first HCA's name and the run dir at STAGE
 *          (a path built from them would lead to STAGE/nodes/x/... and climb
 *          back to STAGE/s), where this process may write the region file;
 *          prints the values it replaced ("restore" arguments). Fails for
 *          anyone but vfabd's user and root.
 *   restore RUNDIR ID NAME  writes them back.
 *   count  adds WORDS to port_xmit_data of node0's first HCA, port 1, in
 *          this process's shard.
 *   arm PID ID1 ID2 MS  for MS milliseconds, points the completion channel of
 *          every CQ in use (in the shards it may write) at FIFO name PID.ID1 or PID.ID2
 * (alternately) and arms it, so that whoever completes into those CQs writes the CQ's cookie to
 * that name. steer PID ADDR MS  for MS milliseconds, names process PID (with its start time) the
 * owner of every QP, MR, CQ and SRQ in use and ADDR the address of every MR: a requester that
 * believed the region would copy into PID at ADDR (issue 27 High #3). rings MS  for MS
 * milliseconds, points every CQ's and receive queue's ring far outside the ring pool. Both print
 * how many fields they rewrote. Exit 0, or 1 with a message.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fabric/region.h"

static int set(char *field, size_t len, const char *value)
{
	if (strlen(value) >= len) {
		fprintf(stderr, "region_scribble: '%s' does not fit %zu bytes\n", value, len);
		return 1;
	}
	memset(field, 0, len);
	memcpy(field, value, strlen(value));
	return 0;
}

int main(int argc, char **argv)
{
	struct vfab_region *r;
	char name[VFAB_NAME_MAX];
	int rc = 1;

	if (argc < 3 || vfab_region_open(argv[1], &r)) {
		fprintf(stderr, "usage: region_scribble REGION names STAGE | restore RUNDIR ID NAME"
				" | count WORDS | arm PID ID1 ID2 MS | steer PID ADDR MS | rings MS"
				" (region must map)\n");
		return 1;
	}
	/* Every shard this user may write (its own: vfabd made it at a HELLO; root's: all). */
	vfab_region_map_shards(r);
	if (r->local.own >= VFAB_SHARDS)
		vfab_region_join(r);
	if ((!strcmp(argv[2], "names") || !strcmp(argv[2], "restore")) && access(argv[1], W_OK)) {
		fprintf(stderr, "region_scribble: %s: the topology is not this user's to write\n",
			argv[1]);
		rc = 1;
	} else if (!strcmp(argv[2], "names") && argc == 4) {
		uint32_t h = r->nodes[0].hcas[0];

		printf("%.*s %.*s %.*s\n", (int)sizeof(r->rundir), r->rundir, VFAB_NAME_MAX,
		       r->nodes[0].id, VFAB_NAME_MAX, r->hcas[h].name);
		snprintf(name, sizeof(name), "../../../../../..%s/s", argv[3]);
		rc = set(r->rundir, sizeof(r->rundir), argv[3]) ||
		     set(r->nodes[0].id, sizeof(r->nodes[0].id), "x") ||
		     set(r->hcas[h].name, sizeof(r->hcas[h].name), name);
	} else if (!strcmp(argv[2], "restore") && argc == 6) {
		uint32_t h = r->nodes[0].hcas[0];

		rc = set(r->rundir, sizeof(r->rundir), argv[3]) ||
		     set(r->nodes[0].id, sizeof(r->nodes[0].id), argv[4]) ||
		     set(r->hcas[h].name, sizeof(r->hcas[h].name), argv[5]);
	} else if (!strcmp(argv[2], "count") && argc == 4) {
		atomic_fetch_add(&vfab_cnt(r, r->nodes[0].hcas[0], 1)->xmit_data_words,
				 strtoull(argv[3], NULL, 10));
		rc = 0;
	} else if (!strcmp(argv[2], "arm") && argc == 7) {
		int32_t pid = (int32_t)atoi(argv[3]);
		uint32_t ids[2] = {(uint32_t)atoi(argv[4]), (uint32_t)atoi(argv[5])};
		const struct timespec tick = {0, 200000};
		long rounds = atol(argv[6]) * 5, armed = 0;

		for (long k = 0; k < rounds; k++) {
			for (uint32_t i = vfab_slot_next(r, VFAB_OBJ_CQ, 0); i != VFAB_SLOT_END;
			     i = vfab_slot_next(r, VFAB_OBJ_CQ, i + 1)) {
				struct vfab_cq_slot *c = &r->cqs[i];

				if (atomic_load(&c->state) != VFAB_SLOT_USED)
					continue;
				c->chan_pid = pid;
				c->chan_id = ids[(k + i) & 1];
				atomic_store(&c->armed, 1);
				armed++;
			}
			nanosleep(&tick, NULL);
		}
		printf("%ld\n", armed);
		rc = 0;
	} else if (!strcmp(argv[2], "steer") && argc == 6) {
		int32_t pid = (int32_t)atoi(argv[3]);
		uint64_t addr = strtoull(argv[4], NULL, 0), start = 0;
		long rounds = atol(argv[5]) * 5, n = 0;
		const struct timespec tick = {0, 200000};
		char path[64], buf[1024], *p;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		f = fopen(path, "r");
		if (f && fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')'))) {
			/* Field 22 (starttime) is the 20th after the ")": each step finds the space
			 * before the next. */
			for (int i = 0; i < 20 && p; i++)
				p = strchr(p + 1, ' ');
			start = p ? strtoull(p + 1, NULL, 10) : 0;
		}
		if (f)
			fclose(f);
#define STEER(tbl, kind)                                                                           \
	for (uint32_t i = vfab_slot_next(r, kind, 0); i != VFAB_SLOT_END;                          \
	     i = vfab_slot_next(r, kind, i + 1))                                                   \
		if (atomic_load(&r->tbl[i].state) == VFAB_SLOT_USED) {                             \
			r->tbl[i].owner.pid = pid;                                                 \
			r->tbl[i].owner.start_ticks = start;                                       \
			n++;                                                                       \
		}
		for (long k = 0; k < rounds; k++) {
			STEER(qps, VFAB_OBJ_QP);
			STEER(mrs, VFAB_OBJ_MR);
			STEER(cqs, VFAB_OBJ_CQ);
			STEER(srqs, VFAB_OBJ_SRQ);
			for (uint32_t i = vfab_slot_next(r, VFAB_OBJ_MR, 0); i != VFAB_SLOT_END;
			     i = vfab_slot_next(r, VFAB_OBJ_MR, i + 1))
				if (atomic_load(&r->mrs[i].state) == VFAB_SLOT_USED &&
				    r->mrs[i].kind == VFAB_MKEY_MR) {
					r->mrs[i].addr = addr;
					n++;
				}
			nanosleep(&tick, NULL);
		}
#undef STEER
		printf("%ld\n", start ? n : 0);
		rc = 0;
	} else if (!strcmp(argv[2], "rings") && argc == 4) {
		const uint64_t far = 1ull << 46;
		long rounds = atol(argv[3]) * 5, n = 0;
		const struct timespec tick = {0, 200000};

		for (long k = 0; k < rounds; k++) {
			for (uint32_t i = vfab_slot_next(r, VFAB_OBJ_CQ, 0); i != VFAB_SLOT_END;
			     i = vfab_slot_next(r, VFAB_OBJ_CQ, i + 1))
				if (atomic_load(&r->cqs[i].state) == VFAB_SLOT_USED) {
					r->cqs[i].ring_off = far;
					n++;
				}
			for (uint32_t i = vfab_slot_next(r, VFAB_OBJ_QP, 0); i != VFAB_SLOT_END;
			     i = vfab_slot_next(r, VFAB_OBJ_QP, i + 1))
				if (atomic_load(&r->qps[i].state) == VFAB_SLOT_USED) {
					r->qps[i].rq.ring_off = far;
					n++;
				}
			for (uint32_t i = vfab_slot_next(r, VFAB_OBJ_SRQ, 0); i != VFAB_SLOT_END;
			     i = vfab_slot_next(r, VFAB_OBJ_SRQ, i + 1))
				if (atomic_load(&r->srqs[i].state) == VFAB_SLOT_USED) {
					r->srqs[i].rq.ring_off = far;
					n++;
				}
			nanosleep(&tick, NULL);
		}
		printf("%ld\n", n);
		rc = 0;
	} else {
		fprintf(stderr, "region_scribble: unknown request %s\n", argv[2]);
	}
	vfab_region_close(r);
	return rc;
}
