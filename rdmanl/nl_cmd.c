/* SPDX-License-Identifier: MIT */
#include "rdmanl/nl_cmd.h"

#include <errno.h>
#include <stdbool.h>
#include <rdma/rdma_netlink.h>
#include <rdma/rdma_user_cm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cm/cm_shim.h"
#include "fabric/region.h"
#include "rdmanl/nl_dev.h"
#include "rdmanl/nl_res.h"

/* One request being answered. */
struct req {
	const struct nlmsghdr *h;
	struct vfab_nl_attrs a;
	uint32_t portid;
	int dump;
	struct vfab_nl_dev devs[VFAB_NL_MAX_DEVS];
	int ndevs;
	struct vfab_nl_out *o;
	struct vfab_nl_msg m;
};

static uint16_t nldev_type(unsigned op)
{
	return (uint16_t)RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op);
}

/* A reply message of op: NLM_F_MULTI within a dump. */
static void start(struct req *q, unsigned op)
{
	vfab_nl_msg_start(&q->m, nldev_type(op), q->dump ? NLM_F_MULTI : 0, q->h->nlmsg_seq,
			  q->portid);
}

static void finish(struct req *q)
{
	vfab_nl_msg_end(&q->m);
	vfab_nl_out_add(q->o, &q->m);
}

/* The device a request names by DEV_INDEX; NULL (-EINVAL for the kernel) when none. */
static const struct vfab_nl_dev *named_dev(const struct req *q)
{
	uint32_t idx;

	if (vfab_nl_get_u32(&q->a, RDMA_NLDEV_ATTR_DEV_INDEX, &idx))
		return NULL;
	for (int i = 0; i < q->ndevs; i++)
		if (q->devs[i].index == idx)
			return &q->devs[i];
	return NULL;
}

static void put_handle(struct req *q, const struct vfab_nl_dev *d)
{
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_DEV_INDEX, d->index);
	vfab_nl_put_str(&q->m, RDMA_NLDEV_ATTR_DEV_NAME, d->name);
}

static const char *protocol(const struct vfab_nl_dev *d)
{
	return d->nports && d->port[0].ib ? "ib" : "roce";
}

static void dev_info(struct req *q, const struct vfab_nl_dev *d)
{
	start(q, RDMA_NLDEV_CMD_GET);
	put_handle(q, d);
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_PORT_INDEX, d->nports);
	vfab_nl_put_u64(&q->m, RDMA_NLDEV_ATTR_CAP_FLAGS, VFAB_DEVICE_CAP_FLAGS);
	if (d->fw[0])
		vfab_nl_put_str(&q->m, RDMA_NLDEV_ATTR_FW_VERSION, d->fw);
	vfab_nl_put_u64(&q->m, RDMA_NLDEV_ATTR_NODE_GUID, d->node_guid);
	vfab_nl_put_u64(&q->m, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, d->sys_image_guid);
	vfab_nl_put_u8(&q->m, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, d->node_type);
	vfab_nl_put_str(&q->m, RDMA_NLDEV_ATTR_DEV_PROTOCOL, protocol(d));
	finish(q);
}

/* A dump fills one message per device, a request the device DEV_INDEX names (-EINVAL: none). */
static int each_or_named(struct req *q, void (*fill)(struct req *, const struct vfab_nl_dev *))
{
	const struct vfab_nl_dev *d;

	if (q->dump) {
		for (int i = 0; i < q->ndevs; i++)
			fill(q, &q->devs[i]);
		return 0;
	}
	d = named_dev(q);
	if (!d)
		return -EINVAL;
	fill(q, d);
	return 0;
}

/* The reply's type is the request's op for a dump, RDMA_NLDEV_CMD_GET for one port (nldev.c). */
static void port_info(struct req *q, const struct vfab_nl_dev *d, uint32_t p)
{
	const struct vfab_nl_port *port = &d->port[p - 1];

	start(q, q->dump ? RDMA_NLDEV_CMD_PORT_GET : RDMA_NLDEV_CMD_GET);
	put_handle(q, d);
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_PORT_INDEX, p);
	vfab_nl_put_u64(&q->m, RDMA_NLDEV_ATTR_CAP_FLAGS, port->cap_flags);
	if (port->ib) {
		vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_LID, port->lid);
		vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_SM_LID, port->sm_lid);
		vfab_nl_put_u8(&q->m, RDMA_NLDEV_ATTR_LMC, port->lmc);
	}
	vfab_nl_put_u8(&q->m, RDMA_NLDEV_ATTR_PORT_STATE, port->state);
	vfab_nl_put_u8(&q->m, RDMA_NLDEV_ATTR_PORT_PHYS_STATE, port->phys_state);
	/* The kernel names the netdev only when it is in the caller's namespace. */
	if (port->ifindex) {
		vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_NDEV_INDEX, port->ifindex);
		vfab_nl_put_str(&q->m, RDMA_NLDEV_ATTR_NDEV_NAME, port->netdev);
	}
	finish(q);
}

static int cmd_port_get(struct req *q)
{
	const struct vfab_nl_dev *d = named_dev(q);
	uint32_t p;

	if (!d)
		return -EINVAL;
	if (q->dump) {
		for (p = 1; p <= d->nports; p++)
			port_info(q, d, p);
		return 0;
	}
	if (vfab_nl_get_u32(&q->a, RDMA_NLDEV_ATTR_PORT_INDEX, &p) || p < 1 || p > d->nports)
		return -EINVAL;
	port_info(q, d, p);
	return 0;
}

/* Whether the node is a pod of a host whose RDMA netns mode is exclusive (its HCA says). */
static bool netns_exclusive(const struct req *q)
{
	struct vfab_nl_res res;
	bool excl = false;

	for (int i = 0; i < q->ndevs && !excl; i++)
		if (!vfab_nl_res_open(q->devs[i].locator, &res)) {
			excl = res.r->hcas[res.hca].netns_exclusive != 0;
			vfab_nl_res_close(&res);
		}
	return excl;
}

/*
 * Shared, the kernel's default (a host's devices seen from every
 * namespace), unless the node is a pod of a host that the config puts in
 * exclusive mode. Copy on fork: pages registered for RDMA stay the
 * parent's after fork (vfab pins nothing; the kernel has done so since 5.13).
 */
static int cmd_sys_get(struct req *q)
{
	start(q, RDMA_NLDEV_CMD_SYS_GET);
	vfab_nl_put_u8(&q->m, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, !netns_exclusive(q));
	vfab_nl_put_u8(&q->m, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1);
	finish(q);
	return 0;
}

static void chardev_reply(struct req *q, unsigned major, unsigned minor, uint64_t abi,
			  const char *name)
{
	/* huge_encode_dev, which libibverbs and librdmacm decode. */
	uint64_t huge =
	    (uint64_t)(minor & 0xff) | (uint64_t)major << 8 | (uint64_t)(minor & ~0xffu) << 12;

	start(q, RDMA_NLDEV_CMD_GET_CHARDEV);
	vfab_nl_put_u64(&q->m, RDMA_NLDEV_ATTR_CHARDEV, huge);
	vfab_nl_put_u64(&q->m, RDMA_NLDEV_ATTR_CHARDEV_ABI, abi);
	vfab_nl_put_str(&q->m, RDMA_NLDEV_ATTR_CHARDEV_NAME, name);
	finish(q);
}

/*
 * The character device of a client: uverbs of DEV_INDEX (libibverbs'
 * device discovery), rdma_cm (librdmacm's ABI check: the node's own
 * /dev/infiniband/rdma_cm, which the preload library serves). umad and
 * the rest are not served.
 */
static int cmd_get_chardev(struct req *q)
{
	const char *type = (const char *)q->a.tb[RDMA_NLDEV_ATTR_CHARDEV_TYPE];
	size_t tlen = q->a.len[RDMA_NLDEV_ATTR_CHARDEV_TYPE];
	const struct vfab_nl_dev *d;
	struct stat st;

	if (!type || !tlen || type[tlen - 1])
		return -EINVAL;
	if (!strcmp(type, "rdma_cm")) {
		if (stat(VFAB_CM_DEV_PATH, &st) || !S_ISCHR(st.st_mode))
			return -EOPNOTSUPP;
		chardev_reply(q, major(st.st_rdev), minor(st.st_rdev), RDMA_USER_CM_ABI_VERSION,
			      "rdma_cm");
		return 0;
	}
	if (strcmp(type, "uverbs"))
		return -EOPNOTSUPP;
	d = named_dev(q);
	if (!d)
		return -EINVAL;
	chardev_reply(q, d->cdev_major, d->cdev_minor, d->abi, d->uverbs);
	return 0;
}

static void summary_entry(struct req *q, const char *name, uint64_t n)
{
	vfab_nl_nest_start(&q->m, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY);
	vfab_nl_put_str(&q->m, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME, name);
	vfab_nl_put_u64(&q->m, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR, n);
	vfab_nl_nest_end(&q->m);
}

static void res_info(struct req *q, const struct vfab_nl_dev *d)
{
	uint64_t n[VFAB_OBJ_KINDS] = {0};
	struct vfab_nl_res res;

	if (!vfab_nl_res_open(d->locator, &res)) {
		vfab_nl_res_count(&res, n);
		vfab_nl_res_close(&res);
	}
	start(q, RDMA_NLDEV_CMD_RES_GET);
	put_handle(q, d);
	vfab_nl_nest_start(&q->m, RDMA_NLDEV_ATTR_RES_SUMMARY);
	summary_entry(q, "pd", n[VFAB_OBJ_PD]);
	summary_entry(q, "cq", n[VFAB_OBJ_CQ]);
	summary_entry(q, "qp", n[VFAB_OBJ_QP]);
	summary_entry(q, "mr", n[VFAB_OBJ_MR]);
	summary_entry(q, "srq", n[VFAB_OBJ_SRQ]);
	vfab_nl_nest_end(&q->m);
	finish(q);
}

/* ---- resource lists: entries nested in a table, the table split over messages ---- */

struct table {
	unsigned op;
	uint16_t table, entry;
	enum vfab_obj kind;
	void (*put)(struct req *q, const union vfab_nl_entry *e);
};

static void table_open(struct req *q, const struct vfab_nl_dev *d, const struct table *t)
{
	start(q, t->op);
	put_handle(q, d);
	vfab_nl_nest_start(&q->m, t->table);
}

static void table_close(struct req *q)
{
	vfab_nl_nest_end(&q->m);
	finish(q);
}

/*
 * Room for one more entry (the largest is under 160 bytes); else the
 * table so far goes out and the rest continues in the next message.
 */
static void table_room(struct req *q, const struct vfab_nl_dev *d, const struct table *t)
{
	if (vfab_nl_room(&q->m) >= 192)
		return;
	table_close(q);
	table_open(q, d, t);
}

static void qp_entry(struct req *q, const union vfab_nl_entry *u)
{
	const struct vfab_nl_qp *e = &u->qp;

	if (e->port)
		vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_PORT_INDEX, e->port);
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_LQPN, e->qpn);
	if (e->connected) {
		vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_RQPN, e->rqpn);
		vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_RQ_PSN, e->rq_psn);
	}
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_SQ_PSN, e->sq_psn);
	if (vfab_qp_transport(e->type) == VFAB_QPT_RC || e->connected)
		vfab_nl_put_u8(&q->m, RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE, 0 /* MIGRATED */);
	vfab_nl_put_u8(&q->m, RDMA_NLDEV_ATTR_RES_TYPE, (uint8_t)e->type);
	vfab_nl_put_u8(&q->m, RDMA_NLDEV_ATTR_RES_STATE, (uint8_t)e->state);
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_PID, e->pid);
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_PDN, e->pdn);
}

static void cq_entry(struct req *q, const union vfab_nl_entry *u)
{
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_CQE, u->cq.cqe);
	vfab_nl_put_u64(&q->m, RDMA_NLDEV_ATTR_RES_USECNT, u->cq.users);
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_CQN, u->cq.cqn);
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_PID, u->cq.pid);
}

/* Keys and addresses go only to CAP_NET_ADMIN, as nldev.c gives them; root here. */
static void mr_entry(struct req *q, const union vfab_nl_entry *u)
{
	if (geteuid() == 0) {
		vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_RKEY, u->mr.key);
		vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_LKEY, u->mr.key);
		vfab_nl_put_u64(&q->m, RDMA_NLDEV_ATTR_RES_IOVA, u->mr.iova);
	}
	vfab_nl_put_u64(&q->m, RDMA_NLDEV_ATTR_RES_MRLEN, u->mr.length);
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_MRN, u->mr.mrn);
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_PDN, u->mr.pdn);
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_PID, u->mr.pid);
}

static void pd_entry(struct req *q, const union vfab_nl_entry *u)
{
	vfab_nl_put_u64(&q->m, RDMA_NLDEV_ATTR_RES_USECNT, u->pd.users);
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_PDN, u->pd.pdn);
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_PID, u->pd.pid);
}

static void srq_entry(struct req *q, const union vfab_nl_entry *u)
{
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_SRQN, u->srq.srqn);
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_PDN, u->srq.pdn);
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_RES_PID, u->srq.pid);
}

/* Each list: its command, table and entry attributes, objects and entry's attributes. */
static const struct table tables[] = {
    {RDMA_NLDEV_CMD_RES_QP_GET, RDMA_NLDEV_ATTR_RES_QP, RDMA_NLDEV_ATTR_RES_QP_ENTRY, VFAB_OBJ_QP,
     qp_entry},
    {RDMA_NLDEV_CMD_RES_CQ_GET, RDMA_NLDEV_ATTR_RES_CQ, RDMA_NLDEV_ATTR_RES_CQ_ENTRY, VFAB_OBJ_CQ,
     cq_entry},
    {RDMA_NLDEV_CMD_RES_MR_GET, RDMA_NLDEV_ATTR_RES_MR, RDMA_NLDEV_ATTR_RES_MR_ENTRY, VFAB_OBJ_MR,
     mr_entry},
    {RDMA_NLDEV_CMD_RES_PD_GET, RDMA_NLDEV_ATTR_RES_PD, RDMA_NLDEV_ATTR_RES_PD_ENTRY, VFAB_OBJ_PD,
     pd_entry},
    {RDMA_NLDEV_CMD_RES_SRQ_GET, RDMA_NLDEV_ATTR_RES_SRQ, RDMA_NLDEV_ATTR_RES_SRQ_ENTRY,
     VFAB_OBJ_SRQ, srq_entry},
};

/* Device d's objects of list t; a port given keeps only QPs on that port, as nldev.c does. */
static void list_dev(struct req *q, const struct vfab_nl_dev *d, const struct table *t,
		     uint32_t port)
{
	union vfab_nl_entry e;
	struct vfab_nl_res res;
	uint32_t cur = 0;

	table_open(q, d, t);
	if (!vfab_nl_res_open(d->locator, &res)) {
		while (!vfab_nl_res_next(&res, t->kind, &cur, &e)) {
			if (t->kind == VFAB_OBJ_QP && port && e.qp.port != port)
				continue;
			table_room(q, d, t);
			vfab_nl_nest_start(&q->m, t->entry);
			t->put(q, &e);
			vfab_nl_nest_end(&q->m);
		}
		vfab_nl_res_close(&res);
	}
	table_close(q);
}

/* The lists are dumps only; DEV_INDEX picks a device (else all), PORT_INDEX a port's QPs. */
static int cmd_res_list(struct req *q, unsigned op)
{
	const struct table *t = NULL;
	const struct vfab_nl_dev *d;
	uint32_t port = 0;

	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		if (tables[i].op == op)
			t = &tables[i];
	if (!q->dump || !t)
		return -EINVAL;
	vfab_nl_get_u32(&q->a, RDMA_NLDEV_ATTR_PORT_INDEX, &port);
	if (q->a.tb[RDMA_NLDEV_ATTR_DEV_INDEX]) {
		d = named_dev(q);
		if (!d)
			return -EINVAL;
		list_dev(q, d, t, port);
		return 0;
	}
	for (int i = 0; i < q->ndevs; i++)
		list_dev(q, &q->devs[i], t, port);
	return 0;
}

/*
 * `rdma statistic`: a port's hw counters (the default counter). vfab binds
 * no per-QP counters (STAT_SET is refused), so a QP counter dump is empty
 * and the QP counter mode is none, as on a device nobody configured.
 */
static int cmd_stat_get(struct req *q, int class_fd)
{
	struct vfab_nl_counter c[VFAB_NL_MAX_COUNTERS];
	const struct vfab_nl_dev *d;
	uint32_t p, res = 0;
	int n;

	vfab_nl_get_u32(&q->a, RDMA_NLDEV_ATTR_STAT_RES, &res);
	if (q->dump)
		return res == RDMA_NLDEV_ATTR_RES_QP ? 0 : -EINVAL;
	d = named_dev(q);
	if (!d || vfab_nl_get_u32(&q->a, RDMA_NLDEV_ATTR_PORT_INDEX, &p) || p < 1 || p > d->nports)
		return -EINVAL;
	start(q, RDMA_NLDEV_CMD_STAT_GET);
	put_handle(q, d);
	vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_PORT_INDEX, p);
	if (q->a.tb[RDMA_NLDEV_ATTR_STAT_MODE]) {
		vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_STAT_RES, RDMA_NLDEV_ATTR_RES_QP);
		vfab_nl_put_u32(&q->m, RDMA_NLDEV_ATTR_STAT_MODE, RDMA_COUNTER_MODE_NONE);
		finish(q);
		return 0;
	}
	n = vfab_nl_hw_counters_read(class_fd, d->name, p, c, VFAB_NL_MAX_COUNTERS);
	vfab_nl_nest_start(&q->m, RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
	for (int i = 0; i < n; i++) {
		vfab_nl_nest_start(&q->m, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY);
		vfab_nl_put_str(&q->m, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, c[i].name);
		vfab_nl_put_u64(&q->m, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, c[i].value);
		vfab_nl_nest_end(&q->m);
	}
	vfab_nl_nest_end(&q->m);
	finish(q);
	return 0;
}

/* What the kernel would do, and what the commands vfab cannot carry out answer. */
static int dispatch(struct req *q, unsigned op, int class_fd)
{
	switch (op) {
	case RDMA_NLDEV_CMD_GET:
		return each_or_named(q, dev_info);
	case RDMA_NLDEV_CMD_PORT_GET:
		return cmd_port_get(q);
	case RDMA_NLDEV_CMD_SYS_GET:
		return q->dump ? -EINVAL : cmd_sys_get(q);
	case RDMA_NLDEV_CMD_GET_CHARDEV:
		return q->dump ? -EINVAL : cmd_get_chardev(q);
	case RDMA_NLDEV_CMD_RES_GET:
		return each_or_named(q, res_info);
	case RDMA_NLDEV_CMD_RES_QP_GET:
	case RDMA_NLDEV_CMD_RES_CQ_GET:
	case RDMA_NLDEV_CMD_RES_MR_GET:
	case RDMA_NLDEV_CMD_RES_PD_GET:
	case RDMA_NLDEV_CMD_RES_SRQ_GET:
		return cmd_res_list(q, op);
	case RDMA_NLDEV_CMD_STAT_GET:
		return cmd_stat_get(q, class_fd);
	case RDMA_NLDEV_CMD_SET:
	case RDMA_NLDEV_CMD_NEWLINK:
	case RDMA_NLDEV_CMD_DELLINK:
	case RDMA_NLDEV_CMD_SYS_SET:
	case RDMA_NLDEV_CMD_STAT_SET:
	case RDMA_NLDEV_CMD_STAT_DEL:
		/* Changes need CAP_NET_ADMIN; vfab's devices are changed by `vfab`, not here. */
		return geteuid() ? -EPERM : -EOPNOTSUPP;
	default:
		return -EOPNOTSUPP;
	}
}

static void answer_one(struct req *q, int class_fd)
{
	uint16_t type = q->h->nlmsg_type;
	int ret;

	q->dump = (q->h->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
	if (RDMA_NL_GET_CLIENT(type) != RDMA_NL_NLDEV || vfab_nl_parse(q->h, &q->a)) {
		ret = -EINVAL;
	} else {
		uint32_t only = VFAB_NL_ANY_DEV;

		/* A request naming a device is answered from that device alone. */
		if (!q->dump)
			vfab_nl_get_u32(&q->a, RDMA_NLDEV_ATTR_DEV_INDEX, &only);
		q->ndevs = vfab_nl_devs_read(class_fd, only, q->devs, VFAB_NL_MAX_DEVS);
		if (q->ndevs < 0)
			q->ndevs = 0;
		ret = dispatch(q, RDMA_NL_GET_OP(type), class_fd);
	}
	if (ret) {
		vfab_nl_msg_error(&q->m, q->h, ret, q->portid);
		vfab_nl_out_add(q->o, &q->m);
	} else if (q->dump) {
		vfab_nl_msg_done(&q->m, q->h->nlmsg_seq, q->portid);
		vfab_nl_out_add(q->o, &q->m);
	} else if (q->h->nlmsg_flags & NLM_F_ACK) {
		vfab_nl_msg_error(&q->m, q->h, 0, q->portid);
		vfab_nl_out_add(q->o, &q->m);
	}
}

int vfab_nl_answer(const void *req, size_t len, uint32_t portid, int class_fd,
		   struct vfab_nl_out *o)
{
	const uint8_t *p = req;
	struct req *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	q->portid = portid;
	q->o = o;
	while (len >= NLMSG_HDRLEN) {
		const struct nlmsghdr *h = (const struct nlmsghdr *)p;

		if (h->nlmsg_len < NLMSG_HDRLEN || h->nlmsg_len > len)
			break;
		if (h->nlmsg_flags & NLM_F_REQUEST) {
			q->h = h;
			answer_one(q, class_fd);
		}
		if (NLMSG_ALIGN(h->nlmsg_len) >= len)
			break;
		p += NLMSG_ALIGN(h->nlmsg_len);
		len -= NLMSG_ALIGN(h->nlmsg_len);
	}
	free(q);
	return o->err;
}
