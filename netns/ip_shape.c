/* SPDX-License-Identifier: MIT */
/* The IP side of a link on one netdev, through libnl-route (ip_shape.h). */
#include "netns/ip_shape.h"

#include <errno.h>
#include <linux/pkt_sched.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/class.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/fifo.h>
#include <netlink/route/qdisc/htb.h>
#include <netlink/route/qdisc/netem.h>
#include <netlink/route/tc.h>
#include <stdio.h>

#include "netns/netcfg.h"

#define ROOT_HANDLE TC_HANDLE(1, 0)
#define CLASS_HANDLE TC_HANDLE(1, 1)
#define LEAF_HANDLE TC_HANDLE(10, 0) /* the netem, or the FIFO under 1:1 */
#define NETEM_LIMIT 10000  /* packets held for the delay: 1 ms at 100 Gb/s of GSO packets */
#define HTB_QUANTUM 200000 /* the largest HTB accepts without a warning; one class only */
/*
 * HTB's default leaf queue is as long as the device's tx_queue_len, which is
 * 0 on a bridge (one packet: every burst would be dropped); a link buffers.
 */
#define FIFO_LIMIT 1000

static struct rtnl_qdisc *qdisc_new(int ifindex, uint32_t parent, uint32_t handle, const char *kind)
{
	struct rtnl_qdisc *q = rtnl_qdisc_alloc();

	if (!q)
		return NULL;
	rtnl_tc_set_ifindex(TC_CAST(q), ifindex);
	rtnl_tc_set_parent(TC_CAST(q), parent);
	rtnl_tc_set_handle(TC_CAST(q), handle);
	if (rtnl_tc_set_kind(TC_CAST(q), kind) < 0) {
		rtnl_qdisc_put(q);
		return NULL;
	}
	return q;
}

/* Removes the root discipline; none there is fine. */
static int root_delete(struct nl_sock *sk, int ifindex)
{
	struct rtnl_qdisc *q = rtnl_qdisc_alloc();
	int ret;

	if (!q)
		return -ENOMEM;
	rtnl_tc_set_ifindex(TC_CAST(q), ifindex);
	rtnl_tc_set_parent(TC_CAST(q), TC_H_ROOT);
	ret = rtnl_qdisc_delete(sk, q);
	rtnl_qdisc_put(q);
	ret = ret < 0 ? vfab_nl_errno(ret) : 0;
	/* The kernel answers ENOENT (ENODEV in libnl's terms) or EINVAL for "none". */
	return ret == -ENODEV || ret == -EINVAL || ret == -EIO ? 0 : ret;
}

static int htb_class(struct nl_sock *sk, int ifindex, uint64_t rate_Bps, uint32_t burst, int flags)
{
	struct rtnl_class *c = rtnl_class_alloc();
	int ret;

	if (!c)
		return -ENOMEM;
	rtnl_tc_set_ifindex(TC_CAST(c), ifindex);
	rtnl_tc_set_parent(TC_CAST(c), ROOT_HANDLE);
	rtnl_tc_set_handle(TC_CAST(c), CLASS_HANDLE);
	ret = rtnl_tc_set_kind(TC_CAST(c), "htb");
	if (ret >= 0) {
		rtnl_htb_set_rate64(c, rate_Bps);
		rtnl_htb_set_ceil64(c, rate_Bps);
		rtnl_htb_set_rbuffer(c, burst);
		rtnl_htb_set_cbuffer(c, burst);
		rtnl_htb_set_quantum(c, HTB_QUANTUM);
		ret = rtnl_class_add(sk, c, flags);
	}
	rtnl_class_put(c);
	return ret < 0 ? vfab_nl_errno(ret) : 0;
}

static int htb_root(struct nl_sock *sk, int ifindex)
{
	struct rtnl_qdisc *q = qdisc_new(ifindex, TC_H_ROOT, ROOT_HANDLE, "htb");
	int ret;

	if (!q)
		return -ENOMEM;
	rtnl_htb_set_defcls(q, CLASS_HANDLE);
	ret = rtnl_qdisc_add(sk, q, NLM_F_CREATE | NLM_F_REPLACE);
	rtnl_qdisc_put(q);
	return ret < 0 ? vfab_nl_errno(ret) : 0;
}

static int netem(struct nl_sock *sk, int ifindex, uint32_t parent, const struct vfab_ip_plan *p)
{
	struct rtnl_qdisc *q = qdisc_new(ifindex, parent, LEAF_HANDLE, "netem");
	int ret;

	if (!q)
		return -ENOMEM;
	rtnl_netem_set_limit(q, NETEM_LIMIT);
	rtnl_netem_set_delay(q, (int)p->delay_us);
	/* netem takes the 32-bit probability as is; libnl's int carries its bits. */
	rtnl_netem_set_loss(q, (int)p->netem_loss);
	ret = rtnl_qdisc_add(sk, q, NLM_F_CREATE | NLM_F_REPLACE);
	rtnl_qdisc_put(q);
	return ret < 0 ? vfab_nl_errno(ret) : 0;
}

static int fifo(struct nl_sock *sk, int ifindex)
{
	struct rtnl_qdisc *q = qdisc_new(ifindex, CLASS_HANDLE, LEAF_HANDLE, "pfifo");
	int ret;

	if (!q)
		return -ENOMEM;
	rtnl_qdisc_fifo_set_limit(q, FIFO_LIMIT);
	ret = rtnl_qdisc_add(sk, q, NLM_F_CREATE | NLM_F_REPLACE);
	rtnl_qdisc_put(q);
	return ret < 0 ? vfab_nl_errno(ret) : 0;
}

int vfab_ip_netem_probe(struct nl_sock *sk, int ifindex)
{
	struct vfab_ip_plan p = {.netem = true};
	int ret = root_delete(sk, ifindex);

	if (!ret)
		ret = netem(sk, ifindex, TC_H_ROOT, &p);
	if (!ret)
		return root_delete(sk, ifindex) ? -EIO : 1;
	/* "Unknown qdisc": the kernel answers ENOENT, libnl makes it one of these. */
	return ret == -ENODEV || ret == -EIO || ret == -EOPNOTSUPP || ret == -ENOENT ? 0 : ret;
}

int vfab_ip_egress_apply(struct nl_sock *sk, int ifindex, const struct vfab_ip_plan *p)
{
	/* A new root drops the old tree with its queue: nothing of it lingers. */
	int ret = root_delete(sk, ifindex);

	if (!ret && p->htb) {
		ret = htb_root(sk, ifindex);
		if (!ret)
			ret = htb_class(sk, ifindex, p->rate_Bps, p->burst_bytes, NLM_F_CREATE);
	}
	if (!ret && p->netem)
		ret = netem(sk, ifindex, p->htb ? CLASS_HANDLE : TC_H_ROOT, p);
	else if (!ret && p->htb)
		ret = fifo(sk, ifindex);
	return ret;
}

int vfab_ip_wire_apply(const struct vfab_ip_wire *w, const struct vfab_ip_shape *up,
		       const struct vfab_ip_shape *down, bool has_netem)
{
	struct vfab_ip_plan pu, pd;
	int ret;

	vfab_ip_shape_plan(up, has_netem, &pu);
	vfab_ip_shape_plan(down, has_netem, &pd);
	ret = vfab_ip_egress_apply(w->node_sk, w->node_ifindex, &pu);
	if (!ret)
		ret = vfab_ip_egress_apply(w->fab_sk, w->host_ifindex, &pd);
	/* Rates stand even where the loss programs may not be loaded (EPERM: no CAP_BPF). */
	if (!ret)
		ret = vfab_ip_loss_bpf(w->fab_sk, w->host_ifindex, pu.bpf_loss);
	if (!ret || ret == -EPERM) {
		int r2 = vfab_ip_loss_bpf(w->node_sk, w->node_ifindex, pd.bpf_loss);

		ret = ret ? ret : r2;
	}
	return ret;
}

int vfab_ip_leaf_apply(struct nl_sock *sk, int bridge_ifindex, const struct vfab_link *downlink)
{
	struct vfab_ip_shape s = {.rate_bps = downlink->rate_bps};
	struct vfab_ip_plan p;

	vfab_ip_shape_plan(&s, false, &p);
	return vfab_ip_egress_apply(sk, bridge_ifindex, &p);
}

void vfab_ip_ifb_name(uint32_t leaf, char *name, size_t len)
{
	snprintf(name, len, "vfifb%u", leaf);
}

int vfab_ip_leaf_up_apply(struct nl_sock *sk, uint32_t leaf, int bridge_ifindex,
			  const struct vfab_link *uplink)
{
	struct vfab_ip_shape s = {.rate_bps = uplink->rate_bps};
	struct vfab_ip_plan p;
	char name[IFNAMSIZ];
	int ifb, ret;

	vfab_ip_ifb_name(leaf, name, sizeof(name));
	ifb = vfab_nl_ifindex(sk, name);
	if (!s.rate_bps)
		return ifb < 0 ? 0 : vfab_ip_redirect_bpf(sk, bridge_ifindex, 0);
	if (ifb < 0) {
		ret = vfab_nl_ifb_add(sk, name);
		ifb = ret ? ret : vfab_nl_ifindex(sk, name);
		if (ifb < 0)
			return ifb;
	}
	vfab_ip_shape_plan(&s, false, &p);
	ret = vfab_ip_egress_apply(sk, ifb, &p);
	return ret ? ret : vfab_ip_redirect_bpf(sk, bridge_ifindex, ifb);
}

void vfab_ip_shape_of_link(const struct vfab_link *l, struct vfab_ip_shape *s)
{
	s->rate_bps = l->rate_bps;
	s->delay_ns = l->latency_ns;
	s->loss_ppm = l->loss_ppm;
}

int vfab_ip_shape_set_rate(struct nl_sock *sk, int ifindex, uint64_t rate_bps)
{
	struct vfab_ip_shape s = {.rate_bps = rate_bps};
	struct vfab_ip_plan p;

	vfab_ip_shape_plan(&s, false, &p);
	return p.htb ? htb_class(sk, ifindex, p.rate_Bps, p.burst_bytes, NLM_F_REPLACE) : -EINVAL;
}
