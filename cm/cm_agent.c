/* SPDX-License-Identifier: MIT */
#include "cm/cm_agent.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <time.h>

#include "base/clock.h"
#include "base/paths.h"
#include "base/proc.h"
#include "cm/cm_dir.h"
#include "cm/cm_local.h"
#include "cm/cm_log.h"

#define MAX_DEVS 16
#define MAX_PORTS 2
#define TICK_NS 1000000000ull /* the longest the thread sleeps (timers arm it sooner) */
#define BATCH 16

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int start_err;
static struct vfab_cm_hooks hooks;
static struct ibv_device **devlist;
static struct ibv_context *ctxs[MAX_DEVS];
static int nctx;
static struct vfab_cm_port ports[MAX_DEVS][MAX_PORTS];
static char rundir[512], cmdir[600];
static pid_t self_pid;
static unsigned long long self_start;
static int wake_fd = -1;	       /* tells the thread that a port opened or a timer is due */
static uint64_t next_due = UINT64_MAX; /* when the timers run next */

void vfab_cm_lock(void)
{
	pthread_mutex_lock(&lock);
}

void vfab_cm_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

struct vfab_cm_port *vfab_cm_agent_port(int dev, uint8_t port_num)
{
	struct vfab_cm_port *p;

	if (dev < 0 || dev >= nctx || port_num < 1 || port_num > MAX_PORTS)
		return NULL;
	p = &ports[dev][port_num - 1];
	if (!p->qp) {
		int ret = vfab_cm_port_open(p, ctxs[dev], port_num);

		if (ret) {
			vfab_cm_dbg("cannot open the CM QP of port %u: %d", port_num, ret);
			return NULL;
		}
		eventfd_write(wake_fd, 1); /* poll its fd from now on */
	}
	return p;
}

struct ibv_context *const *vfab_cm_agent_ctxs(int *n)
{
	*n = nctx;
	return ctxs;
}

uint64_t vfab_cm_agent_guid(int dev)
{
	return dev >= 0 && dev < nctx ? (uint64_t)ibv_get_device_guid(ctxs[dev]->device) : 0;
}

const char *vfab_cm_agent_dir(void)
{
	return cmdir;
}

const char *vfab_cm_agent_rundir(void)
{
	return rundir;
}

pid_t vfab_cm_agent_pid(void)
{
	return self_pid;
}

unsigned long long vfab_cm_agent_start_time(void)
{
	return self_start;
}

void vfab_cm_agent_arm(uint64_t ns)
{
	if (ns >= next_due)
		return;
	next_due = ns;
	eventfd_write(wake_fd, 1);
}

/* A context's async event: GID tables and port states are what addresses map to. */
static void on_async(struct ibv_context *ctx)
{
	struct ibv_async_event ev;

	while (ibv_get_async_event(ctx, &ev) == 0) {
		enum ibv_event_type t = ev.event_type;

		ibv_ack_async_event(&ev);
		if (t == IBV_EVENT_GID_CHANGE || t == IBV_EVENT_PORT_ACTIVE ||
		    t == IBV_EVENT_PORT_ERR) {
			vfab_cm_dbg("async event %d: the node's addresses are read again", (int)t);
			vfab_cm_local_invalidate();
			if (hooks.addrs_changed)
				hooks.addrs_changed();
		}
	}
}

static void drain_port(struct vfab_cm_port *p)
{
	struct vfab_cm_msg msgs[BATCH];
	unsigned drained = 0;
	int got;

	while ((got = vfab_cm_port_recv(p, msgs, BATCH)) > 0) {
		for (int k = 0; k < got; k++)
			hooks.recv(p, &msgs[k]);
		drained += (unsigned)got;
	}
	vfab_cm_port_burst(p, drained);
}

static void *agent_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd pfd[1 + MAX_DEVS + MAX_DEVS * MAX_PORTS];
		uint64_t now = vfab_mono_ns(), wait = TICK_NS;
		struct timespec ts;
		eventfd_t v;
		int n = 1;

		pfd[0] = (struct pollfd){wake_fd, POLLIN, 0};
		vfab_cm_lock();
		for (int d = 0; d < nctx; d++)
			pfd[n++] = (struct pollfd){ctxs[d]->async_fd, POLLIN, 0};
		for (int d = 0; d < nctx; d++)
			for (int i = 0; i < MAX_PORTS; i++)
				if (ports[d][i].qp)
					pfd[n++] = (struct pollfd){vfab_cm_port_fd(&ports[d][i]),
								   POLLIN, 0};
		if (next_due < now + wait)
			wait = next_due > now ? next_due - now : 0;
		vfab_cm_unlock();
		ts.tv_sec = (time_t)(wait / 1000000000ull);
		ts.tv_nsec = (long)(wait % 1000000000ull);
		ppoll(pfd, (nfds_t)n, &ts, NULL);
		if (pfd[0].revents)
			eventfd_read(wake_fd, &v);
		vfab_cm_lock();
		for (int d = 0; d < nctx; d++)
			if (pfd[1 + d].revents)
				on_async(ctxs[d]);
		for (int k = 1 + nctx; k < n; k++)
			for (int d = 0; d < nctx; d++)
				for (int i = 0; i < MAX_PORTS; i++)
					if (pfd[k].revents && ports[d][i].qp &&
					    vfab_cm_port_fd(&ports[d][i]) == pfd[k].fd)
						drain_port(&ports[d][i]);
		now = vfab_mono_ns();
		if (now >= next_due) {
			uint64_t due;

			/* What the timers arm while they run counts too. */
			next_due = UINT64_MAX;
			due = hooks.timers(now);
			if (due && due < next_due)
				next_due = due;
		}
		vfab_cm_unlock();
	}
	return NULL;
}

/*
 * The node's addresses and the CM QP of each port that has one, before the
 * first command: a listen or connect then does no set-up of its own (QP1
 * exists before anyone uses it on hardware too).
 */
static void open_ports(void)
{
	struct sockaddr_storage ss;
	static const int families[] = {AF_INET, AF_INET6};

	for (unsigned f = 0; f < sizeof(families) / sizeof(families[0]); f++)
		for (int i = 0; vfab_cm_local_addr(families[f], i, &ss) == 0; i++) {
			struct vfab_cm_local loc;

			if (vfab_cm_local_find((struct sockaddr *)&ss, &loc) == 0)
				vfab_cm_agent_port(loc.dev, loc.port);
		}
}

static void agent_init(void)
{
	pthread_t t;
	pthread_attr_t a;
	char state;
	int n = 0;

	wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wake_fd < 0) {
		start_err = -errno;
		return;
	}
	self_pid = vfab_proc_outer_pid();
	if (vfab_proc_self_stat(&state, &self_start))
		self_start = 0;
	devlist = ibv_get_device_list(&n);
	if (!devlist || n == 0) {
		start_err = -ENODEV;
		return;
	}
	for (int i = 0; i < n && nctx < MAX_DEVS; i++) {
		ctxs[nctx] = ibv_open_device(devlist[i]);
		if (!ctxs[nctx])
			continue;
		if (!rundir[0])
			vfab_cm_dir_rundir(ibv_get_device_name(devlist[i]), rundir, sizeof(rundir));
		/* Events are read when poll says so; a read must never block the agent. */
		if (ctxs[nctx]->async_fd >= 0)
			fcntl(ctxs[nctx]->async_fd, F_SETFL,
			      fcntl(ctxs[nctx]->async_fd, F_GETFL) | O_NONBLOCK);
		nctx++;
	}
	if (!nctx || !rundir[0] || vfab_cm_dir(cmdir, sizeof(cmdir), rundir)) {
		start_err = -ENODEV;
		return;
	}
	vfab_cm_local_set_devices(ctxs, nctx);
	open_ports();
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	start_err = pthread_create(&t, &a, agent_main, NULL) ? -EAGAIN : 0;
	pthread_attr_destroy(&a);
}

static const struct vfab_cm_hooks *start_hooks;

static void agent_init_once(void)
{
	hooks = *start_hooks;
	agent_init();
}

int vfab_cm_agent_start(const struct vfab_cm_hooks *h)
{
	start_hooks = h;
	pthread_once(&once, agent_init_once);
	return start_err;
}
