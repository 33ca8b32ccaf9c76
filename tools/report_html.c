/* SPDX-License-Identifier: MIT */
/*
 * The HTML page of vfab report --html (tools/report_html.h). Charts and the
 * topology are SVG written here: polylines on axes with ticks, boxes and
 * lines; no script, so the page renders the same offline, in any browser
 * and headless.
 */
#include "tools/report_html.h"
#include "daemon/vfabd_json.h"
#include "fabric/region.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHART_W 920
#define CHART_H 260
#define PAD_L 64
#define PAD_R 40
#define PAD_T 16
#define PAD_B 40
#define MAX_SERIES 16

static const char *const palette[] = {
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#7f7f7f", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd"};

/* Series k's colour: the plot's line and its legend swatch. */
static const char *colour(size_t k)
{
	return palette[k % (sizeof(palette) / sizeof(palette[0]))];
}

static void esc(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

/* The numbers of an array, at most cap of them, into out; their count. */
static size_t numbers(const struct vjson *arr, double *out, size_t cap)
{
	size_t n = 0;

	for (const struct vjson *e = arr ? arr->child : NULL; e && n < cap; e = e->next)
		out[n++] = e->type == VJSON_NUM ? e->num : 0;
	return n;
}

static void clock_text(char *buf, size_t len, double unix_ms)
{
	time_t t = (time_t)(unix_ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%H:%M:%S", &tm);
}

/* A round step for about `ticks` ticks up to max. */
static double nice_step(double max, int ticks)
{
	double raw = max / ticks, mag = pow(10, floor(log10(raw))), r = raw / mag;

	return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
}

/* One series of a chart: a link's values at the sample times. */
struct series {
	const char *name;
	double *y; /* n values; y[0] unused (a rate needs two samples) */
};

/*
 * A line chart of the series over the sample times t[1..n-1] (unix ms),
 * the faults as dashed vertical lines where they fall in that window.
 */
static void chart(FILE *f, const char *title, const char *unit, const double *t, size_t n,
		  const struct series *s, size_t ns, const struct vjson *faults)
{
	double t0 = t[1], t1 = t[n - 1], ymax = 0, step;
	double w = CHART_W - PAD_L - PAD_R, h = CHART_H - PAD_T - PAD_B;
	unsigned int row = 0;
	char tb[16];

	for (size_t k = 0; k < ns; k++)
		for (size_t i = 1; i < n; i++)
			ymax = s[k].y[i] > ymax ? s[k].y[i] : ymax;
	if (ymax <= 0)
		ymax = 1;
	step = nice_step(ymax, 4);
	ymax = ceil(ymax / step) * step;
	if (t1 <= t0)
		t1 = t0 + 1000;
	fprintf(f, "<h3>");
	esc(f, title);
	fprintf(f,
		"</h3>\n<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"role=\"img\">\n",
		CHART_W, CHART_H, CHART_W, CHART_H);
	for (double y = 0; y <= ymax + step / 2; y += step) {
		double py = PAD_T + h - y / ymax * h;

		fprintf(f,
			"<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>"
			"<text x=\"%d\" y=\"%.1f\" class=\"ytick\">%g</text>\n",
			PAD_L, py, PAD_L + w, py, PAD_L - 6, py + 4, y);
	}
	for (int i = 0; i <= 4; i++) {
		double tx = t0 + (t1 - t0) * i / 4, px = PAD_L + w * i / 4;

		clock_text(tb, sizeof(tb), tx);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"xtick\">%s</text>\n", px,
			CHART_H - PAD_B + 18, tb);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"unit\">%s (UTC)</text>\n", PAD_L + (int)w / 2,
		CHART_H - 4, unit);
	for (const struct vjson *e = faults ? faults->child : NULL; e; e = e->next) {
		double ft = (double)vjson_get_u64(e, "unix_ms");
		double px = PAD_L + (ft - t0) / (t1 - t0) * w;

		if (ft < t0 || ft > t1)
			continue;
		/* Labels of faults close in time go on rows of their own. */
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" class=\"fault\"/>"
			"<text x=\"%.1f\" y=\"%d\" class=\"flabel\">",
			px, PAD_T, px, PAD_T + h, px + 3, PAD_T + 10 + 12 * (int)(row++ % 4));
		esc(f, vjson_get_str(e, "kind", "?"));
		fprintf(f, " ");
		esc(f, vjson_get_str(e, "target", ""));
		fprintf(f, "</text>\n");
	}
	for (size_t k = 0; k < ns; k++) {
		fprintf(f, "<polyline class=\"series\" stroke=\"%s\" data-link=\"", colour(k));
		esc(f, s[k].name);
		fprintf(f, "\" points=\"");
		for (size_t i = 1; i < n; i++)
			fprintf(f, "%.1f,%.1f ", PAD_L + (t[i] - t0) / (t1 - t0) * w,
				PAD_T + h - s[k].y[i] / ymax * h);
		fprintf(f, "\"/>\n");
	}
	fprintf(f,
		"<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"axis\"/>"
		"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%.1f\" class=\"axis\"/>\n</svg>\n",
		PAD_L, PAD_T + h, PAD_L + w, PAD_T + h, PAD_L, PAD_T, PAD_L, PAD_T + h);
	fprintf(f, "<p class=\"legend\">");
	for (size_t k = 0; k < ns; k++) {
		fprintf(f, "<span><i style=\"background:%s\"></i>", colour(k));
		esc(f, s[k].name);
		fprintf(f, "</span> ");
	}
	fprintf(f, "</p>\n");
}

/* Throughput and queueing charts of the links that carried traffic in the window. */
static void charts(FILE *f, const struct vjson *history, const struct vjson *faults)
{
	const struct vjson *links = vjson_get(history, "links");
	size_t n = (size_t)vjson_get_u64(history, "samples"), ns = 0;
	struct series rate[MAX_SERIES], queue[MAX_SERIES];
	double *t, *by, *ms, *qn, *buf;

	fprintf(f, "<h2>Links over time</h2>\n");
	if (!links || n < 3) {
		fprintf(f,
			"<p>vfabd has %zu sample(s) of the links so far (one a second): the "
			"charts need three.</p>\n",
			n);
		return;
	}
	/* Times, three arrays of one link as numbers, then two series per link. */
	t = calloc(n * (4 + 2 * MAX_SERIES), sizeof(double));
	if (!t)
		return;
	numbers(vjson_get(history, "unix_ms"), t, n);
	by = t + n;
	ms = by + n;
	qn = ms + n;
	buf = qn + n;
	for (const struct vjson *l = links->child; l && ns < MAX_SERIES; l = l->next) {
		double *r = buf + 2 * ns * n, *q = r + n;

		/* Short or missing arrays read as zeros (calloc'd, refilled per link). */
		memset(by, 0, 3 * n * sizeof(double));
		numbers(vjson_get(l, "bytes"), by, n);
		if (by[n - 1] <= by[0])
			continue;
		numbers(vjson_get(l, "msgs"), ms, n);
		numbers(vjson_get(l, "queue_ns"), qn, n);
		for (size_t i = 1; i < n; i++) {
			double dt = t[i] - t[i - 1], dm = ms[i] - ms[i - 1];

			r[i] = dt > 0 ? (by[i] - by[i - 1]) * 8 / (dt * 1e6) : 0;
			q[i] = dm > 0 ? (qn[i] - qn[i - 1]) / dm / 1000 : 0;
		}
		rate[ns] = (struct series){vjson_get_str(l, "name", "?"), r};
		queue[ns] = (struct series){vjson_get_str(l, "name", "?"), q};
		ns++;
	}
	if (!ns) {
		fprintf(f, "<p>No link carried traffic in the last %zu seconds.</p>\n", n);
	} else {
		chart(f, "Throughput per link", "Gb/s, per second", t, n, rate, ns, faults);
		chart(f, "Queueing delay per message", "us, mean over each second", t, n, queue, ns,
		      faults);
	}
	free(t);
}

/* A rate for people: "100G", "unshaped". */
static void rate_text(char *buf, size_t len, double bps)
{
	if (bps <= 0)
		snprintf(buf, len, "unshaped");
	else if (bps >= 1e9)
		snprintf(buf, len, "%gG", bps / 1e9);
	else
		snprintf(buf, len, "%gM", bps / 1e6);
}

/* The configured rate of report link index i. */
static double link_rate(const struct vjson *links, uint64_t i)
{
	for (const struct vjson *l = links ? links->child : NULL; l; l = l->next)
		if (vjson_get_u64(l, "index") == i)
			return (double)vjson_get_u64(l, "rate_bps");
	return 0;
}

/* The leaf a node hangs from: its first HCA's first port's. */
static uint32_t node_leaf(const struct vfab_region *t, const struct vfab_node *nd)
{
	uint32_t h = nd->nhcas ? nd->hcas[0] : VFAB_MAX_HCAS;

	return h < t->nhcas ? t->hcas[h].ports[0].segment : 0;
}

/*
 * Nodes under their leaves, HCAs in their boxes with their ports' rates,
 * each port's link to its leaf, the leaves' uplinks to the spine with the
 * oversubscription they carry.
 */
static void topology(FILE *f, const struct vfab_region *t, const struct vjson *links)
{
	uint32_t nl = t->nleaves ? t->nleaves : 1, nn = t->nnodes;
	int width = (int)(nn * 140 > CHART_W ? nn * 140 : CHART_W), spine_y = 20, leaf_y = 110;
	int node_y = 230, height;
	double lx[VFAB_MAX_LEAVES];
	char rb[32];
	uint32_t order[VFAB_MAX_NODES], k = 0, maxh = 1;

	for (uint32_t i = 0; i < nn; i++)
		maxh = t->nodes[i].nhcas > maxh ? t->nodes[i].nhcas : maxh;
	height = node_y + 36 + 16 * (int)maxh;
	/* Nodes in leaf order, so that each leaf's nodes sit under it. */
	for (uint32_t l = 0; l < nl; l++)
		for (uint32_t i = 0; i < nn; i++)
			if (node_leaf(t, &t->nodes[i]) == l)
				order[k++] = i;
	for (uint32_t i = 0; i < nn && k < nn; i++)
		if (node_leaf(t, &t->nodes[i]) >= nl)
			order[k++] = i;
	fprintf(f,
		"<h2>Topology</h2>\n<svg class=\"topo\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" role=\"img\">\n",
		width, height, width, height);
	for (uint32_t l = 0; l < nl && l < VFAB_MAX_LEAVES; l++)
		lx[l] = width * (l + 0.5) / nl;
	if (t->spine.present) {
		fprintf(f,
			"<rect x=\"%d\" y=\"%d\" width=\"160\" height=\"34\" class=\"spine\"/>"
			"<text x=\"%d\" y=\"%d\" class=\"box\">spine</text>\n",
			width / 2 - 80, spine_y, width / 2, spine_y + 22);
		for (uint32_t l = 0; l < nl && l < VFAB_MAX_LEAVES; l++) {
			const struct vfab_leaf *lf = &t->leaves[l];
			double up = lf->uplink < t->nlinks ? link_rate(links, lf->uplink) : 0,
			       ports = 0;

			for (uint32_t h = 0; h < t->nhcas; h++)
				for (uint32_t p = 0; p < t->hcas[h].nports && p < VFAB_MAX_PORTS;
				     p++)
					if (t->hcas[h].ports[p].segment == l)
						ports +=
						    link_rate(links, t->hcas[h].ports[p].link_up);
			rate_text(rb, sizeof(rb), up);
			fprintf(f,
				"<line x1=\"%.1f\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"wire\"/>"
				"<text x=\"%.1f\" y=\"%d\" class=\"wlabel\">uplink %s",
				lx[l], leaf_y, width / 2, spine_y + 34, lx[l] + 6, leaf_y - 14, rb);
			if (up > 0 && ports > 0)
				fprintf(f, ", %.3g:1", ports / up);
			fprintf(f, "</text>\n");
		}
	}
	for (uint32_t l = 0; l < nl && l < VFAB_MAX_LEAVES; l++) {
		fprintf(f,
			"<rect x=\"%.1f\" y=\"%d\" width=\"120\" height=\"30\" class=\"leaf\"/>"
			"<text x=\"%.1f\" y=\"%d\" class=\"box\">",
			lx[l] - 60, leaf_y, lx[l], leaf_y + 20);
		esc(f, t->nleaves ? t->leaves[l].name : "leaf0");
		fprintf(f, "</text>\n");
	}
	for (uint32_t j = 0; j < nn; j++) {
		const struct vfab_node *nd = &t->nodes[order[j]];
		double x = width * (j + 0.5) / nn;

		for (uint32_t i = 0; i < nd->nhcas && i < 8; i++) {
			const struct vfab_hca *hc = &t->hcas[nd->hcas[i] % VFAB_MAX_HCAS];

			for (uint32_t p = 0; p < hc->nports && p < VFAB_MAX_PORTS; p++) {
				uint32_t l = hc->ports[p].segment;

				if (l < nl && l < VFAB_MAX_LEAVES)
					fprintf(f,
						"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
						"class=\"wire\"/>\n",
						x, node_y, lx[l], leaf_y + 30);
			}
		}
		fprintf(f,
			"<rect x=\"%.1f\" y=\"%d\" width=\"124\" height=\"%d\" class=\"node\"/>"
			"<text x=\"%.1f\" y=\"%d\" class=\"box\">",
			x - 62, node_y, 26 + 16 * (int)nd->nhcas, x, node_y + 18);
		esc(f, nd->id);
		fprintf(f, "</text>\n");
		for (uint32_t i = 0; i < nd->nhcas && i < 8; i++) {
			const struct vfab_hca *hc = &t->hcas[nd->hcas[i] % VFAB_MAX_HCAS];

			rate_text(rb, sizeof(rb), link_rate(links, hc->ports[0].link_up));
			fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"hca\">", x,
				node_y + 34 + 16 * (int)i);
			esc(f, hc->name);
			fprintf(f, " %s</text>\n", rb);
		}
	}
	fprintf(f, "</svg>\n");
}

static const char *const error_counters[] = {
    "link_downed",
    "out_of_sequence",
    "duplicate_request",
    "packet_seq_err",
    "local_ack_timeout_err",
    "rnr_nak_retry_err",
    "out_of_buffer",
    "req_cqe_error",
    "req_remote_access_errors",
    "req_remote_invalid_request",
    "req_transport_retries_exceeded",
    "req_rnr_retries_exceeded",
    "resp_cqe_error",
    "resp_local_length_error",
    "resp_remote_access_errors",
};

static void ports_table(FILE *f, const struct vjson *ports)
{
	fprintf(f, "<h2>Ports</h2>\n<table><tr><th>port</th><th>state</th><th>rate</th>"
		   "<th>sent</th><th>received</th><th>packets out / in</th><th>errors and "
		   "retries</th></tr>\n");
	for (const struct vjson *p = ports ? ports->child : NULL; p; p = p->next) {
		const struct vjson *c = vjson_get(p, "counters");
		bool any = false;

		fprintf(f, "<tr><td>");
		esc(f, vjson_get_str(p, "node", "?"));
		fprintf(f, "/");
		esc(f, vjson_get_str(p, "hca", "?"));
		fprintf(f, "/%llu</td><td>", (unsigned long long)vjson_get_u64(p, "port"));
		esc(f, vjson_get_str(p, "state", "?"));
		fprintf(f, "</td><td>");
		esc(f, vjson_get_str(p, "rate", ""));
		fprintf(f, "</td><td>%.3f GB</td><td>%.3f GB</td><td>%llu / %llu</td><td>",
			vjson_get_u64(c, "port_xmit_data") * 4 / 1e9,
			vjson_get_u64(c, "port_rcv_data") * 4 / 1e9,
			(unsigned long long)vjson_get_u64(c, "port_xmit_packets"),
			(unsigned long long)vjson_get_u64(c, "port_rcv_packets"));
		for (size_t i = 0; i < sizeof(error_counters) / sizeof(error_counters[0]); i++) {
			uint64_t v = vjson_get_u64(c, error_counters[i]);

			if (v)
				fprintf(f, "%s%s %llu", any ? ", " : "", error_counters[i],
					(unsigned long long)v);
			any |= v != 0;
		}
		fprintf(f, "%s</td></tr>\n", any ? "" : "none");
	}
	fprintf(f, "</table>\n");
}

static void links_table(FILE *f, const struct vjson *links)
{
	char rb[32];

	fprintf(f, "<h2>Links</h2>\n<table><tr><th>link</th><th>rate</th><th>latency</th>"
		   "<th>loss</th><th>bytes</th><th>messages</th><th>mean queueing</th>"
		   "<th>drops</th></tr>\n");
	for (const struct vjson *l = links ? links->child : NULL; l; l = l->next) {
		uint64_t msgs = vjson_get_u64(l, "msgs");

		rate_text(rb, sizeof(rb), (double)vjson_get_u64(l, "rate_bps"));
		fprintf(f, "<tr><td>");
		esc(f, vjson_get_str(l, "name", "?"));
		fprintf(f,
			"</td><td>%s</td><td>%.1f us</td><td>%.4f %%</td><td>%llu</td><td>%llu</td>"
			"<td>%.2f us</td><td>%llu</td></tr>\n",
			rb, vjson_get_u64(l, "latency_ns") / 1e3,
			vjson_get_u64(l, "loss_ppm") / 1e4,
			(unsigned long long)vjson_get_u64(l, "bytes"), (unsigned long long)msgs,
			msgs ? vjson_get_u64(l, "queue_ns") / 1e3 / (double)msgs : 0.0,
			(unsigned long long)vjson_get_u64(l, "drops"));
	}
	fprintf(f, "</table>\n");
}

static void faults_table(FILE *f, const struct vjson *report)
{
	const struct vjson *faults = vjson_get(report, "faults");
	static const char *const cols[] = {"time", "kind", "target", "params", "detail"};

	fprintf(f, "<h2>Faults and changes</h2>\n");
	if (!faults || !faults->n) {
		fprintf(f, "<p>None so far.</p>\n");
		return;
	}
	fprintf(f, "<table><tr><th>time</th><th>kind</th><th>target</th><th>parameters</th>"
		   "<th>what it did</th></tr>\n");
	for (const struct vjson *e = faults->child; e; e = e->next) {
		fprintf(f, "<tr>");
		for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
			fprintf(f, "<td>");
			esc(f, vjson_get_str(e, cols[i], ""));
			fprintf(f, "</td>");
		}
		fprintf(f, "</tr>\n");
	}
	fprintf(f, "</table>\n");
	if (vjson_get_u64(report, "faults_dropped"))
		fprintf(f, "<p>%llu older entries were not kept.</p>\n",
			(unsigned long long)vjson_get_u64(report, "faults_dropped"));
}

int vfab_report_html(FILE *f, const struct vjson *report, const struct vjson *history,
		     const struct vfab_region *t)
{
	const struct vjson *links = vjson_get(report, "links"), *qps = vjson_get(report, "qps");

	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>vfab "
		   "fabric ");
	esc(f, vjson_get_str(report, "fabric", "?"));
	fprintf(f, "</title>\n<style>\n"
		   "body{font:14px sans-serif;margin:24px;color:#222}h1{font-size:22px}"
		   "h2{font-size:17px;margin-top:28px}h3{font-size:14px;margin:16px 0 4px}\n"
		   "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;"
		   "text-align:left}th{background:#f2f2f2}\n"
		   ".grid{stroke:#e5e5e5}.axis{stroke:#444}.ytick{text-anchor:end;font-size:11px}"
		   ".xtick,.unit{text-anchor:middle;font-size:11px}\n"
		   ".series{fill:none;stroke-width:1.8}.fault{stroke:#b00;stroke-dasharray:4 3}"
		   ".flabel{fill:#b00;font-size:11px}\n"
		   ".legend span{margin-right:14px;font-size:12px}.legend i{display:inline-block;"
		   "width:12px;height:3px;margin-right:4px;vertical-align:middle}\n"
		   ".spine,.leaf,.node{stroke:#333;fill:#eef3fb}.node{fill:#f7f7f7}"
		   ".wire{stroke:#777}.box{text-anchor:middle;font-weight:bold}"
		   ".hca,.wlabel{font-size:11px}.hca{text-anchor:middle}\n"
		   "</style></head><body>\n<h1>vfab fabric ");
	esc(f, vjson_get_str(report, "fabric", "?"));
	fprintf(f, "</h1>\n<p>Report of ");
	esc(f, vjson_get_str(report, "time", "?"));
	fprintf(f, " (vfabd pid %llu, %llu open device contexts, %zu QPs).</p>\n",
		(unsigned long long)vjson_get_u64(report, "vfabd_pid"),
		(unsigned long long)vjson_get_u64(report, "clients"), qps ? qps->n : (size_t)0);
	topology(f, t, links);
	if (history)
		charts(f, history, vjson_get(report, "faults"));
	faults_table(f, report);
	ports_table(f, vjson_get(report, "ports"));
	links_table(f, links);
	fprintf(f, "</body></html>\n");
	return ferror(f) ? -EIO : 0;
}
