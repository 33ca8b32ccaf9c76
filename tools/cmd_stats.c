/* SPDX-License-Identifier: MIT */
/*
 * vfab stats: a refreshing table of per-link throughput, queueing and drops,
 * from the link counters in the fabric's region (no daemon involved: the
 * provider counts on the data path, this only reads).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "daemon/vfabd_json.h"
#include "fabric/region.h"
#include "tools/cli.h"

#define STATS_MAX_INTERVAL_S 3600.0

struct link_snap {
	uint64_t bytes, msgs, queue_ns, drops;
};

struct stats_opts {
	double interval;
	long count; /* 0: until interrupted */
	int json, busy;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vfab [--fabric NAME] stats [--interval S] [--count N] [--busy] [--json]\n"
		"Every S seconds (default 1) prints, per link direction of the fabric:\n"
		"  RATE     configured rate (Gb/s; '-' unshaped), LAT its one-way latency\n"
		"  Gb/s     payload throughput over the interval, MSG/s messages per second\n"
		"  QUEUE    mean queueing delay per message in the interval (us), DROPS lost\n"
		"           attempts in the interval\n"
		"Reads the region directly (no vfabd needed). --count N stops after N\n"
		"tables (default: until interrupted), --busy leaves out idle links,\n"
		"--json prints one JSON object per interval instead of a table.\n"
		"Exit: 0 ok, 1 fabric not up, 2 usage error.\n");
}

static const char *kind_name(uint32_t kind)
{
	static const char *const names[] = {"?",       "node_up",   "node_down",
					    "leaf_up", "leaf_down", "loopback"};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

static double now_s(void)
{
	return (double)vfab_mono_ns() / 1e9;
}

/* Every user's counters: the shards this process may read are mapped first (root: all). */
static void snap(struct vfab_region *r, struct link_snap *s)
{
	vfab_region_map_shards(r);
	for (uint32_t i = 0; i < r->nlinks && i < VFAB_MAX_LINKS; i++) {
		struct vfab_link_clock l;

		vfab_link_stats_sum(r, i, &l);
		s[i] = (struct link_snap){l.bytes, l.msgs, l.queue_ns, l.drops};
	}
}

static void print_json(const struct vfab_cli *cli, const struct vfab_region *r,
		       const struct link_snap *a, const struct link_snap *b, double dt)
{
	struct vjson_buf j = {0};
	struct timespec ts;
	int first = 1;

	clock_gettime(CLOCK_REALTIME, &ts);
	vjson_text(&j, "{\"fabric\":");
	vjson_str(&j, cli->fabric);
	vjson_printf(&j, ",\"unix_ms\":%lld,\"interval_s\":%.3f,\"links\":[",
		     (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, dt);
	for (uint32_t i = 0; i < r->nlinks && i < VFAB_MAX_LINKS; i++) {
		const struct vfab_link *l = &r->links[i];
		uint64_t msgs = b[i].msgs - a[i].msgs;

		char name[VFAB_NAME_MAX];

		if (!l->in_use)
			continue;
		vfab_cli_region_text(name, sizeof(name), l->name, sizeof(l->name));
		vjson_text(&j, first ? "{\"name\":" : ",{\"name\":");
		vjson_str(&j, name);
		vjson_printf(&j,
			     ",\"kind\":\"%s\",\"rate_bps\":%llu,\"latency_ns\":%u,\"bps\":%.0f,"
			     "\"msgs_per_s\":%.1f,\"queue_ns_avg\":%.0f,\"drops\":%llu}",
			     kind_name(l->kind),
			     (unsigned long long)__atomic_load_n(&l->rate_bps, __ATOMIC_RELAXED),
			     __atomic_load_n(&l->latency_ns, __ATOMIC_RELAXED),
			     (double)(b[i].bytes - a[i].bytes) * 8 / dt, (double)msgs / dt,
			     msgs ? (double)(b[i].queue_ns - a[i].queue_ns) / (double)msgs : 0.0,
			     (unsigned long long)(b[i].drops - a[i].drops));
		first = 0;
	}
	vjson_text(&j, "]}\n");
	if (!j.oom)
		fputs(j.p, stdout);
	free(j.p);
}

static void print_table(const struct vfab_cli *cli, const struct vfab_region *r,
			const struct link_snap *a, const struct link_snap *b, double dt, int busy)
{
	time_t t = time(NULL);
	char when[32], rate[16];
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	printf("fabric %s  %s  interval %.2f s\n", cli->fabric, when, dt);
	printf("%-28s %-9s %8s %8s %9s %10s %9s %7s\n", "LINK", "KIND", "RATE", "LAT(us)", "Gb/s",
	       "MSG/s", "QUEUE(us)", "DROPS");
	for (uint32_t i = 0; i < r->nlinks && i < VFAB_MAX_LINKS; i++) {
		const struct vfab_link *l = &r->links[i];
		uint64_t msgs = b[i].msgs - a[i].msgs;
		uint64_t rate_bps = __atomic_load_n(&l->rate_bps, __ATOMIC_RELAXED);
		char name[VFAB_NAME_MAX];

		if (!l->in_use || (busy && !msgs && b[i].drops == a[i].drops))
			continue;
		vfab_cli_region_text(name, sizeof(name), l->name, sizeof(l->name));
		if (rate_bps)
			snprintf(rate, sizeof(rate), "%.6g", rate_bps / 1e9);
		else
			snprintf(rate, sizeof(rate), "-");
		printf("%-28s %-9s %8s %8.2f %9.3f %10.0f %9.2f %7llu\n", name, kind_name(l->kind),
		       rate, __atomic_load_n(&l->latency_ns, __ATOMIC_RELAXED) / 1e3,
		       (double)(b[i].bytes - a[i].bytes) * 8 / dt / 1e9, (double)msgs / dt,
		       msgs ? (double)(b[i].queue_ns - a[i].queue_ns) / (double)msgs / 1e3 : 0.0,
		       (unsigned long long)(b[i].drops - a[i].drops));
	}
	fflush(stdout);
}

/* 0 to go on, or -1 with *exit_code set (help, usage error). */
static int parse(struct vfab_cli *cli, int argc, char **argv, struct stats_opts *o, int *exit_code)
{
	static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
					     {"fabric", required_argument, NULL, 'f'},
					     {"interval", required_argument, NULL, 'i'},
					     {"count", required_argument, NULL, 'c'},
					     {"json", no_argument, NULL, 'j'},
					     {"busy", no_argument, NULL, 'b'},
					     {NULL, 0, NULL, 0}};
	char *end;
	int ch;

	*o = (struct stats_opts){.interval = 1.0};
	optind = 1;
	while ((ch = getopt_long(argc, argv, "+hf:i:c:jb", opts, NULL)) != -1) {
		switch (ch) {
		case 'i':
			o->interval = strtod(optarg, &end);
			if (*end || !isfinite(o->interval) || o->interval < 0.01 ||
			    o->interval > STATS_MAX_INTERVAL_S) {
				fprintf(stderr, "vfab stats: --interval: seconds in [0.01, %g]\n",
					STATS_MAX_INTERVAL_S);
				goto bad;
			}
			break;
		case 'c':
			errno = 0;
			o->count = strtol(optarg, &end, 10);
			if (*end || errno || o->count < 1) {
				fprintf(stderr, "vfab stats: --count: a number >= 1\n");
				goto bad;
			}
			break;
		case 'j':
			o->json = 1;
			break;
		case 'b':
			o->busy = 1;
			break;
		default:
			*exit_code = vfab_cli_common_opt(cli, ch, usage);
			if (*exit_code != VFAB_CLI_GO_ON)
				return -1;
		}
	}
	*exit_code = vfab_cli_no_more_operands("stats", argc, argv, optind, usage);
	return *exit_code ? -1 : 0;
bad:
	*exit_code = VFAB_EXIT_USAGE;
	return -1;
}

int vfab_cmd_stats(struct vfab_cli *cli, int argc, char **argv)
{
	static struct link_snap a[VFAB_MAX_LINKS], b[VFAB_MAX_LINKS];
	struct vfab_region *r;
	struct stats_opts o;
	char path[256];
	int rc, clear;
	double t0;

	if (parse(cli, argc, argv, &o, &rc))
		return rc;
	rc = vfab_region_path(cli->fabric, path, sizeof(path));
	if (rc >= 0)
		rc = vfab_region_open(path, &r);
	if (rc < 0) {
		fprintf(stderr, "vfab stats: fabric %s is not up (%s: %s)\n", cli->fabric, path,
			strerror(-rc));
		return VFAB_EXIT_FAIL;
	}
	clear = !o.json && isatty(STDOUT_FILENO) && o.count != 1;
	snap(r, a);
	t0 = now_s();
	for (long n = 0; !o.count || n < o.count; n++) {
		struct timespec ts = {(time_t)o.interval,
				      (long)((o.interval - (double)(time_t)o.interval) * 1e9)};
		double t1;

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		snap(r, b);
		t1 = now_s();
		if (clear)
			printf("\033[H\033[2J");
		else if (n && !o.json)
			printf("\n");
		if (o.json)
			print_json(cli, r, a, b, t1 - t0);
		else
			print_table(cli, r, a, b, t1 - t0, o.busy);
		fflush(stdout);
		memcpy(a, b, sizeof(a));
		t0 = t1;
	}
	vfab_region_close(r);
	return VFAB_EXIT_OK;
}
