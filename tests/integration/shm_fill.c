/* SPDX-License-Identifier: MIT */
/*
 * shm_fill [-d DEVICE]: verbs on a fabric whose /dev/shm has little room
 * left (tests/integration/shm_full.sh). Creates CQs of the largest size the
 * device allows until ibv_create_cq fails, then QPs with the largest
 * receive queue until ibv_create_qp fails, and says how each failed. Exit 0 when both failed with
 * ENOMEM after at least one CQ was made; 1 otherwise. A SIGBUS (what a full
 * /dev/shm gave before the ring pool reserved its pages) kills it instead.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_CQS 4096

int main(int argc, char **argv)
{
	const char *want = argc == 3 && !strcmp(argv[1], "-d") ? argv[2] : NULL;
	struct ibv_device **list = ibv_get_device_list(NULL), *dev = NULL;
	struct ibv_cq *cqs[MAX_CQS], *small;
	struct ibv_device_attr attr;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int ncq = 0, made, cq_err = 0, qp_err = 0, cqe;

	for (int i = 0; list && list[i] && !dev; i++)
		if (!want || !strcmp(ibv_get_device_name(list[i]), want))
			dev = list[i];
	ctx = dev ? ibv_open_device(dev) : NULL;
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	small = ctx ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	if (!pd || !small || ibv_query_device(ctx, &attr)) {
		fprintf(stderr, "shm_fill: no device, PD or first CQ: %s\n", strerror(errno));
		return 1;
	}
	cqe = attr.max_cqe < 4096 ? attr.max_cqe : 4096; /* rings of 8192 CQEs */
	while (ncq < MAX_CQS) {
		cqs[ncq] = ibv_create_cq(ctx, cqe, NULL, NULL, 0);
		if (!cqs[ncq]) {
			cq_err = errno;
			break;
		}
		ncq++;
	}
	printf("%d CQs of %d entries, then ibv_create_cq: %s\n", ncq, cqe, strerror(cq_err));
	struct ibv_qp_init_attr qa = {
	    .send_cq = small,
	    .recv_cq = small,
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = 1,
		    .max_recv_wr = (uint32_t)(attr.max_qp_wr < 16384 ? attr.max_qp_wr : 16384),
		    .max_send_sge = 1,
		    .max_recv_sge = 1},
	};
	/* The room the CQs left may still hold a smaller ring or two. */
	struct ibv_qp *qps[MAX_CQS];
	int nqp = 0;

	while (nqp < MAX_CQS && (qps[nqp] = ibv_create_qp(pd, &qa)))
		nqp++;
	qp_err = nqp < MAX_CQS ? errno : 0;
	printf("%d QPs of %u receive WRs, then ibv_create_qp: %s\n", nqp, qa.cap.max_recv_wr,
	       strerror(qp_err));
	while (nqp > 0)
		ibv_destroy_qp(qps[--nqp]);
	made = ncq;
	while (ncq > 0)
		ibv_destroy_cq(cqs[--ncq]);
	ibv_destroy_cq(small);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return made > 0 && cq_err == ENOMEM && qp_err == ENOMEM ? 0 : 1;
}
