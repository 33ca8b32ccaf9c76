/* SPDX-License-Identifier: MIT */
/*
 * The bookkeeping of `vfab run`, apart from processes and descriptors so it
 * can be tested alone: turning each node's byte stream into lines prefixed
 * with the node id (as pdsh prints them), and turning the nodes' exit
 * statuses into one exit code and a summary.
 */
#ifndef VFAB_TOOLS_RUN_MUX_H
#define VFAB_TOOLS_RUN_MUX_H

#include <stddef.h>

#include "fabric/region.h"

/* A line longer than this is cut into several prefixed lines. */
#define VFAB_MUX_LINE_MAX 65536

/* Output collected for one write(2). */
struct vfab_mux_out {
	char *data;
	size_t len, cap;
};

/* One node's stream: its prefix and the partial line not yet printed. */
struct vfab_mux_stream {
	char prefix[VFAB_NAME_MAX + 3]; /* "<node>: " */
	size_t prefix_len;
	char *partial;
	size_t partial_len;
};

int vfab_mux_stream_init(struct vfab_mux_stream *s, const char *node);
void vfab_mux_stream_free(struct vfab_mux_stream *s);

/*
 * Bytes read from the node: every completed line goes to `out` with the
 * prefix; the rest waits for its newline. 0 or -ENOMEM.
 */
int vfab_mux_feed(struct vfab_mux_stream *s, const char *data, size_t len,
		  struct vfab_mux_out *out);

/* End of the stream: a partial last line goes out with a newline added. */
int vfab_mux_finish(struct vfab_mux_stream *s, struct vfab_mux_out *out);

void vfab_mux_out_reset(struct vfab_mux_out *out);
void vfab_mux_out_free(struct vfab_mux_out *out);

/* The exit code a shell would give for a waitpid status: the code, or 128 + signal. */
int vfab_run_exit_code(int wstatus);

/* How the nodes ended, in the order they ended. */
struct vfab_run_tally {
	int nnodes; /* started, or failed to start */
	int nfailed;
	int first_failure; /* exit code of the first node that failed; 0 if none */
	struct {
		char node[VFAB_NAME_MAX];
		int code;   /* exit code (vfab_run_exit_code) */
		int signal; /* killed by this signal, else 0 */
	} failed[VFAB_MAX_NODES];
};

void vfab_run_tally_init(struct vfab_run_tally *t);
/* A node ended with this waitpid status. */
void vfab_run_tally_wait_status(struct vfab_run_tally *t, const char *node, int wstatus);
/* A node ended with this exit code without a wait status (it could not be started). */
void vfab_run_tally_code(struct vfab_run_tally *t, const char *node, int code);

/* What `vfab run` exits with: 0 when every node succeeded, else the first failure's code. */
int vfab_run_tally_exit(const struct vfab_run_tally *t);

/*
 * "vfab run: 2 of 4 nodes failed: node3 (exit 1), node1 (signal 9: Killed)"
 * in order of failure; "" when none failed. Returns the length.
 */
size_t vfab_run_tally_summary(const struct vfab_run_tally *t, char *buf, size_t len);

#endif /* VFAB_TOOLS_RUN_MUX_H */
