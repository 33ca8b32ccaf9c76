/* SPDX-License-Identifier: MIT */
/*
 * vfab run: one command in every node at once, as a cluster scheduler starts
 * one pod or one launcher per node, with the output of all nodes merged line
 * by line (run_mux.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/paths.h"
#include "config/config.h"
#include "netns/holder.h"
#include "netns/launch_files.h"
#include "netns/node_spawn.h"
#include "tools/cli.h"
#include "tools/run_mux.h"

#define DEFAULT_MASTER_PORT 29500
/* After the last node's command exited, output still arriving from what it left behind. */
#define DRAIN_MS 200
#define READ_CHUNK 65536
#define NENV 8

struct job {
	const char *node;
	pid_t pid;   /* its process group too */
	int running; /* not reaped yet */
	int fd;	     /* read end of its stdout+stderr pipe; -1 once closed */
	struct vfab_mux_stream mux;
	char env[NENV][128];
	char *envp[NENV + 1];
};

struct run {
	struct job *jobs;
	int njobs, running, open_fds;
	int stdout_gone; /* our reader went away: discard, as the nodes will */
	struct vfab_mux_out out;
	struct vfab_run_tally tally;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vfab [--fabric NAME] run [--nodes LIST] [--port P] [--] CMD [ARGS...]\n"
		"Runs CMD once in every node (or in the nodes of the comma-separated LIST, in\n"
		"that order), all at the same time, as a scheduler starts one launcher per node\n"
		"(e.g. torchrun). Each gets the caller's environment plus:\n"
		"  NODE_RANK, RANK    its index in the node list (0 ...)\n"
		"  NNODES, WORLD_SIZE the number of nodes\n"
		"  MASTER_ADDR        the first node's eth0 IPv4 address\n"
		"  MASTER_PORT        P (default %d)\n"
		"  VFAB_NODE, VFAB_FABRIC  the node id and the fabric name\n"
		"No shell is involved: use 'bash -c' to expand variables inside the nodes.\n"
		"stdin is /dev/null. stdout and stderr of every node come out on stdout, line by\n"
		"line, each line prefixed with '<node>: ' in the order they arrive (a program\n"
		"writing to a pipe may buffer: python needs -u or PYTHONUNBUFFERED=1 to show\n"
		"lines as they happen). Output of processes left running after CMD exits is\n"
		"read until they are quiet for %d ms. SIGINT, SIGTERM and SIGHUP are passed on\n"
		"to every node's process group; should vfab run die, each node's CMD gets\n"
		"SIGTERM.\n"
		"Exit: 0 when CMD succeeded in every node; else the status of the first node\n"
		"that failed (128+N for a death by signal N; 126/127: CMD could not be run),\n"
		"with a summary naming the failed nodes on stderr; 1 when the fabric is not up\n"
		"or a node cannot be entered (nothing is started then); 2 usage error.\n",
		DEFAULT_MASTER_PORT, DRAIN_MS);
}

/* The comma-separated node list, checked against the fabric; NULL: every node. */
static int select_nodes(const struct vfab_config *cfg, char *list, const char **out, int *n)
{
	char *save = NULL;

	*n = 0;
	if (!list) {
		for (uint32_t i = 0; i < cfg->nnodes; i++)
			out[(*n)++] = cfg->nodes[i].id;
		return 0;
	}
	for (char *id = strtok_r(list, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
		const char *found = NULL;

		for (uint32_t i = 0; i < cfg->nnodes && !found; i++)
			if (strcmp(cfg->nodes[i].id, id) == 0)
				found = cfg->nodes[i].id;
		if (!found) {
			fprintf(stderr, "vfab run: --nodes: the fabric has no node '%s'\n", id);
			return -EINVAL;
		}
		for (int k = 0; k < *n; k++)
			if (out[k] == found) {
				fprintf(stderr, "vfab run: --nodes: '%s' is listed twice\n", id);
				return -EINVAL;
			}
		if (*n >= VFAB_MAX_NODES)
			return -E2BIG;
		out[(*n)++] = found;
	}
	if (*n == 0) {
		fprintf(stderr, "vfab run: --nodes: empty list\n");
		return -EINVAL;
	}
	return 0;
}

static const struct vfab_cfg_node *config_node(const struct vfab_config *cfg, const char *id)
{
	for (uint32_t i = 0; i < cfg->nnodes; i++)
		if (strcmp(cfg->nodes[i].id, id) == 0)
			return &cfg->nodes[i];
	return NULL;
}

/* Every holder alive before anything starts: a launcher missing one node would hang. */
static int check_holders(const struct vfab_cli *cli, const char **nodes, int n)
{
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];
		pid_t holder = 0;

		if (vfab_holder_pid_path(path, sizeof(path), cli->rundir, nodes[i]) ||
		    vfab_read_pid_file(path, &holder) || !vfab_holder_is_alive(holder)) {
			fprintf(stderr,
				"vfab run: the holder of node %s is gone; restart the fabric "
				"(down, up)\n",
				nodes[i]);
			return VFAB_EXIT_FAIL;
		}
	}
	return VFAB_EXIT_OK;
}

static void set_env(struct job *j, int rank, int nnodes, const char *master, int port,
		    const char *fabric)
{
	int k = 0;

	snprintf(j->env[k++], sizeof(j->env[0]), "NODE_RANK=%d", rank);
	snprintf(j->env[k++], sizeof(j->env[0]), "RANK=%d", rank);
	snprintf(j->env[k++], sizeof(j->env[0]), "NNODES=%d", nnodes);
	snprintf(j->env[k++], sizeof(j->env[0]), "WORLD_SIZE=%d", nnodes);
	snprintf(j->env[k++], sizeof(j->env[0]), "MASTER_ADDR=%s", master);
	snprintf(j->env[k++], sizeof(j->env[0]), "MASTER_PORT=%d", port);
	snprintf(j->env[k++], sizeof(j->env[0]), "VFAB_NODE=%s", j->node);
	snprintf(j->env[k++], sizeof(j->env[0]), "VFAB_FABRIC=%s", fabric);
	for (int i = 0; i < NENV; i++)
		j->envp[i] = j->env[i];
	j->envp[NENV] = NULL;
}

/* All of it, or the reader is gone (EPIPE; SIGPIPE is ignored here). */
static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pfd = {.fd = fd, .events = POLLOUT};

			poll(&pfd, 1, -1);
			continue;
		}
		if (w < 0)
			return -errno;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

static void close_job_fd(struct run *r, struct job *j)
{
	if (j->fd < 0)
		return;
	close(j->fd);
	j->fd = -1;
	r->open_fds--;
}

static void flush_out(struct run *r)
{
	if (!r->stdout_gone && r->out.len && write_all(1, r->out.data, r->out.len)) {
		/* Like a pipeline: the nodes' next writes fail (SIGPIPE) as ours did. */
		r->stdout_gone = 1;
		for (int i = 0; i < r->njobs; i++)
			close_job_fd(r, &r->jobs[i]);
	}
	vfab_mux_out_reset(&r->out);
}

/* A line of our own in a node's stream, e.g. why its command did not start. */
static void node_note(struct run *r, struct job *j, const char *text)
{
	if (vfab_mux_feed(&j->mux, text, strlen(text), &r->out) == 0)
		flush_out(r);
}

static void start_job(struct run *r, struct job *j, const struct vfab_cli *cli, char **cmd)
{
	/* If vfab run is killed outright, the launchers still hear of it. */
	struct vfab_spawn_opts opts = {.new_pgrp = 1, .env_add = j->envp, .death_signal = SIGTERM};
	const char *failed = "start";
	char msg[512];
	int fds[2], ret;

	if (pipe2(fds, O_CLOEXEC)) {
		snprintf(msg, sizeof(msg), "vfab run: pipe: %s\n", strerror(errno));
		node_note(r, j, msg);
		vfab_run_tally_code(&r->tally, j->node, VFAB_EXIT_FAIL);
		return;
	}
	opts.out_fd = fds[1];
	ret = vfab_node_spawn(cli->rundir, j->node, cmd, &opts, &j->pid, &failed);
	close(fds[1]);
	if (ret) {
		close(fds[0]);
		snprintf(msg, sizeof(msg), "vfab run: %s %s: %s\n", failed,
			 strcmp(failed, "exec") == 0 ? cmd[0] : j->node, strerror(-ret));
		node_note(r, j, msg);
		vfab_run_tally_code(&r->tally, j->node,
				    strcmp(failed, "exec") ? VFAB_EXIT_FAIL
				    : ret == -ENOENT	   ? 127
							   : 126);
		return;
	}
	fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
	j->fd = fds[0];
	j->running = 1;
	r->running++;
	r->open_fds++;
}

static void forward(struct run *r, int sig)
{
	for (int i = 0; i < r->njobs; i++) {
		struct job *j = &r->jobs[i];

		/* A group whose leader was reaped may live on while its pipe is open. */
		if (j->pid > 0 && (j->running || j->fd >= 0))
			kill(-j->pid, sig);
	}
}

static void reap(struct run *r)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (int i = 0; i < r->njobs; i++) {
			struct job *j = &r->jobs[i];

			if (j->pid == pid && j->running) {
				j->running = 0;
				r->running--;
				vfab_run_tally_wait_status(&r->tally, j->node, status);
			}
		}
	}
}

static void handle_signals(struct run *r, int sfd)
{
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			reap(r);
		else
			forward(r, (int)si.ssi_signo);
	}
}

static void read_job(struct run *r, struct job *j)
{
	static char buf[READ_CHUNK];
	ssize_t n = read(j->fd, buf, sizeof(buf));

	if (n > 0) {
		if (vfab_mux_feed(&j->mux, buf, (size_t)n, &r->out))
			close_job_fd(r, j);
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	vfab_mux_finish(&j->mux, &r->out);
	close_job_fd(r, j);
}

static void event_loop(struct run *r, int sfd)
{
	struct pollfd *pfd = calloc((size_t)r->njobs + 1, sizeof(*pfd));
	int *owner = calloc((size_t)r->njobs + 1, sizeof(*owner));

	if (!pfd || !owner) {
		free(pfd);
		free(owner);
		return;
	}
	while (r->running > 0 || r->open_fds > 0) {
		int n = 0, ready;

		pfd[n++] = (struct pollfd){.fd = sfd, .events = POLLIN};
		for (int i = 0; i < r->njobs; i++) {
			if (r->jobs[i].fd < 0)
				continue;
			owner[n] = i;
			pfd[n++] = (struct pollfd){.fd = r->jobs[i].fd, .events = POLLIN};
		}
		ready = poll(pfd, (nfds_t)n, r->running > 0 ? -1 : DRAIN_MS);
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready == 0) {
			/* Every command is done and the leftovers went quiet. */
			for (int i = 0; i < r->njobs; i++) {
				vfab_mux_finish(&r->jobs[i].mux, &r->out);
				close_job_fd(r, &r->jobs[i]);
			}
			flush_out(r);
			break;
		}
		for (int k = 1; k < n; k++)
			if (pfd[k].revents)
				read_job(r, &r->jobs[owner[k]]);
		flush_out(r);
		if (pfd[0].revents)
			handle_signals(r, sfd);
	}
	free(pfd);
	free(owner);
}

static int run_all(const struct vfab_cli *cli, const struct vfab_config *cfg, const char **nodes,
		   int nnodes, int port, char **cmd)
{
	char master[64], summary[4096];
	struct run r = {0};
	sigset_t mask;
	int sfd, code;

	if (vfab_node_main_addr(config_node(cfg, nodes[0]), master, sizeof(master))) {
		fprintf(stderr, "vfab run: node %s has no address on eth0 for MASTER_ADDR\n",
			nodes[0]);
		return VFAB_EXIT_FAIL;
	}
	r.jobs = calloc((size_t)nnodes, sizeof(*r.jobs));
	if (!r.jobs)
		return VFAB_EXIT_FAIL;
	r.njobs = nnodes;
	vfab_run_tally_init(&r.tally);
	/* Signals arrive through the loop; forwarded once the children exist. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0) {
		fprintf(stderr, "vfab run: signalfd: %s\n", strerror(errno));
		free(r.jobs);
		return VFAB_EXIT_FAIL;
	}
	for (int i = 0; i < nnodes; i++) {
		struct job *j = &r.jobs[i];

		j->node = nodes[i];
		j->fd = -1;
		vfab_mux_stream_init(&j->mux, j->node);
		set_env(j, i, nnodes, master, port, cli->fabric);
		start_job(&r, j, cli, cmd);
	}
	event_loop(&r, sfd);
	close(sfd);
	if (vfab_run_tally_summary(&r.tally, summary, sizeof(summary)))
		fprintf(stderr, "%s\n", summary);
	code = vfab_run_tally_exit(&r.tally);
	for (int i = 0; i < nnodes; i++)
		vfab_mux_stream_free(&r.jobs[i].mux);
	vfab_mux_out_free(&r.out);
	free(r.jobs);
	return code;
}

int vfab_cmd_run(struct vfab_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
					     {"fabric", required_argument, NULL, 'f'},
					     {"nodes", required_argument, NULL, 'n'},
					     {"port", required_argument, NULL, 'p'},
					     {NULL, 0, NULL, 0}};
	const char *nodes[VFAB_MAX_NODES];
	char *list = NULL, *end;
	struct vfab_config cfg;
	int ch, nnodes, port = DEFAULT_MASTER_PORT, ret;
	long v;

	optind = 1;
	/* '+': the first non-option starts CMD, whose own options stay its own. */
	while ((ch = getopt_long(argc, argv, "+hf:n:p:", opts, NULL)) != -1) {
		switch (ch) {
		case 'n':
			list = optarg;
			break;
		case 'p':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v < 1 || v > 65535) {
				fprintf(stderr, "vfab run: --port: '%s' is not a port (1..65535)\n",
					optarg);
				return VFAB_EXIT_USAGE;
			}
			port = (int)v;
			break;
		default:
			ret = vfab_cli_common_opt(cli, ch, usage);
			if (ret != VFAB_CLI_GO_ON)
				return ret;
		}
	}
	ret = vfab_cli_need_operand("run", "CMD", argc, optind, usage);
	if (ret)
		return ret;
	ret = vfab_cli_load_config(cli, "run", &cfg);
	if (ret)
		return ret;
	if (select_nodes(&cfg, list, nodes, &nnodes))
		ret = VFAB_EXIT_USAGE;
	else if (nnodes == 0)
		ret = VFAB_EXIT_USAGE;
	if (ret == 0)
		ret = check_holders(cli, nodes, nnodes);
	if (ret == 0)
		ret = run_all(cli, &cfg, nodes, nnodes, port, argv + optind);
	vfab_config_free(&cfg);
	return ret;
}
