/* SPDX-License-Identifier: MIT */
/*
 * The per-process progress thread. On an unshaped fabric most work requests
 * complete inside post_send; the engine resumes those that wait for an IB
 * timer (RNR, ACK timeout) and delivers and completes messages of shaped
 * links when the link model says. It is started on first need and sleeps
 * until the earliest due time of the QPs listed with it. A thread that
 * polls a CQ does the due work itself (vfab_engine_poll), and while one
 * does, the engine is neither woken nor spinning: a wake-up costs an IPI and
 * preempts a busy-polling thread (5-10 us on a VM, measured as 10 us added
 * to a 2 us one-way latency), and a spinning real-time engine starves the
 * very threads it waits for on a small machine. It then looks only every
 * BACKSTOP_NS whether the polling goes on, so work a thread leaves behind
 * when it stops polling is done at most that late; a thread that arms a CQ
 * to sleep on its channel hands the work back at once (vfab_engine_kick).
 */
#include "provider/vfab_comp.h"
#include "provider/vfab_wire.h"

#include <sched.h>
#include <sys/prctl.h>
#include <time.h>

static pthread_mutex_t eng_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t eng_wake; /* new work or an earlier due time */
static pthread_cond_t eng_idle; /* a QP's progress call returned */
static struct vfab_qp *eng_list;
static bool eng_started;
static bool eng_wire_started; /* the wire thread (vfab_engine_wire_start) */
/* Read without the lock by pollers: how many QPs wait, and the earliest due. */
static _Atomic uint32_t eng_nlisted;
static _Atomic uint64_t eng_earliest = UINT64_MAX;
/*
 * When a thread of the application last polled, or posted in between
 * polls, with timed work pending.
 */
static _Atomic uint64_t eng_app_seen_ns;
/*
 * Seen this recently, the application counts as polling; also how often the
 * engine then looks. Shorter costs latency: at 200 us the engine's wake-ups
 * added 16 us to a 50 us one-way latency here.
 */
#define BACKSTOP_NS 1000000ull
/*
 * When the sleeping engine looks at its list next: UINT64_MAX while it
 * waits for a signal, 0 while it is awake (it looks before it sleeps).
 * Under eng_lock.
 */
static uint64_t eng_wake_at;
/*
 * This thread polls CQs that are not armed: what it posts it will poll for.
 * A thread that only posts (another one reaps) or that sleeps on completion
 * channels gives no such promise.
 */
static __thread bool thread_polls;

/* When the application was last seen, if recently enough to count on it; else 0. */
static uint64_t app_polled(uint64_t now)
{
	uint64_t polled = atomic_load_explicit(&eng_app_seen_ns, memory_order_relaxed);

	/* A stamp made after now was read counts as recent. */
	if (polled && (polled >= now || now - polled <= BACKSTOP_NS))
		return polled;
	return 0;
}

static void list_del(struct vfab_qp *qp)
{
	if (qp->eng.prev)
		qp->eng.prev->eng.next = qp->eng.next;
	else
		eng_list = qp->eng.next;
	if (qp->eng.next)
		qp->eng.next->eng.prev = qp->eng.prev;
	qp->eng.next = qp->eng.prev = NULL;
	qp->eng.listed = false;
	atomic_fetch_sub(&eng_nlisted, 1);
}

/* The listed QP due first; eng_lock held. Refreshes eng_earliest. */
static struct vfab_qp *earliest(void)
{
	struct vfab_qp *qp, *next = NULL;

	for (qp = eng_list; qp; qp = qp->eng.next)
		if (!next || qp->eng.due_ns < next->eng.due_ns)
			next = qp;
	atomic_store(&eng_earliest, next ? next->eng.due_ns : UINT64_MAX);
	return next;
}

/* The completer's progress under the QP's lock (held on entry, released). */
static void progress_locked(struct vfab_qp *qp)
{
	uint64_t due = vfab_comp_progress(qp);

	if (due)
		vfab_engine_schedule(qp, due);
	pthread_mutex_unlock(&qp->sq.lock);
}

/*
 * The engine, not the application, sends what a QP held back (sq.lock
 * held): its application waits without polling (rsockets spins on the
 * byte its peer writes back) and each round trip would wait the backstop,
 * or it was not run for that long (preempted on a busy machine), which
 * should not end batching for the QP's life. So it holds nothing for a
 * while, twice as long at each miss in a row: from 100 ms, a day after 20.
 * A batch its own poll sends starts the count again (run).
 */
#define HOLD_OFF_NS 100000000ull
#define HOLD_OFF_MAX_SHIFT 20u

static void hold_missed(struct vfab_qp *qp)
{
	uint32_t m = qp->sq.hold_misses;

	if (m < HOLD_OFF_MAX_SHIFT)
		qp->sq.hold_misses++;
	qp->sq.hold_off_ns = vfab_mono_ns() + (HOLD_OFF_NS << m);
}

/*
 * Runs one due QP; eng_lock held on entry and on return. A poller only
 * tries: its thread may hold the QP's lock (between wr_start and wr_complete).
 */
static void run(struct vfab_qp *qp, bool poller)
{
	uint64_t due = qp->eng.due_ns;

	/* Progress lists the QP again itself if it still has work. */
	list_del(qp);
	qp->eng.busy++;
	pthread_mutex_unlock(&eng_lock);
	if (!poller) {
		pthread_mutex_lock(&qp->sq.lock);
		if (qp->sq.batched)
			hold_missed(qp);
		progress_locked(qp);
	} else if (!pthread_mutex_trylock(&qp->sq.lock)) {
		/* The application's own poll sent what was held: holding works for it. */
		if (qp->sq.batched)
			qp->sq.hold_misses = 0;
		progress_locked(qp);
	} else {
		vfab_engine_schedule(qp, due);
	}
	pthread_mutex_lock(&eng_lock);
	qp->eng.busy--;
	pthread_cond_broadcast(&eng_idle);
}

/*
 * Timed sleeps overshoot by 10-25 us on virtual machines (timer interrupt
 * latency), which would add that much to every shaped one-way latency. So the
 * engine sleeps until SPIN_NS before the due time and spins the rest on the
 * clock, leaving early when earlier work is scheduled or the application
 * starts polling. eng_lock held on entry and return; released while spinning.
 */
#define SPIN_NS 60000ull

static void spin_until(uint64_t wake)
{
	uint64_t now;

	pthread_mutex_unlock(&eng_lock);
	while ((now = vfab_mono_ns()) < wake &&
	       atomic_load_explicit(&eng_earliest, memory_order_relaxed) >= wake &&
	       !app_polled(now))
		vfab_cpu_relax();
	pthread_mutex_lock(&eng_lock);
}

static void *engine_main(void *arg)
{
	struct sched_param sp = {.sched_priority = 1};

	(void)arg;
	/* Wake-ups within microseconds of the due time, not the default 50 us. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	/*
	 * The lowest real-time priority makes a wake-up preempt the busy-polling
	 * application at once; the engine only ever sleeps or does short work.
	 * Without the privilege it stays an ordinary thread.
	 */
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp))
		vfab_dbg("engine thread stays SCHED_OTHER: timed deliveries may be late");
	pthread_mutex_lock(&eng_lock);
	for (;;) {
		struct vfab_qp *next = earliest();
		uint64_t now = vfab_mono_ns(), polled = app_polled(now), wake;
		struct timespec ts;

		if (polled) {
			wake = polled + BACKSTOP_NS;
		} else if (!next) {
			eng_wake_at = UINT64_MAX;
			pthread_cond_wait(&eng_wake, &eng_lock);
			eng_wake_at = 0;
			continue;
		} else if (next->eng.due_ns <= now) {
			run(next, false);
			continue;
		} else if (next->eng.due_ns - now <= SPIN_NS) {
			spin_until(next->eng.due_ns);
			continue;
		} else {
			/* Sleep until a little before the due time; the rest is spun. */
			wake = next->eng.due_ns - SPIN_NS;
		}
		ts.tv_sec = (time_t)(wake / 1000000000ull);
		ts.tv_nsec = (long)(wake % 1000000000ull);
		eng_wake_at = wake;
		pthread_cond_timedwait(&eng_wake, &eng_lock, &ts);
		eng_wake_at = 0;
	}
	return NULL;
}

/*
 * A forked child has no engine thread and none of its parent's QPs; it
 * starts afresh if it opens a device of its own.
 */
static void engine_atfork_child(void)
{
	pthread_mutex_init(&eng_lock, NULL);
	eng_list = NULL;
	eng_started = false;
	eng_wire_started = false;
	vfab_wire_atfork_child();
	eng_wake_at = 0;
	atomic_store(&eng_nlisted, 0);
	atomic_store(&eng_earliest, UINT64_MAX);
}

/* Caller holds eng_lock. */
static void set_atfork(void)
{
	static bool atfork_set;

	if (!atfork_set)
		pthread_atfork(NULL, NULL, engine_atfork_child);
	atfork_set = true;
}

/* Caller holds eng_lock. */
static void start_engine(void)
{
	pthread_condattr_t ca;
	pthread_attr_t ta;
	pthread_t t;

	if (eng_started)
		return;
	set_atfork();
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&eng_wake, &ca);
	pthread_cond_init(&eng_idle, NULL);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&ta);
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &ta, engine_main, NULL) == 0)
		eng_started = true;
	else
		vfab_dbg("cannot start the progress thread: only polling moves timed work");
	pthread_attr_destroy(&ta);
}

void vfab_engine_schedule(struct vfab_qp *qp, uint64_t due_ns)
{
	pthread_mutex_lock(&eng_lock);
	start_engine();
	if (!qp->eng.listed) {
		qp->eng.next = eng_list;
		qp->eng.prev = NULL;
		if (eng_list)
			eng_list->eng.prev = qp;
		eng_list = qp;
		qp->eng.listed = true;
		qp->eng.due_ns = due_ns;
		atomic_fetch_add(&eng_nlisted, 1);
	} else if (due_ns < qp->eng.due_ns) {
		qp->eng.due_ns = due_ns;
	}
	/*
	 * The engine sleeps until the earliest due time: wake it only for an
	 * earlier one, and while the application polls only if it waits for a
	 * signal (it then starts looking every BACKSTOP_NS).
	 */
	if (due_ns < atomic_load(&eng_earliest)) {
		atomic_store(&eng_earliest, due_ns);
		if (eng_started && eng_wake_at &&
		    (eng_wake_at == UINT64_MAX || !app_polled(vfab_mono_ns())))
			pthread_cond_signal(&eng_wake);
	}
	pthread_mutex_unlock(&eng_lock);
}

void vfab_engine_schedule_posted(struct vfab_qp *qp, uint64_t due_ns)
{
	if (thread_polls)
		atomic_store_explicit(&eng_app_seen_ns, vfab_mono_ns(), memory_order_relaxed);
	vfab_engine_schedule(qp, due_ns);
}

bool vfab_engine_thread_polls(void)
{
	return thread_polls;
}

void vfab_engine_kick(void)
{
	/* This thread stops polling: the engine is on its own from now. */
	thread_polls = false;
	atomic_store(&eng_app_seen_ns, 0);
	if (!atomic_load_explicit(&eng_nlisted, memory_order_relaxed))
		return;
	pthread_mutex_lock(&eng_lock);
	if (eng_started && eng_wake_at)
		pthread_cond_signal(&eng_wake);
	pthread_mutex_unlock(&eng_lock);
}

void vfab_engine_poll(const _Atomic uint32_t *cq_armed)
{
	struct vfab_qp *next;
	uint64_t now;

	/*
	 * Known as a poller even when nothing waits now: otherwise a thread
	 * whose work the engine always finishes first would never be known as
	 * one, and every post of it would wake the engine. A thread that polls
	 * an armed CQ is draining it before it sleeps.
	 */
	if (!thread_polls && !atomic_load_explicit(cq_armed, memory_order_relaxed))
		thread_polls = true;
	if (!atomic_load_explicit(&eng_nlisted, memory_order_relaxed))
		return;
	now = vfab_mono_ns();
	if (!atomic_load_explicit(cq_armed, memory_order_relaxed))
		atomic_store_explicit(&eng_app_seen_ns, now, memory_order_relaxed);
	if (now < atomic_load_explicit(&eng_earliest, memory_order_relaxed))
		return;
	/* Never wait for the engine: it is probably doing this very work. */
	if (pthread_mutex_trylock(&eng_lock))
		return;
	next = earliest();
	if (next && next->eng.due_ns <= vfab_mono_ns())
		run(next, true);
	pthread_mutex_unlock(&eng_lock);
}

/* After this returns the engine holds no reference to qp. */
void vfab_engine_cancel(struct vfab_qp *qp)
{
	pthread_mutex_lock(&eng_lock);
	/* A running progress call may list the QP again before it returns. */
	for (;;) {
		if (qp->eng.listed)
			list_del(qp);
		if (!qp->eng.busy)
			break;
		pthread_cond_wait(&eng_idle, &eng_lock);
	}
	pthread_mutex_unlock(&eng_lock);
}

/* ---- the wire thread (provider/vfab_wire.h) ---- */

static void wire_news(struct vfab_qp *qp)
{
	vfab_engine_schedule(qp, 1);
}

static void *wire_thread(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "vfab-wire");
	for (;;)
		vfab_wire_wait(wire_news);
	return NULL;
}

void vfab_engine_wire_start(void)
{
	pthread_attr_t a;
	pthread_t t;

	pthread_mutex_lock(&eng_lock);
	if (!eng_wire_started) {
		set_atfork();
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		eng_wire_started = !pthread_create(&t, &a, wire_thread, NULL);
		if (!eng_wire_started)
			vfab_dbg("no wire thread: wire QPs will not progress");
		pthread_attr_destroy(&a);
	}
	pthread_mutex_unlock(&eng_lock);
}
