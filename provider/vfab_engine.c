/* SPDX-License-Identifier: MIT */
/*
 * The per-process progress thread. Most work requests complete inside
 * post_send; the engine only resumes those that wait for an IB timer (RNR
 * or transport retry). It is started on first need and sleeps until the
 * earliest due time of the QPs listed with it.
 */
#include "provider/vfab.h"

#include <time.h>

static pthread_mutex_t eng_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t eng_wake; /* new work or an earlier due time */
static pthread_cond_t eng_idle; /* a QP's progress call returned */
static struct vfab_qp *eng_list;
static bool eng_started;

static void list_del(struct vfab_qp *qp)
{
	if (qp->eng_prev)
		qp->eng_prev->eng_next = qp->eng_next;
	else
		eng_list = qp->eng_next;
	if (qp->eng_next)
		qp->eng_next->eng_prev = qp->eng_prev;
	qp->eng_next = qp->eng_prev = NULL;
	qp->eng_listed = false;
}

static void deadline(uint64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / 1000000000ull);
	ts->tv_nsec = (long)(ns % 1000000000ull);
}

static void *engine_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&eng_lock);
	for (;;) {
		struct vfab_qp *qp, *next = NULL;
		uint64_t now = vfab_now_ns();
		struct timespec ts;

		for (qp = eng_list; qp; qp = qp->eng_next)
			if (!next || qp->eng_due_ns < next->eng_due_ns)
				next = qp;
		if (!next) {
			pthread_cond_wait(&eng_wake, &eng_lock);
			continue;
		}
		if (next->eng_due_ns > now) {
			deadline(next->eng_due_ns, &ts);
			pthread_cond_timedwait(&eng_wake, &eng_lock, &ts);
			continue;
		}
		/* Progress reschedules the QP itself if it still has waiting WRs. */
		list_del(next);
		next->eng_busy++;
		pthread_mutex_unlock(&eng_lock);
		vfab_req_progress(next);
		pthread_mutex_lock(&eng_lock);
		next->eng_busy--;
		pthread_cond_broadcast(&eng_idle);
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
}

/* Caller holds eng_lock. */
static void start_engine(void)
{
	pthread_condattr_t ca;
	pthread_attr_t ta;
	pthread_t t;

	static bool atfork_set;

	if (eng_started)
		return;
	if (!atfork_set) {
		pthread_atfork(NULL, NULL, engine_atfork_child);
		atfork_set = true;
	}
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
		vfab_dbg("cannot start the progress thread: waiting WRs stall");
	pthread_attr_destroy(&ta);
}

void vfab_engine_schedule(struct vfab_qp *qp, uint64_t due_ns)
{
	pthread_mutex_lock(&eng_lock);
	start_engine();
	if (!qp->eng_listed) {
		qp->eng_next = eng_list;
		qp->eng_prev = NULL;
		if (eng_list)
			eng_list->eng_prev = qp;
		eng_list = qp;
		qp->eng_listed = true;
		qp->eng_due_ns = due_ns;
	} else if (due_ns < qp->eng_due_ns) {
		qp->eng_due_ns = due_ns;
	}
	if (eng_started)
		pthread_cond_signal(&eng_wake);
	pthread_mutex_unlock(&eng_lock);
}

/* After this returns the engine holds no reference to qp. */
void vfab_engine_cancel(struct vfab_qp *qp)
{
	pthread_mutex_lock(&eng_lock);
	/* A running progress call may list the QP again before it returns. */
	for (;;) {
		if (qp->eng_listed)
			list_del(qp);
		if (!qp->eng_busy)
			break;
		pthread_cond_wait(&eng_idle, &eng_lock);
	}
	pthread_mutex_unlock(&eng_lock);
}
