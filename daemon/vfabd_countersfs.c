/* SPDX-License-Identifier: MIT */
/*
 * The ports' counters as a file system that computes each value when it is
 * read (vfabd_countersfs.h): the kernel asks the HCA on every read of
 * /sys/class/infiniband/<hca>/ports/<p>/counters/, so a read taken as a
 * program exits shows all its traffic. A file rewritten on a tick cannot:
 * a read right after the traffic shows what the last tick saw.
 *
 * libfuse3's low-level API with no thread of its own: the session's
 * descriptor is one more fd of vfabd's poll() (vfabd_server.c), each request
 * is answered at once from the region (the daemon is never on the data
 * path: a request costs a few atomic loads).
 *
 * The tree, <node>/<hca>/<port>/{counters,hw_counters}/<file>, is vfabd's own
 * topology (d->t), fixed for the fabric's life; nothing of it comes from the
 * region, which every local user can write (docs/TRUST.md): the region gives
 * only the values printed. Inode numbers encode the position in that tree,
 * so nothing is allocated per lookup and FORGET has nothing to free.
 *
 * Read-only (the mount is `ro`, open for writing fails with EACCES as on a
 * sysfs file without a store method), `allow_other` (every user of a node
 * reads its counters), `default_permissions` (the kernel checks the modes:
 * files 0444 and directories 0755, all root's, like sysfs), `direct_io`
 * (the page cache would keep an old value). A read at offset 0 takes a new
 * snapshot for the open file, later offsets continue it, as sysfs's seq_file
 * does: `cat` never sees the start of one value and the end of another.
 */
#define FUSE_USE_VERSION 31

#include "vfabd_countersfs.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vfabd.h"
#include "vfabd_log.h"

#include "base/fsutil.h"
#include "base/paths.h"
#include "netns/sysfs_view.h"

#define REQUESTS_PER_TURN 64   /* then the other fds of the loop get their turn */
#define ENTRY_TIMEOUT_S 3600.0 /* the tree never changes while the fabric runs */
#define FILE_SIZE 4096	       /* what stat says of a sysfs attribute */

static const char *const subdirs[2] = {"counters", "hw_counters"};

/* What an inode number stands for: a position in the tree. */
enum kind { K_ROOT = 1, K_NODE, K_HCA, K_PORT, K_SUB, K_FILE };

struct pos {
	enum kind kind;
	uint32_t node, slot, port, sub, file; /* slot: index into nodes[node].hcas[] */
};

static fuse_ino_t ino_of(const struct pos *p)
{
	if (p->kind == K_ROOT)
		return FUSE_ROOT_ID;
	return (fuse_ino_t)p->kind << 40 | (fuse_ino_t)p->node << 24 | (fuse_ino_t)p->slot << 16 |
	       (fuse_ino_t)p->port << 12 | (fuse_ino_t)p->sub << 11 | p->file;
}

static struct vfabd *daemon_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static const struct vfab_hca *hca_at(const struct vfabd *d, uint32_t node, uint32_t slot)
{
	const struct vfab_node *n = &d->t->nodes[node];
	uint32_t h;

	if (slot >= n->nhcas || slot >= sizeof(n->hcas) / sizeof(n->hcas[0]))
		return NULL;
	h = n->hcas[slot];
	return h < d->t->nhcas && h < VFAB_MAX_HCAS && d->t->hcas[h].in_use ? &d->t->hcas[h] : NULL;
}

static size_t nfiles(uint32_t sub)
{
	size_t n;

	vfab_sysfs_counter_files(sub == 1, &n);
	return n;
}

/* The position of ino, checked against vfabd's topology; false: no such inode. */
static bool pos_of(const struct vfabd *d, fuse_ino_t ino, struct pos *p)
{
	const struct vfab_hca *h;

	*p = (struct pos){.kind = (enum kind)(ino >> 40),
			  .node = (ino >> 24) & 0xffff,
			  .slot = (ino >> 16) & 0xff,
			  .port = (ino >> 12) & 0xf,
			  .sub = (ino >> 11) & 1,
			  .file = ino & 0x7ff};
	if (ino == FUSE_ROOT_ID) {
		*p = (struct pos){.kind = K_ROOT};
		return true;
	}
	if (p->kind < K_NODE || p->kind > K_FILE || p->node >= d->t->nnodes ||
	    p->node >= VFAB_MAX_NODES)
		return false;
	if (p->kind == K_NODE)
		return true;
	h = hca_at(d, p->node, p->slot);
	if (!h)
		return false;
	if (p->kind == K_HCA)
		return true;
	if (p->port < 1 || p->port > h->nports || p->port > VFAB_MAX_PORTS)
		return false;
	if (p->kind == K_PORT || p->kind == K_SUB)
		return true;
	return p->file < nfiles(p->sub);
}

/* The name of the entry at p in its parent. */
static const char *name_of(const struct vfabd *d, const struct pos *p, char *buf, size_t len)
{
	switch (p->kind) {
	case K_NODE:
		return d->t->nodes[p->node].id;
	case K_HCA:
		return hca_at(d, p->node, p->slot)->name;
	case K_PORT:
		snprintf(buf, len, "%u", p->port);
		return buf;
	case K_SUB:
		return subdirs[p->sub];
	case K_FILE: {
		size_t n;

		return vfab_sysfs_counter_files(p->sub == 1, &n)[p->file];
	}
	default:
		return "";
	}
}

/* The i-th child of the directory at dir; false past the last one. */
static bool child(const struct vfabd *d, const struct pos *dir, uint32_t i, struct pos *c)
{
	*c = *dir;
	switch (dir->kind) {
	case K_ROOT:
		c->kind = K_NODE;
		c->node = i;
		return i < d->t->nnodes && i < VFAB_MAX_NODES;
	case K_NODE:
		/* Slots whose HCA is gone from the topology are skipped, not listed. */
		for (c->kind = K_HCA, c->slot = 0; c->slot < d->t->nodes[dir->node].nhcas;
		     c->slot++)
			if (hca_at(d, dir->node, c->slot) && i-- == 0)
				return true;
		return false;
	case K_HCA: {
		const struct vfab_hca *h = hca_at(d, dir->node, dir->slot);

		c->kind = K_PORT;
		c->port = i + 1;
		return c->port <= h->nports && c->port <= VFAB_MAX_PORTS;
	}
	case K_PORT:
		c->kind = K_SUB;
		c->sub = i;
		return i < 2;
	case K_SUB:
		c->kind = K_FILE;
		c->file = i;
		return i < nfiles(dir->sub);
	default:
		return false;
	}
}

static void attr_of(const struct vfabd *d, const struct pos *p, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino_of(p);
	if (p->kind == K_FILE) {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = FILE_SIZE;
	} else {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	}
	st->st_blksize = FILE_SIZE;
	st->st_atim.tv_sec = st->st_mtim.tv_sec = st->st_ctim.tv_sec =
	    (time_t)d->countersfs.mounted_s;
}

static void do_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	const struct vfabd *d = daemon_of(req);
	struct fuse_entry_param e = {.attr_timeout = ENTRY_TIMEOUT_S,
				     .entry_timeout = ENTRY_TIMEOUT_S};
	struct pos dir, c;
	char buf[16];

	if (!pos_of(d, parent, &dir) || dir.kind == K_FILE) {
		fuse_reply_err(req, pos_of(d, parent, &dir) ? ENOTDIR : ENOENT);
		return;
	}
	for (uint32_t i = 0; child(d, &dir, i, &c); i++) {
		if (strcmp(name_of(d, &c, buf, sizeof(buf)), name) != 0)
			continue;
		e.ino = ino_of(&c);
		attr_of(d, &c, &e.attr);
		fuse_reply_entry(req, &e);
		return;
	}
	fuse_reply_err(req, ENOENT);
}

static void do_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const struct vfabd *d = daemon_of(req);
	struct stat st;
	struct pos p;

	(void)fi;
	if (!pos_of(d, ino, &p)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	attr_of(d, &p, &st);
	fuse_reply_attr(req, &st, ENTRY_TIMEOUT_S);
}

/* Entries from offset off: ".", "..", then the children; offsets count them. */
static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	const struct vfabd *d = daemon_of(req);
	char *buf, name[16];
	size_t used = 0;
	struct pos dir, c;
	struct stat st;

	(void)fi;
	if (!pos_of(d, ino, &dir) || dir.kind == K_FILE) {
		fuse_reply_err(req, pos_of(d, ino, &dir) ? ENOTDIR : ENOENT);
		return;
	}
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (off_t i = off; i >= 0; i++) {
		const char *n;
		size_t want;

		memset(&st, 0, sizeof(st));
		st.st_mode = S_IFDIR;
		if (i < 2) {
			n = i == 0 ? "." : "..";
			st.st_ino = ino;
		} else if (child(d, &dir, (uint32_t)(i - 2), &c)) {
			n = name_of(d, &c, name, sizeof(name));
			attr_of(d, &c, &st);
		} else {
			break;
		}
		want = fuse_add_direntry(req, buf + used, size - used, n, &st, i + 1);
		if (want > size - used)
			break;
		used += want;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

/* An open file's value, taken by the read at offset 0 (sysfs's seq_file buffer). */
struct snapshot {
	bool taken;
	int len;
	char text[32];
};

static void do_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const struct vfabd *d = daemon_of(req);
	struct snapshot *s;
	struct pos p;

	if (!pos_of(d, ino, &p) || p.kind != K_FILE) {
		fuse_reply_err(req, pos_of(d, ino, &p) ? EISDIR : ENOENT);
		return;
	}
	/* sysfs's answer for an attribute without a store method. */
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EACCES);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)s;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	if (fuse_reply_open(req, fi) != 0)
		free(s); /* interrupted: no RELEASE will come for it */
}

/* The file's text now, from the region's counters of the port vfabd's topology names. */
static int take(const struct vfabd *d, const struct pos *p, struct snapshot *s)
{
	const struct vfab_node *n = &d->t->nodes[p->node];
	uint32_t h = n->hcas[p->slot];
	uint64_t v[VFAB_NCOUNTERS];
	size_t nf;
	const char *const *names = vfab_sysfs_counter_files(p->sub == 1, &nf);

	struct vfab_port_counters c;

	vfab_port_counters_sum(d->r, h, p->port, &c);
	vfab_sysfs_counter_values(&c, d->link.downed[h][p->port - 1], v);
	s->len = vfab_sysfs_counter_text(v, names[p->file], s->text, sizeof(s->text));
	s->taken = s->len >= 0;
	return s->len < 0 ? s->len : 0;
}

static void do_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	const struct vfabd *d = daemon_of(req);
	struct snapshot *s = (struct snapshot *)(uintptr_t)fi->fh;
	struct pos p;
	int rc;

	if (!pos_of(d, ino, &p) || p.kind != K_FILE || !s) {
		fuse_reply_err(req, EIO);
		return;
	}
	if (off == 0 || !s->taken) {
		rc = take(d, &p, s);
		if (rc) {
			fuse_reply_err(req, -rc);
			return;
		}
	}
	if (off >= s->len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	fuse_reply_buf(req, s->text + off,
		       (size_t)(s->len - off) < size ? (size_t)(s->len - off) : size);
}

static void do_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	free((void *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static const struct fuse_lowlevel_ops ops = {
    .lookup = do_lookup,
    .getattr = do_getattr,
    .readdir = do_readdir,
    .open = do_open,
    .read = do_read,
    .release = do_release,
};

/* libfuse's own messages into vfabd's log, one line each. */
static void log_fuse(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	(void)level;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = '\0';
	vfabd_log("counters fs: %s", line);
}

int vfabd_countersfs_init(struct vfabd *d)
{
	struct vfabd_countersfs *c = &d->countersfs;
	char mnt[4096], opts[256];
	char *argv[] = {"vfabd", "-o", opts, NULL};
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	int rc;

	c->se = NULL;
	c->fd = -1;
	c->in_use = false;
	c->mounted_s = (long long)time(NULL);
	if (vfab_counters_fs_dir(mnt, sizeof(mnt), d->rundir))
		return -ENAMETOOLONG;
	snprintf(opts, sizeof(opts),
		 "ro,nosuid,nodev,noexec,allow_other,default_permissions,fsname=vfab-%s,"
		 "subtype=vfab",
		 d->fabric);
	rc = vfab_mkdir_p(mnt, 0755);
	if (rc)
		return rc;
	/* A killed vfabd's mount (ENOTCONN to every reader) would sit under ours. */
	if (umount2(mnt, MNT_DETACH) == 0)
		vfabd_log("counters fs: detached a stale mount on %s", mnt);
	if (access("/dev/fuse", R_OK | W_OK))
		return -errno;
	fuse_set_log_func(log_fuse);
	c->se = fuse_session_new(&args, &ops, sizeof(ops), d);
	fuse_opt_free_args(&args);
	if (!c->se)
		return -EINVAL;
	rc = fuse_session_mount(c->se, mnt);
	if (rc == 0) {
		c->fd = fuse_session_fd(c->se);
		if (fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK) < 0) {
			rc = -errno;
			fuse_session_unmount(c->se);
		}
	} else {
		rc = -EIO; /* libfuse logged why */
	}
	if (rc) {
		fuse_session_destroy(c->se);
		c->se = NULL;
		c->fd = -1;
		return rc;
	}
	c->in_use = true;
	return 0;
}

bool vfabd_countersfs_on(const struct vfabd *d)
{
	return d->countersfs.in_use;
}

int vfabd_countersfs_fd(const struct vfabd *d)
{
	return d->countersfs.se ? d->countersfs.fd : -1;
}

void vfabd_countersfs_run(struct vfabd *d)
{
	struct vfabd_countersfs *c = &d->countersfs;

	for (int i = 0; c->se && i < REQUESTS_PER_TURN; i++) {
		struct fuse_buf buf = {.mem = c->buf};
		int n = fuse_session_receive_buf(c->se, &buf);

		c->buf = buf.mem;
		if (n == -EINTR)
			continue;
		if (n == -EAGAIN)
			return;
		if (n <= 0) {
			/*
			 * Unmounted under us (`vfab down` of a fabric whose vfabd
			 * still runs) or a dead connection: nothing more to serve.
			 * The tick writer does not take over: the nodes' binds
			 * cover the views' files, so no reader would see them.
			 */
			vfabd_log("counters fs: %s: no longer served",
				  n ? strerror(-n) : "unmounted");
			vfabd_countersfs_free(d);
			return;
		}
		fuse_session_process_buf(c->se, &buf);
	}
}

void vfabd_countersfs_free(struct vfabd *d)
{
	struct vfabd_countersfs *c = &d->countersfs;

	if (c->se) {
		fuse_session_unmount(c->se);
		fuse_session_destroy(c->se);
	}
	c->se = NULL;
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
}
