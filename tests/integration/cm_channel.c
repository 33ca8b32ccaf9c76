/* SPDX-License-Identifier: MIT */
/*
 * cm_channel ADDR: RDMA CM event channels as libfabric and rping use them,
 * inside a node (tests/integration/node_checks.sh): the channel fd with
 * O_NONBLOCK (EAGAIN when empty), in epoll (readable exactly when an event
 * waits), rdma_migrate_id to another channel (later events arrive there),
 * rdma_destroy_id with an event outstanding (returns, the event is gone),
 * and rdma_connect's private data limit (56 bytes over RoCE). ADDR: an
 * address the node reaches. One "ok NAME" / "FAIL NAME: why" line per check.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>

static int fails;

static void check(int ok, const char *name, const char *why)
{
	if (ok)
		printf("ok %s\n", name);
	else {
		printf("FAIL %s: %s (errno %d)\n", name, why, errno);
		fails++;
	}
}

/* Wait for the channel's fd to turn readable in epoll, then take the event. */
static int next_event(int ep, struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	struct epoll_event e;

	if (epoll_wait(ep, &e, 1, 5000) != 1)
		return -1;
	return rdma_get_cm_event(ch, ev);
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ch, *ch2;
	struct rdma_cm_event *ev = NULL;
	struct rdma_cm_id *id;
	struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(7199)};
	struct epoll_event e = {.events = EPOLLIN};
	struct rdma_conn_param cp;
	char pd[57] = {0};
	int ep, ep2;

	if (argc != 2 || inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1) {
		fprintf(stderr, "usage: cm_channel IPV4_ADDR\n");
		return 2;
	}
	ch = rdma_create_event_channel();
	ch2 = rdma_create_event_channel();
	check(ch && ch2, "create_event_channel", "rdma_create_event_channel failed");
	if (!ch || !ch2)
		return 1;
	check(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "create_id",
	      "rdma_create_id failed");
	fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
	check(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN, "nonblock_empty",
	      "an empty O_NONBLOCK channel did not say EAGAIN");
	ep = epoll_create1(0);
	ep2 = epoll_create1(0);
	e.data.fd = ch->fd;
	check(epoll_ctl(ep, EPOLL_CTL_ADD, ch->fd, &e) == 0, "epoll_add", "epoll_ctl failed");
	e.data.fd = ch2->fd;
	epoll_ctl(ep2, EPOLL_CTL_ADD, ch2->fd, &e);
	check(epoll_wait(ep, &e, 1, 0) == 0, "epoll_idle",
	      "epoll reports an empty channel readable");

	check(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000) == 0, "resolve_addr",
	      "rdma_resolve_addr failed");
	check(next_event(ep, ch, &ev) == 0 && ev->event == RDMA_CM_EVENT_ADDR_RESOLVED,
	      "epoll_addr_resolved", "no ADDR_RESOLVED through epoll");
	if (ev)
		rdma_ack_cm_event(ev);
	check(epoll_wait(ep, &e, 1, 0) == 0, "epoll_drained", "channel readable after its event");

	check(rdma_migrate_id(id, ch2) == 0, "migrate_id", "rdma_migrate_id failed");
	check(rdma_resolve_route(id, 2000) == 0, "resolve_route", "rdma_resolve_route failed");
	ev = NULL;
	check(next_event(ep2, ch2, &ev) == 0 && ev->event == RDMA_CM_EVENT_ROUTE_RESOLVED,
	      "migrated_event", "ROUTE_RESOLVED did not arrive on the new channel");
	if (ev)
		rdma_ack_cm_event(ev);
	check(epoll_wait(ep, &e, 1, 0) == 0, "old_channel_quiet", "the old channel got an event");

	memset(&cp, 0, sizeof(cp));
	cp.private_data = pd;
	cp.private_data_len = sizeof(pd);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	check(rdma_connect(id, &cp) == -1 && errno == EINVAL, "connect_pd_limit",
	      "57 bytes of private data on connect were accepted");

	/* An event nobody reads when the ID goes. */
	check(rdma_resolve_route(id, 2000) == 0, "resolve_route_again",
	      "rdma_resolve_route failed");
	check(epoll_wait(ep2, &e, 1, 5000) == 1, "event_outstanding",
	      "no event to leave outstanding");
	check(rdma_destroy_id(id) == 0, "destroy_with_event", "rdma_destroy_id failed");
	fcntl(ch2->fd, F_SETFL, fcntl(ch2->fd, F_GETFL) | O_NONBLOCK);
	check(rdma_get_cm_event(ch2, &ev) == -1 && errno == EAGAIN, "event_dropped",
	      "the destroyed ID's event was still delivered");
	rdma_destroy_event_channel(ch2);
	rdma_destroy_event_channel(ch);
	return fails ? 1 : 0;
}
