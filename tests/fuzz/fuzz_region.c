/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: a user's shard as that user can leave it (its file is
 * the user's to write; shard 0 of a real region stands for it here), read
 * by vfabd and by the provider's region readers (root's, which talk to that
 * user). The input is a list of patches over a real region with the
 * default topology: each is a kind byte, a 32-bit offset, a length byte
 * and that many bytes, written into the shard's header (kind 0: counters,
 * link clocks, multicast attachments, table tops, object counts), the
 * object slots (1), the pool's free lists (2) or the pool itself (3). Then, as vfabd
 * does: the counter tick, STATUS, REPORT, the reaper (which frees the
 * "dead" owners' objects into the pool), the GID index allocation from the
 * current tables, SEAL of every slot (its checks against the forged slots
 * and what it sealed before) and the reaping of what it sealed; as every
 * process does: pool allocations and frees; as the provider does: GID
 * reachability and link paths between every pair of ports, key and QPN
 * lookups in the region and in vfabd's object table. vfabd's names come from its own topology, as
 * in the daemon. Everything a run changed is put back from a pristine copy,
 * so each input starts from the same region.
 *
 * The object tables are touched on demand (region.h struct vfab_slot_table):
 * here each has its first FUZZ_SLOTS slots, which the patches cover, and a
 * forged top is cut back to them. A larger forged top costs whoever scans
 * the table time and memory in proportion to the table's size (a denial of
 * service docs/TRUST.md names), nothing else, and would only make each run
 * slow.
 *
 * Not covered: the slots' and the shard's robust mutexes are initialised
 * again after each patch. A user who scribbles over a lock can make whoever takes it wait
 * forever (a denial of service docs/TRUST.md names), which would only read
 * as a hang here.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/proc.h"
#include "config/config.h"
#include "daemon/vfabd.h"
#include "daemon/vfabd_conn.h"
#include "daemon/vfabd_counters.h"
#include "daemon/vfabd_gidslots.h"
#include "daemon/vfabd_reaper.h"
#include "daemon/vfabd_seal.h"
#include "daemon/vfabd_report.h"
#include "daemon/vfabd_session.h"
#include "fabric/link_model.h"
#include "fabric/reach.h"
#include "fabric/topology.h"
#include "netns/sysfs_view.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define POOL_BYTES (256u << 10)
#define HDR_LO offsetof(struct vfab_region, shard[0])
#define HDR_HI (HDR_LO + sizeof(struct vfab_shard))
#define FUZZ_SLOTS 64

static struct vfabd d;
static struct vfab_region *topo;
static char fabric[64], rundir[128];
static uint8_t *pristine;  /* region bytes [HDR_LO, HDR_HI): shard 0's header */
static uint8_t *pool_copy; /* the pool and its lists as created */
static uint64_t pool_free_copy[VFAB_POOL_CLASSES];

/* A slot table: where it is, how big a slot is, and where a slot's lock is (or none). */
struct table {
	size_t off, slot, n;
	ssize_t lock;
	enum vfab_obj kind;
};

static const struct table tables[] = {
    {offsetof(struct vfab_region, pds), sizeof(struct vfab_pd_slot), VFAB_MAX_PDS, -1, VFAB_OBJ_PD},
    {offsetof(struct vfab_region, mrs), sizeof(struct vfab_mr_slot), VFAB_MAX_MRS, -1, VFAB_OBJ_MR},
    {offsetof(struct vfab_region, cqs), sizeof(struct vfab_cq_slot), VFAB_MAX_CQS,
     offsetof(struct vfab_cq_slot, lock), VFAB_OBJ_CQ},
    {offsetof(struct vfab_region, srqs), sizeof(struct vfab_srq_slot), VFAB_MAX_SRQS,
     offsetof(struct vfab_srq_slot, lock), VFAB_OBJ_SRQ},
    {offsetof(struct vfab_region, qps), sizeof(struct vfab_qp_slot), VFAB_MAX_QPS,
     offsetof(struct vfab_qp_slot, lock), VFAB_OBJ_QP},
};

#define NTABLES (sizeof(tables) / sizeof(tables[0]))
static uint8_t *pristine_slots[NTABLES]; /* the first FUZZ_SLOTS slots of each */

static void cleanup(void)
{
	if (d.r)
		vfab_region_close(d.r);
	vfab_topology_private_free(topo);
	if (d.rundir_fd >= 0)
		close(d.rundir_fd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct vfab_config cfg;
	char err[256];

	(void)argc;
	(void)argv;
	snprintf(fabric, sizeof(fabric), "fuzz-region-%d", (int)getpid());
	snprintf(rundir, sizeof(rundir), "/tmp/%s", fabric);
	mkdir(rundir, 0755);
	d.rundir_fd = open(rundir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (d.rundir_fd < 0 || vfab_config_load_default(&cfg, err, sizeof(err)) ||
	    vfab_topology_private(fabric, rundir, &cfg, &topo) ||
	    vfab_region_create_pool(fabric, rundir, POOL_BYTES, &d.r) ||
	    vfab_topology_publish(d.r, topo) || vfabd_counters_init(&d) ||
	    vfab_ktab_create(d.rundir_fd, &d.k)) {
		fprintf(stderr, "fuzz_region: cannot set up a region: %s\n", err);
		vfab_region_unlink(fabric);
		rmdir(rundir);
		exit(1);
	}
	vfab_config_free(&cfg);
	/*
	 * Nothing is opened by name from here on (the mapping and the run
	 * dir's descriptor stay valid): a crash, which is what a fuzzer is
	 * for, leaves no region in /dev/shm and no directory in /tmp.
	 */
	vfab_region_unlink(fabric);
	unlinkat(d.rundir_fd, VFAB_KTAB_NAME, 0);
	rmdir(rundir);
	d.t = topo;
	d.fabric = fabric;
	/* The first slots of each table, as the allocator makes them usable. */
	for (size_t t = 0; t < NTABLES; t++) {
		memset((uint8_t *)d.r + tables[t].off, 0, FUZZ_SLOTS * tables[t].slot);
		for (size_t i = 0; i < FUZZ_SLOTS && tables[t].lock >= 0; i++)
			vfab_mutex_init_shared((pthread_mutex_t *)((uint8_t *)d.r + tables[t].off +
								   i * tables[t].slot +
								   tables[t].lock));
		atomic_store(&d.r->shard[0].tab[tables[t].kind].top, FUZZ_SLOTS);
		pristine_slots[t] = malloc(FUZZ_SLOTS * tables[t].slot);
		if (!pristine_slots[t])
			exit(1);
		memcpy(pristine_slots[t], (uint8_t *)d.r + tables[t].off,
		       FUZZ_SLOTS * tables[t].slot);
	}
	pristine = malloc(HDR_HI - HDR_LO);
	pool_copy = malloc(POOL_BYTES);
	if (!pristine || !pool_copy)
		exit(1);
	memcpy(pristine, (uint8_t *)d.r + HDR_LO, HDR_HI - HDR_LO);
	memcpy(pool_copy, vfab_at(d.r, VFAB_POOL_OFF), POOL_BYTES);
	memcpy(pool_free_copy, d.r->shard[0].pool_free, sizeof(pool_free_copy));
	atexit(cleanup);
	return 0;
}

/*
 * The slots [lo, hi) of table t overlaps: put back from the pristine copy
 * (restore) or given a fresh lock (after a patch).
 */
static void slots_in(size_t t, size_t lo, size_t hi, bool restore)
{
	const struct table *tb = &tables[t];
	size_t first = (lo - tb->off) / tb->slot, last = (hi - tb->off - 1) / tb->slot;

	for (size_t i = first; i <= last && i < FUZZ_SLOTS; i++) {
		uint8_t *s = (uint8_t *)d.r + tb->off + i * tb->slot;

		if (restore)
			memcpy(s, pristine_slots[t] + i * tb->slot, tb->slot);
		else if (tb->lock >= 0)
			vfab_mutex_init_shared((pthread_mutex_t *)(s + tb->lock));
	}
}

#define MAX_PATCHES 64

struct patch {
	size_t lo, hi; /* region offsets */
	int table;     /* the slot table it is in; -1: the shard's header or pool */
};

/* Applies the input's patches; returns how many (their ranges in p). */
static int apply(const uint8_t *data, size_t size, struct patch *p)
{
	size_t off = 0;
	int n = 0;

	while (off + 6 <= size && n < MAX_PATCHES) {
		uint8_t kind = data[off] & 3, len = data[off + 5];
		uint32_t at;
		size_t base, span;
		int table = -1;

		memcpy(&at, data + off + 1, 4);
		off += 6;
		if (len > size - off)
			len = (uint8_t)(size - off);
		switch (kind) {
		case 0:
			base = HDR_LO, span = HDR_HI - HDR_LO;
			break;
		case 1:
			table = (int)(at % NTABLES);
			at /= NTABLES;
			base = tables[table].off, span = FUZZ_SLOTS * tables[table].slot;
			break;
		case 2:
			base = offsetof(struct vfab_region, shard[0].pool_free);
			span = sizeof(d.r->shard[0].pool_free);
			break;
		default:
			base = VFAB_POOL_OFF, span = POOL_BYTES;
			break;
		}
		if (len > span)
			len = (uint8_t)span;
		at %= (uint32_t)(span - len + 1);
		memcpy((uint8_t *)d.r + base + at, data + off, len);
		if (!len)
			continue;
		p[n++] = (struct patch){base + at, base + at + len, table};
		if (table >= 0)
			slots_in((size_t)table, base + at, base + at + len, false);
		off += len;
	}
	for (int k = 0; k < VFAB_OBJ_KINDS; k++)
		if (atomic_load(&d.r->shard[0].tab[k].top) > FUZZ_SLOTS)
			atomic_store(&d.r->shard[0].tab[k].top, FUZZ_SLOTS);
	/* The shard's locks, like the slots' (see "Not covered" above). */
	vfab_mutex_init_shared(&d.r->shard[0].lock);
	vfab_mutex_init_shared(&d.r->shard[0].atomic_lock);
	return n;
}

static void restore(const struct patch *p, int n)
{
	for (int i = 0; i < n; i++) {
		if (p[i].table >= 0)
			slots_in((size_t)p[i].table, p[i].lo, p[i].hi, true);
		else if (p[i].hi <= HDR_HI) /* the pool is put back whole below */
			memcpy((uint8_t *)d.r + p[i].lo, pristine + (p[i].lo - HDR_LO),
			       p[i].hi - p[i].lo);
	}
	/* What the reaper and the pool changed besides. */
	for (size_t t = 0; t < NTABLES; t++)
		memcpy((uint8_t *)d.r + tables[t].off, pristine_slots[t],
		       FUZZ_SLOTS * tables[t].slot);
	memcpy(d.r->shard[0].tab, pristine + (offsetof(struct vfab_region, shard[0].tab) - HDR_LO),
	       sizeof(d.r->shard[0].tab));
	memcpy(d.r->shard[0].pool_free, pool_free_copy, sizeof(pool_free_copy));
	memcpy(vfab_at(d.r, VFAB_POOL_OFF), pool_copy, POOL_BYTES);
	for (uint32_t h = 0; h < VFAB_MAX_HCAS; h++)
		for (int k = 0; k < VFAB_OBJ_KINDS; k++)
			atomic_store(&d.r->shard[0].used[h][k], 0);
	memset(d.counters.cache, 0,
	       (size_t)VFAB_MAX_HCAS * VFAB_MAX_PORTS * sizeof(uint64_t) * VFAB_NCOUNTERS);
}

static void drain(struct vfabd_conn *c, int peer)
{
	char sink[65536];

	while (c->out_off < c->out_len) {
		if (!vfabd_conn_flush(c))
			return;
		while (recv(peer, sink, sizeof(sink), MSG_DONTWAIT) > 0)
			;
	}
}

/*
 * SEAL of every slot by this process, as its own objects, each described
 * by what the (forged) slot says: PDs first, then what names them, as a
 * process makes them.
 */
static void seal_all(int sv[2])
{
	struct vfabd_conn c = {.hca = -1, .pidfd = -1, .pid = getpid(), .peer_pid = getpid()};
	char state, line[512];

	if (vfab_proc_stat(getpid(), &state, &c.peer_start) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv))
		return;
	c.fd = sv[0];
	for (int k = 0; k < 5; k++)
		for (int i = 0; i < FUZZ_SLOTS; i++) {
			const struct vfab_mr_slot *m = &d.r->mrs[i];
			const struct vfab_cq_slot *q = &d.r->cqs[i];
			const struct vfab_srq_slot *s = &d.r->srqs[i];
			const struct vfab_qp_slot *p = &d.r->qps[i];

			if (k == 0)
				snprintf(line, sizeof(line), "pd %d ctx=%u hca=%u", i,
					 d.r->pds[i].owner.ctx_id, d.r->pds[i].hca);
			else if (k == 1)
				snprintf(line, sizeof(line),
					 "cq %d ctx=1 hca=%u cookie=%llu chan=%u async=%u stamp=%u",
					 i, q->hca, (unsigned long long)q->user_cq, q->chan_id,
					 q->async_id, q->stamp);
			else if (k == 2)
				snprintf(line, sizeof(line),
					 "srq %d ctx=1 hca=%u pd=%u cookie=%llu async=%u cq=%u "
					 "xrcd=%u tm=%u",
					 i, s->hca, s->pd, (unsigned long long)s->user_srq,
					 s->async_id, s->cq, s->xrcd, s->tm_tags);
			else if (k == 3)
				snprintf(
				    line, sizeof(line),
				    "mr %d ctx=1 hca=%u key=%u pd=%u access=%u addr=%llu len=%llu "
				    "iova=%llu kind=%u parent=%u qpn=%u",
				    i, m->hca, m->key, m->pd, m->access,
				    (unsigned long long)m->addr, (unsigned long long)m->length,
				    (unsigned long long)m->iova, m->kind, m->parent_key, m->qpn);
			else
				snprintf(
				    line, sizeof(line),
				    "qp %d ctx=1 hca=%u qpn=%u type=%u pd=%u scq=%u rcq=%u srq=%d "
				    "cookie=%llu async=%u xrcd=%u",
				    i, p->hca, p->qpn, p->qp_type, p->pd, p->send_cq, p->recv_cq,
				    p->srq, (unsigned long long)p->user_qp, p->async_id, p->xrcd);
			vfabd_req_seal(&d, &c, line, true);
			drain(&c, sv[1]);
		}
	vfabd_conn_close(&c);
	close(sv[1]);
}

/* What vfabd reads of the region. */
static void as_vfabd(void)
{
	struct vfabd_conn c = {.hca = -1, .pidfd = -1};
	struct vfab_gid out[VFAB_PORT_GIDS];
	int sv[2];

	vfabd_counters_tick(&d);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0) {
		c.fd = sv[0];
		vfabd_req_status(&d, &c);
		drain(&c, sv[1]);
		vfabd_req_report(&d, &c);
		drain(&c, sv[1]);
		vfabd_conn_close(&c);
		close(sv[1]);
	}
	seal_all(sv);
	vfabd_reap_dead(d.r, d.k);
	for (uint32_t h = 0; h < topo->nhcas; h++)
		for (uint32_t p = 0; p < topo->hcas[h].nports; p++) {
			const struct vfab_port *cur = &d.r->hcas[h].ports[p];
			uint32_t n = cur->ngids < VFAB_PORT_GIDS ? cur->ngids : VFAB_PORT_GIDS;
			size_t dropped;

			vfabd_gid_slots(topo->hcas[h].ports[p].mac, cur->gids, n, NULL, 0, out,
					&dropped);
		}
}

/* What every process and the provider's data path read of it. */
static void as_provider(const uint8_t *data, size_t size)
{
	uint8_t dgid[16] = {0};
	int64_t a, b;

	a = vfab_pool_alloc(d.r, 64);
	b = vfab_pool_alloc(d.r, 4096);
	if (a > 0)
		vfab_pool_free(d.r, (uint64_t)a, 64);
	if (b > 0)
		vfab_pool_free(d.r, (uint64_t)b, 4096);
	memcpy(dgid, data, size < 16 ? size : 16);
	for (uint32_t h = 0; h < topo->nhcas; h++) {
		for (uint32_t g = 0; g < 4; g++) {
			struct fabric_reach fr;
			const uint8_t *to = d.r->hcas[(h + 1) % topo->nhcas].ports[0].gids[g].raw;

			fabric_reach_by_index(d.r, h, 1, g, to, &fr);
			fabric_reach_by_index(d.r, h, 1, g, dgid, &fr);
		}
		for (uint32_t h2 = 0; h2 < topo->nhcas; h2++) {
			struct fabric_path path;

			if (fabric_path_resolve(d.r, h, 1, h2, 1, &path) == 0) {
				fabric_path_latency_ns(d.r, &path);
				fabric_path_shaped(d.r, &path);
			}
		}
	}
	for (size_t i = 0; i + 4 <= size && i < 64; i += 4) {
		uint32_t key;
		uint32_t hca, port;
		struct vfab_mr_slot mr;
		struct vfab_qp_slot qp;

		memcpy(&key, data + i, 4);
		vfab_mr_lookup(d.r, key);
		vfab_qp_lookup(d.r, key & 0xff, key);
		vfab_kmr_copy(d.k, key, &mr);
		vfab_kqp_copy(d.k, key & 0xff, key, &qp);
		vfab_gid_find(d.r, dgid, (uint8_t)(key & 3), &hca, &port);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct patch p[MAX_PATCHES];
	int n = apply(data, size, p);

	as_vfabd();
	as_provider(data, size);
	vfabd_seal_reap_owner(d.r, d.k, getpid(), 0); /* the sealed records, for the next input */
	restore(p, n);
	return 0;
}
