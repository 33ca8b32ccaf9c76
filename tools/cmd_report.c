/* SPDX-License-Identifier: MIT */
/*
 * vfab report: vfabd's REPORT (docs/REPORT_SCHEMA.md) as JSON, or a summary
 * for people: ports and their counters, links that carried traffic, live QPs
 * by state, and the fault log.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "daemon/vfabd_json.h"
#include "fabric/ctl.h"
#include "fabric/topology.h"
#include "tools/cli.h"
#include "tools/report_html.h"

#define REPORT_ANSWER_MS 10000
#define REPORT_MAX_BYTES (256u << 20)

static void usage(FILE *f)
{
	fprintf(f, "usage: vfab [--fabric NAME] report [--json] [-o FILE] [--html FILE]\n"
		   "Asks vfabd for the fabric report: per link its configuration, bytes,\n"
		   "messages, queueing delay and drops; per HCA port its state and counters;\n"
		   "the live QPs; every fault, link and shape change so far. Without --json a\n"
		   "summary; --json the whole document (schema: docs/REPORT_SCHEMA.md).\n"
		   "-o FILE writes it to FILE instead of standard output. --html FILE writes\n"
		   "one self-contained page instead: the topology with its rates and\n"
		   "oversubscription, per-link throughput and queueing delay over the last\n"
		   "15 minutes (vfabd's HISTORY) with the faults marked, the fault log, the\n"
		   "ports' counters and the links.\n"
		   "Exit: 0 ok, 1 vfabd failed or is not running, 2 usage error.\n");
}

/* Reads into buf until it holds `want` bytes (or, want == 0, a newline). */
static int read_until(int fd, char **buf, size_t *len, size_t want, long long deadline)
{
	size_t cap = want ? want + 1 : 256;
	char *p = realloc(*buf, cap);

	if (!p)
		return -ENOMEM;
	*buf = p;
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		long long left = deadline - vfab_now_ms();
		ssize_t n;

		if (want ? *len >= want : (*len && memchr(*buf, '\n', *len)))
			return 0;
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
		if (!want && *len + 1 >= cap)
			return -EPROTO; /* a header line is short */
		n = read(fd, *buf + *len, (want ? want : cap - 1) - *len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ECONNRESET;
		*len += (size_t)n;
		(*buf)[*len] = '\0';
	}
}

/*
 * The body of vfabd's answer to request (REPORT, HISTORY: "OK <n>" and n
 * bytes; malloc'd, NUL-terminated) or -errno; err gets vfabd's refusal.
 */
static int fetch(const struct vfab_cli *cli, const char *request, char **out, size_t *out_len,
		 char *err, size_t errlen)
{
	long long deadline = vfab_now_ms() + REPORT_ANSWER_MS;
	char *buf = NULL, *nl, *end;
	size_t len = 0, head;
	unsigned long long n;
	int fd, rc;

	fd = vfab_ctl_connect(cli->rundir);
	if (fd < 0)
		return fd;
	{
		char line[32];
		int k = snprintf(line, sizeof(line), "%s\n", request);

		rc = send(fd, line, (size_t)k, MSG_NOSIGNAL) == k ? 0 : -errno;
	}
	if (!rc)
		rc = read_until(fd, &buf, &len, 0, deadline);
	if (rc)
		goto out;
	nl = memchr(buf, '\n', len);
	*nl = '\0';
	head = (size_t)(nl - buf) + 1;
	n = strncmp(buf, "OK ", 3) ? 0 : strtoull(buf + 3, &end, 10);
	if (strncmp(buf, "OK ", 3) || *end || n == 0 || n > REPORT_MAX_BYTES) {
		snprintf(err, errlen, "%s", buf);
		rc = -EPROTO;
		goto out;
	}
	/* The body may have come with the header: move it to the front. */
	memmove(buf, buf + head, len - head);
	len -= head;
	if (len > n)
		len = (size_t)n; /* vfabd sends nothing after the body; never show more */
	rc = read_until(fd, &buf, &len, (size_t)n, deadline);
	if (!rc) {
		*out = buf;
		*out_len = len;
		buf = NULL;
	}
out:
	free(buf);
	close(fd);
	return rc;
}

/* fetch, saying why not on stderr. */
static int fetch_said(const struct vfab_cli *cli, const char *verb, const char *request, char **out,
		      size_t *out_len)
{
	char err[512] = "";
	int rc = fetch(cli, request, out, out_len, err, sizeof(err));

	if (rc && err[0])
		fprintf(stderr, "vfab %s: vfabd refused: %s\n", verb, err);
	else if (rc)
		fprintf(stderr, "vfab %s: no report from vfabd of fabric %s (%s); is it up?\n",
			verb, cli->fabric, strerror(-rc));
	return rc;
}

int vfab_report_fetch(const struct vfab_cli *cli, const char *verb, char **out, size_t *out_len)
{
	return fetch_said(cli, verb, "REPORT", out, out_len);
}

static const char *str(const struct vjson *o, const char *k)
{
	return vjson_get_str(o, k, "?");
}

static unsigned long long num(const struct vjson *o, const char *k)
{
	return vjson_get_u64(o, k);
}

static void summary_ports(FILE *f, const struct vjson *ports)
{
	fprintf(f, "\nports:\n  %-24s %-7s %-22s %14s %14s %10s %8s %8s %8s\n", "PORT", "STATE",
		"RATE", "XMIT_BYTES", "RCV_BYTES", "XMIT_PKTS", "ACK_TMO", "OOS", "DUP");
	for (const struct vjson *p = ports ? ports->child : NULL; p; p = p->next) {
		const struct vjson *c = vjson_get(p, "counters");
		char name[160];

		snprintf(name, sizeof(name), "%s/%s/%llu", str(p, "node"), str(p, "hca"),
			 num(p, "port"));
		/* sysfs counts data in 4-byte words; people think in bytes. */
		fprintf(f, "  %-24s %-7s %-22s %14llu %14llu %10llu %8llu %8llu %8llu\n", name,
			str(p, "state"), str(p, "rate"), 4 * num(c, "port_xmit_data"),
			4 * num(c, "port_rcv_data"), num(c, "port_xmit_packets"),
			num(c, "local_ack_timeout_err"), num(c, "out_of_sequence"),
			num(c, "duplicate_request"));
	}
}

static void summary_links(FILE *f, const struct vjson *links)
{
	int shown = 0;

	fprintf(f, "\nlinks with traffic:\n  %-28s %12s %16s %10s %12s %8s\n", "LINK", "RATE_GBPS",
		"BYTES", "MSGS", "QUEUE_US/MSG", "DROPS");
	for (const struct vjson *l = links ? links->child : NULL; l; l = l->next) {
		unsigned long long msgs = num(l, "msgs");

		if (!msgs && !num(l, "drops"))
			continue;
		fprintf(f, "  %-28s %12.6g %16llu %10llu %12.2f %8llu\n", str(l, "name"),
			num(l, "rate_bps") / 1e9, num(l, "bytes"), msgs,
			msgs ? num(l, "queue_ns") / 1e3 / (double)msgs : 0.0, num(l, "drops"));
		shown++;
	}
	if (!shown)
		fprintf(f, "  (none)\n");
}

static void summary_qps(FILE *f, const struct vjson *qps)
{
	static const char *const states[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
	unsigned long count[sizeof(states) / sizeof(states[0])] = {0};

	for (const struct vjson *q = qps ? qps->child : NULL; q; q = q->next)
		for (size_t s = 0; s < sizeof(states) / sizeof(states[0]); s++)
			count[s] += strcmp(str(q, "state"), states[s]) == 0;
	fprintf(f, "\nQPs: %zu live", qps ? qps->n : 0);
	for (size_t s = 0; s < sizeof(states) / sizeof(states[0]); s++)
		if (count[s])
			fprintf(f, ", %lu %s", count[s], states[s]);
	fprintf(f, "\n");
}

static void summary_faults(FILE *f, const struct vjson *faults, const struct vjson *root)
{
	fprintf(f, "\nfaults and changes: %zu", faults ? faults->n : 0);
	if (num(root, "faults_dropped"))
		fprintf(f, " (%llu more not kept)", num(root, "faults_dropped"));
	fprintf(f, "\n");
	for (const struct vjson *e = faults ? faults->child : NULL; e; e = e->next)
		fprintf(f, "  %s  %-9s %-24s %-24s %s\n", str(e, "time"), str(e, "kind"),
			str(e, "target"), str(e, "params"), str(e, "detail"));
}

/* The RoCE wire to other machines, when vfabd serves one. */
static void summary_wire(FILE *f, const struct vjson *w)
{
	const struct vjson *dropped = w ? vjson_get(w, "dropped") : NULL;
	unsigned long long all = 0;

	if (!w || !num(w, "open"))
		return;
	for (const struct vjson *r = dropped ? dropped->child : NULL; r; r = r->next)
		all += r->is_uint ? r->u : 0;
	fprintf(f,
		"\nwire to other machines: %llu QP(s) bound, %llu packet(s) sent, %llu received, "
		"%llu delivered, %llu dropped",
		num(w, "qps_bound"), num(w, "sent"), num(w, "received"), num(w, "delivered"), all);
	for (const struct vjson *r = dropped ? dropped->child : NULL; r; r = r->next)
		if (r->is_uint && r->u)
			fprintf(f, " (%s %llu)", r->key, (unsigned long long)r->u);
	fprintf(f, "\n");
}

static int print_summary(FILE *f, const char *body, size_t len)
{
	char err[128];
	struct vjson *root = vjson_parse(body, len, err, sizeof(err));
	const struct vjson *paused;

	if (!root) {
		fprintf(stderr, "vfab report: vfabd's report is not valid JSON: %s\n", err);
		return VFAB_EXIT_FAIL;
	}
	fprintf(f, "fabric %s at %s (vfabd pid %llu, %llu client context(s))\n",
		str(root, "fabric"), str(root, "time"), num(root, "vfabd_pid"),
		num(root, "clients"));
	paused = vjson_get(root, "paused");
	for (const struct vjson *p = paused ? paused->child : NULL; p; p = p->next)
		fprintf(f, "  node %s is PAUSED\n", p->type == VJSON_STR ? p->str : "?");
	summary_ports(f, vjson_get(root, "ports"));
	summary_links(f, vjson_get(root, "links"));
	summary_qps(f, vjson_get(root, "qps"));
	summary_wire(f, vjson_get(root, "wire"));
	summary_faults(f, vjson_get(root, "faults"), root);
	vjson_free(root);
	return VFAB_EXIT_OK;
}

/* --html FILE: the report, vfabd's link history and the topology as one page. */
static int write_html(const struct vfab_cli *cli, const char *path, const char *body, size_t len)
{
	char err[128], *hbody = NULL;
	struct vjson *root = vjson_parse(body, len, err, sizeof(err)), *hist = NULL;
	struct vfab_region *t = NULL;
	size_t hlen = 0;
	int rc = VFAB_EXIT_FAIL;
	FILE *f = NULL;

	if (!root) {
		fprintf(stderr, "vfab report: vfabd's report is not valid JSON: %s\n", err);
		return VFAB_EXIT_FAIL;
	}
	if (fetch_said(cli, "report", "HISTORY", &hbody, &hlen))
		goto out;
	hist = vjson_parse(hbody, hlen, err, sizeof(err));
	if (!hist) {
		fprintf(stderr, "vfab report: vfabd's history is not valid JSON: %s\n", err);
		goto out;
	}
	if (vfab_cli_topology(cli, "report", &t))
		goto out;
	f = fopen(path, "we");
	if (!f) {
		fprintf(stderr, "vfab report: %s: %s\n", path, strerror(errno));
		goto out;
	}
	rc = vfab_report_html(f, root, hist, t) ? VFAB_EXIT_FAIL : VFAB_EXIT_OK;
	if (fclose(f) || rc) {
		fprintf(stderr, "vfab report: %s: %s\n", path, strerror(errno ? errno : EIO));
		rc = VFAB_EXIT_FAIL;
	}
out:
	if (t)
		vfab_topology_private_free(t);
	vjson_free(hist);
	vjson_free(root);
	free(hbody);
	return rc;
}

int vfab_cmd_report(struct vfab_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},	    {"fabric", required_argument, NULL, 'f'},
	    {"json", no_argument, NULL, 'j'},	    {"output", required_argument, NULL, 'o'},
	    {"html", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0}};
	const char *outfile = NULL, *html = NULL;
	char *body = NULL;
	int ch, json = 0, rc;
	size_t len = 0;
	FILE *f = stdout;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+hf:jo:", opts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			json = 1;
			break;
		case 'o':
			outfile = optarg;
			break;
		case 'H':
			html = optarg;
			break;
		default:
			rc = vfab_cli_common_opt(cli, ch, usage);
			if (rc != VFAB_CLI_GO_ON)
				return rc;
		}
	}
	rc = vfab_cli_no_more_operands("report", argc, argv, optind, usage);
	if (rc)
		return rc;
	if (vfab_report_fetch(cli, "report", &body, &len))
		return VFAB_EXIT_FAIL;
	if (html) {
		rc = write_html(cli, html, body, len);
		free(body);
		return rc;
	}
	if (outfile && !(f = fopen(outfile, "we"))) {
		fprintf(stderr, "vfab report: %s: %s\n", outfile, strerror(errno));
		free(body);
		return VFAB_EXIT_FAIL;
	}
	if (json)
		rc = fwrite(body, 1, len, f) == len ? VFAB_EXIT_OK : VFAB_EXIT_FAIL;
	else
		rc = print_summary(f, body, len);
	if (f != stdout && fclose(f) && rc == VFAB_EXIT_OK) {
		fprintf(stderr, "vfab report: %s: %s\n", outfile, strerror(errno));
		rc = VFAB_EXIT_FAIL;
	}
	free(body);
	return rc;
}
