/* SPDX-License-Identifier: MIT */
/*
 * vfab trace: every QP of the fabric with its owner (node, pid, command),
 * state, peer, PSN and posted receives, and what stands in its way as far
 * as the fabric's state tells (a dead or missing peer, a port down, a peer
 * with no receive posted): the `qps` of vfabd's REPORT
 * (docs/REPORT_SCHEMA.md), as a table or as JSON.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/vfabd_json.h"
#include "tools/cli.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: vfab [--fabric NAME] trace [--json]\n"
		   "Lists every QP of the fabric: node, HCA, QPN, type, state, owning pid and\n"
		   "command, the connected peer's QPN, the next PSN it expects, the receives\n"
		   "it has posted (- with an SRQ), and WAITS: what stands in its way as far as\n"
		   "the fabric can tell (its process or port gone, error state, peer QP or\n"
		   "process gone, peer port down, peer with no receive posted: a SEND waits\n"
		   "in RNR). A requester's own outstanding work requests are not visible.\n"
		   "--json prints {\"qps\": [...]} with the fields of docs/REPORT_SCHEMA.md.\n"
		   "Exit: 0 ok, 1 vfabd failed or is not running, 2 usage error.\n");
}

static const char *field(const struct vjson *o, const char *k)
{
	const struct vjson *v = vjson_get(o, k);

	return v && v->type == VJSON_STR ? v->str : "";
}

static long long number(const struct vjson *o, const char *k)
{
	const struct vjson *v = vjson_get(o, k);

	return v && v->type == VJSON_NUM ? (long long)v->num : 0;
}

static void table(const struct vjson *qps)
{
	printf("%-10s %-8s %-8s %-10s %-5s %-8s %-15s %-8s %-8s %-5s %s\n", "NODE", "HCA", "QPN",
	       "TYPE", "STATE", "PID", "COMMAND", "PEER", "EPSN", "RECV", "WAITS");
	for (const struct vjson *q = qps ? qps->child : NULL; q; q = q->next) {
		long long recv = number(q, "recv_posted");
		char peer[16] = "-", rbuf[24] = "-";

		if (number(q, "dest_qpn"))
			snprintf(peer, sizeof(peer), "0x%06llx", number(q, "dest_qpn"));
		if (recv >= 0)
			snprintf(rbuf, sizeof(rbuf), "%lld", recv);
		printf("%-10s %-8s 0x%06llx %-10s %-5s %-8lld %-15s %-8s %-8lld %-5s %s\n",
		       field(q, "node"), field(q, "hca"), number(q, "qpn"), field(q, "type"),
		       field(q, "state"), number(q, "pid"), field(q, "comm"), peer,
		       number(q, "epsn"), rbuf, *field(q, "waits") ? field(q, "waits") : "-");
	}
	if (!qps || !qps->n)
		printf("(no QPs)\n");
}

/* The QPs again as JSON: each member as it came (strings escaped, integers whole). */
static int json(const struct vjson *qps)
{
	struct vjson_buf b = {0};
	bool first_q = true;

	vjson_text(&b, "{\"qps\":[");
	for (const struct vjson *q = qps ? qps->child : NULL; q; q = q->next) {
		bool first = true;

		vjson_text(&b, first_q ? "\n{" : ",\n{");
		for (const struct vjson *m = q->child; m; m = m->next, first = false) {
			vjson_key(&b, m->key, first);
			if (m->type == VJSON_STR)
				vjson_str(&b, m->str);
			else if (m->type == VJSON_NUM)
				vjson_printf(&b, "%lld", (long long)m->num);
			else
				vjson_text(&b, "null");
		}
		vjson_text(&b, "}");
		first_q = false;
	}
	vjson_text(&b, "\n]}\n");
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	fwrite(b.p, 1, b.len, stdout);
	free(b.p);
	return 0;
}

int vfab_cmd_trace(struct vfab_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
					     {"fabric", required_argument, NULL, 'f'},
					     {"json", no_argument, NULL, 'j'},
					     {NULL, 0, NULL, 0}};
	char *body = NULL, perr[128];
	int ch, as_json = 0, rc;
	struct vjson *root;
	size_t len = 0;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+hf:j", opts, NULL)) != -1) {
		if (ch == 'j') {
			as_json = 1;
			continue;
		}
		rc = vfab_cli_common_opt(cli, ch, usage);
		if (rc != VFAB_CLI_GO_ON)
			return rc;
	}
	rc = vfab_cli_no_more_operands("trace", argc, argv, optind, usage);
	if (rc)
		return rc;
	if (vfab_report_fetch(cli, "trace", &body, &len))
		return VFAB_EXIT_FAIL;
	root = vjson_parse(body, len, perr, sizeof(perr));
	free(body);
	if (!root) {
		fprintf(stderr, "vfab trace: vfabd's report is not valid JSON: %s\n", perr);
		return VFAB_EXIT_FAIL;
	}
	if (as_json)
		rc = json(vjson_get(root, "qps"));
	else
		table(vjson_get(root, "qps"));
	vjson_free(root);
	if (rc) {
		fprintf(stderr, "vfab trace: %s\n", strerror(-rc));
		return VFAB_EXIT_FAIL;
	}
	return VFAB_EXIT_OK;
}
