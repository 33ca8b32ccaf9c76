/* SPDX-License-Identifier: MIT */
/*
 * Netlink messages of the RDMA family (NETLINK_RDMA, nldev): what the
 * kernel's replies look like on the wire, built and read without a socket.
 * Pure: no I/O, unit-tested (tests/unit/test_rdmanl.c).
 *
 * Replies are packed into datagrams of at most VFAB_NL_DGRAM_BYTES, each
 * holding whole messages only, as the kernel fills one skb of a dump:
 * libmnl's readers (iproute2's rdma) receive into a buffer of one page and
 * treat a truncated datagram as an error.
 */
#ifndef VFAB_NL_MSG_H
#define VFAB_NL_MSG_H

#include <linux/netlink.h>
#include <stddef.h>
#include <stdint.h>

#define VFAB_NL_DGRAM_BYTES 4096
/* One message, at most: a reply that needs more is split by its builder. */
#define VFAB_NL_MSG_BYTES 3840

/* A message being built: its bytes, its length so far, and where nests begin. */
struct vfab_nl_msg {
	uint8_t buf[VFAB_NL_MSG_BYTES];
	size_t len;
	int overflow; /* an attribute did not fit: the message is incomplete */
	size_t nest[4];
	int depth;
};

/* Starts a message: type, flags, seq, and the socket's port id as nlmsg_pid. */
void vfab_nl_msg_start(struct vfab_nl_msg *m, uint16_t type, uint16_t flags, uint32_t seq,
		       uint32_t portid);
/* Attributes; each returns 0, or -EMSGSIZE (and sets overflow) when it does not fit. */
int vfab_nl_put(struct vfab_nl_msg *m, uint16_t type, const void *data, size_t len);
int vfab_nl_put_u8(struct vfab_nl_msg *m, uint16_t type, uint8_t v);
int vfab_nl_put_u32(struct vfab_nl_msg *m, uint16_t type, uint32_t v);
int vfab_nl_put_u64(struct vfab_nl_msg *m, uint16_t type, uint64_t v);
int vfab_nl_put_str(struct vfab_nl_msg *m, uint16_t type, const char *s);
int vfab_nl_nest_start(struct vfab_nl_msg *m, uint16_t type);
void vfab_nl_nest_end(struct vfab_nl_msg *m);
/* Bytes left for attributes (for a builder that splits a long table). */
size_t vfab_nl_room(const struct vfab_nl_msg *m);
/* Sets nlmsg_len; the message is then m->buf[0 .. m->len). */
void vfab_nl_msg_end(struct vfab_nl_msg *m);

/* NLMSG_DONE of a dump (NLM_F_MULTI, payload 0) and NLMSG_ERROR (err 0: an ACK). */
void vfab_nl_msg_done(struct vfab_nl_msg *m, uint32_t seq, uint32_t portid);
void vfab_nl_msg_error(struct vfab_nl_msg *m, const struct nlmsghdr *req, int err, uint32_t portid);

/* The datagrams of one reply, in order. */
struct vfab_nl_dgram {
	struct vfab_nl_dgram *next;
	size_t len;
	uint8_t data[VFAB_NL_DGRAM_BYTES];
};
struct vfab_nl_out {
	struct vfab_nl_dgram *head, *tail;
	int err; /* -ENOMEM once a datagram could not be had */
};
/* Appends a finished message, starting a new datagram when it does not fit. */
void vfab_nl_out_add(struct vfab_nl_out *o, const struct vfab_nl_msg *m);
void vfab_nl_out_free(struct vfab_nl_out *o);

/*
 * The attributes of a request (after its nlmsghdr; nldev has no family
 * header), by type: tb[type] points at the attribute's payload, len[type]
 * its length. -EINVAL when they run past the message.
 */
#define VFAB_NL_ATTR_MAX 256
struct vfab_nl_attrs {
	const uint8_t *tb[VFAB_NL_ATTR_MAX];
	uint16_t len[VFAB_NL_ATTR_MAX];
};
int vfab_nl_parse(const struct nlmsghdr *h, struct vfab_nl_attrs *a);
/* A u32 attribute: 0 and *v, or -ENOENT (absent or of another size). */
int vfab_nl_get_u32(const struct vfab_nl_attrs *a, uint16_t type, uint32_t *v);

#endif /* VFAB_NL_MSG_H */
