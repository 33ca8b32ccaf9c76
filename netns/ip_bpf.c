/* SPDX-License-Identifier: MIT */
/*
 * The classifier programs of the IP side (ip_shape.h). Each is a few
 * instructions written here, loaded with bpf(2) and attached in
 * direct-action mode to a clsact hook: no compiler at build or run time.
 *
 *   loss   (without netem) on the clsact ingress of the link's far end:
 *          drops a packet when a 32-bit random draw falls below the
 *          threshold;
 *   delay  (without netem) on the clsact egress of a node wire's host end: hands every
 *          packet that the fabric forwards there to a tap of vfabd's delay
 *          line (daemon/vfabd_delay.h), and a second one, on the tap's
 *          ingress, sends what the delay line writes back out of the host
 *          end. The host end's program lets through what came from the tap
 *          and what the fabric namespace sent itself (ingress_ifindex 0),
 *          and stamps what it hands over with the time in an outer tag;
 *   uplink on the clsact ingress of a leaf bridge: what the leaf passes up to
 *          the spine router goes through an ifb, whose egress holds the
 *          uplink's rate;
 *   source on the clsact egress of a spanning leaf's VXLAN: drops what the
 *          router sends from the leaf's anycast gateway MAC.
 */
#include "netns/ip_shape.h"

#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/tc.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "netns/netcfg.h"

#define CLSACT_HANDLE TC_H_MAKE(TC_H_CLSACT, 0)
#define INGRESS_PARENT TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS)
#define EGRESS_PARENT TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_EGRESS)
#define FILTER_PRIO 1
#define FILTER_HANDLE 1

static int load(const struct bpf_insn *insns, uint32_t n)
{
	union bpf_attr attr;
	long fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_SCHED_CLS;
	attr.insns = (uint64_t)(uintptr_t)insns;
	attr.insn_cnt = n;
	attr.license = (uint64_t)(uintptr_t) "GPL"; /* the kernel's helpers ask for it */
	fd = syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	return fd < 0 ? -errno : (int)fd;
}

#define LOAD(insns) load(insns, sizeof(insns) / sizeof(insns[0]))

static int load_loss(uint32_t threshold)
{
	/* r0 = random(); if ((u32)r0 >= threshold) return TC_ACT_OK; return TC_ACT_SHOT; */
	const struct bpf_insn insns[] = {
	    {.code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_get_prandom_u32},
	    {.code = BPF_JMP32 | BPF_JGE | BPF_K,
	     .dst_reg = BPF_REG_0,
	     .off = 2,
	     .imm = (int32_t)threshold},
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = TC_ACT_SHOT},
	    {.code = BPF_JMP | BPF_EXIT},
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = TC_ACT_OK},
	    {.code = BPF_JMP | BPF_EXIT},
	};

	return LOAD(insns);
}

/* Ethernet source mac: TC_ACT_SHOT, else TC_ACT_OK (a runt passes). */
static int load_drop_source(const uint8_t mac[6])
{
	uint32_t hi;
	uint16_t lo;

	memcpy(&hi, mac, 4); /* the program loads them in host order as well */
	memcpy(&lo, mac + 4, 2);
	const struct bpf_insn insns[] = {
	    {.code = BPF_LDX | BPF_W | BPF_MEM,
	     .dst_reg = BPF_REG_2,
	     .src_reg = BPF_REG_1,
	     .off = offsetof(struct __sk_buff, data)},
	    {.code = BPF_LDX | BPF_W | BPF_MEM,
	     .dst_reg = BPF_REG_3,
	     .src_reg = BPF_REG_1,
	     .off = offsetof(struct __sk_buff, data_end)},
	    {.code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_4, .src_reg = BPF_REG_2},
	    {.code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_4, .imm = 12},
	    {.code = BPF_JMP | BPF_JGT | BPF_X,
	     .dst_reg = BPF_REG_4,
	     .src_reg = BPF_REG_3,
	     .off = 6},
	    {.code = BPF_LDX | BPF_W | BPF_MEM,
	     .dst_reg = BPF_REG_5,
	     .src_reg = BPF_REG_2,
	     .off = 6},
	    {.code = BPF_JMP32 | BPF_JNE | BPF_K,
	     .dst_reg = BPF_REG_5,
	     .off = 4,
	     .imm = (int32_t)hi},
	    {.code = BPF_LDX | BPF_H | BPF_MEM,
	     .dst_reg = BPF_REG_5,
	     .src_reg = BPF_REG_2,
	     .off = 10},
	    {.code = BPF_JMP32 | BPF_JNE | BPF_K, .dst_reg = BPF_REG_5, .off = 2, .imm = lo},
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = TC_ACT_SHOT},
	    {.code = BPF_JMP | BPF_EXIT},
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = TC_ACT_OK},
	    {.code = BPF_JMP | BPF_EXIT},
	};

	return LOAD(insns);
}

/* r1 = ifindex; r2 = 0; return bpf_redirect(r1, r2): TC_ACT_REDIRECT, out of ifindex. */
#define REDIRECT_TO(ifindex)                                                                       \
	{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = (int32_t)(ifindex)},    \
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_2, .imm = 0},                 \
	    {.code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_redirect},                                \
	{                                                                                          \
		.code = BPF_JMP | BPF_EXIT                                                         \
	}

/*
 * On the host end's egress: what the fabric forwards goes to the tap,
 * stamped with the time it came (VFAB_IP_DELAY_STAMP).
 */
static int load_to_tap(int tap)
{
	const struct bpf_insn insns[] = {
	    /* r6 = skb; r2 = skb->ingress_ifindex; 0 or the tap: return TC_ACT_OK */
	    {.code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_6, .src_reg = BPF_REG_1},
	    {.code = BPF_LDX | BPF_W | BPF_MEM,
	     .dst_reg = BPF_REG_2,
	     .src_reg = BPF_REG_1,
	     .off = offsetof(struct __sk_buff, ingress_ifindex)},
	    {.code = BPF_JMP | BPF_JEQ | BPF_K, .dst_reg = BPF_REG_2, .off = 12, .imm = 0},
	    {.code = BPF_JMP | BPF_JEQ | BPF_K, .dst_reg = BPF_REG_2, .off = 11, .imm = tap},
	    /* bpf_skb_vlan_push(skb, 802.1ad, (ktime_ns >> 10) & 0xffff) */
	    {.code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_ktime_get_ns},
	    {.code = BPF_ALU64 | BPF_RSH | BPF_K,
	     .dst_reg = BPF_REG_0,
	     .imm = VFAB_IP_DELAY_STAMP_SHIFT},
	    {.code = BPF_ALU64 | BPF_AND | BPF_K, .dst_reg = BPF_REG_0, .imm = 0xffff},
	    {.code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_1, .src_reg = BPF_REG_6},
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K,
	     .dst_reg = BPF_REG_2,
	     .imm = htons(VFAB_IP_DELAY_STAMP_PROTO)},
	    {.code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_3, .src_reg = BPF_REG_0},
	    {.code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_skb_vlan_push},
	    REDIRECT_TO(tap),
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = TC_ACT_OK},
	    {.code = BPF_JMP | BPF_EXIT},
	};

	return LOAD(insns);
}

/* On an ingress hook: everything leaves by `to` (a tap's: the host end; a bridge's: its ifb). */
static int load_redirect(int to)
{
	const struct bpf_insn insns[] = {REDIRECT_TO(to)};

	return LOAD(insns);
}

/* The clsact discipline that holds the hooks; one already there is the state asked for. */
static int clsact(struct nl_sock *sk, int ifindex)
{
	struct rtnl_qdisc *q = rtnl_qdisc_alloc();
	int ret;

	if (!q)
		return -ENOMEM;
	rtnl_tc_set_ifindex(TC_CAST(q), ifindex);
	rtnl_tc_set_parent(TC_CAST(q), TC_H_CLSACT);
	rtnl_tc_set_handle(TC_CAST(q), CLSACT_HANDLE);
	ret = rtnl_tc_set_kind(TC_CAST(q), "clsact");
	if (ret >= 0)
		ret = rtnl_qdisc_add(sk, q, NLM_F_CREATE);
	rtnl_qdisc_put(q);
	ret = ret < 0 ? vfab_nl_errno(ret) : 0;
	return ret == -EEXIST ? 0 : ret;
}

static int attach(struct nl_sock *sk, int ifindex, uint32_t parent, int prog_fd, const char *name)
{
	struct tcmsg tcm = {.tcm_family = AF_UNSPEC,
			    .tcm_ifindex = ifindex,
			    .tcm_handle = FILTER_HANDLE,
			    .tcm_parent = parent,
			    .tcm_info = TC_H_MAKE(FILTER_PRIO << 16, htons(ETH_P_ALL))};
	struct nl_msg *msg = nlmsg_alloc_simple(RTM_NEWTFILTER, NLM_F_CREATE | NLM_F_REPLACE);
	struct nlattr *opts;
	int ret = -ENOMEM;

	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &tcm, sizeof(tcm), NLMSG_ALIGNTO) < 0 ||
	    nla_put_string(msg, TCA_KIND, "bpf") < 0 ||
	    !(opts = nla_nest_start(msg, TCA_OPTIONS)) ||
	    nla_put_u32(msg, TCA_BPF_FD, (uint32_t)prog_fd) < 0 ||
	    nla_put_string(msg, TCA_BPF_NAME, name) < 0 ||
	    nla_put_u32(msg, TCA_BPF_FLAGS, TCA_BPF_FLAG_ACT_DIRECT) < 0)
		goto out;
	nla_nest_end(msg, opts);
	ret = nl_send_sync(sk, msg); /* frees msg */
	return ret < 0 ? vfab_nl_errno(ret) : 0;
out:
	nlmsg_free(msg);
	return ret;
}

/*
 * Removes our filter from a hook, with its priority (handle 0: the whole
 * priority, ours alone); none there (or no clsact) is the state asked for.
 */
static int detach(struct nl_sock *sk, int ifindex, uint32_t parent)
{
	struct tcmsg tcm = {.tcm_family = AF_UNSPEC,
			    .tcm_ifindex = ifindex,
			    .tcm_handle = 0,
			    .tcm_parent = parent,
			    .tcm_info = TC_H_MAKE(FILTER_PRIO << 16, htons(ETH_P_ALL))};
	struct nl_msg *msg = nlmsg_alloc_simple(RTM_DELTFILTER, 0);
	int ret;

	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &tcm, sizeof(tcm), NLMSG_ALIGNTO) < 0 ||
	    nla_put_string(msg, TCA_KIND, "bpf") < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	ret = nl_send_sync(sk, msg); /* frees msg */
	ret = ret < 0 ? vfab_nl_errno(ret) : 0;
	return ret == -ENOENT || ret == -EINVAL || ret == -ENODEV ? 0 : ret;
}

/* Loads a program and attaches it; the filter holds it, our descriptor is closed. */
static int install(struct nl_sock *sk, int ifindex, uint32_t parent, int fd, const char *name)
{
	int ret;

	if (fd < 0)
		return fd;
	ret = clsact(sk, ifindex);
	if (!ret)
		ret = attach(sk, ifindex, parent, fd, name);
	close(fd);
	return ret;
}

int vfab_ip_loss_bpf(struct nl_sock *sk, int ifindex, uint32_t threshold)
{
	if (!threshold)
		return detach(sk, ifindex, INGRESS_PARENT);
	return install(sk, ifindex, INGRESS_PARENT, load_loss(threshold), "vfab_loss");
}

int vfab_ip_redirect_bpf(struct nl_sock *sk, int ifindex, int to_ifindex)
{
	if (!to_ifindex)
		return detach(sk, ifindex, INGRESS_PARENT);
	return install(sk, ifindex, INGRESS_PARENT, load_redirect(to_ifindex), "vfab_redirect");
}

int vfab_ip_delay_bpf(struct nl_sock *sk, int host_ifindex, int tap_ifindex)
{
	int ret;

	if (!tap_ifindex)
		return detach(sk, host_ifindex, EGRESS_PARENT);
	ret =
	    install(sk, tap_ifindex, INGRESS_PARENT, load_redirect(host_ifindex), "vfab_delay_out");
	return ret ? ret
		   : install(sk, host_ifindex, EGRESS_PARENT, load_to_tap(tap_ifindex),
			     "vfab_delay_in");
}

int vfab_ip_drop_source_bpf(struct nl_sock *sk, int ifindex, const uint8_t mac[6])
{
	return install(sk, ifindex, EGRESS_PARENT, load_drop_source(mac), "vfab_drop_source");
}
