/* SPDX-License-Identifier: MIT */
/*
 * vfab capture: a pcap of what one HCA port sends and receives, as the wire
 * would carry it (fabric/capture.h says how the records come; each becomes
 * the RoCE frames of fabric/roce_pkt.h). Requests are split into packets
 * by the path MTU, with their PSNs; the answers the requester got (ACK,
 * READ responses, atomic ACK, RNR NAK, NAK) are put in as frames from the
 * responder.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/paths.h"
#include "cm/cm_path.h"
#include "fabric/capture.h"
#include "fabric/region.h"
#include "fabric/roce_pkt.h"
#include "fabric/topology.h"
#include "tools/capture_cm.h"
#include "tools/cli.h"

#define SNAPLEN_DEFAULT 65535u
#define RCV_BUF_BYTES (64 << 20)
#define FRAME_MAX (ROCE_MAX_HDR_LEN + 4096 + 8)

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vfab [--fabric NAME] capture NODE/HCA [--port N] -w FILE [--for SECONDS]\n"
		"                                   [--snaplen N]\n"
		"Writes a pcap (Ethernet, nanosecond time stamps) of what the HCA port sends\n"
		"and receives, as RoCE frames: RoCE v2 over IPv4/IPv6 (UDP 4791) or v1 (GRH,\n"
		"ethertype 0x8915) as the sender's GID, BTH with opcode, PSN and QPN, the\n"
		"extended headers, the payload and the ICRC; messages split into packets by\n"
		"the path MTU; ACKs, READ responses, atomic ACKs and NAKs as the requester\n"
		"got them. Stops after SECONDS, or on Ctrl-C. Needs root, as a sniffer does.\n"
		"  --port N       the HCA's port (default 1)\n"
		"  -w FILE        the pcap file to write\n"
		"  --for SECONDS  stop after this long (default: at SIGINT or SIGTERM)\n"
		"  --snaplen N    bytes kept of each frame (default %u); shorter frames lose\n"
		"                 their payload's end and ICRC\n"
		"RDMA CM messages appear as the CM MADs between QP1s they stand for. Not\n"
		"shown: the IP traffic of the netdev.\n"
		"Exit: 0 ok, 1 runtime failure, 2 usage error or unknown port.\n",
		SNAPLEN_DEFAULT);
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* The capture being written. */
struct cap_out {
	FILE *f;
	uint32_t snaplen;
	const struct vfab_region *t; /* the CLI's own topology: MACs, indices */
	uint64_t frames, records, mads, foreign, bad;
	uint32_t msn[1024]; /* responder message counts for AETH, by a hash of the QP */
};

static int pcap_header(FILE *f, uint32_t snaplen)
{
	/* pcap 2.4, nanosecond time stamps (magic 0xa1b23c4d), LINKTYPE_ETHERNET. */
	uint32_t h[6] = {0xa1b23c4du, 0x00040002u, 0, 0, snaplen, 1};

	return fwrite(h, sizeof(h), 1, f) == 1 ? 0 : -EIO;
}

static void put_frame(struct cap_out *o, uint64_t ts_ns, const uint8_t *frame, uint32_t len,
		      uint32_t known)
{
	uint32_t incl = known < len ? known : len, rec[4];

	if (incl > o->snaplen)
		incl = o->snaplen;
	rec[0] = (uint32_t)(ts_ns / 1000000000ull);
	rec[1] = (uint32_t)(ts_ns % 1000000000ull);
	rec[2] = incl;
	rec[3] = len;
	if (fwrite(rec, sizeof(rec), 1, o->f) == 1 && fwrite(frame, incl, 1, o->f) == 1)
		o->frames++;
}

/* Addresses of one direction: from (hca, port, gid) to (hca, port, gid). */
static void addr_of(const struct cap_out *o, const struct vfab_cap_rec *r, bool reverse,
		    struct roce_addr *a)
{
	const struct vfab_port *sp = &o->t->hcas[r->src_hca].ports[r->src_port - 1];
	const struct vfab_port *dp = &o->t->hcas[r->dst_hca].ports[r->dst_port - 1];

	memset(a, 0, sizeof(*a));
	memcpy(a->smac, reverse ? dp->mac : sp->mac, 6);
	memcpy(a->dmac, reverse ? sp->mac : dp->mac, 6);
	memcpy(a->sgid, reverse ? r->dgid : r->sgid, 16);
	memcpy(a->dgid, reverse ? r->sgid : r->dgid, 16);
	a->l3 = (enum roce_l3)r->l3;
	/* RoCE v2 spreads flows by source port: one per QP pair, as mlx5 does. */
	a->udp_sport = (uint16_t)(0xC000 | ((r->sqpn ^ r->dqpn) & 0x3fff));
}

/*
 * One frame: headers, then paylen bytes of which the first `known` are in
 * pay (the rest unknown: the frame is cut there in the file).
 */
static void frame(struct cap_out *o, uint64_t ts, const struct roce_addr *a,
		  const struct roce_bth *b, const struct roce_ext *x, const uint8_t *pay,
		  uint32_t paylen, uint32_t known)
{
	uint8_t buf[FRAME_MAX], data[4096];
	int len, hdr;

	if (paylen > sizeof(data))
		return;
	memset(data, 0, paylen);
	memcpy(data, pay, known < paylen ? known : paylen);
	hdr = roce_hdr_len(a->l3, b->opcode);
	len = roce_pkt_build(buf, sizeof(buf), a, b, x, data, paylen);
	if (len < 0 || hdr < 0)
		return;
	put_frame(o, ts, buf, (uint32_t)len,
		  known >= paylen ? (uint32_t)len : (uint32_t)hdr + known);
}

static enum roce_pos pos_of(uint32_t pkt, uint32_t npkts)
{
	if (npkts == 1)
		return ROCE_POS_ONLY;
	return pkt == 0 ? ROCE_POS_FIRST : pkt + 1 == npkts ? ROCE_POS_LAST : ROCE_POS_MIDDLE;
}

static uint32_t *msn_of(struct cap_out *o, const struct vfab_cap_rec *r)
{
	uint32_t key = r->dst_hca * 2654435761u ^ r->dqpn * 40503u;

	return &o->msn[key % (sizeof(o->msn) / sizeof(o->msn[0]))];
}

/* The responder's answer to the message's last request packet (or its NAK). */
static void answer(struct cap_out *o, const struct vfab_cap_rec *r, uint32_t last_psn)
{
	struct roce_bth b = {.opcode = ROCE_OP_ACK, .pkey = ROCE_DEFAULT_PKEY, .dqpn = r->sqpn};
	struct roce_ext x = {0};
	struct roce_addr a;

	addr_of(o, r, true, &a);
	switch (r->result) {
	case VFAB_CAP_ACKED:
		/* 0x1f: an ACK without credits to count (no end-to-end flow control). */
		x.aeth_syndrome = 0x1f;
		b.psn = last_psn;
		x.msn = ++*msn_of(o, r);
		break;
	case VFAB_CAP_RNR:
	case VFAB_CAP_NAK:
		x.aeth_syndrome = r->syndrome;
		b.psn = r->psn;
		x.msn = *msn_of(o, r);
		break;
	case VFAB_CAP_LOST:
		/* The packets after the lost one draw a PSN sequence error NAK. */
		if (r->lost_pkt + 1 >= r->npkts)
			return;
		x.aeth_syndrome = 0x60;
		b.psn = (r->psn + r->lost_pkt) & 0xffffff;
		x.msn = *msn_of(o, r);
		break;
	default:
		return;
	}
	frame(o, r->ts_ns, &a, &b, &x, NULL, 0, 0);
}

static bool is_atomic(uint32_t op)
{
	return op == 5 || op == 6; /* IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD */
}

/* The frames of one record: its request packet, and what answered it. */
static void record(struct cap_out *o, const struct vfab_cap_rec *r, const uint8_t *pay)
{
	uint32_t mtu = vfab_cap_mtu_bytes(r->pmtu), psn = (r->psn + r->pkt) & 0xffffff;
	uint32_t chunk =
	    r->msg_len ? (r->msg_len - r->pay_off < mtu ? r->msg_len - r->pay_off : mtu) : 0;
	enum roce_pos pos = pos_of(r->pkt, r->npkts);
	struct roce_bth b = {.pkey = ROCE_DEFAULT_PKEY, .dqpn = r->dqpn, .psn = psn};
	struct roce_ext x = {.va = r->va, .rkey = r->rkey, .xrc_srqn = r->xrc_srqn};
	struct roce_addr a;
	int op;

	addr_of(o, r, false, &a);
	o->records++;
	if (r->qp_type == 4) { /* UD: one datagram */
		struct vfab_cm_msg cm;
		uint8_t mad[VFAB_MAD_BYTES];

		/* vfab's CM between its UD QPs: a CM MAD between QP1s on the wire. */
		if (r->cap_len == r->msg_len &&
		    vfab_capture_cm_decode(r->qkey, pay, r->cap_len, &cm) &&
		    vfab_capture_cm_mad(&cm, o->t->hcas[r->src_hca].node_guid, r->dgid, mad)) {
			b.opcode = ROCE_OP_UD_SEND_ONLY;
			b.dqpn = 1;
			x.qkey = VFAB_CM_QP1_QKEY;
			x.src_qpn = 1;
			frame(o, r->ts_ns, &a, &b, &x, mad, sizeof(mad), sizeof(mad));
			o->mads++;
			return;
		}
		op = r->wr_opcode == 3 ? ROCE_OP_UD_SEND_ONLY_IMM : ROCE_OP_UD_SEND_ONLY;
		b.opcode = (uint8_t)op;
		b.se = r->solicited;
		b.psn = r->psn;
		x.qkey = r->qkey;
		x.src_qpn = r->sqpn;
		x.imm = r->imm;
		frame(o, r->ts_ns, &a, &b, &x, pay, chunk, r->cap_len);
		return;
	}
	if (r->wr_opcode == 4 || is_atomic(r->wr_opcode)) {
		/* One request packet; the data or the result comes back. */
		if (r->pkt == 0) {
			op = roce_req_opcode(r->qp_type, r->wr_opcode, ROCE_POS_ONLY);
			if (op < 0)
				return;
			b.opcode = (uint8_t)op;
			b.psn = r->psn;
			b.ackreq = true;
			x.dma_len = r->msg_len;
			x.swap_add = r->swap_add;
			x.compare = r->compare;
			frame(o, r->ts_ns, &a, &b, &x, NULL, 0, 0);
		}
		if (r->result != VFAB_CAP_ACKED) {
			if (r->pkt == 0)
				answer(o, r, r->psn);
			return;
		}
		addr_of(o, r, true, &a);
		b.dqpn = r->sqpn;
		b.ackreq = false;
		x.aeth_syndrome = 0x1f;
		if (is_atomic(r->wr_opcode)) {
			b.opcode = ROCE_OP_ATOMIC_ACK;
			x.orig = r->orig;
			x.msn = ++*msn_of(o, r);
			frame(o, r->ts_ns, &a, &b, &x, NULL, 0, 0);
			return;
		}
		b.opcode = pos == ROCE_POS_ONLY	   ? ROCE_OP_READ_RESP_ONLY
			   : pos == ROCE_POS_FIRST ? ROCE_OP_READ_RESP_FIRST
			   : pos == ROCE_POS_LAST  ? ROCE_OP_READ_RESP_LAST
						   : ROCE_OP_READ_RESP_MIDDLE;
		if (pos == ROCE_POS_ONLY || pos == ROCE_POS_LAST)
			++*msn_of(o, r);
		x.msn = *msn_of(o, r);
		frame(o, r->ts_ns, &a, &b, &x, pay, chunk, r->cap_len);
		return;
	}
	op = roce_req_opcode(r->qp_type, r->wr_opcode, pos);
	if (op < 0)
		return;
	b.opcode = (uint8_t)op;
	b.ackreq = pos == ROCE_POS_ONLY || pos == ROCE_POS_LAST;
	b.se = b.ackreq && r->solicited;
	x.dma_len = r->msg_len;
	x.imm = r->imm;
	x.inv_rkey = r->imm;
	/* The link lost this packet before the responder's port. */
	if (!(r->result == VFAB_CAP_LOST && r->pkt == r->lost_pkt))
		frame(o, r->ts_ns, &a, &b, &x, pay, chunk, r->cap_len);
	if (r->pkt + 1 == r->npkts && r->qp_type != 3) /* UC is never answered */
		answer(o, r, psn);
	else if (r->result == VFAB_CAP_LOST && r->pkt == r->npkts - 1)
		answer(o, r, psn);
}

/* NODE/HCA of the CLI's topology: the HCA's index, or -1. */
static int find_hca(const struct vfab_region *t, const char *spec)
{
	const char *slash = strchr(spec, '/');
	uint32_t i;

	if (!slash)
		return -1;
	for (i = 0; i < t->nhcas; i++) {
		const struct vfab_hca *h = &t->hcas[i];
		const char *node = t->nodes[h->node].id;

		if (strlen(node) == (size_t)(slash - spec) && !strncmp(node, spec, slash - spec) &&
		    !strcmp(h->name, slash + 1))
			return (int)i;
	}
	return -1;
}

/* A free slot, or one whose tool is gone; -1 when all are taken. */
static int take_slot(struct vfab_region *r)
{
	for (int i = 0; i < VFAB_CAPTURES; i++) {
		struct vfab_capture *c = &r->captures[i];

		if (atomic_load(&c->state) == VFAB_CAP_FREE ||
		    (c->tool_pid > 0 && kill(c->tool_pid, 0) && errno == ESRCH)) {
			if (atomic_exchange(&c->state, VFAB_CAP_FREE) == VFAB_CAP_ACTIVE)
				atomic_fetch_sub(&r->captures_on, 1);
			return i;
		}
	}
	return -1;
}

static int bind_socket(const struct vfab_cli *cli, int slot, char *path, size_t len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dir[PATH_MAX];
	struct stat st;
	int fd, buf = RCV_BUF_BYTES;

	if (vfab_capture_dir(dir, sizeof(dir), cli->rundir) ||
	    vfab_capture_sock(sa.sun_path, sizeof(sa.sun_path), cli->rundir, (unsigned)slot))
		return -ENAMETOOLONG;
	snprintf(path, len, "%s", sa.sun_path);
	/* Root's: nobody else may put a socket of their own there. */
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
		return -EPERM;
	/*
	 * A Unix datagram socket queues at most net.unix.max_dgram_qlen
	 * datagrams (10 by default), fixed when it is made. This tool needs no
	 * network: it makes the socket in a network namespace of its own with a
	 * longer queue, leaving the host's setting alone. Requesters reach it by
	 * its path, whatever their namespace.
	 */
	if (!unshare(CLONE_NEWNET)) {
		int q = open("/proc/sys/net/unix/max_dgram_qlen", O_WRONLY | O_CLOEXEC);

		if (q >= 0) {
			if (write(q, "65536", 5) != 5)
				fprintf(stderr, "vfab capture: the socket keeps a queue of 10\n");
			close(q);
		}
	}
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	unlink(sa.sun_path);
	/* Every user's requesters send here, as every user may open the HCA. */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(sa.sun_path, 0666)) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

/* Reads what waits on fd into the pcap; gives up after wait_ms without any. */
static void drain(struct cap_out *o, int fd, uint32_t hca, uint32_t port, int wait_ms)
{
	static uint8_t dgram[sizeof(struct vfab_cap_rec) + 4096 + 64];
	struct pollfd p = {.fd = fd, .events = POLLIN};

	while (poll(&p, 1, wait_ms) > 0) {
		struct vfab_cap_rec r;
		ssize_t n = recv(fd, dgram, sizeof(dgram), MSG_DONTWAIT | MSG_TRUNC);

		if (n < 0)
			break;
		if ((size_t)n < sizeof(r) || (size_t)n > sizeof(dgram)) {
			o->bad++;
			continue;
		}
		memcpy(&r, dgram, sizeof(r));
		if (!vfab_cap_rec_sound(&r, (size_t)n, o->t->nhcas)) {
			o->bad++;
			continue;
		}
		/* Only our port's: another capture's slot may have been pointed here. */
		if (!(r.src_hca == hca && r.src_port == port) &&
		    !(r.dst_hca == hca && r.dst_port == port)) {
			o->foreign++;
			continue;
		}
		record(o, &r, dgram + sizeof(r));
		if (stop)
			wait_ms = 0;
	}
}

int vfab_cmd_capture(struct vfab_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},	       {"fabric", required_argument, NULL, 'f'},
	    {"port", required_argument, NULL, 'p'},    {"for", required_argument, NULL, 't'},
	    {"snaplen", required_argument, NULL, 's'}, {NULL, 0, NULL, 0}};
	const char *file = NULL;
	unsigned long port = 1, snaplen = SNAPLEN_DEFAULT;
	double secs = 0;
	struct cap_out o = {0};
	struct vfab_region *t = NULL, *r = NULL;
	struct vfab_capture *c;
	char path[PATH_MAX], sock[PATH_MAX], *end;
	int ch, hca, slot, fd = -1, ret = VFAB_EXIT_FAIL, rc;
	uint64_t until = 0;
	struct timespec now;

	/* 0: glibc starts afresh, permuting operands behind the options. */
	optind = 0;
	while ((ch = getopt_long(argc, argv, "hf:w:", opts, NULL)) != -1) {
		switch (ch) {
		case 'w':
			file = optarg;
			break;
		case 'p':
			port = strtoul(optarg, &end, 10);
			if (*end || port < 1 || port > VFAB_MAX_PORTS) {
				fprintf(stderr, "vfab capture: --port wants 1..%d\n",
					VFAB_MAX_PORTS);
				return VFAB_EXIT_USAGE;
			}
			break;
		case 't':
			secs = strtod(optarg, &end);
			if (*end || !(secs > 0) || secs > 86400 * 365) {
				fprintf(stderr, "vfab capture: --for wants seconds > 0\n");
				return VFAB_EXIT_USAGE;
			}
			break;
		case 's':
			snaplen = strtoul(optarg, &end, 10);
			if (*end || snaplen < 64 || snaplen > 262144) {
				fprintf(stderr, "vfab capture: --snaplen wants 64..262144\n");
				return VFAB_EXIT_USAGE;
			}
			break;
		default:
			rc = vfab_cli_common_opt(cli, ch, usage);
			if (rc != VFAB_CLI_GO_ON)
				return rc;
		}
	}
	rc = vfab_cli_need_operand("capture", "NODE/HCA", argc, optind, usage);
	if (rc != VFAB_EXIT_OK)
		return rc;
	if (!file) {
		fprintf(stderr, "vfab capture: -w FILE is required\n");
		usage(stderr);
		return VFAB_EXIT_USAGE;
	}
	if (optind + 1 < argc) {
		fprintf(stderr, "vfab capture: unexpected '%s'\n", argv[optind + 1]);
		return VFAB_EXIT_USAGE;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "vfab capture: needs root, as a packet capture on a host does\n");
		return VFAB_EXIT_FAIL;
	}
	if (vfab_cli_topology(cli, "capture", &t))
		return VFAB_EXIT_FAIL;
	hca = find_hca(t, argv[optind]);
	if (hca < 0 || port > t->hcas[hca].nports) {
		fprintf(stderr, "vfab capture: no port %lu of '%s' in fabric %s\n", port,
			argv[optind], cli->fabric);
		ret = VFAB_EXIT_USAGE;
		goto out;
	}
	rc = vfab_region_path(cli->fabric, path, sizeof(path));
	if (!rc)
		rc = vfab_region_open(path, &r);
	if (rc) {
		fprintf(stderr, "vfab capture: fabric %s: %s; is it up?\n", cli->fabric,
			strerror(-rc));
		goto out;
	}
	o.f = fopen(file, "wbx");
	if (!o.f && errno == EEXIST && !unlink(file))
		o.f = fopen(file, "wbx");
	if (!o.f) {
		fprintf(stderr, "vfab capture: %s: %s\n", file, strerror(errno));
		goto out;
	}
	o.snaplen = (uint32_t)snaplen;
	o.t = t;
	if (pcap_header(o.f, o.snaplen))
		goto out;
	slot = take_slot(r);
	if (slot < 0) {
		fprintf(stderr, "vfab capture: %d captures run already\n", VFAB_CAPTURES);
		goto out;
	}
	fd = bind_socket(cli, slot, sock, sizeof(sock));
	if (fd < 0) {
		fprintf(stderr, "vfab capture: socket %s: %s\n", sock, strerror(-fd));
		goto out;
	}
	c = &r->captures[slot];
	c->hca = (uint32_t)hca;
	c->port = (uint32_t)port;
	c->pkt_bytes = snaplen > ROCE_MAX_HDR_LEN ? (uint32_t)(snaplen - ROCE_MAX_HDR_LEN) : 0;
	c->tool_pid = getpid();
	atomic_store(&c->drops, 0);
	atomic_store_explicit(&c->state, VFAB_CAP_ACTIVE, memory_order_release);
	atomic_fetch_add(&r->captures_on, 1);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (secs > 0)
		until = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec +
			(uint64_t)(secs * 1e9);
	fprintf(stderr, "vfab capture: %s port %lu -> %s\n", argv[optind], port, file);
	while (!stop) {
		drain(&o, fd, (uint32_t)hca, (uint32_t)port, 100);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (until && (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec >= until)
			break;
	}
	/* No new records; what is on its way still lands. */
	atomic_store(&c->state, VFAB_CAP_FREE);
	atomic_fetch_sub(&r->captures_on, 1);
	drain(&o, fd, (uint32_t)hca, (uint32_t)port, 50);
	fprintf(stderr,
		"vfab capture: %llu frames from %llu records (%llu CM MADs); %llu dropped (socket "
		"full), %llu malformed, %llu of other ports\n",
		(unsigned long long)o.frames, (unsigned long long)o.records,
		(unsigned long long)o.mads, (unsigned long long)atomic_load(&c->drops),
		(unsigned long long)o.bad, (unsigned long long)o.foreign);
	ret = VFAB_EXIT_OK;
out:
	if (fd >= 0) {
		close(fd);
		unlink(sock);
	}
	if (o.f && fclose(o.f) && ret == VFAB_EXIT_OK) {
		fprintf(stderr, "vfab capture: %s: %s\n", file, strerror(errno));
		ret = VFAB_EXIT_FAIL;
	}
	if (r)
		vfab_region_close(r);
	if (t)
		vfab_topology_private_free(t);
	return ret;
}
