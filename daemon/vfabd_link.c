/* SPDX-License-Identifier: MIT */
/*
 * LINK and SHAPE: a port's state and a link's rate, latency and loss, changed
 * while traffic runs. The region is the truth the provider's data path reads;
 * the node's sysfs view follows it, and contexts of the HCA get the async
 * event hardware would raise.
 */
#include "vfabd_link.h"

#include "fabric/topology.h"
#include "base/beneath.h"
#include "base/paths.h"
#include "netns/pci_view.h"
#include "netns/sysfs_view.h"

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vfabd.h"
#include "vfabd_conn.h"
#include "vfabd_events.h"
#include "vfabd_faultlog.h"
#include "vfabd_ipwire.h"
#include "vfabd_log.h"
#include "vfabd_target.h"

#define SHAPE_MAX_GBPS 1e6 /* rate_bps and speed_mbps must not overflow */
#define SHAPE_MAX_US 1e6   /* latency_ns is 32 bits */

/*
 * The provider reads these fields without a lock; relaxed atomic stores
 * keep each one whole for a reader in another process.
 */
#define STORE(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELAXED)

void vfabd_link_set_latency(struct vfabd *d, uint32_t link, uint32_t base_ns)
{
	uint64_t ns = (uint64_t)base_ns + d->faults.spike_add_ns[link];

	STORE(d->r->links[link].latency_ns, ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns);
	atomic_fetch_add_explicit(&d->r->link_gen, 1, memory_order_release);
}

/* The view's directory of a port, named by vfabd's own topology. */
static int port_dir(struct vfabd *d, uint32_t hca, uint32_t port)
{
	const struct vfab_hca *h = &d->t->hcas[hca];

	return vfab_sysfs_port_open(d->rundir_fd, d->t->nodes[h->node].id, h->name, port, "");
}

/* Rewrites state and phys_state in the view; a node without a view is fine. */
static int view_port_state(struct vfabd *d, uint32_t hca, uint32_t port, bool up)
{
	uint32_t state = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	int fd = port_dir(d, hca, port), rc;

	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	rc = vfab_sysfs_replace(fd, "state", vfab_sysfs_state_text(state));
	if (!rc)
		rc = vfab_sysfs_replace(fd, "phys_state", vfab_sysfs_phys_state_text(state));
	close(fd);
	return rc;
}

static int view_port_rate(struct vfabd *d, uint32_t hca, uint32_t port)
{
	char rate[64], line[80];
	int fd, rc;

	rc = vfab_topology_sysfs_rate(&d->r->hcas[hca].ports[port - 1], rate, sizeof(rate));
	if (rc < 0)
		return rc;
	snprintf(line, sizeof(line), "%s\n", rate);
	fd = port_dir(d, hca, port);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	rc = vfab_sysfs_replace(fd, "rate", line);
	close(fd);
	return rc;
}

/* One port to `up`; returns contexts notified (0 when it already was), or -errno. */
static int set_port(struct vfabd *d, uint32_t hca, uint32_t port, bool up, bool *changed)
{
	struct vfab_port *p = &d->r->hcas[hca].ports[port - 1];
	uint32_t want = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	int rc;

	*changed = atomic_exchange(&p->state, want) != want;
	if (!*changed)
		return 0;
	if (!up)
		d->link.downed[hca][port - 1]++;
	/* One wire: the port's netdev loses its carrier with it. */
	rc = vfabd_ipwire_carrier(d, hca, port, up);
	if (rc)
		vfabd_log("link %u/%u: carrier of its netdev: %s", hca, port, strerror(-rc));
	rc = view_port_state(d, hca, port, up);
	if (rc)
		return rc;
	return vfabd_raise_port_event(d, hca, port,
				      up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR);
}

void vfabd_req_link(struct vfabd *d, struct vfabd_conn *c, char *args)
{
	char *save = NULL, *target = strtok_r(args, " ", &save), *dir = strtok_r(NULL, " ", &save);
	uint32_t hca, port, first, last;
	int notified = 0, changed = 0, rc = 0;
	char detail[128];
	bool up;

	if (!target || !dir || strtok_r(NULL, " ", &save) ||
	    (strcmp(dir, "down") != 0 && strcmp(dir, "up") != 0)) {
		vfabd_reply_err(c, -EINVAL, "usage: LINK <node>/<hca>[/<port>] down|up");
		return;
	}
	up = strcmp(dir, "up") == 0;
	rc = vfabd_parse_port(d->t, target, &hca, &port);
	if (rc) {
		vfabd_reply_err(c, rc, "no port '%s' (want <node>/<hca>[/<port>])", target);
		return;
	}
	first = port ? port : 1;
	last = port ? port : d->t->hcas[hca].nports;
	for (uint32_t p = first; p <= last && !rc; p++) {
		bool ch;

		rc = set_port(d, hca, p, up, &ch);
		if (rc >= 0) {
			notified += rc;
			changed += ch;
			rc = 0;
		}
	}
	snprintf(detail, sizeof(detail), "%d port(s) changed, %d context(s) notified", changed,
		 notified);
	vfabd_event_add(&d->log, "link", target, dir, rc ? strerror(-rc) : detail);
	if (rc)
		vfabd_reply_err(c, rc, "%s is %s in the region, but its sysfs view: %s", target,
				up ? "up" : "down", strerror(-rc));
	else
		vfabd_replyf(c, "OK %s %s: %s", target, up ? "ACTIVE" : "DOWN", detail);
}

struct shape {
	bool has_bw, has_lat, has_loss;
	double bw, lat, loss;
};

static int parse_shape(char *save, struct shape *s, const char **bad)
{
	char *tok;

	memset(s, 0, sizeof(*s));
	while ((tok = strtok_r(NULL, " ", &save))) {
		*bad = tok;
		if (!strncmp(tok, "bw=", 3) && !s->has_bw) {
			s->has_bw = true;
			if (vfabd_parse_number(tok + 3, 0, SHAPE_MAX_GBPS, &s->bw))
				return -EINVAL;
		} else if (!strncmp(tok, "lat=", 4) && !s->has_lat) {
			s->has_lat = true;
			if (vfabd_parse_number(tok + 4, 0, SHAPE_MAX_US, &s->lat))
				return -EINVAL;
		} else if (!strncmp(tok, "loss=", 5) && !s->has_loss) {
			s->has_loss = true;
			if (vfabd_parse_number(tok + 5, 0, 1, &s->loss))
				return -EINVAL;
		} else {
			return -EINVAL;
		}
	}
	*bad = NULL;
	return s->has_bw || s->has_lat || s->has_loss ? 0 : -EINVAL;
}

static void shape_text(const struct shape *s, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	if (s->has_bw)
		n += (size_t)snprintf(buf + n, len - n, "bw=%.6g", s->bw);
	if (s->has_lat && n < len)
		n += (size_t)snprintf(buf + n, len - n, "%slat=%.6g", n ? " " : "", s->lat);
	if (s->has_loss && n < len)
		snprintf(buf + n, len - n, "%sloss=%.6g", n ? " " : "", s->loss);
}

/*
 * The speed file of the port's netdev (/sys/class/net/<netdev>/speed in the
 * node is a bind of it): rewritten in place, a rename would leave the bind
 * on the old file. A port without a netdev, or a node without a view, has none.
 */
static int netdev_speed(struct vfabd *d, uint32_t hca, uint32_t port, uint32_t mbps)
{
	const struct vfab_hca *h = &d->t->hcas[hca];
	const char *netdev = vfab_pci_port_netdev(d->t, h->node, hca, port - 1);
	char rel[VFAB_PATH_REL_MAX], text[16];
	int fd, rc = 0, n;

	if (!netdev)
		return 0;
	if (vfab_netdev_speed_rel(rel, sizeof(rel), d->t->nodes[h->node].id, netdev))
		return -ENAMETOOLONG;
	fd = vfab_open_beneath(d->rundir_fd, rel, O_WRONLY | O_CLOEXEC, 0);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	n = snprintf(text, sizeof(text), "%u\n", mbps);
	if (pwrite(fd, text, (size_t)n, 0) != n || ftruncate(fd, n))
		rc = -errno;
	close(fd);
	return rc;
}

/* A shaped port advertises the new rate (unshaped, bw=0, keeps what it had). */
static int shape_port(struct vfabd *d, uint32_t hca, uint32_t port, double gbps)
{
	struct vfab_port *p = &d->r->hcas[hca].ports[port - 1];
	uint32_t mbps = (uint32_t)llround(gbps * 1000.0);
	uint8_t width, speed;
	int rc;

	vfab_topology_encode_speed(mbps, &width, &speed);
	STORE(p->speed_mbps, mbps);
	STORE(p->active_width, width);
	STORE(p->active_speed, speed);
	rc = netdev_speed(d, hca, port, mbps);
	return rc ? rc : view_port_rate(d, hca, port);
}

void vfabd_req_shape(struct vfabd *d, struct vfabd_conn *c, char *args)
{
	char *save = NULL, *target = strtok_r(args, " ", &save), params[128] = "";
	uint32_t links[2 * VFAB_MAX_PORTS], port_no, first, last;
	const char *bad = NULL;
	struct shape s;
	int32_t port_hca;
	int n, rc = 0, ipw;

	if (!target || parse_shape(save, &s, &bad)) {
		vfabd_reply_err(c, -EINVAL,
				"%s%susage: SHAPE <link>|<node>/<hca>[/<port>] [bw=<Gb/s>] "
				"[lat=<us>] [loss=<0..1>]",
				bad ? bad : "", bad ? ": bad parameter; " : "");
		return;
	}
	n = vfabd_parse_links(d->t, target, links, sizeof(links) / sizeof(links[0]), &port_hca,
			      &port_no);
	if (n < 0) {
		vfabd_reply_err(c, n, "no link or port '%s'", target);
		return;
	}
	for (int i = 0; i < n; i++) {
		struct vfab_link *l = &d->r->links[links[i]];

		if (s.has_bw)
			STORE(l->rate_bps, (uint64_t)llround(s.bw * 1e9));
		if (s.has_lat)
			vfabd_link_set_latency(d, links[i], (uint32_t)llround(s.lat * 1e3));
		if (s.has_loss)
			STORE(l->loss_ppm, (uint32_t)lround(s.loss * 1e6));
	}
	/* Requesters re-read the links they cached as unshaped (region.h). */
	atomic_fetch_add_explicit(&d->r->link_gen, 1, memory_order_release);
	/* The IP side of the same wires follows (a failure is logged, not fatal). */
	ipw = vfabd_ipwire_links_changed(d, links, n);
	if (ipw)
		vfabd_log("shape %s: IP side: %s", target, strerror(-ipw));
	if (s.has_bw && s.bw > 0 && port_hca >= 0) {
		first = port_no ? port_no : 1;
		last = port_no ? port_no : d->t->hcas[port_hca].nports;
		for (uint32_t p = first; p <= last && !rc; p++)
			rc = shape_port(d, (uint32_t)port_hca, p, s.bw);
	}
	/* The log keeps the normalised values: what the links got. */
	shape_text(&s, params, sizeof(params));
	vfabd_event_add(&d->log, "shape", target, params, rc ? strerror(-rc) : "");
	if (rc)
		vfabd_reply_err(c, rc, "%s shaped, but its sysfs rate: %s", target, strerror(-rc));
	else if ((ipw == -EPERM || vfabd_ipwire_unprivileged(d)) &&
		 ((s.has_lat && s.lat > 0) || (s.has_loss && s.loss > 0)))
		vfabd_replyf(c,
			     "OK %s: %s on %d link(s), RDMA only: IP packets are not delayed or "
			     "dropped (this kernel has no netem, and its stand-in needs CAP_BPF, "
			     "which a fabric without root does not have)",
			     target, params, n);
	else
		vfabd_replyf(c, "OK %s: %s on %d link(s)", target, params, n);
}
