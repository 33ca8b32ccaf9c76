/*
 * mpi_check: an MPI judge of the fabric, run with mpirun across vfab nodes.
 *
 *   mpi_check [ITERATIONS]
 *
 * 1. Ping-pong between ranks 0 and 1: 8-byte latency (half the round trip,
 *    median of ITERATIONS, default 10000) and 1 MiB bandwidth (one direction's
 *    bytes over half the round trip, ITERATIONS / 50 exchanges); every
 *    message's contents are checked.
 * 2. MPI_Allreduce over all ranks at several sizes, sum of int64 and max of
 *    double, each result element checked against its closed form.
 * 3. MPI_Bcast of 1 MiB from the last rank, checked on every rank.
 *
 * Rank 0 prints key=value lines (lat_8B_us=, bw_1MiB_mbyte_per_s=,
 * allreduce_ok=, ranks=, hosts=) for the scripts; hosts= counts the distinct
 * processor names, so a run that put every rank on one node shows it. Any
 * wrong value aborts with MPI_Abort and a message naming the rank and index.
 */
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAT_BYTES 8
#define BW_BYTES (1 << 20)
#define TAG_PING 1
#define TAG_PONG 2
#define TAG_READY 3

static int rank, nranks;

__attribute__((format(printf, 1, 2))) static void bail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mpi_check rank %d: FAIL: ", rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static uint8_t byte_of(long iter, size_t i, int from)
{
	return (uint8_t)(iter * 31 + (long)i * 13 + from * 101 + (long)(i >> 10));
}

static void fill(uint8_t *buf, size_t len, long iter, int from)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = byte_of(iter, i, from);
}

static void verify(const uint8_t *buf, size_t len, long iter, int from)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != byte_of(iter, i, from))
			bail("ping-pong message %ld wrong at byte %zu", iter, i);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * pingpong: ranks 0 and 1 exchange ITERS messages of LEN bytes (rank 0 sends
 * first); returns on rank 0 the per-iteration half round trips in seconds
 * (sorted), checking every message. Ranks above 1 do nothing.
 *
 * Rank 1 says it is ready (an empty message, untimed) before rank 0 takes
 * its start time: otherwise rank 0's clock runs while rank 1 still checks
 * and fills 1 MiB, and a rank whose CPU is slower for a while (a VM's
 * neighbour) shows as a slow fabric.
 */
static void pingpong(size_t len, long iters, long warmup, double *half_rtt)
{
	uint8_t *out = malloc(len), *in = malloc(len);
	int peer = 1 - rank;
	long it;

	if (!out || !in)
		bail("out of memory (%zu bytes)", len);
	for (it = -warmup; it < iters; it++) {
		double t0;

		fill(out, len, it, rank);
		if (rank == 0)
			MPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_READY, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		else
			MPI_Send(NULL, 0, MPI_BYTE, peer, TAG_READY, MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		if (rank == 0) {
			MPI_Send(out, (int)len, MPI_BYTE, peer, TAG_PING, MPI_COMM_WORLD);
			MPI_Recv(in, (int)len, MPI_BYTE, peer, TAG_PONG, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(in, (int)len, MPI_BYTE, peer, TAG_PING, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Send(out, (int)len, MPI_BYTE, peer, TAG_PONG, MPI_COMM_WORLD);
		}
		if (rank == 0 && it >= 0)
			half_rtt[it] = (MPI_Wtime() - t0) / 2;
		verify(in, len, it, peer);
	}
	if (rank == 0)
		qsort(half_rtt, (size_t)iters, sizeof(*half_rtt), cmp_double);
	free(out);
	free(in);
}

/* allreduce_check: sum of int64 (rank r contributes r * 1000003 + i at index
 * i) and max of double (rank r contributes r + i / 2.0), COUNT elements. */
static void allreduce_check(int count)
{
	int64_t *s_in = malloc(sizeof(int64_t) * count), *s_out = malloc(sizeof(int64_t) * count);
	double *m_in = malloc(sizeof(double) * count), *m_out = malloc(sizeof(double) * count);
	int64_t rank_sum = (int64_t)nranks * (nranks - 1) / 2;
	int i;

	if (!s_in || !s_out || !m_in || !m_out)
		bail("out of memory (%d elements)", count);
	for (i = 0; i < count; i++) {
		s_in[i] = (int64_t)rank * 1000003 + i;
		m_in[i] = rank + i / 2.0;
	}
	MPI_Allreduce(s_in, s_out, count, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(m_in, m_out, count, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	for (i = 0; i < count; i++) {
		if (s_out[i] != rank_sum * 1000003 + (int64_t)nranks * i)
			bail("allreduce sum of %d elements wrong at index %d", count, i);
		if (m_out[i] != (nranks - 1) + i / 2.0)
			bail("allreduce max of %d elements wrong at index %d", count, i);
	}
	free(s_in);
	free(s_out);
	free(m_in);
	free(m_out);
}

static void bcast_check(void)
{
	uint8_t *buf = malloc(BW_BYTES);
	int root = nranks - 1;

	if (!buf)
		bail("out of memory (%d bytes)", BW_BYTES);
	if (rank == root)
		fill(buf, BW_BYTES, 7, root);
	else
		memset(buf, 0, BW_BYTES);
	MPI_Bcast(buf, BW_BYTES, MPI_BYTE, root, MPI_COMM_WORLD);
	verify(buf, BW_BYTES, 7, root);
	free(buf);
}

/* distinct_hosts: how many different processor names the ranks have. */
static int distinct_hosts(void)
{
	char name[MPI_MAX_PROCESSOR_NAME] = {0}, *all = NULL;
	int len, i, j, n = 0;

	MPI_Get_processor_name(name, &len);
	if (rank == 0 && !(all = calloc((size_t)nranks, MPI_MAX_PROCESSOR_NAME)))
		bail("out of memory");
	MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
		   MPI_COMM_WORLD);
	if (rank != 0)
		return 0;
	for (i = 0; i < nranks; i++) {
		for (j = 0; j < i; j++)
			if (strcmp(all + (size_t)i * MPI_MAX_PROCESSOR_NAME,
				   all + (size_t)j * MPI_MAX_PROCESSOR_NAME) == 0)
				break;
		n += j == i;
	}
	free(all);
	return n;
}

int main(int argc, char **argv)
{
	static const int sizes[] = {1, 7, 1024, 65537, 1 << 20};
	long iters = argc > 1 ? atol(argv[1]) : 10000, bw_iters;
	double *lat = NULL, *bw = NULL;
	int hosts;
	size_t s;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks < 2 || iters < 50)
		bail("needs at least 2 ranks (got %d) and 50 iterations (got %ld)", nranks, iters);
	bw_iters = iters / 50;
	lat = calloc((size_t)iters, sizeof(*lat));
	bw = calloc((size_t)bw_iters, sizeof(*bw));
	if (!lat || !bw)
		bail("out of memory (%ld iterations)", iters);
	hosts = distinct_hosts();

	if (rank < 2) {
		pingpong(LAT_BYTES, iters, iters / 10, lat);
		pingpong(BW_BYTES, bw_iters, 10, bw);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		allreduce_check(sizes[s]);
	bcast_check();
	MPI_Barrier(MPI_COMM_WORLD);

	if (rank == 0) {
		printf("ranks=%d\nhosts=%d\n", nranks, hosts);
		printf("lat_8B_us=%.2f\n", lat[iters / 2] * 1e6);
		printf("bw_1MiB_mbyte_per_s=%.1f\n", BW_BYTES / bw[bw_iters / 2] / 1e6);
		printf("allreduce_ok=1\n");
		fflush(stdout);
	}
	free(lat);
	free(bw);
	MPI_Finalize();
	return 0;
}
