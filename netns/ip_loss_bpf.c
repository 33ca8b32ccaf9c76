/* SPDX-License-Identifier: MIT */
/*
 * Random loss on a link for kernels without netem: a six instruction
 * classifier program, loaded with bpf(2) and attached in direct-action mode
 * to the clsact ingress hook of the link's far end, drops a packet when a
 * 32-bit random draw falls below the threshold. No compiler is needed at
 * build or run time: the program is written here as instructions.
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
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "netns/netcfg.h"

#define CLSACT_HANDLE TC_H_MAKE(TC_H_CLSACT, 0)
#define INGRESS_PARENT TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS)
#define FILTER_PRIO 1
#define FILTER_HANDLE 1

static int load_program(uint32_t threshold)
{
	/* r0 = random(); if ((u32)r0 >= threshold) return TC_ACT_OK; return TC_ACT_SHOT; */
	struct bpf_insn insns[] = {
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
	union bpf_attr attr;
	long fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_SCHED_CLS;
	attr.insns = (uint64_t)(uintptr_t)insns;
	attr.insn_cnt = sizeof(insns) / sizeof(insns[0]);
	attr.license = (uint64_t)(uintptr_t) "GPL"; /* the kernel's helpers ask for it */
	fd = syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	return fd < 0 ? -errno : (int)fd;
}

static int clsact(struct nl_sock *sk, int ifindex, bool add)
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
		ret = add ? rtnl_qdisc_add(sk, q, NLM_F_CREATE) : rtnl_qdisc_delete(sk, q);
	rtnl_qdisc_put(q);
	ret = ret < 0 ? vfab_nl_errno(ret) : 0;
	/* Already there (add), or not there (delete): the state asked for. */
	if (add && ret == -EEXIST)
		return 0;
	if (!add && (ret == -ENODEV || ret == -EINVAL || ret == -EIO))
		return 0;
	return ret;
}

static int attach(struct nl_sock *sk, int ifindex, int prog_fd)
{
	struct tcmsg tcm = {.tcm_family = AF_UNSPEC,
			    .tcm_ifindex = ifindex,
			    .tcm_handle = FILTER_HANDLE,
			    .tcm_parent = INGRESS_PARENT,
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
	    nla_put_string(msg, TCA_BPF_NAME, "vfab_loss") < 0 ||
	    nla_put_u32(msg, TCA_BPF_FLAGS, TCA_BPF_FLAG_ACT_DIRECT) < 0)
		goto out;
	nla_nest_end(msg, opts);
	ret = nl_send_sync(sk, msg); /* frees msg */
	return ret < 0 ? vfab_nl_errno(ret) : 0;
out:
	nlmsg_free(msg);
	return ret;
}

int vfab_ip_loss_bpf(struct nl_sock *sk, int ifindex, uint32_t threshold)
{
	int ret, fd;

	if (!threshold)
		return clsact(sk, ifindex, false);
	ret = clsact(sk, ifindex, true);
	if (ret)
		return ret;
	fd = load_program(threshold);
	if (fd < 0)
		return fd;
	/* The filter holds the program; our descriptor is not needed after. */
	ret = attach(sk, ifindex, fd);
	close(fd);
	return ret;
}
