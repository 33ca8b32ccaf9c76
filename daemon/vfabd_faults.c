/* SPDX-License-Identifier: MIT */
/*
 * FAULT requests: kill a node's processes, pause and resume a node
 * (SIGSTOP/SIGCONT: peers see their QPs time out, then recover), and latency
 * spikes on links. Pauses and spikes with a duration end on vfabd's clock
 * (vfabd_faults_due, driven by the event loop); a daemon that stops resumes
 * and restores everything first, so no fault outlives it.
 */

#include "vfabd_faults.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vfabd.h"
#include "vfabd_conn.h"
#include "vfabd_faultlog.h"
#include "vfabd_ipwire.h"
#include "vfabd_link.h"
#include "vfabd_nodeproc.h"
#include "vfabd_target.h"

#include "base/clock.h"

#define KILL_ROUNDS 10	    /* rescans for children forked while we were killing */
#define STOP_ROUNDS 5	    /* the same for a pause */
#define FAULT_MAX_S 86400.0 /* a day: longer is a typo, not an experiment */
#define SPIKE_MAX_US 1e6

static bool known(const struct vfabd_proc *v, size_t n, const struct vfabd_proc *p)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == p->pid && v[i].start == p->start)
			return true;
	return false;
}

/*
 * Sends sig to the node's processes until a scan finds none it has not
 * signalled yet; the signalled ones go to *done. Count of new ones or -errno.
 */
static int signal_node(struct vfabd *d, uint32_t node, int sig, int rounds,
		       struct vfabd_proc **done, size_t *ndone)
{
	int total = 0;

	for (int round = 0; round < rounds; round++) {
		struct vfabd_proc *procs;
		int n = vfabd_node_procs(d, node, &procs), fresh = 0;

		if (n < 0)
			return round ? total : n;
		for (int i = 0; i < n; i++) {
			struct vfabd_proc *nd;

			if (known(*done, *ndone, &procs[i]) || kill(procs[i].pid, sig))
				continue;
			nd = realloc(*done, (*ndone + 1) * sizeof(*nd));
			if (!nd)
				continue; /* signalled, only not remembered */
			*done = nd;
			(*done)[(*ndone)++] = procs[i];
			fresh++;
		}
		free(procs);
		total += fresh;
		if (!fresh)
			break;
	}
	return total;
}

static void resume_node(struct vfabd *d, uint32_t node, const char *why)
{
	struct vfabd_pause *p = &d->faults.pauses[node];
	char detail[128];
	int n = 0;

	for (size_t i = 0; i < p->nprocs; i++)
		if (vfabd_proc_same(&p->procs[i]) && kill(p->procs[i].pid, SIGCONT) == 0)
			n++;
	free(p->procs);
	*p = (struct vfabd_pause){0};
	snprintf(detail, sizeof(detail), "%d process(es) continued (%s)", n, why);
	vfabd_event_add(&d->log, "resume", d->t->nodes[node].id, "", detail);
}

static void fault_kill(struct vfabd *d, struct vfabd_conn *c, uint32_t node)
{
	struct vfabd_proc *done = NULL;
	size_t ndone = 0;
	char detail[64];
	int n = signal_node(d, node, SIGKILL, KILL_ROUNDS, &done, &ndone);

	free(done);
	if (n < 0) {
		vfabd_reply_err(c, n, "node %s: %s", d->t->nodes[node].id,
				n == -ESRCH ? "it has no network namespace (not built?)"
					    : strerror(-n));
		return;
	}
	/* Killed processes cannot be continued: the pause is over for them. */
	if (d->faults.pauses[node].active) {
		free(d->faults.pauses[node].procs);
		d->faults.pauses[node] = (struct vfabd_pause){0};
	}
	snprintf(detail, sizeof(detail), "%d process(es) killed", n);
	vfabd_event_add(&d->log, "kill", d->t->nodes[node].id, "", detail);
	vfabd_replyf(c, "OK %s: %s", d->t->nodes[node].id, detail);
}

static void fault_pause(struct vfabd *d, struct vfabd_conn *c, uint32_t node, const char *secs)
{
	struct vfabd_pause *p = &d->faults.pauses[node];
	char detail[96], params[32] = "";
	double s = 0;
	int n;

	if (secs && vfabd_parse_number(secs, 0.001, FAULT_MAX_S, &s)) {
		vfabd_reply_err(c, -EINVAL, "pause: seconds '%s' not in (0, %g]", secs,
				FAULT_MAX_S);
		return;
	}
	n = signal_node(d, node, SIGSTOP, STOP_ROUNDS, &p->procs, &p->nprocs);
	if (n < 0) {
		vfabd_reply_err(c, n, "node %s: %s", d->t->nodes[node].id,
				n == -ESRCH ? "it has no network namespace (not built?)"
					    : strerror(-n));
		return;
	}
	p->active = true;
	p->until_ms = secs ? (uint64_t)vfab_now_ms() + (uint64_t)llround(s * 1000) : 0;
	if (secs)
		snprintf(params, sizeof(params), "%.6g", s);
	snprintf(detail, sizeof(detail), "%d process(es) stopped, %s", n,
		 secs ? "resumed after the time" : "until FAULT resume");
	vfabd_event_add(&d->log, "pause", d->t->nodes[node].id, params, detail);
	vfabd_replyf(c, "OK %s: %s", d->t->nodes[node].id, detail);
}

static void spike_end(struct vfabd *d, size_t i)
{
	struct vfabd_spike *s = &d->faults.spikes[i];
	char params[32];

	for (uint32_t k = 0; k < s->nlinks; k++) {
		uint32_t l = s->links[k];
		uint32_t cur = __atomic_load_n(&d->r->links[l].latency_ns, __ATOMIC_RELAXED);
		uint32_t base =
		    cur > d->faults.spike_add_ns[l] ? cur - d->faults.spike_add_ns[l] : 0;

		d->faults.spike_add_ns[l] -= s->add_ns;
		vfabd_link_set_latency(d, l, base);
	}
	vfabd_ipwire_links_changed(d, s->links, (int)s->nlinks);
	snprintf(params, sizeof(params), "lat=%.6g", s->add_ns / 1e3);
	vfabd_event_add(&d->log, "spike_end", s->target, params, "latency restored");
	d->faults.spikes[i] = d->faults.spikes[--d->faults.nspikes];
}

static void fault_spike(struct vfabd *d, struct vfabd_conn *c, char *target, char *save)
{
	double lat = -1, secs = -1;
	struct vfabd_spike s = {0}, *ns;
	char params[64], *tok;
	int32_t port_hca;
	uint32_t port_no;
	int n;

	while ((tok = strtok_r(NULL, " ", &save))) {
		if (!strncmp(tok, "lat=", 4) && lat < 0 &&
		    !vfabd_parse_number(tok + 4, 0.001, SPIKE_MAX_US, &lat))
			continue;
		if (!strncmp(tok, "for=", 4) && secs < 0 &&
		    !vfabd_parse_number(tok + 4, 0.001, FAULT_MAX_S, &secs))
			continue;
		lat = secs = -1;
		break;
	}
	if (!target || lat < 0 || secs < 0) {
		vfabd_reply_err(c, -EINVAL,
				"usage: FAULT spike <link>|<node>/<hca>[/<port>] lat=<us> for=<s>");
		return;
	}
	n = vfabd_parse_links(d->t, target, s.links, sizeof(s.links) / sizeof(s.links[0]),
			      &port_hca, &port_no);
	if (n < 0) {
		vfabd_reply_err(c, n, "no link or port '%s'", target);
		return;
	}
	ns = realloc(d->faults.spikes, (d->faults.nspikes + 1) * sizeof(*ns));
	if (!ns) {
		vfabd_reply_err(c, -ENOMEM, "no memory for the spike");
		return;
	}
	d->faults.spikes = ns;
	s.nlinks = (uint32_t)n;
	s.add_ns = (uint32_t)llround(lat * 1e3);
	s.until_ms = (uint64_t)vfab_now_ms() + (uint64_t)llround(secs * 1000);
	snprintf(s.target, sizeof(s.target), "%s", target);
	for (int k = 0; k < n; k++) {
		uint32_t l = s.links[k];
		uint32_t cur = __atomic_load_n(&d->r->links[l].latency_ns, __ATOMIC_RELAXED);
		uint32_t base =
		    cur > d->faults.spike_add_ns[l] ? cur - d->faults.spike_add_ns[l] : 0;

		d->faults.spike_add_ns[l] += s.add_ns;
		vfabd_link_set_latency(d, l, base);
	}
	vfabd_ipwire_links_changed(d, s.links, n);
	d->faults.spikes[d->faults.nspikes++] = s;
	snprintf(params, sizeof(params), "lat=%.6g for=%.6g", lat, secs);
	vfabd_event_add(&d->log, "spike", target, params, "");
	vfabd_replyf(c, "OK %s: +%.6g us on %d link(s) for %.6g s", target, lat, n, secs);
}

void vfabd_req_fault(struct vfabd *d, struct vfabd_conn *c, char *args)
{
	char *save = NULL, *kind = strtok_r(args, " ", &save), *arg = strtok_r(NULL, " ", &save);
	char *extra;
	int node;

	if (kind && !strcmp(kind, "spike")) {
		fault_spike(d, c, arg, save);
		return;
	}
	extra = strtok_r(NULL, " ", &save);
	if (!kind || !arg || strtok_r(NULL, " ", &save) ||
	    (strcmp(kind, "kill") && strcmp(kind, "pause") && strcmp(kind, "resume")) ||
	    (extra && strcmp(kind, "pause"))) {
		vfabd_reply_err(c, -EINVAL,
				"usage: FAULT kill <node> | pause <node> [<s>] | resume <node> | "
				"spike <link>|<node>/<hca>[/<port>] lat=<us> for=<s>");
		return;
	}
	node = vfabd_find_node(d->t, arg);
	if (node < 0) {
		vfabd_reply_err(c, node, "no node '%s'", arg);
		return;
	}
	if (!strcmp(kind, "kill")) {
		fault_kill(d, c, (uint32_t)node);
	} else if (!strcmp(kind, "pause")) {
		fault_pause(d, c, (uint32_t)node, extra);
	} else if (!d->faults.pauses[node].active) {
		vfabd_replyf(c, "OK %s was not paused", arg);
	} else {
		resume_node(d, (uint32_t)node, "request");
		vfabd_replyf(c, "OK %s resumed", arg);
	}
}

int vfabd_faults_due(struct vfabd *d)
{
	uint64_t now = (uint64_t)vfab_now_ms(), next = UINT64_MAX;

	for (uint32_t i = 0; i < VFAB_MAX_NODES; i++) {
		struct vfabd_pause *p = &d->faults.pauses[i];

		if (!p->active || !p->until_ms)
			continue;
		if (p->until_ms <= now)
			resume_node(d, i, "timer");
		else if (p->until_ms < next)
			next = p->until_ms;
	}
	for (size_t i = d->faults.nspikes; i-- > 0;) {
		if (d->faults.spikes[i].until_ms <= now)
			spike_end(d, i);
		else if (d->faults.spikes[i].until_ms < next)
			next = d->faults.spikes[i].until_ms;
	}
	return next == UINT64_MAX ? -1 : (int)(next - now);
}

void vfabd_faults_release(struct vfabd *d)
{
	for (uint32_t i = 0; i < VFAB_MAX_NODES; i++)
		if (d->faults.pauses[i].active)
			resume_node(d, i, "vfabd stopping");
	while (d->faults.nspikes)
		spike_end(d, d->faults.nspikes - 1);
	free(d->faults.spikes);
	d->faults.spikes = NULL;
}
