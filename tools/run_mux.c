/* SPDX-License-Identifier: MIT */
#include "tools/run_mux.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

int vfab_mux_stream_init(struct vfab_mux_stream *s, const char *node)
{
	int n;

	memset(s, 0, sizeof(*s));
	n = snprintf(s->prefix, sizeof(s->prefix), "%s: ", node);
	if (n < 0 || (size_t)n >= sizeof(s->prefix))
		return -ENAMETOOLONG;
	s->prefix_len = (size_t)n;
	return 0;
}

void vfab_mux_stream_free(struct vfab_mux_stream *s)
{
	free(s->partial);
	s->partial = NULL;
	s->partial_len = 0;
}

static int out_append(struct vfab_mux_out *out, const char *data, size_t len)
{
	if (out->len + len > out->cap) {
		size_t cap = out->cap ? out->cap : 4096;
		char *nd;

		while (cap < out->len + len)
			cap *= 2;
		nd = realloc(out->data, cap);
		if (!nd)
			return -ENOMEM;
		out->data = nd;
		out->cap = cap;
	}
	memcpy(out->data + out->len, data, len);
	out->len += len;
	return 0;
}

/* One whole output line: prefix, what was waiting, `len` more bytes, newline. */
static int emit_line(struct vfab_mux_stream *s, const char *data, size_t len,
		     struct vfab_mux_out *out)
{
	int ret = out_append(out, s->prefix, s->prefix_len);

	if (ret == 0 && s->partial_len)
		ret = out_append(out, s->partial, s->partial_len);
	if (ret == 0)
		ret = out_append(out, data, len);
	if (ret == 0)
		ret = out_append(out, "\n", 1);
	s->partial_len = 0;
	return ret;
}

int vfab_mux_feed(struct vfab_mux_stream *s, const char *data, size_t len, struct vfab_mux_out *out)
{
	while (len > 0) {
		size_t room = VFAB_MUX_LINE_MAX - s->partial_len;
		/* A newline right after `room` bytes still ends a line that fits. */
		size_t scan = len < room + 1 ? len : room + 1;
		const char *nl = memchr(data, '\n', scan);
		int ret;

		if (nl) {
			size_t n = (size_t)(nl - data);

			ret = emit_line(s, data, n, out);
			data += n + 1;
			len -= n + 1;
		} else if (len > room) {
			ret = emit_line(s, data, room, out);
			data += room;
			len -= room;
		} else {
			if (!s->partial) {
				s->partial = malloc(VFAB_MUX_LINE_MAX);
				if (!s->partial)
					return -ENOMEM;
			}
			memcpy(s->partial + s->partial_len, data, len);
			s->partial_len += len;
			return 0;
		}
		if (ret)
			return ret;
	}
	return 0;
}

int vfab_mux_finish(struct vfab_mux_stream *s, struct vfab_mux_out *out)
{
	return s->partial_len ? emit_line(s, "", 0, out) : 0;
}

void vfab_mux_out_reset(struct vfab_mux_out *out)
{
	out->len = 0;
}

void vfab_mux_out_free(struct vfab_mux_out *out)
{
	free(out->data);
	*out = (struct vfab_mux_out){0};
}

int vfab_run_exit_code(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 1;
}

void vfab_run_tally_init(struct vfab_run_tally *t)
{
	memset(t, 0, sizeof(*t));
}

static void tally(struct vfab_run_tally *t, const char *node, int code, int sig)
{
	t->nnodes++;
	if (code == 0)
		return;
	if (t->nfailed == 0)
		t->first_failure = code;
	if (t->nfailed < VFAB_MAX_NODES) {
		snprintf(t->failed[t->nfailed].node, sizeof(t->failed[0].node), "%s", node);
		t->failed[t->nfailed].code = code;
		t->failed[t->nfailed].signal = sig;
	}
	t->nfailed++;
}

void vfab_run_tally_wait_status(struct vfab_run_tally *t, const char *node, int wstatus)
{
	tally(t, node, vfab_run_exit_code(wstatus), WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0);
}

void vfab_run_tally_code(struct vfab_run_tally *t, const char *node, int code)
{
	tally(t, node, code, 0);
}

int vfab_run_tally_exit(const struct vfab_run_tally *t)
{
	return t->nfailed ? t->first_failure : 0;
}

size_t vfab_run_tally_summary(const struct vfab_run_tally *t, char *buf, size_t len)
{
	size_t used = 0;
	int listed = t->nfailed < VFAB_MAX_NODES ? t->nfailed : VFAB_MAX_NODES;

	if (len == 0)
		return 0;
	buf[0] = '\0';
	if (t->nfailed == 0)
		return 0;
#define PUT(...)                                                                                   \
	do {                                                                                       \
		if (used < len) {                                                                  \
			int n_ = snprintf(buf + used, len - used, __VA_ARGS__);                    \
			used += n_ > 0 ? (size_t)n_ : 0;                                           \
		}                                                                                  \
	} while (0)
	PUT("vfab run: %d of %d node%s failed:", t->nfailed, t->nnodes, t->nnodes == 1 ? "" : "s");
	for (int i = 0; i < listed; i++) {
		if (t->failed[i].signal)
			PUT("%s %s (signal %d: %s)", i ? "," : "", t->failed[i].node,
			    t->failed[i].signal, strsignal(t->failed[i].signal));
		else
			PUT("%s %s (exit %d)", i ? "," : "", t->failed[i].node, t->failed[i].code);
	}
#undef PUT
	return used < len ? used : len - 1;
}
