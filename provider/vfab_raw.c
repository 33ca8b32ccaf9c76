/* SPDX-License-Identifier: MIT */
/*
 * Raw packet QPs (see vfab_raw.h). The wire is the port's netdev, reached
 * through an AF_PACKET socket in the caller's (the node's) network
 * namespace: a send is one frame written to it, as the HCA puts a WQE's
 * frame on the port. Once a QP has flows, its socket takes the frames the
 * netdev receives and those the node itself sends to its own or a
 * multicast address (the NIC's loopback); a thread per QP, or a thread
 * polling the CQ they complete into, reads them and delivers each that a
 * flow takes into the next posted receive (of the QP, or of the WQ an RSS
 * QP's hash picks), as the UD responder delivers a datagram. A frame
 * nobody steers is the node's stack's alone.
 */
#include "provider/vfab_raw.h"
#include "provider/vfab_counters.h"
#include "provider/vfab_flow.h"
#include "provider/vfab_resp.h"
#include "provider/vfab_resp_check.h"
#include "provider/vfab_xfer.h"
#include "base/fsutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* A frame as large as a netdev may take (GSO-sized on a veth) plus a VLAN tag. */
#define FRAME_MAX (65536 + 4)
#define VLAN_TAG_BYTES 4
/* Frames one system call takes from the socket (each buffer FRAME_MAX bytes). */
#define RX_BATCH 8
#define RCVBUF_BYTES (16 << 20)

struct vfab_flow {
	struct ibv_flow ib;
	struct vfab_qp *qp;
	struct vfab_flow_rule rule;
	struct vfab_flow *next;
};

struct vfab_raw {
	struct vfab_qp *qp;
	int sock;
	int wake; /* eventfd: the receiver stops */
	int ifindex;
	uint8_t mac[ETH_ALEN];
	pthread_t rx_thread;
	bool rx_running;
	pthread_mutex_t lock; /* the flows, the binding, the receiver */
	struct vfab_flow *flows;
	uint8_t *tx; /* a send's frame, gathered (sq.lock) */
	/* Whoever delivers (the receiver thread or a poller, vfab_raw_poll). */
	pthread_mutex_t rx_lock;
	uint8_t *rx; /* RX_BATCH frames' buffers, under rx_lock */
	struct vfab_raw *next_feed;
};

/* An RSS QP's spread: its table and the hash that picks a WQ of it. */
struct vfab_rss {
	struct vfab_rwq_ind *tbl;
	uint8_t key[VFAB_RSS_KEY_BYTES];
	uint64_t fields;
};

/* This process's raw packet QPs that have flows, for their CQs' pollers. */
static pthread_mutex_t feeds_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vfab_raw *feeds;

int vfab_raw_rss_init(struct vfab_qp *qp, const struct ibv_qp_init_attr_ex *a)
{
	struct vfab_rss *rss;
	int rc = vfab_rss_check(&a->rx_hash_conf);

	if (rc)
		return rc;
	rss = calloc(1, sizeof(*rss));
	if (!rss)
		return ENOMEM;
	rss->tbl = (struct vfab_rwq_ind *)a->rwq_ind_tbl;
	memcpy(rss->key, a->rx_hash_conf.rx_hash_key, VFAB_RSS_KEY_BYTES);
	rss->fields = a->rx_hash_conf.rx_hash_fields_mask;
	atomic_fetch_add(&rss->tbl->users, 1);
	qp->rss = rss;
	return 0;
}

int vfab_raw_open(struct vfab_qp *qp)
{
	struct vfab_raw *raw = calloc(1, sizeof(*raw));

	if (!raw)
		return ENOMEM;
	raw->qp = qp;
	raw->tx = malloc(FRAME_MAX);
	raw->rx = malloc((size_t)RX_BATCH * FRAME_MAX);
	/* Protocol 0: nothing is received until a flow asks for frames. */
	raw->sock = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	raw->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!raw->tx || !raw->rx || raw->sock < 0 || raw->wake < 0) {
		int rc = raw->sock < 0 && (errno == EPERM || errno == EACCES) ? EPERM : errno;

		if (!raw->tx || !raw->rx)
			rc = ENOMEM;
		if (raw->sock >= 0)
			close(raw->sock);
		if (raw->wake >= 0)
			close(raw->wake);
		free(raw->tx);
		free(raw->rx);
		free(raw);
		return rc;
	}
	int one = 1, rcvbuf = RCVBUF_BYTES;

	/* VLAN tags the netdev strips come back as auxiliary data (put back in rx). */
	setsockopt(raw->sock, SOL_PACKET, PACKET_AUXDATA, &one, sizeof(one));
	/*
	 * Bursts wait in the socket as in a NIC's receive buffer; beyond it
	 * frames drop. Past rmem_max where allowed (CAP_NET_ADMIN).
	 */
	if (setsockopt(raw->sock, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)))
		setsockopt(raw->sock, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	pthread_mutex_init(&raw->lock, NULL);
	pthread_mutex_init(&raw->rx_lock, NULL);
	qp->raw = raw;
	return 0;
}

/* Binds the socket to the netdev for this protocol (0: receive nothing). Under raw->lock. */
static int bind_proto(struct vfab_raw *raw, uint16_t proto)
{
	struct sockaddr_ll a = {
	    .sll_family = AF_PACKET, .sll_protocol = htons(proto), .sll_ifindex = raw->ifindex};

	return bind(raw->sock, (struct sockaddr *)&a, sizeof(a)) ? errno : 0;
}

int vfab_raw_bind(struct vfab_qp *qp, uint8_t port)
{
	struct vfab_raw *raw = qp->raw;
	struct ibv_context *ib = &qp->ctx->vctx.context;
	char path[IBV_SYSFS_PATH_MAX + 64], name[IF_NAMESIZE + 1];
	struct ifreq ifr;
	ssize_t n;
	int rc;

	/* The port's netdev as the node's sysfs view names it (written by vfab up). */
	snprintf(path, sizeof(path), "%s/ports/%u/gid_attrs/ndevs/0", ib->device->ibdev_path, port);
	n = vfab_read_file(path, name, sizeof(name));
	if (n <= 0)
		return ENODEV;
	name[strcspn(name, "\n")] = '\0';
	if (strlen(name) >= sizeof(ifr.ifr_name))
		return ENODEV;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, name, strlen(name));
	if (ioctl(raw->sock, SIOCGIFINDEX, &ifr))
		return ENODEV;
	pthread_mutex_lock(&raw->lock);
	raw->ifindex = ifr.ifr_ifindex;
	rc = ioctl(raw->sock, SIOCGIFHWADDR, &ifr) ? errno : 0;
	if (!rc) {
		memcpy(raw->mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
		rc = bind_proto(raw, raw->flows ? ETH_P_ALL : 0);
	}
	pthread_mutex_unlock(&raw->lock);
	return rc;
}

bool vfab_raw_busy(struct vfab_qp *qp)
{
	bool busy;

	pthread_mutex_lock(&qp->raw->lock);
	busy = qp->raw->flows != NULL;
	pthread_mutex_unlock(&qp->raw->lock);
	return busy;
}

void vfab_raw_close(struct vfab_qp *qp)
{
	struct vfab_raw *raw = qp->raw;
	uint64_t one = 1;

	if (!raw)
		return;
	if (raw->rx_running) {
		if (write(raw->wake, &one, sizeof(one)) < 0)
			vfab_dbg("raw QP %u: waking its receiver: %s", qp->qpn, strerror(errno));
		pthread_join(raw->rx_thread, NULL);
	}
	close(raw->sock);
	close(raw->wake);
	pthread_mutex_destroy(&raw->lock);
	pthread_mutex_destroy(&raw->rx_lock);
	free(raw->tx);
	free(raw->rx);
	free(raw);
	qp->raw = NULL;
	if (qp->rss) {
		atomic_fetch_sub(&qp->rss->tbl->users, 1);
		free(qp->rss);
		qp->rss = NULL;
	}
}

int vfab_raw_check_post(const struct vfab_swqe *w)
{
	/* A frame is a SEND; TSO is not offered (tso_caps are 0). */
	if (w->opcode != IBV_WR_SEND)
		return EINVAL;
	/* libmlx5 takes the Ethernet header from the first segments: one at least. */
	if (!w->is_inline && !w->num_sge)
		return EINVAL;
	return 0;
}

enum ibv_wc_status vfab_raw_send(struct vfab_qp *qp, const struct vfab_swqe *w,
				 const struct iovec *iov, unsigned int n, uint64_t len)
{
	struct vfab_raw *raw = qp->raw;
	struct sockaddr_ll to = {.sll_family = AF_PACKET};
	uint64_t at = 0;

	if (len < ETH_HLEN || len > FRAME_MAX)
		return IBV_WC_LOC_LEN_ERR;
	for (unsigned int i = 0; i < n; i++) {
		memcpy(raw->tx + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	if (w->flags & IBV_SEND_IP_CSUM)
		vfab_frame_fill_csum(raw->tx, len);
	to.sll_ifindex = raw->ifindex;
	memcpy(&to.sll_protocol, raw->tx + 12, 2);
	/*
	 * Once on the wire a frame is the wire's: one the netdev refuses (too
	 * long for its MTU, a full queue) is lost there, and the WR succeeds.
	 */
	if (sendto(raw->sock, raw->tx, len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		vfab_dbg("raw QP %u: frame of %" PRIu64 " bytes dropped: %s", qp->qpn, len,
			 strerror(errno));
	return IBV_WC_SUCCESS;
}

/* Which of the QP's flows take the frame: a drop rule wins over the others. */
static bool steered(struct vfab_raw *raw, const struct vfab_frame *f, bool outgoing)
{
	bool take = false, drop = false;

	pthread_mutex_lock(&raw->lock);
	for (struct vfab_flow *fl = raw->flows; fl; fl = fl->next) {
		/* What the node sends to others is on its wire only: sniffers see it. */
		if (outgoing && fl->rule.attr_type != IBV_FLOW_ATTR_SNIFFER)
			continue;
		if (vfab_flow_match(&fl->rule, f, raw->mac)) {
			take = true;
			drop |= fl->rule.drop;
		}
	}
	pthread_mutex_unlock(&raw->lock);
	return take && !drop;
}

/* The frame into the QP's next receive, as the UD responder delivers a datagram. */
static void deliver(struct vfab_qp *qp, const struct vfab_frame *f)
{
	/* What the receive CQE is built from: a SEND without immediate or flags. */
	static const struct vfab_swqe recv_as = {.opcode = IBV_WR_SEND};
	struct vfab_context *ctx = qp->ctx;
	struct vfab_qp_slot *d = qp->s, kq;
	struct iovec src = {.iov_base = (void *)f->buf, .iov_len = f->len}, dst[VFAB_MAX_SRQ_SGE];
	struct vfab_mr_slot *pins[VFAB_MAX_SRQ_SGE];
	struct vfab_resp_rwqe rw;
	enum ibv_wc_status st;
	struct vfab_peer p;
	struct vfab_msg m;
	unsigned int n;
	uint64_t cap;

	if (!vfab_kqp_copy(ctx->k, ctx->hca_idx, qp->qpn, &kq))
		return;
	if (qp->rss) {
		/* RSS: the WQ the hash picks, whose receives and CQ take the frame. */
		const struct vfab_rss *rss = qp->rss;
		struct vfab_wq *wq =
		    rss->tbl->wqs[vfab_rss_hash(rss->key, sizeof(rss->key), rss->fields, f) &
				  (rss->tbl->size - 1)];

		if (atomic_load(&wq->state) != IBV_WQS_RDY)
			return;
		kq.srq = wq->rq->slot;
		kq.recv_cq = (uint32_t)wq->cq->slot;
		kq.qpn = wq->ib.wq_num;
	}
	vfab_msg_build(&m, qp, &recv_as, &src, 1, f->len, d, &kq, ctx->hca_idx, d->port, -1);
	m.src_qpn = 0;
	if (vfab_lock(&d->lock))
		return;
	/* An RSS QP has no state of its own: its WQs' say whether frames land. */
	if (!qp->rss && !vfab_resp_receiving(atomic_load(&d->qp_state)))
		goto out;
	if (vfab_resp_check_rq(&m, &rw) != VFAB_RESP_PASS) {
		/* No receive posted: the NIC drops the frame and counts it. */
		vfab_count_event(&vfab_resp_dst_cnt(&m)->out_of_buffer, 1);
		goto out;
	}
	st = vfab_resp_scatter_list(&m, &rw, dst, pins, &n, &cap);
	if (st == IBV_WC_SUCCESS && cap < f->len) {
		vfab_resp_unpin_list(pins, n);
		st = IBV_WC_LOC_LEN_ERR;
	}
	if (st != IBV_WC_SUCCESS) {
		vfab_resp_push_recv(&m, &rw, st, IBV_WC_RECV, 0, 0);
		goto out;
	}
	p = vfab_resp_peer_of(&m);
	if (!vfab_xfer_write(&p, &src, 1, dst, n))
		vfab_resp_push_recv(&m, &rw, IBV_WC_SUCCESS, IBV_WC_RECV, (uint32_t)f->len,
				    vfab_frame_csum_ok(f) ? IBV_WC_IP_CSUM_OK : 0);
	vfab_resp_unpin_list(pins, n);
out:
	vfab_unlock(&d->lock);
}

/* Where a received frame's buffer i starts: a VLAN tag's room in front of the frame. */
static uint8_t *rx_buf(const struct vfab_raw *raw, unsigned int i)
{
	return raw->rx + (size_t)i * FRAME_MAX;
}

/*
 * A frame read into buf + VLAN_TAG_BYTES (n bytes, h its message) made what
 * it was on the wire; returns where it starts (*len its length), NULL when
 * it is not one of this wire's frames.
 */
static uint8_t *wire_frame(const struct vfab_raw *raw, uint8_t *buf, size_t n,
			   const struct msghdr *h, bool *outgoing, size_t *len)
{
	const struct sockaddr_ll *from = h->msg_name;
	struct tpacket_auxdata aux = {0};
	uint8_t *frame = buf + VLAN_TAG_BYTES;

	if (n > FRAME_MAX - VLAN_TAG_BYTES || n < ETH_HLEN)
		return NULL; /* longer than any frame: not a frame of this wire */
	/*
	 * The node's own frames loop back to its receivers when they go to its
	 * own or a multicast address; to others they only pass the port.
	 */
	*outgoing = from->sll_pkttype == PACKET_OUTGOING && !(frame[0] & 1) &&
		    memcmp(frame, raw->mac, ETH_ALEN);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR((struct msghdr *)h, c))
		if (c->cmsg_level == SOL_PACKET && c->cmsg_type == PACKET_AUXDATA)
			memcpy(&aux, CMSG_DATA(c), sizeof(aux));
	if (aux.tp_status & TP_STATUS_VLAN_VALID) {
		/* The tag the netdev took off goes back where it was on the wire. */
		uint16_t tpid = htons((aux.tp_status & TP_STATUS_VLAN_TPID_VALID) ? aux.tp_vlan_tpid
										  : ETH_P_8021Q),
			 tci = htons(aux.tp_vlan_tci);

		memmove(buf, frame, 2 * ETH_ALEN);
		memcpy(buf + 2 * ETH_ALEN, &tpid, 2);
		memcpy(buf + 2 * ETH_ALEN + 2, &tci, 2);
		frame = buf;
		n += VLAN_TAG_BYTES;
	}
	/*
	 * The node's stack leaves checksums to the NIC (a veth passes them on
	 * unfinished): on the wire they are complete.
	 */
	if (aux.tp_status & TP_STATUS_CSUMNOTREADY)
		vfab_frame_fill_csum(frame, n);
	*len = n;
	return frame;
}

/* Delivers up to budget waiting frames (rx_lock held); how many were read. */
static unsigned int drain(struct vfab_raw *raw, unsigned int budget)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(struct tpacket_auxdata))];
	} ctl[RX_BATCH];
	struct sockaddr_ll from[RX_BATCH];
	struct iovec iov[RX_BATCH];
	struct mmsghdr mm[RX_BATCH];
	unsigned int got = 0;

	while (got < budget) {
		unsigned int want = budget - got < RX_BATCH ? budget - got : RX_BATCH;
		int n;

		for (unsigned int i = 0; i < want; i++) {
			iov[i].iov_base = rx_buf(raw, i) + VLAN_TAG_BYTES;
			iov[i].iov_len = FRAME_MAX - VLAN_TAG_BYTES;
			memset(&mm[i], 0, sizeof(mm[i]));
			mm[i].msg_hdr.msg_name = &from[i];
			mm[i].msg_hdr.msg_namelen = sizeof(from[i]);
			mm[i].msg_hdr.msg_iov = &iov[i];
			mm[i].msg_hdr.msg_iovlen = 1;
			mm[i].msg_hdr.msg_control = &ctl[i];
			mm[i].msg_hdr.msg_controllen = sizeof(ctl[i]);
		}
		n = recvmmsg(raw->sock, mm, want, MSG_DONTWAIT | MSG_TRUNC, NULL);
		if (n <= 0)
			break;
		for (int i = 0; i < n; i++) {
			struct vfab_frame f;
			bool outgoing;
			size_t len;
			uint8_t *frame = wire_frame(raw, rx_buf(raw, (unsigned int)i),
						    mm[i].msg_len, &mm[i].msg_hdr, &outgoing, &len);

			if (frame && vfab_frame_parse(frame, len, &f) && steered(raw, &f, outgoing))
				deliver(raw->qp, &f);
		}
		got += (unsigned int)n;
		if ((unsigned int)n < want)
			break;
	}
	return got;
}

static void *rx_main(void *arg)
{
	struct vfab_raw *raw = arg;
	struct pollfd pf[2] = {{.fd = raw->sock, .events = POLLIN},
			       {.fd = raw->wake, .events = POLLIN}};

	for (;;) {
		unsigned int got;

		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[1].revents)
			break;
		pthread_mutex_lock(&raw->rx_lock);
		got = drain(raw, UINT32_MAX);
		pthread_mutex_unlock(&raw->rx_lock);
		/* A socket in error (its netdev gone) reads nothing: no spinning on it. */
		if (!got && (pf[0].revents & (POLLERR | POLLHUP | POLLNVAL)))
			poll(&pf[1], 1, 100);
	}
	return NULL;
}

/* A poll takes at most this many frames per QP: a completion queue's worth of work. */
#define POLL_BUDGET 64

/* Whether the QP's frames complete into cq: its receive CQ, or a CQ of its WQs. */
static bool feeds_cq(const struct vfab_qp *qp, const struct vfab_cq *cq)
{
	if (!qp->rss)
		return qp->rcq == cq;
	for (uint32_t i = 0; i < qp->rss->tbl->size; i++)
		if (qp->rss->tbl->wqs[i]->cq == cq)
			return true;
	return false;
}

/* The CQs the QP's frames complete into count it as a feed (by +1 or -1). */
static void count_feed(const struct vfab_qp *qp, int by)
{
	if (!qp->rss) {
		atomic_fetch_add(&qp->rcq->raw_feeds, by);
		return;
	}
	for (uint32_t i = 0; i < qp->rss->tbl->size; i++)
		atomic_fetch_add(&qp->rss->tbl->wqs[i]->cq->raw_feeds, by);
}

void vfab_raw_poll(struct vfab_cq *cq)
{
	pthread_mutex_lock(&feeds_lock);
	for (struct vfab_raw *raw = feeds; raw; raw = raw->next_feed) {
		if (!feeds_cq(raw->qp, cq) || pthread_mutex_trylock(&raw->rx_lock))
			continue;
		drain(raw, POLL_BUDGET);
		pthread_mutex_unlock(&raw->rx_lock);
	}
	pthread_mutex_unlock(&feeds_lock);
}

/* The QP starts (on) or stops feeding its receive CQ's pollers. */
static void feed(struct vfab_raw *raw, bool on)
{
	struct vfab_raw **pp;

	pthread_mutex_lock(&feeds_lock);
	if (on) {
		raw->next_feed = feeds;
		feeds = raw;
		count_feed(raw->qp, 1);
	} else {
		for (pp = &feeds; *pp && *pp != raw; pp = &(*pp)->next_feed)
			;
		if (*pp) {
			*pp = raw->next_feed;
			count_feed(raw->qp, -1);
		}
	}
	pthread_mutex_unlock(&feeds_lock);
}

struct ibv_flow *vfab_create_flow(struct ibv_qp *ibqp, struct ibv_flow_attr *attr)
{
	struct vfab_qp *qp = to_vqp(ibqp);
	struct vfab_raw *raw = qp->raw;
	struct vfab_flow *fl;
	bool first;
	int rc;

	/* A RoCE port steers Ethernet to raw packet QPs only (mlx5: UD is IB's). */
	if (ibqp->qp_type != IBV_QPT_RAW_PACKET) {
		errno = ibqp->qp_type == IBV_QPT_UD ? EOPNOTSUPP : EINVAL;
		return NULL;
	}
	if (!attr || attr->port < 1 || attr->port > qp->ctx->hca->nports) {
		errno = EINVAL;
		return NULL;
	}
	fl = calloc(1, sizeof(*fl));
	if (!fl) {
		errno = ENOMEM;
		return NULL;
	}
	rc = vfab_flow_compile(attr, &fl->rule);
	/* A QP that has no port yet takes the flow's. */
	if (!rc && !raw->ifindex)
		rc = vfab_raw_bind(qp, attr->port);
	if (rc) {
		free(fl);
		errno = rc;
		return NULL;
	}
	fl->ib.context = ibqp->context;
	fl->qp = qp;
	pthread_mutex_lock(&raw->lock);
	if (!raw->rx_running) {
		rc = pthread_create(&raw->rx_thread, NULL, rx_main, raw);
		raw->rx_running = !rc;
	}
	first = !rc && !raw->flows;
	if (first)
		rc = bind_proto(raw, ETH_P_ALL);
	if (!rc) {
		fl->next = raw->flows;
		raw->flows = fl;
	}
	pthread_mutex_unlock(&raw->lock);
	if (rc) {
		free(fl);
		errno = rc;
		return NULL;
	}
	/* Outside raw->lock: a poller takes feeds_lock before it. */
	if (first)
		feed(raw, true);
	return &fl->ib;
}

int vfab_destroy_flow(struct ibv_flow *flow)
{
	struct vfab_flow *fl = (struct vfab_flow *)flow, **pp;
	struct vfab_raw *raw = fl->qp->raw;
	bool last;

	pthread_mutex_lock(&raw->lock);
	for (pp = &raw->flows; *pp && *pp != fl; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = fl->next;
	/* No flow left: the socket stops taking frames (the receiver idles). */
	last = !raw->flows;
	if (last)
		bind_proto(raw, 0);
	pthread_mutex_unlock(&raw->lock);
	if (last)
		feed(raw, false);
	free(fl);
	return 0;
}
