/* SPDX-License-Identifier: MIT */
/*
 * qp_many [-d DEVICE] N: many objects on one HCA (tests/integration/limits.sh,
 * issue 27 Medium #6). Prints the device's limits as ibv_query_device reports
 * them, then makes N RC QPs, each with its own send and receive CQ, and moves
 * every one to INIT, as a job with N connections does; says "made N" and
 * keeps them until its standard input closes, then destroys them all. Exit 0
 * when all N were made and destroyed; 1 with the errno of the first failure.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *want = argc == 4 && !strcmp(argv[1], "-d") ? argv[2] : NULL;
	struct ibv_device **list = ibv_get_device_list(NULL), *dev = NULL;
	long n = strtol(argv[argc - 1], NULL, 10);
	struct ibv_device_attr attr;
	struct ibv_context *ctx;
	struct ibv_qp **qps;
	struct ibv_cq **cqs;
	struct ibv_pd *pd;
	char buf[64];
	long made = 0;
	int rc = 0;

	if (argc != 2 && !want) {
		fprintf(stderr, "usage: qp_many [-d DEVICE] N\n");
		return 2;
	}
	for (int i = 0; list && list[i] && !dev; i++)
		if (!want || !strcmp(ibv_get_device_name(list[i]), want))
			dev = list[i];
	ctx = dev ? ibv_open_device(dev) : NULL;
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	qps = calloc((size_t)n + 1, sizeof(*qps));
	cqs = calloc((size_t)n + 1, sizeof(*cqs));
	if (!pd || !qps || !cqs || ibv_query_device(ctx, &attr)) {
		fprintf(stderr, "qp_many: no device or PD: %s\n", strerror(errno));
		return 1;
	}
	printf("%s max_qp=%d max_cq=%d max_mr=%d max_pd=%d max_srq=%d\n", ibv_get_device_name(dev),
	       attr.max_qp, attr.max_cq, attr.max_mr, attr.max_pd, attr.max_srq);
	for (; made < n; made++) {
		struct ibv_qp_init_attr qa = {
		    .qp_type = IBV_QPT_RC,
		    .cap = {.max_send_wr = 4,
			    .max_recv_wr = 4,
			    .max_send_sge = 1,
			    .max_recv_sge = 1},
		};
		struct ibv_qp_attr init = {.qp_state = IBV_QPS_INIT,
					   .port_num = 1,
					   .qp_access_flags = IBV_ACCESS_REMOTE_WRITE};

		cqs[made] = ibv_create_cq(ctx, 8, NULL, NULL, 0);
		qa.send_cq = qa.recv_cq = cqs[made];
		qps[made] = cqs[made] ? ibv_create_qp(pd, &qa) : NULL;
		if (!qps[made] || ibv_modify_qp(qps[made], &init,
						IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						    IBV_QP_ACCESS_FLAGS)) {
			fprintf(stderr, "qp_many: QP %ld: %s\n", made + 1, strerror(errno));
			rc = 1;
			break;
		}
	}
	printf("made %ld\n", made);
	fflush(stdout);
	while (!rc && read(0, buf, sizeof(buf)) > 0)
		;
	for (long i = 0; i <= made && i < n; i++) {
		if (qps[i] && ibv_destroy_qp(qps[i]))
			rc = 1;
		if (cqs[i] && ibv_destroy_cq(cqs[i]))
			rc = 1;
	}
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return rc;
}
