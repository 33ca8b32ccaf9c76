/* SPDX-License-Identifier: MIT */
/*
 * verbs_errors: ibv_rereg_mr. Keys stay (as a ConnectX modifies its mkey in
 * place); a new translation moves where remote WRITEs land; dropping remote
 * write makes them fail; a rereg onto unmapped memory fails with
 * IBV_REREG_MR_ERR_CMD and leaves the registration working.
 */
#include "verbs_harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

static void write_to(struct side *a, struct side *b, uint64_t raddr, uint32_t rkey, int marker)
{
	struct ibv_sge g = sge_of(a, 0, 8);

	a->buf[0] = (char)marker;
	post(a, IBV_WR_RDMA_WRITE, &g, 1, raddr, rkey, IBV_SEND_SIGNALED);
	(void)b;
}

void test_rereg(void)
{
	struct side a, b;
	uint32_t lkey, rkey;
	char *other = malloc(BUF), *gone;
	int rc;

	if (!other)
		die("malloc");
	other[0] = 0;
	pair_open(&a, &b, ALL, NULL);
	lkey = b.mr->lkey;
	rkey = b.mr->rkey;
	rc = ibv_rereg_mr(b.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, other, BUF, 0);
	check(rc == 0 && b.mr->lkey == lkey && b.mr->rkey == rkey,
	      "rereg to another buffer keeps the keys", "rc %d", rc);
	write_to(&a, &b, (uintptr_t)other, rkey, 0x31);
	expect_wc(a.cq, "a WRITE lands in the new buffer", IBV_WC_SUCCESS, 1000);
	check(other[0] == 0x31, "its byte is there", "got 0x%x", (unsigned)other[0]);
	write_to(&a, &b, (uintptr_t)b.buf, rkey, 0x32);
	expect_wc(a.cq, "a WRITE to the old buffer -> REM_ACCESS_ERR", IBV_WC_REM_ACCESS_ERR, 1000);
	pair_close(&a, &b);

	pair_open(&a, &b, ALL, NULL);
	rc = ibv_rereg_mr(b.mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	check(rc == 0, "rereg without remote write", "rc %d", rc);
	write_to(&a, &b, (uintptr_t)b.buf, b.mr->rkey, 0x33);
	expect_wc(a.cq, "then a WRITE -> REM_ACCESS_ERR", IBV_WC_REM_ACCESS_ERR, 1000);
	pair_close(&a, &b);

	pair_open(&a, &b, ALL, NULL);
	gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (gone == MAP_FAILED)
		die("mmap");
	munmap(gone, 4096);
	rc = ibv_rereg_mr(b.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, gone, 4096, 0);
	check(rc == IBV_REREG_MR_ERR_CMD, "rereg onto unmapped memory -> IBV_REREG_MR_ERR_CMD",
	      "rc %d", rc);
	write_to(&a, &b, (uintptr_t)b.buf, b.mr->rkey, 0x34);
	expect_wc(a.cq, "the registration still works", IBV_WC_SUCCESS, 1000);
	check(b.buf[0] == 0x34, "its byte is there", "got 0x%x", (unsigned)b.buf[0]);
	pair_close(&a, &b);
	free(other);
}
