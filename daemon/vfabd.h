/* SPDX-License-Identifier: MIT */
/*
 * vfabd internals: the control-socket server, the reaper, runtime control
 * (link state, shaping, faults), live sysfs counters and the report.
 */
#ifndef VFAB_VFABD_H
#define VFAB_VFABD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fabric/region.h"

#define VFABD_LINE_MAX 1024 /* HELLO carries a FIFO path under the run dir */
#define VFABD_TICK_MS 250   /* sysfs counters are refreshed at this period */
#define VFABD_REAP_TICKS 2  /* the reaper runs every 2nd tick (500 ms) */
#define VFABD_FAULTLOG_MAX 4096

struct vfabd_conn {
	int fd;
	pid_t pid;	 /* from HELLO; 0 before */
	bool bye;	 /* closed cleanly: its objects were freed by their owner */
	bool privileged; /* peer is root or vfabd's own user: may change the fabric */
	int32_t hca;	 /* HELLO hca=: the context's HCA (region index), -1 none */
	char *async;	 /* HELLO async=: the context's async event FIFO, NULL none */
	char *out;	 /* reply bytes not yet sent (large REPORTs) */
	size_t out_len, out_off;
	size_t len;
	char buf[VFABD_LINE_MAX];
};

/* One entry of the fault log: every fault, link and shape change. */
struct vfabd_event {
	uint64_t unix_ms;
	char kind[16];	  /* link, shape, kill, pause, resume, spike, spike_end */
	char target[128]; /* node, node/hca[/port] or link name */
	char params[128]; /* the request's parameters, e.g. "down", "bw=25 lat=2" */
	char detail[128]; /* what it did, e.g. "2 context(s) notified" */
};

struct vfabd_proc {
	pid_t pid;
	unsigned long long start; /* /proc/PID/stat starttime: guards against pid reuse */
};

/* A paused node: the processes it stopped, resumed at `until_ms` (0: on request). */
struct vfabd_pause {
	bool active;
	uint64_t until_ms; /* CLOCK_MONOTONIC */
	struct vfabd_proc *procs;
	size_t nprocs;
};

/* A latency spike: `add_ns` on each of its links until `until_ms`. */
struct vfabd_spike {
	uint64_t until_ms; /* CLOCK_MONOTONIC */
	uint32_t add_ns;
	uint32_t nlinks;
	uint32_t links[2 * VFAB_MAX_PORTS];
	char target[128];
};

/* Last values written to a port's counter files; see vfabd_counters.c. */
struct vfabd_port_cache;
/* Per-node netlink watchers of address changes; see vfabd_addrwatch.c. */
struct vfabd_addrwatch;

struct vfabd {
	struct vfab_region *r;
	const char *fabric;
	int listen_fd;
	int signal_fd;
	int timer_fd;
	struct vfabd_conn *conns;
	size_t nconns, cap;
	bool stop;
	unsigned ticks;

	struct vfabd_event *events; /* the fault log, oldest first */
	size_t nevents, events_cap;
	uint64_t events_dropped;

	struct vfabd_pause pauses[VFAB_MAX_NODES];
	struct vfabd_spike *spikes;
	size_t nspikes;
	uint32_t spike_add_ns[VFAB_MAX_LINKS]; /* active spikes' share of latency_ns */
	uint64_t link_downed[VFAB_MAX_HCAS][VFAB_MAX_PORTS];
	struct vfabd_port_cache *cache; /* VFAB_MAX_HCAS * VFAB_MAX_PORTS entries */
	struct vfabd_addrwatch *aw;	/* NULL: address changes are not followed */
};

void vfabd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Runs until SIGTERM/SIGINT or SHUTDOWN. 0, or -errno on a fatal error. */
int vfabd_serve(struct vfabd *d);
void vfabd_close_all(struct vfabd *d);
/* Frees what the runtime control keeps (log, pauses, spikes), resuming and restoring first. */
void vfabd_control_release(struct vfabd *d);

/* Replies (vfabd_server.c). Queued: a reply never blocks the loop. */
void vfabd_reply(struct vfabd_conn *c, const char *text);
void vfabd_replyf(struct vfabd_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "ERR <ENAME> message": the errno name lets clients tell usage from failure. */
void vfabd_reply_err(struct vfabd_conn *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "OK <n>\n" and then n bytes of body; takes ownership of body (malloc'd). */
void vfabd_reply_body(struct vfabd_conn *c, char *body, size_t n);

/* Frees the objects of every owner pid that no longer runs. Returns objects freed. */
int vfabd_reap_dead(struct vfab_region *r);

/* vfabd_target.c: names in requests. */
/* "node/hca[/port]" -> HCA index and port (0: every port). -ENOENT unknown, -EINVAL syntax. */
int vfabd_parse_port(const struct vfab_region *r, const char *s, uint32_t *hca, uint32_t *port);
/*
 * A link name (links[].name) or "node/hca[/port]" (both directions of each
 * port). Fills up to max link indices; *port_hca and *port_no name the port when
 * the target was a port (port_hca = -1 for a named link). Count or -errno.
 */
int vfabd_parse_links(const struct vfab_region *r, const char *s, uint32_t *links, size_t max,
		      int32_t *port_hca, uint32_t *port_no);
/* The value of a key=value parameter: a finite number in [lo, hi], else -EINVAL. */
int vfabd_parse_number(const char *value, double lo, double hi, double *out);
/* Node index by id; -ENOENT. */
int vfabd_find_node(const struct vfab_region *r, const char *id);

/* vfabd_faultlog.c */
void vfabd_event_add(struct vfabd *d, const char *kind, const char *target, const char *params,
		     const char *detail);

/* vfabd_link.c: LINK and SHAPE requests. */
void vfabd_req_link(struct vfabd *d, struct vfabd_conn *c, char *args);
void vfabd_req_shape(struct vfabd *d, struct vfabd_conn *c, char *args);
/* Sets a link's latency from its base value (spikes are added on top). */
void vfabd_link_set_latency(struct vfabd *d, uint32_t link, uint32_t base_ns);

/* vfabd_events.c: async events to the contexts that said HELLO with hca=/async=. */
int vfabd_hello_parse_opts(const struct vfab_region *r, struct vfabd_conn *c, char *opts);
/* Writes (element, event type) to every registered context of hca; returns how many got it. */
int vfabd_raise_port_event(struct vfabd *d, uint32_t hca, uint32_t port, uint32_t event_type);

/* vfabd_faults.c: FAULT kill|pause|resume|spike, and their timers. */
void vfabd_req_fault(struct vfabd *d, struct vfabd_conn *c, char *args);
/* Ends pauses and spikes whose time came; returns ms until the next one (-1: none). */
int vfabd_faults_due(struct vfabd *d);

/* vfabd_nodeproc.c: the processes of a node (its network namespace). */
/*
 * The node's processes except its holder and sshd, into *out (malloc'd).
 * Count or -errno (-ESRCH: the node has no namespace, e.g. not built).
 */
int vfabd_node_procs(const struct vfabd *d, uint32_t node, struct vfabd_proc **out);
/* Is pid still the process recorded (same start time)? */
bool vfabd_proc_same(const struct vfabd_proc *p);

/* vfabd_counters.c: live sysfs counters/ and hw_counters/ from the region (netns/sysfs_view.h). */
int vfabd_counters_init(struct vfabd *d);
void vfabd_counters_tick(struct vfabd *d);
void vfabd_counters_free(struct vfabd *d);

/* vfabd_report.c: the REPORT document (docs/REPORT_SCHEMA.md). */
void vfabd_req_report(struct vfabd *d, struct vfabd_conn *c);

/*
 * vfabd_addrwatch.c: addresses added to or removed from a node's netdev at
 * run time (`ip addr` inside the node) change the GID table of the HCA ports
 * bound to it. NETLINK_ROUTE sockets per node (vfabd_rtnl.c), opened inside
 * the node's network namespace once it exists; all of them behind one epoll
 * fd that the event loop polls.
 */
int vfabd_addrwatch_init(struct vfabd *d);
/* The fd to poll for POLLIN (-1 when not watching). */
int vfabd_addrwatch_fd(const struct vfabd *d);
/* Reads the notifications that arrived and updates the GID tables they touch. */
void vfabd_addrwatch_run(struct vfabd *d);
/* Every tick: attaches to nodes whose namespace appeared, syncs ports not yet synced. */
void vfabd_addrwatch_tick(struct vfabd *d);
void vfabd_addrwatch_free(struct vfabd *d);

/*
 * vfabd_gidslots.c: the kernel's GID index allocation (pure). From the
 * port's current table `cur` (region layout: entries carry their index) and
 * the netdev's current addresses `want` (new ones are added in this order),
 * fills out[i] = the entry of index i (empty: type VFAB_GID_EMPTY, all zero).
 * Returns the table length (highest populated index + 1); *dropped counts
 * addresses that found no free index below VFAB_PORT_GIDS.
 */
struct vfab_gid_addr;
int vfabd_gid_slots(const uint8_t mac[6], const struct vfab_gid *cur, size_t ncur,
		    const struct vfab_gid_addr *want, size_t nwant,
		    struct vfab_gid out[VFAB_PORT_GIDS], size_t *dropped);

/*
 * vfabd_gidpublish.c: puts a new table (as vfabd_gid_slots made it, len
 * entries) into the region, rewrites the changed gids/N, gid_attrs/types/N
 * and gid_attrs/ndevs/N view files and raises IBV_EVENT_GID_CHANGE on every
 * registered context of the HCA. Returns the number of entries that changed
 * (0: nothing was done), or -errno when a view file could not be replaced
 * (the region is updated all the same).
 */
int vfabd_gid_publish(struct vfabd *d, uint32_t hca, uint32_t port, const struct vfab_gid *table,
		      uint32_t len);

#endif /* VFAB_VFABD_H */
