/* SPDX-License-Identifier: MIT */
/* RDMA CM multicast memberships (see cm_mcast.h). */
#include "cm/cm_mcast.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <rdma/rdma_user_cm.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_path.h"

/* The multicast QPN every member sends to (the event's qp_num). */
#define MCAST_QPN 0xffffffu

struct vfab_cm_mc {
	struct vfab_cm_mc *next;
	uint32_t handle;
	uint64_t uid;
	struct vfab_cm_id *id;
	uint32_t events_reported;
};

static struct vfab_cm_mc *mcs;
static uint32_t next_handle;

/* What cma_make_mc_event reports: the group's address handle from the ID's port and GID. */
static void join_event(const struct vfab_cm_id *id, const struct vfab_cm_mc *mc,
		       const uint8_t mgid[16], int family, struct rdma_ucm_event_resp *r)
{
	struct ib_uverbs_ah_attr *ah = &r->param.ud.ah_attr;

	memset(r, 0, sizeof(*r));
	r->uid = mc->uid;
	r->id = mc->handle;
	r->event = VFAB_EV_MULTICAST_JOIN;
	memcpy(ah->grh.dgid, mgid, 16);
	ah->grh.sgid_index = id->loc.gid_index;
	ah->grh.hop_limit = vfab_cm_path_mc_hop_limit(family);
	ah->is_global = 1;
	ah->port_num = id->loc.port;
	r->param.ud.qp_num = MCAST_QPN;
	r->param.ud.qkey = VFAB_CM_UDP_QKEY;
}

int vfab_cm_mc_join(struct vfab_cm_id *id, const struct sockaddr *addr, uint32_t addr_size,
		    uint64_t uid, uint32_t join_flags, uint32_t *handle)
{
	/* rdma_join_multicast: bound to a device (ADDR_BOUND) or resolved, a UD ID. */
	struct vfab_cm_mc_req q = {
	    .bound =
		id->have_dev && (id->state == VFAB_CS_IDLE || id->state == VFAB_CS_ADDR_RESOLVED),
	    .loopback = id->loopback,
	    .ud = id->qp_type == IBV_QPT_UD,
	    .join_flags = join_flags,
	    .addr = addr,
	    .addr_size = addr_size,
	};
	struct rdma_ucm_event_resp r;
	struct vfab_cm_mc *mc;
	uint8_t mgid[16];
	int ret;

	ret = vfab_cm_path_mc_check(&q, mgid);
	if (ret)
		return ret;
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return -ENOMEM;
	mc->handle = ++next_handle;
	mc->uid = uid;
	mc->id = id;
	join_event(id, mc, mgid, addr->sa_family, &r);
	ret = vfab_cm_event_push_mc(id, &r, &mc->events_reported);
	if (ret) {
		vfab_cm_event_drop_mc(id, &mc->events_reported);
		free(mc);
		return ret;
	}
	mc->next = mcs;
	mcs = mc;
	*handle = mc->handle;
	return 0;
}

static struct vfab_cm_mc **find(uint32_t handle)
{
	struct vfab_cm_mc **pp;

	for (pp = &mcs; *pp && (*pp)->handle != handle; pp = &(*pp)->next)
		;
	return pp;
}

int vfab_cm_mc_leave(struct vfab_cm_file *f, uint32_t handle, uint32_t *events_reported)
{
	struct vfab_cm_mc **pp = find(handle), *mc = *pp;

	if (!mc)
		return -ENOENT;
	if (mc->id->file != f)
		return -EINVAL;
	*pp = mc->next;
	vfab_cm_event_drop_mc(mc->id, &mc->events_reported);
	*events_reported = mc->events_reported;
	free(mc);
	return 0;
}

void vfab_cm_mc_forget(struct vfab_cm_id *id)
{
	struct vfab_cm_mc **pp = &mcs;

	while (*pp) {
		struct vfab_cm_mc *mc = *pp;

		if (mc->id != id) {
			pp = &mc->next;
			continue;
		}
		*pp = mc->next;
		vfab_cm_event_drop_mc(id, &mc->events_reported);
		free(mc);
	}
}
