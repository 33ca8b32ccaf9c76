/* SPDX-License-Identifier: MIT */
/*
 * The one owner of the sysfs view (DESIGN.md "Sysfs view of an HCA"): the
 * files a node sees as /sys/class/infiniband*, and its /dev/infiniband. The
 * first write (sysfs_view.c, from `vfab up`) is a pure function of (region,
 * node, output directory) so it can be checked in a temp dir; the updates
 * of a running fabric (sysfs_port.c, from vfabd) replace single files of
 * the same layout with the same texts.
 */
#ifndef VFAB_NETNS_SYSFS_VIEW_H
#define VFAB_NETNS_SYSFS_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric/gid.h"
#include "fabric/region.h"

struct vfab_pci_layout;

/* The driver the HCAs claim (device/driver): what middleware matches "mlx*" against. */
#define VFAB_SYSFS_DRIVER "mlx5_core"
#define VFAB_UVERBS_ABI_VERSION 1 /* class/infiniband_verbs/uverbsN/abi_version */
#define VFAB_VERBS_ABI_VERSION 6  /* class/infiniband_verbs/abi_version */
#define VFAB_UMAD_ABI_VERSION 5	  /* class/infiniband_mad/abi_version */

/*
 * Writes, for node `node` (index into r->nodes[]):
 *   <outdir>/class/infiniband/<hca>/...          (every file of the contract;
 *                                                 device -> its PCI function)
 *   <outdir>/class/infiniband_verbs/abi_version, uverbsN/{ibdev,abi_version,dev}
 *   <outdir>/class/infiniband_mad/abi_version     (no umad devices)
 *   <outdir>/dev/uverbsN                          (char device 1:7, mode 0666)
 * `pci` is the node's layout (pci_view.h, vfab_pci_plan): the HCA and uverbs
 * directories come out of readdir in its order (by name), and each device
 * link points at its function, which vfab_pci_view_write puts in the same
 * outdir. Directories are created as needed. Returns 0 or -errno.
 */
int vfab_sysfs_view_write(const struct vfab_region *r, uint32_t node,
			  const struct vfab_pci_layout *pci, const char *outdir);

/* ---- sysfs_port.c: a port's files while the fabric runs ---- */

/* The live counters: ports/<p>/counters/ then, from OUT_OF_SEQUENCE on, hw_counters/. */
enum vfab_sysfs_counter {
	VFAB_CNT_XMIT_DATA,
	VFAB_CNT_RCV_DATA,
	VFAB_CNT_XMIT_PACKETS,
	VFAB_CNT_RCV_PACKETS,
	VFAB_CNT_UNICAST_XMIT,
	VFAB_CNT_UNICAST_RCV,
	VFAB_CNT_LINK_DOWNED,
	/* ports/<p>/hw_counters/ from here on */
	VFAB_CNT_OUT_OF_SEQUENCE,
	VFAB_CNT_DUPLICATE_REQUEST,
	VFAB_CNT_PACKET_SEQ_ERR,
	VFAB_CNT_LOCAL_ACK_TIMEOUT,
	VFAB_CNT_RNR_NAK_RETRY,
	VFAB_CNT_RX_WRITE,
	VFAB_CNT_RX_READ,
	VFAB_CNT_RX_ATOMIC,
	VFAB_CNT_OUT_OF_BUFFER,
	VFAB_CNT_REQ_CQE_ERROR,
	VFAB_CNT_REQ_CQE_FLUSH_ERROR,
	VFAB_CNT_REQ_REMOTE_ACCESS,
	VFAB_CNT_REQ_REMOTE_INVALID,
	VFAB_CNT_REQ_TRANSPORT_RETRIES,
	VFAB_CNT_REQ_RNR_RETRIES,
	VFAB_CNT_RESP_CQE_ERROR,
	VFAB_CNT_RESP_CQE_FLUSH_ERROR,
	VFAB_CNT_RESP_LOCAL_LENGTH,
	VFAB_CNT_RESP_REMOTE_ACCESS,
	VFAB_NCOUNTERS
};
/* The sysfs file name of each live counter (also the REPORT's counter keys). */
extern const char *const vfab_sysfs_counter_names[VFAB_NCOUNTERS];
/* Is the counter in hw_counters/ (else counters/)? */
bool vfab_sysfs_counter_is_hw(int counter);
/* The live counter of a file name, -1 for the files that always read 0. */
int vfab_sysfs_counter_find(const char *name);
/*
 * Every live counter of a port from its counters (every user's summed,
 * vfab_port_counters_sum); link_downed is kept by vfabd, not the region.
 */
void vfab_sysfs_counter_values(const struct vfab_port_counters *c, uint64_t link_downed,
			       uint64_t v[VFAB_NCOUNTERS]);

/*
 * The files of ports/<p>/counters/ (hw false) or hw_counters/ (hw true), the
 * same for every port, *n of them: the view's first write and vfabd's
 * counters file system (daemon/vfabd_countersfs.c) list the same names.
 */
const char *const *vfab_sysfs_counter_files(bool hw, size_t *n);
/*
 * The text of counter file `name` ("123\n") for a port whose live counters
 * are v: its live counter, 0 for the files vfab does not count. Its length,
 * or -EOVERFLOW when len is too small (32 always suffices).
 */
int vfab_sysfs_counter_text(const uint64_t v[VFAB_NCOUNTERS], const char *name, char *buf,
			    size_t len);

/* ports/<p>/state and phys_state of a port state (IBV_PORT_*), newline included. */
const char *vfab_sysfs_state_text(uint32_t state);
const char *vfab_sysfs_phys_state_text(uint32_t state);

/* The three files of one GID index: gids/N, gid_attrs/types/N, gid_attrs/ndevs/N. */
struct vfab_sysfs_gid_texts {
	char gid[VFAB_GID_STR_LEN + 1];
	char type[32];
	char ndev[VFAB_IFNAME_MAX + 2];
};
/* Their texts for entry g (NULL: an empty index), newline included. */
void vfab_sysfs_gid_texts(const struct vfab_gid *g, const char *netdev,
			  struct vfab_sysfs_gid_texts *t);

/* nodes/<node>/class/infiniband/<hca>/ports/<port>[/<sub>], below the run dir. */
int vfab_sysfs_port_relpath(char *buf, size_t len, const char *node, const char *hca, uint32_t port,
			    const char *sub);
/* The same below rundir: <rundir>/nodes/<node>/class/infiniband/<hca>/ports/<port>[/<sub>]. */
int vfab_sysfs_port_path(char *buf, size_t len, const char *rundir, const char *node,
			 const char *hca, uint32_t port, const char *sub);
/*
 * Opens that directory from rundir_fd, a descriptor of the run dir, without
 * following any link below it (base/beneath.h); sub may be "". node and hca
 * are the caller's own names (its config), never strings of the shared
 * region, which every user can write. fd or -errno.
 */
int vfab_sysfs_port_open(int rundir_fd, const char *node, const char *hca, uint32_t port,
			 const char *sub);

/* Replaces dirfd/name with text (temp file renamed over: readers never see half). */
int vfab_sysfs_replace(int dirfd, const char *name, const char *text);

/* A port's three GID directories, open for vfab_sysfs_replace_gid. */
struct vfab_sysfs_gid_dirs {
	int gids, types, ndevs;
};
int vfab_sysfs_gid_dirs_open(int rundir_fd, const char *node, const char *hca, uint32_t port,
			     struct vfab_sysfs_gid_dirs *dirs);
void vfab_sysfs_gid_dirs_close(struct vfab_sysfs_gid_dirs *dirs);
/* Replaces the three files of index idx with the texts of g (NULL: empty). */
int vfab_sysfs_replace_gid(const struct vfab_sysfs_gid_dirs *dirs, uint32_t idx,
			   const struct vfab_gid *g, const char *netdev);

#endif /* VFAB_NETNS_SYSFS_VIEW_H */
