/* SPDX-License-Identifier: MIT */
/*
 * vfab report --html: one self-contained page (inline SVG and CSS, no
 * script, nothing fetched) of vfabd's REPORT and HISTORY documents
 * (docs/REPORT_SCHEMA.md): the topology with its rates and
 * oversubscription, per-link throughput and queueing delay over time with
 * the faults marked on them, the ports' counters and the fault log.
 */
#ifndef VFAB_TOOLS_REPORT_HTML_H
#define VFAB_TOOLS_REPORT_HTML_H

#include <stdio.h>

struct vjson;
struct vfab_region;

/*
 * Writes the page to f: report is REPORT's document, history HISTORY's
 * (NULL: no charts), t the CLI's own topology (names, leaves, which leaf
 * each port is on). 0, or -EIO when writing failed.
 */
int vfab_report_html(FILE *f, const struct vjson *report, const struct vjson *history,
		     const struct vfab_region *t);

#endif /* VFAB_TOOLS_REPORT_HTML_H */
