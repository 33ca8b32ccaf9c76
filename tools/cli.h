/* SPDX-License-Identifier: MIT */
/*
 * The vfab command line: one file per verb, sharing this context. Every verb
 * returns the process exit code: 0 ok, 1 runtime failure, 2 usage or config
 * error (exec returns the command's own status).
 */
#ifndef VFAB_TOOLS_CLI_H
#define VFAB_TOOLS_CLI_H

#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/paths.h"

#define VFAB_EXIT_OK 0
#define VFAB_EXIT_FAIL 1
#define VFAB_EXIT_USAGE 2

struct vfab_cli {
	char fabric[VFAB_FABRIC_NAME_MAX + 1];
	char rundir[256];      /* /run/vfab/<fabric> */
	char exedir[PATH_MAX]; /* where vfab (and vfabd) live */
};

/* Sets fabric and rundir; -EINVAL for a name vfabd would refuse. */
int vfab_cli_set_fabric(struct vfab_cli *cli, const char *name);

/*
 * cli_common.c: the parsing all verbs share. vfab_cli_common_opt handles
 * getopt's `ch` for --help, --fabric and getopt errors: VFAB_CLI_GO_ON to
 * keep parsing, else the exit code to return now. The operand checks print
 * the usage error and return VFAB_EXIT_USAGE, or VFAB_EXIT_OK when the
 * operands at argv[next] are as wanted.
 */
#define VFAB_CLI_GO_ON (-1)
int vfab_cli_common_opt(struct vfab_cli *cli, int ch, void (*usage_fn)(FILE *));
/* None left at argv[next]. */
int vfab_cli_no_more_operands(const char *verb, int argc, char **argv, int next,
			      void (*usage_fn)(FILE *));
/* At least one at argv[next], called `what` in the message. */
int vfab_cli_need_operand(const char *verb, const char *what, int argc, int next,
			  void (*usage_fn)(FILE *));

/* s as a JSON string on stdout (escaped: the output stays JSON whatever s holds). */
void vfab_cli_json_str(const char *s);
/*
 * A name field of the region (len bytes, maybe unterminated: any user may
 * write it) as text to print: at most out_len - 1 bytes, bytes other than
 * printable ASCII as '?', so it can neither overrun its field nor drive a
 * terminal.
 */
void vfab_cli_region_text(char *out, size_t out_len, const char *field, size_t len);

/* Verbs: argv[0] is the verb itself. */
int vfab_cmd_up(struct vfab_cli *cli, int argc, char **argv);
int vfab_cmd_down(struct vfab_cli *cli, int argc, char **argv);
int vfab_cmd_status(struct vfab_cli *cli, int argc, char **argv);
int vfab_cmd_exec(struct vfab_cli *cli, int argc, char **argv);
int vfab_cmd_shell(struct vfab_cli *cli, int argc, char **argv);
int vfab_cmd_run(struct vfab_cli *cli, int argc, char **argv);
int vfab_cmd_ssh(struct vfab_cli *cli, int argc, char **argv);
int vfab_cmd_doctor(struct vfab_cli *cli, int argc, char **argv);
/* Runtime control and observability (cmd_link.c ... cmd_report.c). */
int vfab_cmd_link(struct vfab_cli *cli, int argc, char **argv);
int vfab_cmd_addr(struct vfab_cli *cli, int argc, char **argv);
int vfab_cmd_shape(struct vfab_cli *cli, int argc, char **argv);
int vfab_cmd_fault(struct vfab_cli *cli, int argc, char **argv);
int vfab_cmd_stats(struct vfab_cli *cli, int argc, char **argv);
int vfab_cmd_report(struct vfab_cli *cli, int argc, char **argv);
int vfab_cmd_trace(struct vfab_cli *cli, int argc, char **argv);
int vfab_cmd_capture(struct vfab_cli *cli, int argc, char **argv);
/*
 * cmd_report.c: vfabd's REPORT document into *out (malloc'd, *out_len
 * bytes), 0; or -errno, said on stderr as `vfab VERB: ...` (vfabd's
 * refusal, or no answer).
 */
int vfab_report_fetch(const struct vfab_cli *cli, const char *verb, char **out, size_t *out_len);
/*
 * Shared by link, shape and fault (cmd_link.c): --help/--fabric parsing
 * (returns the first operand's index, or -1 with *exit_code set), and one
 * vfabd request whose reply becomes the output and exit code.
 */
int vfab_ops_options(struct vfab_cli *cli, int argc, char **argv, void (*usage_fn)(FILE *),
		     int *exit_code);
int vfab_ops_request(const struct vfab_cli *cli, const char *verb, const char *line);

/*
 * cli_node.c, for verbs working inside nodes. Each prints its own message
 * and returns the exit code to use (VFAB_EXIT_OK when all is well).
 */
/* The fabric is up and has `node`. */
int vfab_cli_check_node(const struct vfab_cli *cli, const char *verb, const char *node);
/* vfab_cli_check_node, then this (single-threaded) process joins the node. */
int vfab_cli_enter(const struct vfab_cli *cli, const char *verb, const char *node);
struct vfab_config;
/* The config the fabric was brought up with (its run dir copy); free it after. */
int vfab_cli_load_config(const struct vfab_cli *cli, const char *verb, struct vfab_config *cfg);
struct vfab_region;
/*
 * The CLI's own topology of the fabric (vfab_topology_private from the run
 * dir's config): the names, indices and counts of nodes, HCAs and ports that
 * the CLI, often run as root, may use in paths or act on. The shared region
 * is every user's to write: read it only for values to print or compare.
 * Free with vfab_topology_private_free. verb NULL: no message on failure.
 */
int vfab_cli_topology(const struct vfab_cli *cli, const char *verb, struct vfab_region **t);

/*
 * Everything `down` does, also used by `up` to roll back: stop vfabd
 * (`vfabd_pid` > 0: a daemon this process started, which it also reaps),
 * tear the sandboxes down, remove region and run dir. 0 or -errno; prints
 * what failed unless `quiet`.
 */
int vfab_fabric_down(const struct vfab_cli *cli, pid_t vfabd_pid, int quiet);

struct vfab_port;
/*
 * Index of the port's IPv4-mapped RoCE v2 GID (the one NCCL picks), or -1; on
 * a shared HCA the one of node `node`'s own net1, not another pod's.
 */
int vfab_port_ipv4_v2_gid(const struct vfab_port *p, uint32_t node);

/* vfabd_control.c: the daemon's life cycle seen from the CLI. */
int vfab_vfabd_start(const struct vfab_cli *cli, const char *exe, const char *config, pid_t *pid);
/* Waits until the region is ready and STATUS answers; err gets the log tail. */
int vfab_vfabd_wait_ready(const struct vfab_cli *cli, pid_t pid, int timeout_ms, char *err,
			  size_t errlen);
/* SHUTDOWN, or kill the recorded (and verified) pid when it does not answer in time. */
int vfab_vfabd_stop(const struct vfab_cli *cli, pid_t started_pid);
/* One request line, one reply line, within timeout_ms. Length or -errno. */
int vfab_vfabd_request(const struct vfab_cli *cli, const char *line, char *reply, size_t len,
		       int timeout_ms);
/* Pid from vfabd.pid when that process is really this fabric's vfabd, else 0. */
pid_t vfab_vfabd_pid(const struct vfab_cli *cli);

#endif /* VFAB_TOOLS_CLI_H */
