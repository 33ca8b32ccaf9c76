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
#include "fabric/capture.h"
#include "fabric/region.h"
#include "fabric/roce_pkt.h"
#include "fabric/topology.h"
#include "tools/capture_frames.h"
#include "tools/cli.h"

#define SNAPLEN_DEFAULT 65535u
#define RCV_BUF_BYTES (64 << 20)

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

/* The capture being written: its frames into the pcap. */
struct cap_out {
	FILE *f;
	struct vfab_capture_frames fr;
	uint64_t foreign, bad, write_errors;
};

static int pcap_header(FILE *f, uint32_t snaplen)
{
	/* pcap 2.4, nanosecond time stamps (magic 0xa1b23c4d), LINKTYPE_ETHERNET. */
	uint32_t h[6] = {0xa1b23c4du, 0x00040002u, 0, 0, snaplen, 1};

	return fwrite(h, sizeof(h), 1, f) == 1 ? 0 : -EIO;
}

static void put_frame(void *arg, uint64_t ts_ns, const uint8_t *frame, uint32_t len, uint32_t incl)
{
	struct cap_out *o = arg;
	uint32_t rec[4] = {(uint32_t)(ts_ns / 1000000000ull), (uint32_t)(ts_ns % 1000000000ull),
			   incl, len};

	if (fwrite(rec, sizeof(rec), 1, o->f) != 1 || fwrite(frame, incl, 1, o->f) != 1)
		o->write_errors++;
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

/*
 * A free slot, or one whose tool is gone, taken (SETUP) for this process;
 * -1 when all are taken. Two tools starting at once never get one slot.
 */
static int take_slot(struct vfab_region *r)
{
	for (int i = 0; i < VFAB_CAPTURES; i++) {
		struct vfab_capture *c = &r->captures[i];
		uint32_t seen = atomic_load(&c->state);

		if (seen != VFAB_CAP_FREE &&
		    !(c->tool_pid > 0 && kill(c->tool_pid, 0) && errno == ESRCH))
			continue;
		if (!atomic_compare_exchange_strong(&c->state, &seen, VFAB_CAP_SETUP))
			continue;
		c->tool_pid = getpid();
		if (seen == VFAB_CAP_ACTIVE)
			atomic_fetch_sub(&r->captures_on, 1);
		return i;
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
	static uint8_t dgram[sizeof(struct vfab_cap_rec) + VFAB_CAP_DGRAM_PAYLOAD];
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
		if (!vfab_cap_rec_sound(&r, (size_t)n, o->fr.nhcas)) {
			o->bad++;
			continue;
		}
		/* Only our port's: another capture's slot may have been pointed here. */
		if (!(r.src_hca == hca && r.src_port == port) &&
		    !(r.dst_hca == hca && r.dst_port == port)) {
			o->foreign++;
			continue;
		}
		vfab_capture_frames(&o->fr, &r, dgram + sizeof(r));
		if (stop)
			wait_ms = 0;
	}
}

/* Datagrams capture slot's socket could not take, every user's requesters together. */
static uint64_t cap_drops(struct vfab_region *r, int slot)
{
	uint64_t n;

	vfab_region_map_shards(r);
	vfab_sum_words(r, offsetof(struct vfab_shard, cap_drops[slot]), sizeof(n), &n);
	return n;
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
	uint64_t until = 0, drops;
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
	o.fr.hcas = t->hcas;
	o.fr.nhcas = t->nhcas;
	o.fr.snaplen = (uint32_t)snaplen;
	o.fr.put = put_frame;
	o.fr.arg = &o;
	if (pcap_header(o.f, o.fr.snaplen))
		goto out;
	slot = take_slot(r);
	if (slot < 0) {
		fprintf(stderr, "vfab capture: %d captures run already\n", VFAB_CAPTURES);
		goto out;
	}
	c = &r->captures[slot];
	fd = bind_socket(cli, slot, sock, sizeof(sock));
	if (fd < 0) {
		fprintf(stderr, "vfab capture: socket %s: %s\n", sock, strerror(-fd));
		atomic_store(&c->state, VFAB_CAP_FREE);
		goto out;
	}
	c->hca = (uint32_t)hca;
	c->port = (uint32_t)port;
	c->pkt_bytes = snaplen > ROCE_MAX_HDR_LEN ? (uint32_t)(snaplen - ROCE_MAX_HDR_LEN) : 0;
	drops = cap_drops(r, slot);
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
		(unsigned long long)o.fr.frames, (unsigned long long)o.fr.records,
		(unsigned long long)o.fr.mads, (unsigned long long)(cap_drops(r, slot) - drops),
		(unsigned long long)o.bad, (unsigned long long)o.foreign);
	ret = VFAB_EXIT_OK;
	if (o.write_errors) {
		fprintf(stderr, "vfab capture: %s: %llu frames could not be written\n", file,
			(unsigned long long)o.write_errors);
		ret = VFAB_EXIT_FAIL;
	}
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
