/* SPDX-License-Identifier: MIT */
/*
 * The parts of the sysfs view contract that change while a fabric runs: a
 * port's directory in a node view, its live counters (names and where each
 * value comes from), its state texts and its GID entries, and the one way a
 * file is updated in place (vfabd's LINK, SHAPE, address changes and
 * counter tick). vfab_sysfs_view_write (sysfs_view.c) writes the same files
 * the first time.
 *
 * vfabd runs as root and the region is writable by every user: the node and
 * HCA names of a path come from vfabd's own copy of its config, and the path
 * is opened from the run dir one component at a time without following links
 * (base/beneath.h), never built from a string of the region.
 */
#include "netns/sysfs_view.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/beneath.h"
#include "base/fsutil.h"
#include "base/paths.h"
#include "fabric/gid.h"

const char *const vfab_sysfs_counter_names[VFAB_NCOUNTERS] = {
    [VFAB_CNT_XMIT_DATA] = "port_xmit_data",
    [VFAB_CNT_RCV_DATA] = "port_rcv_data",
    [VFAB_CNT_XMIT_PACKETS] = "port_xmit_packets",
    [VFAB_CNT_RCV_PACKETS] = "port_rcv_packets",
    [VFAB_CNT_UNICAST_XMIT] = "unicast_xmit_packets",
    [VFAB_CNT_UNICAST_RCV] = "unicast_rcv_packets",
    [VFAB_CNT_LINK_DOWNED] = "link_downed",
    [VFAB_CNT_OUT_OF_SEQUENCE] = "out_of_sequence",
    [VFAB_CNT_DUPLICATE_REQUEST] = "duplicate_request",
    [VFAB_CNT_PACKET_SEQ_ERR] = "packet_seq_err",
    [VFAB_CNT_LOCAL_ACK_TIMEOUT] = "local_ack_timeout_err",
    [VFAB_CNT_RNR_NAK_RETRY] = "rnr_nak_retry_err",
    [VFAB_CNT_RX_WRITE] = "rx_write_requests",
    [VFAB_CNT_RX_READ] = "rx_read_requests",
    [VFAB_CNT_RX_ATOMIC] = "rx_atomic_requests",
    [VFAB_CNT_OUT_OF_BUFFER] = "out_of_buffer",
    [VFAB_CNT_REQ_CQE_ERROR] = "req_cqe_error",
    [VFAB_CNT_REQ_CQE_FLUSH_ERROR] = "req_cqe_flush_error",
    [VFAB_CNT_REQ_REMOTE_ACCESS] = "req_remote_access_errors",
    [VFAB_CNT_REQ_REMOTE_INVALID] = "req_remote_invalid_request",
    [VFAB_CNT_REQ_TRANSPORT_RETRIES] = "req_transport_retries_exceeded",
    [VFAB_CNT_REQ_RNR_RETRIES] = "req_rnr_retries_exceeded",
    [VFAB_CNT_RESP_CQE_ERROR] = "resp_cqe_error",
    [VFAB_CNT_RESP_CQE_FLUSH_ERROR] = "resp_cqe_flush_error",
    [VFAB_CNT_RESP_LOCAL_LENGTH] = "resp_local_length_error",
    [VFAB_CNT_RESP_REMOTE_ACCESS] = "resp_remote_access_errors",
};

bool vfab_sysfs_counter_is_hw(int counter)
{
	return counter >= VFAB_CNT_OUT_OF_SEQUENCE;
}

int vfab_sysfs_counter_find(const char *name)
{
	for (int i = 0; i < VFAB_NCOUNTERS; i++)
		if (strcmp(vfab_sysfs_counter_names[i], name) == 0)
			return i;
	return -1;
}

void vfab_sysfs_counter_values(const struct vfab_port_counters *c, uint64_t link_downed,
			       uint64_t v[VFAB_NCOUNTERS])
{
	v[VFAB_CNT_XMIT_DATA] = atomic_load_explicit(&c->xmit_data_words, memory_order_relaxed);
	v[VFAB_CNT_RCV_DATA] = atomic_load_explicit(&c->rcv_data_words, memory_order_relaxed);
	v[VFAB_CNT_XMIT_PACKETS] = atomic_load_explicit(&c->xmit_packets, memory_order_relaxed);
	v[VFAB_CNT_RCV_PACKETS] = atomic_load_explicit(&c->rcv_packets, memory_order_relaxed);
	/* Each copy of a multicast datagram is sent as a packet of its own. */
	v[VFAB_CNT_UNICAST_XMIT] = v[VFAB_CNT_XMIT_PACKETS];
	v[VFAB_CNT_UNICAST_RCV] = v[VFAB_CNT_RCV_PACKETS];
	v[VFAB_CNT_LINK_DOWNED] = link_downed;
	v[VFAB_CNT_OUT_OF_SEQUENCE] =
	    atomic_load_explicit(&c->out_of_sequence, memory_order_relaxed);
	v[VFAB_CNT_DUPLICATE_REQUEST] =
	    atomic_load_explicit(&c->duplicate_request, memory_order_relaxed);
	v[VFAB_CNT_PACKET_SEQ_ERR] = atomic_load_explicit(&c->packet_seq_err, memory_order_relaxed);
	v[VFAB_CNT_LOCAL_ACK_TIMEOUT] =
	    atomic_load_explicit(&c->local_ack_timeout_err, memory_order_relaxed);
	v[VFAB_CNT_RNR_NAK_RETRY] =
	    atomic_load_explicit(&c->rnr_nak_retry_err, memory_order_relaxed);
	v[VFAB_CNT_RX_WRITE] = atomic_load_explicit(&c->rx_write_requests, memory_order_relaxed);
	v[VFAB_CNT_RX_READ] = atomic_load_explicit(&c->rx_read_requests, memory_order_relaxed);
	v[VFAB_CNT_RX_ATOMIC] = atomic_load_explicit(&c->rx_atomic_requests, memory_order_relaxed);
	v[VFAB_CNT_OUT_OF_BUFFER] = atomic_load_explicit(&c->out_of_buffer, memory_order_relaxed);
	v[VFAB_CNT_REQ_CQE_ERROR] = atomic_load_explicit(&c->req_cqe_error, memory_order_relaxed);
	v[VFAB_CNT_REQ_CQE_FLUSH_ERROR] =
	    atomic_load_explicit(&c->req_cqe_flush_error, memory_order_relaxed);
	v[VFAB_CNT_REQ_REMOTE_ACCESS] =
	    atomic_load_explicit(&c->req_remote_access_errors, memory_order_relaxed);
	v[VFAB_CNT_REQ_REMOTE_INVALID] =
	    atomic_load_explicit(&c->req_remote_invalid_request, memory_order_relaxed);
	v[VFAB_CNT_REQ_TRANSPORT_RETRIES] =
	    atomic_load_explicit(&c->req_transport_retries_exceeded, memory_order_relaxed);
	v[VFAB_CNT_REQ_RNR_RETRIES] =
	    atomic_load_explicit(&c->req_rnr_retries_exceeded, memory_order_relaxed);
	v[VFAB_CNT_RESP_CQE_ERROR] = atomic_load_explicit(&c->resp_cqe_error, memory_order_relaxed);
	v[VFAB_CNT_RESP_CQE_FLUSH_ERROR] =
	    atomic_load_explicit(&c->resp_cqe_flush_error, memory_order_relaxed);
	v[VFAB_CNT_RESP_LOCAL_LENGTH] =
	    atomic_load_explicit(&c->resp_local_length_error, memory_order_relaxed);
	v[VFAB_CNT_RESP_REMOTE_ACCESS] =
	    atomic_load_explicit(&c->resp_remote_access_errors, memory_order_relaxed);
}

const char *vfab_sysfs_state_text(uint32_t state)
{
	switch (state) {
	case 1:
		return "1: DOWN\n";
	case 2:
		return "2: INIT\n";
	case 3:
		return "3: ARMED\n";
	case 4:
		return "4: ACTIVE\n";
	case 5:
		return "5: ACTIVE_DEFER\n";
	default:
		return "0: NOP\n";
	}
}

const char *vfab_sysfs_phys_state_text(uint32_t state)
{
	return state == 1 ? "3: Disabled\n" : "5: LinkUp\n";
}

void vfab_sysfs_gid_texts(const struct vfab_gid *g, const char *netdev,
			  struct vfab_sysfs_gid_texts *t)
{
	static const uint8_t zero[16];
	char text[VFAB_GID_STR_LEN], upper[VFAB_IFNAME_MAX];

	vfab_gid_format(g ? g->raw : zero, text);
	snprintf(t->gid, sizeof(t->gid), "%s\n", text);
	/* Empty entries still read as a type: ibv_query_gid_table walks them all. */
	snprintf(t->type, sizeof(t->type), "%s\n",
		 vfab_gid_type_name(g ? g->type : VFAB_GID_EMPTY));
	/* An entry of the netdev's VLAN upper names the upper, as the kernel's ndev does. */
	if (g && g->vlan) {
		vfab_vlan_ifname(upper, netdev, g->vlan);
		netdev = upper;
	}
	snprintf(t->ndev, sizeof(t->ndev), "%s\n", g ? netdev : "");
}

int vfab_sysfs_port_relpath(char *buf, size_t len, const char *node, const char *hca, uint32_t port,
			    const char *sub)
{
	char dir[VFAB_PATH_REL_MAX];
	int rc = vfab_node_rel_dir(dir, sizeof(dir), node);

	return rc ? rc
		  : vfab_pathf(buf, len, "%s/class/infiniband/%s/ports/%u%s%s", dir, hca, port,
			       *sub ? "/" : "", sub);
}

int vfab_sysfs_port_path(char *buf, size_t len, const char *rundir, const char *node,
			 const char *hca, uint32_t port, const char *sub)
{
	char rel[VFAB_PATH_REL_MAX];
	int rc = vfab_sysfs_port_relpath(rel, sizeof(rel), node, hca, port, sub);

	return rc ? rc : vfab_pathf(buf, len, "%s/%s", rundir, rel);
}

int vfab_sysfs_port_open(int rundir_fd, const char *node, const char *hca, uint32_t port,
			 const char *sub)
{
	char rel[VFAB_PATH_REL_MAX];
	int rc = vfab_sysfs_port_relpath(rel, sizeof(rel), node, hca, port, sub);

	return rc ? rc : vfab_open_beneath(rundir_fd, rel, O_RDONLY | O_DIRECTORY, 0);
}

/*
 * Entries of a view may be hard links shared with other entries (the empty
 * GID and pkey slots), and readers in the nodes must never see a half-written
 * file, so a running view's file is always replaced: a temp file in the same
 * directory renamed over it.
 */
int vfab_sysfs_replace(int dirfd, const char *name, const char *text)
{
	size_t len = strlen(text);
	char tmp[NAME_MAX + 1];
	int fd, n, rc = 0;

	/* A dot name: a glob over counters/ in a node never picks up the temp file. */
	n = snprintf(tmp, sizeof(tmp), ".%s.vfabd", name);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		rc = errno ? -errno : -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && renameat(dirfd, tmp, dirfd, name))
		rc = -errno;
	if (rc)
		unlinkat(dirfd, tmp, 0);
	return rc;
}

int vfab_sysfs_replace_gid(const struct vfab_sysfs_gid_dirs *dirs, uint32_t idx,
			   const struct vfab_gid *g, const char *netdev)
{
	struct vfab_sysfs_gid_texts t;
	char name[16];
	int rc;

	snprintf(name, sizeof(name), "%u", idx);
	vfab_sysfs_gid_texts(g, netdev, &t);
	rc = vfab_sysfs_replace(dirs->gids, name, t.gid);
	if (!rc)
		rc = vfab_sysfs_replace(dirs->types, name, t.type);
	if (!rc)
		rc = vfab_sysfs_replace(dirs->ndevs, name, t.ndev);
	return rc;
}

int vfab_sysfs_gid_dirs_open(int rundir_fd, const char *node, const char *hca, uint32_t port,
			     struct vfab_sysfs_gid_dirs *dirs)
{
	dirs->gids = vfab_sysfs_port_open(rundir_fd, node, hca, port, "gids");
	dirs->types = vfab_sysfs_port_open(rundir_fd, node, hca, port, "gid_attrs/types");
	dirs->ndevs = vfab_sysfs_port_open(rundir_fd, node, hca, port, "gid_attrs/ndevs");
	if (dirs->gids >= 0 && dirs->types >= 0 && dirs->ndevs >= 0)
		return 0;
	int rc = dirs->gids < 0 ? dirs->gids : dirs->types < 0 ? dirs->types : dirs->ndevs;

	vfab_sysfs_gid_dirs_close(dirs);
	return rc;
}

void vfab_sysfs_gid_dirs_close(struct vfab_sysfs_gid_dirs *dirs)
{
	int *fds[3] = {&dirs->gids, &dirs->types, &dirs->ndevs};

	for (int i = 0; i < 3; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}
