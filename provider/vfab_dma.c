/* SPDX-License-Identifier: MIT */
/* Copy engines: one large copy over several threads (see vfab_dma.h). */
#include "provider/vfab_dma.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/clock.h"
#include "provider/vfab_split.h"

#define DMA_WORKERS (VFAB_SPLIT_MAX - 1) /* the posting thread is an engine too */
/*
 * How long a thread polls before it sleeps on a futex: waking a thread on
 * an idle CPU of a VM takes tens of microseconds, as long as copying
 * 512 KiB; a stream of large WRITEs hands the next range over well within
 * this. Polling yields the CPU, so on a node with fewer CPUs than engines
 * the thread it waits for still runs.
 */
#define DMA_POLL_NS 50000

uint64_t vfab_dma_split_from_bytes = 2ull * VFAB_DMA_MIN_CHUNK_BYTES;

/* One split copy: what every range needs, and how many are still moving. */
struct dma_job {
	const struct vfab_peer *p;
	bool write;
	const struct iovec *local, *remote;
	unsigned int nlocal, nremote;
	_Atomic int err; /* the first range's error */
};

struct dma_worker {
	_Atomic uint32_t seq;	   /* futex word: bumped when a range is handed over */
	_Atomic uint32_t sleeping; /* asleep on seq: wake it */
	struct dma_job *job;
	struct vfab_split_range range;
};

static struct {
	pthread_mutex_t lock;	/* held by the one thread running a split copy */
	_Atomic unsigned bound; /* engines at most: the largest configured */
	uint64_t min_chunk_bytes;
	unsigned started; /* workers running (under lock) */
	/*
	 * Ranges of the current copy handed out and not done; here, not in
	 * the job on the poster's stack, because a worker still looks at
	 * poster_sleeping after its decrement let the poster return.
	 */
	_Atomic uint32_t pending;
	_Atomic uint32_t poster_sleeping;
	struct dma_worker w[DMA_WORKERS];
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .min_chunk_bytes = VFAB_DMA_MIN_CHUNK_BYTES};

static void futex_wait(_Atomic uint32_t *word, uint32_t seen)
{
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/*
 * Until *word differs from `seen`: polls DMA_POLL_NS, then sleeps on the
 * futex with *sleeping set, so that whoever changes the word knows to wake
 * it (both sides seq_cst: either it sees the change or the changer sees the
 * flag). Returns the new value.
 */
static uint32_t await_change(_Atomic uint32_t *word, uint32_t seen, _Atomic uint32_t *sleeping)
{
	uint64_t until = 0;
	uint32_t v;

	while ((v = atomic_load(word)) == seen) {
		if (!until) {
			until = vfab_mono_ns() + DMA_POLL_NS;
		} else if (vfab_mono_ns() > until) {
			atomic_store(sleeping, 1);
			if (atomic_load(word) == seen)
				futex_wait(word, seen);
			atomic_store(sleeping, 0);
			continue;
		}
		sched_yield();
	}
	return v;
}

static int run_range(struct dma_job *j, const struct vfab_split_range *r)
{
	return vfab_xfer_part(j->p, j->write, j->local, j->nlocal, j->remote, j->nremote,
			      r->off_bytes, r->len_bytes);
}

static void job_error(struct dma_job *j, int rc)
{
	int none = 0;

	if (rc)
		atomic_compare_exchange_strong(&j->err, &none, rc);
}

static void *worker_main(void *arg)
{
	struct dma_worker *w = arg;
	uint32_t seen = 0; /* seq when it was started: bumped only after */

	for (;;) {
		struct dma_job *j;

		seen = await_change(&w->seq, seen, &w->sleeping); /* idle: asleep */
		j = w->job;
		job_error(j, run_range(j, &w->range));
		/* The poster may return once this reaches 0: j is not touched after. */
		if (atomic_fetch_sub(&pool.pending, 1) == 1 && atomic_load(&pool.poster_sleeping))
			futex_wake(&pool.pending);
	}
	return NULL;
}

/* A child of fork() has none of its parent's threads: it starts its own. */
static void forget_workers(void)
{
	pthread_mutex_init(&pool.lock, NULL);
	pool.started = 0;
	memset(pool.w, 0, sizeof(pool.w));
	atomic_store(&pool.pending, 0);
	atomic_store(&pool.poster_sleeping, 0);
}

static void register_fork_handler(void)
{
	pthread_atfork(NULL, NULL, forget_workers);
}

/* Starts workers up to `want` (under lock); returns how many run. */
static unsigned start_workers(unsigned want)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	sigset_t all, old;

	if (want > DMA_WORKERS)
		want = DMA_WORKERS;
	if (pool.started >= want)
		return pool.started;
	pthread_once(&once, register_fork_handler);
	/* The application's signals go to its own threads, never to these. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	while (pool.started < want) {
		pthread_attr_t a;
		pthread_t t;
		int rc;

		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&a, 64u << 10);
		rc = pthread_create(&t, &a, worker_main, &pool.w[pool.started]);
		pthread_attr_destroy(&a);
		if (rc)
			break; /* fewer engines; the copy still happens */
		pthread_setname_np(t, "vfab-dma");
		pool.started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return pool.started;
}

static unsigned env_uint(const char *name, unsigned lo, unsigned long hi, unsigned long dflt)
{
	const char *e = getenv(name);
	unsigned long v;
	char *end;

	if (!e || !*e)
		return (unsigned)dflt;
	v = strtoul(e, &end, 10);
	return *end || v < lo || v > hi ? (unsigned)dflt : (unsigned)v;
}

unsigned vfab_dma_configure(unsigned hca_engines)
{
	unsigned n = env_uint("VFAB_COPY_ENGINES", 1, VFAB_SPLIT_MAX, hca_engines);
	unsigned b = atomic_load(&pool.bound);
	uint64_t chunk = env_uint("VFAB_COPY_SPLIT_MIN", VFAB_SPLIT_MIN_CHUNK_FLOOR, UINT_MAX,
				  VFAB_DMA_MIN_CHUNK_BYTES);

	if (n < 1)
		n = 1;
	if (n > VFAB_SPLIT_MAX)
		n = VFAB_SPLIT_MAX;
	while (b < n && !atomic_compare_exchange_weak(&pool.bound, &b, n))
		;
	pool.min_chunk_bytes = chunk;
	vfab_dma_split_from_bytes = 2 * chunk;
	return n;
}

int vfab_dma_copy(const struct vfab_peer *p, bool write, unsigned engines, uint64_t len_bytes,
		  const struct iovec *local, unsigned int nlocal, const struct iovec *remote,
		  unsigned int nremote)
{
	const struct iovec *dst = write ? remote : local;
	struct dma_job j = {.p = p,
			    .write = write,
			    .local = local,
			    .remote = remote,
			    .nlocal = nlocal,
			    .nremote = nremote};
	struct vfab_split s;
	unsigned bound = atomic_load(&pool.bound), k;
	uint32_t left;

	if (engines > bound)
		engines = bound;
	if (engines < 2 || pthread_mutex_trylock(&pool.lock))
		goto alone; /* another thread's split copy has the engines */
	engines = start_workers(engines - 1) + 1;
	vfab_split_plan(len_bytes, (uint64_t)(uintptr_t)dst->iov_base, engines,
			pool.min_chunk_bytes, &s);
	if (s.n < 2) {
		pthread_mutex_unlock(&pool.lock);
		goto alone;
	}
	atomic_store(&pool.pending, s.n - 1);
	for (k = 0; k + 1 < s.n; k++) {
		struct dma_worker *w = &pool.w[k];

		w->job = &j;
		w->range = s.part[k];
		atomic_fetch_add(&w->seq, 1);
		if (atomic_load(&w->sleeping))
			futex_wake(&w->seq);
	}
	job_error(&j, run_range(&j, &s.part[s.n - 1]));
	while ((left = atomic_load(&pool.pending)) != 0)
		await_change(&pool.pending, left, &pool.poster_sleeping);
	pthread_mutex_unlock(&pool.lock);
	/* Everything else has landed: now the last bytes, which pollers watch. */
	if (!atomic_load(&j.err))
		job_error(&j, run_range(&j, &s.tail));
	return atomic_load(&j.err);
alone:
	return write ? vfab_xfer_write(p, local, nlocal, remote, nremote)
		     : vfab_xfer_read(p, local, nlocal, remote, nremote);
}
