/* SPDX-License-Identifier: MIT */
#include "rdmanl/nl_msg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void vfab_nl_msg_start(struct vfab_nl_msg *m, uint16_t type, uint16_t flags, uint32_t seq,
		       uint32_t portid)
{
	struct nlmsghdr h = {.nlmsg_len = NLMSG_HDRLEN,
			     .nlmsg_type = type,
			     .nlmsg_flags = flags,
			     .nlmsg_seq = seq,
			     .nlmsg_pid = portid};

	memset(m->buf, 0, NLMSG_HDRLEN);
	memcpy(m->buf, &h, sizeof(h));
	m->len = NLMSG_HDRLEN;
	m->overflow = 0;
	m->depth = 0;
}

size_t vfab_nl_room(const struct vfab_nl_msg *m)
{
	return sizeof(m->buf) - m->len;
}

int vfab_nl_put(struct vfab_nl_msg *m, uint16_t type, const void *data, size_t len)
{
	struct nlattr a = {.nla_len = (uint16_t)(NLA_HDRLEN + len), .nla_type = type};
	size_t total = NLA_ALIGN(NLA_HDRLEN + len);

	if (m->overflow || len > 0xffff - NLA_HDRLEN || total > vfab_nl_room(m)) {
		m->overflow = 1;
		return -EMSGSIZE;
	}
	memset(m->buf + m->len, 0, total);
	memcpy(m->buf + m->len, &a, sizeof(a));
	if (len)
		memcpy(m->buf + m->len + NLA_HDRLEN, data, len);
	m->len += total;
	return 0;
}

int vfab_nl_put_u8(struct vfab_nl_msg *m, uint16_t type, uint8_t v)
{
	return vfab_nl_put(m, type, &v, sizeof(v));
}

int vfab_nl_put_u32(struct vfab_nl_msg *m, uint16_t type, uint32_t v)
{
	return vfab_nl_put(m, type, &v, sizeof(v));
}

/* x86-64 and arm64 read unaligned words: the kernel adds no pad attribute there. */
int vfab_nl_put_u64(struct vfab_nl_msg *m, uint16_t type, uint64_t v)
{
	return vfab_nl_put(m, type, &v, sizeof(v));
}

int vfab_nl_put_str(struct vfab_nl_msg *m, uint16_t type, const char *s)
{
	return vfab_nl_put(m, type, s, strlen(s) + 1);
}

int vfab_nl_nest_start(struct vfab_nl_msg *m, uint16_t type)
{
	size_t at = m->len;

	if (m->depth >= (int)(sizeof(m->nest) / sizeof(m->nest[0])) ||
	    vfab_nl_put(m, type | NLA_F_NESTED, NULL, 0))
		return m->overflow = 1, -EMSGSIZE;
	m->nest[m->depth++] = at;
	return 0;
}

void vfab_nl_nest_end(struct vfab_nl_msg *m)
{
	struct nlattr a;
	size_t at;

	if (!m->depth)
		return;
	at = m->nest[--m->depth];
	memcpy(&a, m->buf + at, sizeof(a));
	a.nla_len = (uint16_t)(m->len - at);
	memcpy(m->buf + at, &a, sizeof(a));
}

void vfab_nl_msg_end(struct vfab_nl_msg *m)
{
	uint32_t len = (uint32_t)m->len;

	memcpy(m->buf + offsetof(struct nlmsghdr, nlmsg_len), &len, sizeof(len));
}

void vfab_nl_msg_done(struct vfab_nl_msg *m, uint32_t seq, uint32_t portid)
{
	int32_t zero = 0;

	vfab_nl_msg_start(m, NLMSG_DONE, NLM_F_MULTI, seq, portid);
	memcpy(m->buf + m->len, &zero, sizeof(zero));
	m->len += NLMSG_ALIGN(sizeof(zero));
	vfab_nl_msg_end(m);
}

/*
 * The error carries the request's header only (NLM_F_CAPPED), as the
 * kernel answers a socket with NETLINK_CAP_ACK: every reader takes both.
 */
void vfab_nl_msg_error(struct vfab_nl_msg *m, const struct nlmsghdr *req, int err, uint32_t portid)
{
	struct nlmsgerr e;

	memset(&e, 0, sizeof(e));
	e.error = err;
	memcpy(&e.msg, req, sizeof(e.msg));
	vfab_nl_msg_start(m, NLMSG_ERROR, NLM_F_CAPPED, req->nlmsg_seq, portid);
	memcpy(m->buf + m->len, &e, sizeof(e));
	m->len += NLMSG_ALIGN(sizeof(e));
	vfab_nl_msg_end(m);
}

void vfab_nl_out_add(struct vfab_nl_out *o, const struct vfab_nl_msg *m)
{
	struct vfab_nl_dgram *d = o->tail;

	if (o->err)
		return;
	if (!d || d->len + m->len > sizeof(d->data)) {
		d = calloc(1, sizeof(*d));
		if (!d) {
			o->err = -ENOMEM;
			return;
		}
		if (o->tail)
			o->tail->next = d;
		else
			o->head = d;
		o->tail = d;
	}
	memcpy(d->data + d->len, m->buf, m->len);
	d->len += NLMSG_ALIGN(m->len);
}

void vfab_nl_out_free(struct vfab_nl_out *o)
{
	while (o->head) {
		struct vfab_nl_dgram *d = o->head;

		o->head = d->next;
		free(d);
	}
	o->tail = NULL;
}

int vfab_nl_parse(const struct nlmsghdr *h, struct vfab_nl_attrs *a)
{
	const uint8_t *p = (const uint8_t *)h + NLMSG_HDRLEN;
	size_t left;

	memset(a, 0, sizeof(*a));
	if (h->nlmsg_len < NLMSG_HDRLEN)
		return -EINVAL;
	left = h->nlmsg_len - NLMSG_HDRLEN;
	while (left >= NLA_HDRLEN) {
		struct nlattr at;
		uint16_t type;

		memcpy(&at, p, sizeof(at));
		if (at.nla_len < NLA_HDRLEN || at.nla_len > left)
			return -EINVAL;
		type = at.nla_type & NLA_TYPE_MASK;
		if (type < VFAB_NL_ATTR_MAX) {
			a->tb[type] = p + NLA_HDRLEN;
			a->len[type] = (uint16_t)(at.nla_len - NLA_HDRLEN);
		}
		if ((size_t)NLA_ALIGN(at.nla_len) >= left)
			break;
		p += NLA_ALIGN(at.nla_len);
		left -= NLA_ALIGN(at.nla_len);
	}
	return 0;
}

int vfab_nl_get_u32(const struct vfab_nl_attrs *a, uint16_t type, uint32_t *v)
{
	if (type >= VFAB_NL_ATTR_MAX || !a->tb[type] || a->len[type] != sizeof(*v))
		return -ENOENT;
	memcpy(v, a->tb[type], sizeof(*v));
	return 0;
}
