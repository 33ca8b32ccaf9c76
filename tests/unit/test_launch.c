/* SPDX-License-Identifier: MIT */
/*
 * `vfab run`'s bookkeeping (tools/run_mux.c): node output turned into
 * prefixed lines, wait statuses into one exit code and a summary; and the
 * launcher files a fabric's run dir gets (netns/launch_files.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "config/config.h"
#include "netns/launch_files.h"
#include "tools/run_mux.h"

/* waitpid statuses as the kernel encodes them. */
#define EXITED(code) ((code) << 8)
#define KILLED(sig) (sig)

static char *out_text(struct vfab_mux_out *out)
{
	char *s = malloc(out->len + 1);

	assert_non_null(s);
	memcpy(s, out->data, out->len);
	s[out->len] = '\0';
	return s;
}

static void expect_out(struct vfab_mux_out *out, const char *want)
{
	char *got = out_text(out);

	assert_string_equal(got, want);
	free(got);
	vfab_mux_out_reset(out);
}

static void feed(struct vfab_mux_stream *s, const char *text, struct vfab_mux_out *out)
{
	assert_int_equal(vfab_mux_feed(s, text, strlen(text), out), 0);
}

static void test_lines_are_prefixed(void **state)
{
	struct vfab_mux_stream s;
	struct vfab_mux_out out = {0};

	(void)state;
	assert_int_equal(vfab_mux_stream_init(&s, "node1"), 0);
	feed(&s, "one\ntwo\n\nthree", &out);
	/* Complete lines only; "three" waits for its newline. */
	expect_out(&out, "node1: one\nnode1: two\nnode1: \n");
	feed(&s, " and", &out);
	expect_out(&out, "");
	feed(&s, " more\nfour", &out);
	expect_out(&out, "node1: three and more\n");
	/* At the end a partial line goes out with the newline it lacked. */
	assert_int_equal(vfab_mux_finish(&s, &out), 0);
	expect_out(&out, "node1: four\n");
	assert_int_equal(vfab_mux_finish(&s, &out), 0);
	expect_out(&out, "");
	vfab_mux_stream_free(&s);
	vfab_mux_out_free(&out);
}

static void test_two_streams_keep_their_partials(void **state)
{
	struct vfab_mux_stream a, b;
	struct vfab_mux_out out = {0};

	(void)state;
	vfab_mux_stream_init(&a, "node0");
	vfab_mux_stream_init(&b, "node1");
	feed(&a, "hel", &out);
	feed(&b, "wor", &out);
	feed(&b, "ld\n", &out);
	feed(&a, "lo\n", &out);
	expect_out(&out, "node1: world\nnode0: hello\n");
	vfab_mux_stream_free(&a);
	vfab_mux_stream_free(&b);
	vfab_mux_out_free(&out);
}

static void test_long_lines_are_cut(void **state)
{
	size_t n = VFAB_MUX_LINE_MAX * 2 + 10;
	char *big = malloc(n + 2), *got;
	struct vfab_mux_stream s;
	struct vfab_mux_out out = {0};
	size_t lines = 0, longest = 0, cur = 0;

	(void)state;
	assert_non_null(big);
	memset(big, 'x', n);
	big[n] = '\n';
	big[n + 1] = '\0';
	vfab_mux_stream_init(&s, "n");
	/* In pieces, so the cut also happens inside the held partial line. */
	assert_int_equal(vfab_mux_feed(&s, big, 1000, &out), 0);
	assert_int_equal(vfab_mux_feed(&s, big + 1000, n + 1 - 1000, &out), 0);
	got = out_text(&out);
	for (char *p = got; *p; p++) {
		if (*p == '\n') {
			lines++;
			longest = cur > longest ? cur : longest;
			cur = 0;
		} else {
			cur++;
		}
	}
	assert_int_equal(lines, 3);
	assert_int_equal(longest, strlen("n: ") + VFAB_MUX_LINE_MAX);
	assert_int_equal(out.len, n + 3 * (strlen("n: ") + 1));
	free(got);
	vfab_mux_out_reset(&out);
	/* A line of exactly the limit is not cut. */
	big[VFAB_MUX_LINE_MAX] = '\n';
	assert_int_equal(vfab_mux_feed(&s, big, VFAB_MUX_LINE_MAX + 1, &out), 0);
	assert_int_equal(out.len, strlen("n: ") + VFAB_MUX_LINE_MAX + 1);
	free(big);
	vfab_mux_stream_free(&s);
	vfab_mux_out_free(&out);
}

static void test_exit_codes(void **state)
{
	(void)state;
	assert_int_equal(vfab_run_exit_code(EXITED(0)), 0);
	assert_int_equal(vfab_run_exit_code(EXITED(3)), 3);
	assert_int_equal(vfab_run_exit_code(KILLED(SIGKILL)), 128 + SIGKILL);
	assert_int_equal(vfab_run_exit_code(KILLED(SIGINT)), 130);
}

static void test_tally_all_ok(void **state)
{
	struct vfab_run_tally t;
	char buf[256] = "x";

	(void)state;
	vfab_run_tally_init(&t);
	vfab_run_tally_wait_status(&t, "node0", EXITED(0));
	vfab_run_tally_wait_status(&t, "node1", EXITED(0));
	assert_int_equal(vfab_run_tally_exit(&t), 0);
	assert_int_equal(vfab_run_tally_summary(&t, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
}

static void test_tally_first_failure_wins(void **state)
{
	struct vfab_run_tally t;
	char buf[256];

	(void)state;
	vfab_run_tally_init(&t);
	vfab_run_tally_wait_status(&t, "node2", EXITED(0));
	vfab_run_tally_wait_status(&t, "node3", EXITED(4));
	vfab_run_tally_wait_status(&t, "node1", KILLED(SIGTERM));
	vfab_run_tally_code(&t, "node0", 127);
	assert_int_equal(vfab_run_tally_exit(&t), 4);
	vfab_run_tally_summary(&t, buf, sizeof(buf));
	assert_string_equal(buf, "vfab run: 3 of 4 nodes failed: node3 (exit 4), node1 (signal 15: "
				 "Terminated), node0 (exit 127)");
	/* A death by signal first: 128 + signal, as a shell reports it. */
	vfab_run_tally_init(&t);
	vfab_run_tally_wait_status(&t, "node0", KILLED(SIGKILL));
	vfab_run_tally_wait_status(&t, "node1", EXITED(1));
	assert_int_equal(vfab_run_tally_exit(&t), 137);
	/* A short buffer truncates, and says how much it holds. */
	assert_int_equal(vfab_run_tally_summary(&t, buf, 10), 9);
	assert_string_equal(buf, "vfab run:");
}

static const char cluster_yaml[] = "version: 1\n"
				   "cluster: {name: tlaunch}\n"
				   "nodes:\n"
				   "  - id: gpu-a\n"
				   "    ranks: [0, 1]\n"
				   "    gpus: [{profile: h100}, {profile: h100}]\n"
				   "  - id: gpu-b\n"
				   "    ranks: [2, 3]\n"
				   "    gpus: [{profile: h100}, {profile: h100}]\n"
				   "    addresses: [\"fd00::7/64\", 198.18.0.9/24]\n";

struct files {
	struct vfab_config cfg;
	char dir[64];
};

static int setup_files(void **state)
{
	struct files *f = calloc(1, sizeof(*f));
	char err[512] = "";

	assert_non_null(f);
	if (vfab_config_load_string(cluster_yaml, "cluster.yaml", &f->cfg, err, sizeof(err))) {
		fprintf(stderr, "config: %s\n", err);
		return -1;
	}
	snprintf(f->dir, sizeof(f->dir), "/tmp/vfab-test-launch-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	*state = f;
	return 0;
}

static int teardown_files(void **state)
{
	struct files *f = *state;

	vfab_rm_rf(f->dir);
	vfab_config_free(&f->cfg);
	free(f);
	return 0;
}

static void expect_file(const char *dir, const char *rel, const char *want)
{
	char path[4096], got[8192];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	assert_true(vfab_read_file(path, got, sizeof(got)) >= 0);
	assert_string_equal(got, want);
}

static void test_main_addr(void **state)
{
	struct files *f = *state;
	char addr[64];

	assert_int_equal(vfab_node_main_addr(&f->cfg.nodes[0], addr, sizeof(addr)), 0);
	assert_string_equal(addr, "198.18.0.1");
	/* IPv4 first even when an IPv6 address is listed before it. */
	assert_int_equal(vfab_node_main_addr(&f->cfg.nodes[1], addr, sizeof(addr)), 0);
	assert_string_equal(addr, "198.18.0.9");
}

static void test_hostfile_and_hosts(void **state)
{
	struct files *f = *state;

	assert_int_equal(vfab_launch_files_write(f->dir, &f->cfg), 0);
	expect_file(f->dir, VFAB_HOSTFILE, "gpu-a slots=2\ngpu-b slots=2\n");
	expect_file(f->dir, VFAB_HOSTS_LIST, "gpu-a\ngpu-b\n");
}

static void test_ssh_configs(void **state)
{
	struct files *f = *state;
	char path[4096], text[8192], ssh_dir[128];

	assert_int_equal(vfab_ssh_client_config_write(f->dir, &f->cfg), 0);
	snprintf(path, sizeof(path), "%s/" VFAB_SSH_CONFIG, f->dir);
	assert_true(vfab_read_file(path, text, sizeof(text)) > 0);
	assert_non_null(strstr(text, "Host gpu-a gpu-a.vfab 198.18.0.1\n\tHostName 198.18.0.1\n"));
	assert_non_null(strstr(text, "Host gpu-b gpu-b.vfab 198.18.0.9\n\tHostName 198.18.0.9\n"));
	snprintf(path, sizeof(path), "\tIdentityFile %s/ssh/id_ed25519\n", f->dir);
	assert_non_null(strstr(text, path));
	assert_non_null(strstr(text, "\tUser root\n"));
	assert_non_null(strstr(text, "\tStrictHostKeyChecking no\n"));
	assert_non_null(strstr(text, "\tUserKnownHostsFile /dev/null\n"));

	snprintf(ssh_dir, sizeof(ssh_dir), "%s/ssh", f->dir);
	assert_int_equal(vfab_mkdir_p(ssh_dir, 0700), 0);
	assert_int_equal(vfab_sshd_config_write(f->dir, &f->cfg, 1, path, sizeof(path)), 0);
	assert_true(vfab_read_file(path, text, sizeof(text)) > 0);
	/* Every eth0 address of the node, in config order. */
	assert_non_null(strstr(text, "ListenAddress [fd00::7]:22\nListenAddress 198.18.0.9:22\n"));
	assert_non_null(strstr(text, "PermitRootLogin prohibit-password\n"));
	assert_non_null(strstr(text, "UsePAM no\n"));
	assert_non_null(strstr(text, "PasswordAuthentication no\n"));
	snprintf(path, sizeof(path), "PidFile %s/ssh/sshd-gpu-b.pid\n", f->dir);
	assert_non_null(strstr(text, path));
	snprintf(path, sizeof(path), "AuthorizedKeysFile %s/ssh/authorized_keys\n", f->dir);
	assert_non_null(strstr(text, path));
	assert_int_equal(vfab_sshd_config_write(f->dir, &f->cfg, 2, path, sizeof(path)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lines_are_prefixed),
	    cmocka_unit_test(test_two_streams_keep_their_partials),
	    cmocka_unit_test(test_long_lines_are_cut),
	    cmocka_unit_test(test_exit_codes),
	    cmocka_unit_test(test_tally_all_ok),
	    cmocka_unit_test(test_tally_first_failure_wins),
	    cmocka_unit_test_setup_teardown(test_main_addr, setup_files, teardown_files),
	    cmocka_unit_test_setup_teardown(test_hostfile_and_hosts, setup_files, teardown_files),
	    cmocka_unit_test_setup_teardown(test_ssh_configs, setup_files, teardown_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
