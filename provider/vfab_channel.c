/* SPDX-License-Identifier: MIT */
/*
 * Completion channels. libibverbs has no provider hook for them, so the
 * preload library routes ibv_create_comp_channel/ibv_destroy_comp_channel of
 * vfab contexts here through struct vfab_device. A channel's fd is the read
 * end of a FIFO into which completers write the 8-byte CQ cookie that
 * ibv_get_cq_event reads.
 */
#include "provider/vfab.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

struct vfab_channel {
	struct vfab_channel_head head; /* magic + public struct, first */
	uint32_t id;
	int32_t pid; /* the FIFO is <pid>.<id> */
};

static struct vfab_channel *to_vchan(struct ibv_comp_channel *ch)
{
	return (struct vfab_channel *)((char *)ch - offsetof(struct vfab_channel, head.ch));
}

int vfab_create_channel(struct ibv_context *ibctx, struct ibv_comp_channel **out)
{
	struct vfab_context *ctx = to_vctx(ibctx);
	struct vfab_channel *c;
	int fd;

	c = calloc(1, sizeof(*c));
	if (!c)
		return ENOMEM;
	c->id = vfab_next_id();
	c->pid = ctx->owner.pid;
	fd = vfab_fifo_create(ctx->r, c->pid, c->id);
	if (fd < 0) {
		free(c);
		return -fd;
	}
	c->head.magic = VFAB_CHANNEL_MAGIC;
	c->head.ch.context = ibctx;
	c->head.ch.fd = fd;
	c->head.ch.refcnt = 0;
	*out = &c->head.ch;
	return 0;
}

int vfab_channel_id(struct ibv_comp_channel *ch, uint32_t *id)
{
	struct vfab_channel *c = to_vchan(ch);

	if (c->head.magic != VFAB_CHANNEL_MAGIC)
		return -EINVAL;
	*id = c->id;
	return 0;
}

/* Same contract as libibverbs': EBUSY while CQs still use the channel. */
int vfab_destroy_channel(struct ibv_comp_channel *ch)
{
	struct vfab_channel *c = to_vchan(ch);
	struct ibv_context *ibctx = ch->context;
	int ret = 0;

	if (c->head.magic != VFAB_CHANNEL_MAGIC)
		return EINVAL;
	pthread_mutex_lock(&ibctx->mutex);
	if (ch->refcnt) {
		ret = EBUSY;
	} else {
		c->head.magic = 0;
		close(ch->fd);
		vfab_fifo_remove(to_vctx(ibctx)->r, c->pid, c->id);
		free(c);
	}
	pthread_mutex_unlock(&ibctx->mutex);
	return ret;
}
