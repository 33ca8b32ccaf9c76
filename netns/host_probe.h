/* SPDX-License-Identifier: MIT */
/*
 * What this host lets vfab do, probed for real (`vfab doctor`, the GPU
 * machine's preflight): each probe tries the very operation a part of vfab
 * needs, in a child process that first enters namespaces of its own, so that
 * nothing it does reaches the host (no link, mount or address outside the
 * child's namespaces; the child's namespaces die with it).
 */
#ifndef VFAB_NETNS_HOST_PROBE_H
#define VFAB_NETNS_HOST_PROBE_H

#include <stdbool.h>
#include <stddef.h>

enum vfab_probe_verdict {
	VFAB_PROBE_OK,
	VFAB_PROBE_WARN, /* vfab works, with the limit the detail names */
	VFAB_PROBE_FAIL, /* the part named in `needed_by` cannot work here */
};

struct vfab_probe_result {
	const char *name;      /* "namespaces", "veth", ... */
	const char *needed_by; /* the part of vfab that needs it */
	enum vfab_probe_verdict verdict;
	char detail[256];
};

/* How many probes vfab_host_probe_run fills. */
#define VFAB_HOST_PROBES 16

/*
 * Runs every probe (a few hundred milliseconds in all) into out[], which
 * has room for VFAB_HOST_PROBES; returns how many it filled.
 */
size_t vfab_host_probe_run(struct vfab_probe_result *out);

/* "ok", "warn", "FAIL". */
const char *vfab_probe_verdict_name(enum vfab_probe_verdict v);

#endif /* VFAB_NETNS_HOST_PROBE_H */
