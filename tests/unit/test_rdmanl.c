/* SPDX-License-Identifier: MIT */
/* RDMA netlink without ib_core (rdmanl/): what a request gets back, against a scratch sysfs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <rdma/rdma_netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fabric/region.h"
#include "rdmanl/nl_cmd.h"
#include "rdmanl/nl_dev.h"
#include "rdmanl/nl_msg.h"

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[512], cmd[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	assert_int_equal(system(cmd), 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Two devices, listed against their uverbs order; mlx5_1 has a hw counter directory. */
static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/test_rdmanl.XXXXXX");
	assert_non_null(mkdtemp(root));
	put("infiniband/mlx5_1/node_guid", "0c42:a103:0065:4f39\n");
	put("infiniband/mlx5_1/sys_image_guid", "0c42:a103:0065:4f38\n");
	put("infiniband/mlx5_1/node_type", "1: CA\n");
	put("infiniband/mlx5_1/fw_ver", "20.35.1012\n");
	put("infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
	put("infiniband/mlx5_1/ports/1/phys_state", "3: Disabled\n");
	put("infiniband/mlx5_1/ports/1/cap_mask", "0x04010000\n");
	put("infiniband/mlx5_1/ports/1/link_layer", "Ethernet\n");
	put("infiniband/mlx5_1/ports/1/gid_attrs/ndevs/0", "lo\n");
	put("infiniband/mlx5_1/ports/1/hw_counters/rx_write_requests", "42\n");
	put("infiniband/mlx5_1/ports/1/hw_counters/out_of_buffer", "7\n");
	put("infiniband/mlx5_1/ports/1/hw_counters/lifespan", "10\n");
	put("infiniband/mlx5_1/device/infiniband_verbs/uverbs1/dev", "231:193\n");
	put("infiniband/mlx5_1/device/infiniband_verbs/uverbs1/abi_version", "1\n");
	put("infiniband/mlx5_0/node_guid", "0c42:a103:0065:4f38\n");
	put("infiniband/mlx5_0/sys_image_guid", "0c42:a103:0065:4f38\n");
	put("infiniband/mlx5_0/node_type", "1: CA\n");
	put("infiniband/mlx5_0/fw_ver", "20.35.1012\n");
	put("infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
	put("infiniband/mlx5_0/ports/1/phys_state", "5: LinkUp\n");
	put("infiniband/mlx5_0/ports/1/cap_mask", "0x04010000\n");
	put("infiniband/mlx5_0/ports/1/link_layer", "Ethernet\n");
	put("infiniband/mlx5_0/ports/1/gid_attrs/ndevs/0", "nosuchdev0\n");
	put("infiniband/mlx5_0/device/infiniband_verbs/uverbs0/dev", "231:192\n");
	put("infiniband/mlx5_0/device/infiniband_verbs/uverbs0/abi_version", "1\n");
	/* Not a device: no uverbs. */
	put("infiniband/junk/node_guid", "0c42:a103:0065:4f40\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd);
}

static int class_fd(void)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY);

	assert_true(fd >= 0);
	return fd;
}

/* A request: type op, flags, attributes put by the caller into m. */
static void request(struct vfab_nl_msg *m, unsigned op, uint16_t flags)
{
	vfab_nl_msg_start(m, (uint16_t)RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op), NLM_F_REQUEST | flags,
			  77, 0);
}

/* Answers m; the replies' messages, concatenated, into msgs[] (pointers into o). */
static int answer(struct vfab_nl_msg *m, struct vfab_nl_out *o, const struct nlmsghdr **msgs,
		  int max)
{
	int fd = class_fd(), n = 0;

	vfab_nl_msg_end(m);
	memset(o, 0, sizeof(*o));
	assert_int_equal(vfab_nl_answer(m->buf, m->len, 1234, fd, o), 0);
	close(fd);
	for (struct vfab_nl_dgram *d = o->head; d; d = d->next) {
		size_t at = 0;

		assert_true(d->len <= VFAB_NL_DGRAM_BYTES);
		while (at < d->len) {
			const struct nlmsghdr *h = (const struct nlmsghdr *)(d->data + at);

			assert_true(h->nlmsg_len >= NLMSG_HDRLEN && at + h->nlmsg_len <= d->len);
			assert_int_equal(h->nlmsg_seq, 77);
			assert_int_equal(h->nlmsg_pid, 1234);
			assert_true(n < max);
			msgs[n++] = h;
			at += NLMSG_ALIGN(h->nlmsg_len);
		}
	}
	return n;
}

static int error_of(const struct nlmsghdr *h)
{
	const struct nlmsgerr *e = NLMSG_DATA(h);

	assert_int_equal(h->nlmsg_type, NLMSG_ERROR);
	return e->error;
}

static uint32_t u32_of(const struct vfab_nl_attrs *a, uint16_t t)
{
	uint32_t v = 0;

	assert_int_equal(vfab_nl_get_u32(a, t, &v), 0);
	return v;
}

static uint64_t u64_of(const struct vfab_nl_attrs *a, uint16_t t)
{
	uint64_t v;

	assert_non_null(a->tb[t]);
	assert_int_equal(a->len[t], 8);
	memcpy(&v, a->tb[t], 8);
	return v;
}

static void test_msg_roundtrip(void **state)
{
	struct vfab_nl_msg m;
	struct vfab_nl_attrs a;
	struct nlmsghdr h;

	(void)state;
	vfab_nl_msg_start(&m, 7, NLM_F_MULTI, 5, 9);
	assert_int_equal(vfab_nl_put_u8(&m, 3, 0xab), 0);
	assert_int_equal(vfab_nl_put_str(&m, 4, "mlx5_0"), 0);
	assert_int_equal(vfab_nl_nest_start(&m, 5), 0);
	assert_int_equal(vfab_nl_put_u64(&m, 6, 0x1122334455667788ull), 0);
	vfab_nl_nest_end(&m);
	vfab_nl_msg_end(&m);
	memcpy(&h, m.buf, sizeof(h));
	assert_int_equal(h.nlmsg_len, m.len);
	assert_int_equal(m.len % 4, 0);
	assert_int_equal(vfab_nl_parse((const struct nlmsghdr *)m.buf, &a), 0);
	assert_int_equal(a.len[3], 1);
	assert_int_equal(a.tb[3][0], 0xab);
	assert_string_equal((const char *)a.tb[4], "mlx5_0");
	/* The nest holds the u64 attribute (4 header + 8 payload). */
	assert_int_equal(a.len[5], NLA_HDRLEN + 8);
	/* An attribute running past the message is refused. */
	h.nlmsg_len = (uint32_t)m.len - 4;
	memcpy(m.buf, &h, sizeof(h));
	assert_int_equal(vfab_nl_parse((const struct nlmsghdr *)m.buf, &a), -EINVAL);
	/* A message is bounded: what does not fit is refused, and the rest stays whole. */
	vfab_nl_msg_start(&m, 7, 0, 5, 9);
	while (!vfab_nl_put_str(&m, 4, "0123456789abcdef0123456789"))
		;
	assert_true(m.overflow);
	assert_true(m.len <= VFAB_NL_MSG_BYTES);
}

static void test_parsers(void **state)
{
	uint64_t g;
	uint32_t v;

	(void)state;
	assert_int_equal(vfab_nl_parse_guid("0c42:a103:0065:4f38", &g), 0);
	assert_true(g == 0x0c42a10300654f38ull);
	assert_int_equal(vfab_nl_parse_guid("0c42:a103:0065", &g), -EINVAL);
	assert_int_equal(vfab_nl_parse_guid("0c42:a103:0065:4f38x", &g), -EINVAL);
	assert_int_equal(vfab_nl_parse_lead_number("4: ACTIVE", &v), 0);
	assert_int_equal(v, 4);
	assert_int_equal(vfab_nl_parse_lead_number("0x04010000", &v), 0);
	assert_int_equal(v, 0x04010000);
	assert_int_equal(vfab_nl_parse_lead_number("ACTIVE", &v), -EINVAL);
}

static void test_devs_sorted_by_index(void **state)
{
	struct vfab_nl_dev d[4];
	int fd = class_fd(), n;

	(void)state;
	n = vfab_nl_devs_read(fd, VFAB_NL_ANY_DEV, d, 4);
	close(fd);
	assert_int_equal(n, 2);
	assert_string_equal(d[0].name, "mlx5_0");
	assert_int_equal(d[0].index, 0);
	assert_string_equal(d[1].name, "mlx5_1");
	assert_int_equal(d[1].cdev_minor, 193);
	assert_int_equal(d[1].port[0].state, 1);
	/* lo is in every namespace; nosuchdev0 in none. */
	assert_true(d[1].port[0].ifindex > 0);
	assert_int_equal(d[0].port[0].ifindex, 0);
}

/* libibverbs' and rdma's first request: every device, then NLMSG_DONE. */
static void test_get_dump(void **state)
{
	const struct nlmsghdr *msgs[8];
	struct vfab_nl_attrs a;
	struct vfab_nl_out o;
	struct vfab_nl_msg m;
	int n;

	(void)state;
	request(&m, RDMA_NLDEV_CMD_GET, NLM_F_DUMP);
	n = answer(&m, &o, msgs, 8);
	assert_int_equal(n, 3);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(msgs[i]->nlmsg_type,
				 RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET));
		assert_true(msgs[i]->nlmsg_flags & NLM_F_MULTI);
		assert_int_equal(vfab_nl_parse(msgs[i], &a), 0);
		assert_int_equal(u32_of(&a, RDMA_NLDEV_ATTR_DEV_INDEX), (uint32_t)i);
		assert_int_equal(u32_of(&a, RDMA_NLDEV_ATTR_PORT_INDEX), 1);
		assert_int_equal(a.tb[RDMA_NLDEV_ATTR_DEV_NODE_TYPE][0], 1);
		assert_true(u64_of(&a, RDMA_NLDEV_ATTR_CAP_FLAGS) == VFAB_DEVICE_CAP_FLAGS);
		assert_string_equal((const char *)a.tb[RDMA_NLDEV_ATTR_DEV_PROTOCOL], "roce");
	}
	assert_int_equal(vfab_nl_parse(msgs[1], &a), 0);
	assert_string_equal((const char *)a.tb[RDMA_NLDEV_ATTR_DEV_NAME], "mlx5_1");
	assert_true(u64_of(&a, RDMA_NLDEV_ATTR_NODE_GUID) == 0x0c42a10300654f39ull);
	assert_true(u64_of(&a, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID) == 0x0c42a10300654f38ull);
	assert_int_equal(msgs[2]->nlmsg_type, NLMSG_DONE);
	vfab_nl_out_free(&o);
}

/* One port with an ACK: the port, then the ACK; a port out of range: -EINVAL only. */
static void test_port_get(void **state)
{
	const struct nlmsghdr *msgs[4];
	struct vfab_nl_attrs a;
	struct vfab_nl_out o;
	struct vfab_nl_msg m;

	(void)state;
	request(&m, RDMA_NLDEV_CMD_PORT_GET, NLM_F_ACK);
	vfab_nl_put_u32(&m, RDMA_NLDEV_ATTR_DEV_INDEX, 1);
	vfab_nl_put_u32(&m, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
	assert_int_equal(answer(&m, &o, msgs, 4), 2);
	assert_int_equal(vfab_nl_parse(msgs[0], &a), 0);
	assert_int_equal(a.tb[RDMA_NLDEV_ATTR_PORT_STATE][0], 1);
	assert_int_equal(a.tb[RDMA_NLDEV_ATTR_PORT_PHYS_STATE][0], 3);
	assert_true(u64_of(&a, RDMA_NLDEV_ATTR_CAP_FLAGS) == 0x04010000);
	assert_string_equal((const char *)a.tb[RDMA_NLDEV_ATTR_NDEV_NAME], "lo");
	/* RoCE: no LID fields. */
	assert_null(a.tb[RDMA_NLDEV_ATTR_LID]);
	assert_int_equal(error_of(msgs[1]), 0);
	vfab_nl_out_free(&o);

	request(&m, RDMA_NLDEV_CMD_PORT_GET, NLM_F_ACK);
	vfab_nl_put_u32(&m, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
	vfab_nl_put_u32(&m, RDMA_NLDEV_ATTR_PORT_INDEX, 2);
	assert_int_equal(answer(&m, &o, msgs, 4), 1);
	assert_int_equal(error_of(msgs[0]), -EINVAL);
	vfab_nl_out_free(&o);

	/* A netdev in no namespace of the caller's is not named. */
	request(&m, RDMA_NLDEV_CMD_PORT_GET, 0);
	vfab_nl_put_u32(&m, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
	vfab_nl_put_u32(&m, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
	assert_int_equal(answer(&m, &o, msgs, 4), 1);
	assert_int_equal(vfab_nl_parse(msgs[0], &a), 0);
	assert_null(a.tb[RDMA_NLDEV_ATTR_NDEV_NAME]);
	vfab_nl_out_free(&o);
}

/* The uverbs device as libibverbs decodes huge_encode_dev; umad is not served. */
static void test_chardev(void **state)
{
	const struct nlmsghdr *msgs[4];
	struct vfab_nl_attrs a;
	struct vfab_nl_out o;
	struct vfab_nl_msg m;
	uint64_t c;

	(void)state;
	request(&m, RDMA_NLDEV_CMD_GET_CHARDEV, 0);
	vfab_nl_put_u32(&m, RDMA_NLDEV_ATTR_DEV_INDEX, 1);
	vfab_nl_put_str(&m, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs");
	assert_int_equal(answer(&m, &o, msgs, 4), 1);
	assert_int_equal(vfab_nl_parse(msgs[0], &a), 0);
	c = u64_of(&a, RDMA_NLDEV_ATTR_CHARDEV);
	assert_true(makedev((c & 0xfff00) >> 8, (c & 0xff) | ((c >> 12) & 0xfff00)) ==
		    makedev(231, 193));
	assert_true(u64_of(&a, RDMA_NLDEV_ATTR_CHARDEV_ABI) == 1);
	assert_string_equal((const char *)a.tb[RDMA_NLDEV_ATTR_CHARDEV_NAME], "uverbs1");
	vfab_nl_out_free(&o);

	request(&m, RDMA_NLDEV_CMD_GET_CHARDEV, 0);
	vfab_nl_put_str(&m, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "umad");
	assert_int_equal(answer(&m, &o, msgs, 4), 1);
	assert_int_equal(error_of(msgs[0]), -EOPNOTSUPP);
	vfab_nl_out_free(&o);
}

/* hw counters by name, lifespan left out; QP counter dumps are empty. */
static void test_stat(void **state)
{
	const struct nlmsghdr *msgs[4];
	struct vfab_nl_attrs a, e;
	struct vfab_nl_out o;
	struct vfab_nl_msg m;
	struct nlmsghdr fake;
	const uint8_t *p;

	(void)state;
	request(&m, RDMA_NLDEV_CMD_STAT_GET, NLM_F_ACK);
	vfab_nl_put_u32(&m, RDMA_NLDEV_ATTR_DEV_INDEX, 1);
	vfab_nl_put_u32(&m, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
	assert_int_equal(answer(&m, &o, msgs, 4), 2);
	assert_int_equal(vfab_nl_parse(msgs[0], &a), 0);
	assert_non_null(a.tb[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS]);
	/* Walk the table as a message of its own: two entries, out_of_buffer first. */
	p = a.tb[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS];
	{
		uint8_t buf[512];
		size_t len = a.len[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS];
		const char *names[2] = {"out_of_buffer", "rx_write_requests"};
		uint64_t values[2] = {7, 42};
		size_t at = 0;
		int i = 0;

		while (at < len) {
			struct nlattr ent;

			memcpy(&ent, p + at, sizeof(ent));
			fake.nlmsg_len = NLMSG_HDRLEN + ent.nla_len - NLA_HDRLEN;
			memcpy(buf, &fake, sizeof(fake));
			memcpy(buf + NLMSG_HDRLEN, p + at + NLA_HDRLEN, ent.nla_len - NLA_HDRLEN);
			assert_int_equal(vfab_nl_parse((const struct nlmsghdr *)buf, &e), 0);
			assert_true(i < 2);
			assert_string_equal(
			    (const char *)e.tb[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME],
			    names[i]);
			assert_true(u64_of(&e, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE) ==
				    values[i]);
			i++;
			at += NLA_ALIGN(ent.nla_len);
		}
		assert_int_equal(i, 2);
	}
	vfab_nl_out_free(&o);

	request(&m, RDMA_NLDEV_CMD_STAT_GET, NLM_F_DUMP | NLM_F_ACK);
	vfab_nl_put_u32(&m, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
	vfab_nl_put_u32(&m, RDMA_NLDEV_ATTR_STAT_RES, RDMA_NLDEV_ATTR_RES_QP);
	assert_int_equal(answer(&m, &o, msgs, 4), 1);
	assert_int_equal(msgs[0]->nlmsg_type, NLMSG_DONE);
	vfab_nl_out_free(&o);
}

/* Errors as the kernel gives them; two requests in one datagram are both answered. */
static void test_errors(void **state)
{
	const struct nlmsghdr *msgs[4];
	struct vfab_nl_out o;
	struct vfab_nl_msg m;
	uint8_t two[2 * NLMSG_HDRLEN];
	int fd;

	(void)state;
	request(&m, RDMA_NLDEV_CMD_GET, 0);
	vfab_nl_put_u32(&m, RDMA_NLDEV_ATTR_DEV_INDEX, 9);
	assert_int_equal(answer(&m, &o, msgs, 4), 1);
	assert_int_equal(error_of(msgs[0]), -EINVAL);
	vfab_nl_out_free(&o);

	request(&m, RDMA_NLDEV_CMD_STAT_GET_STATUS, 0);
	assert_int_equal(answer(&m, &o, msgs, 4), 1);
	assert_int_equal(error_of(msgs[0]), -EOPNOTSUPP);
	vfab_nl_out_free(&o);

	vfab_nl_msg_start(&m, (uint16_t)RDMA_NL_GET_TYPE(RDMA_NL_LS, 1), NLM_F_REQUEST, 77, 0);
	assert_int_equal(answer(&m, &o, msgs, 4), 1);
	assert_int_equal(error_of(msgs[0]), -EINVAL);
	vfab_nl_out_free(&o);

	request(&m, RDMA_NLDEV_CMD_SYS_GET, 0);
	vfab_nl_msg_end(&m);
	memcpy(two, m.buf, NLMSG_HDRLEN);
	memcpy(two + NLMSG_HDRLEN, m.buf, NLMSG_HDRLEN);
	fd = class_fd();
	memset(&o, 0, sizeof(o));
	assert_int_equal(vfab_nl_answer(two, sizeof(two), 1, fd, &o), 0);
	/* Both in one datagram (small messages share one, as in a kernel skb). */
	assert_non_null(o.head);
	assert_null(o.head->next);
	assert_true(o.head->len >= 2 * NLMSG_HDRLEN);
	vfab_nl_out_free(&o);
	/* A truncated message is not answered. */
	memset(&o, 0, sizeof(o));
	assert_int_equal(vfab_nl_answer(two, NLMSG_HDRLEN - 1, 1, fd, &o), 0);
	assert_null(o.head);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_msg_roundtrip),
	    cmocka_unit_test(test_parsers),
	    cmocka_unit_test(test_devs_sorted_by_index),
	    cmocka_unit_test(test_get_dump),
	    cmocka_unit_test(test_port_get),
	    cmocka_unit_test(test_chardev),
	    cmocka_unit_test(test_stat),
	    cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
