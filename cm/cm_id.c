/* SPDX-License-Identifier: MIT */
#include "cm/cm_id.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

/* Lookups by handle (every command) and by communication ID (every message) are hashed. */
#define BUCKETS 1024

static struct vfab_cm_file *files;
static struct vfab_cm_id *ids;
static struct vfab_cm_id *by_handle[BUCKETS], *by_local[BUCKETS], *by_remote[BUCKETS];
static uint32_t next_handle = 1;
static void (*free_hook)(struct vfab_cm_id *id);

struct vfab_cm_file *vfab_cm_file_add(int fd)
{
	struct vfab_cm_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->fd = fd;
	f->next = files;
	files = f;
	return f;
}

struct vfab_cm_file *vfab_cm_file_find(int fd)
{
	for (struct vfab_cm_file *f = files; f; f = f->next)
		if (f->fd == fd)
			return f;
	return NULL;
}

void vfab_cm_file_free(struct vfab_cm_file *f)
{
	struct vfab_cm_file **pp;

	for (pp = &files; *pp && *pp != f; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = f->next;
	while (f->head) {
		struct vfab_cm_event *e = f->head;

		f->head = e->next;
		free(e);
	}
	free(f);
}

/* A random 32-bit value that is never 0 (communication IDs). */
static uint32_t random_id(void)
{
	uint32_t v = 0;

	while (v == 0)
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			v = (uint32_t)rand();
	return v;
}

uint32_t vfab_cm_random24(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint32_t)rand();
	return v & 0xffffff;
}

struct vfab_cm_id *vfab_cm_id_new(struct vfab_cm_file *f, uint64_t uid, uint16_t ps,
				  uint8_t qp_type)
{
	struct vfab_cm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->handle = next_handle++;
	id->uid = uid;
	id->file = f;
	id->ps = ps;
	id->qp_type = qp_type;
	do
		id->local_id = random_id();
	while (vfab_cm_id_by_local(id->local_id));
	id->next = ids;
	if (ids)
		ids->prev = id;
	ids = id;
	id->by_handle = by_handle[id->handle % BUCKETS];
	by_handle[id->handle % BUCKETS] = id;
	id->by_local = by_local[id->local_id % BUCKETS];
	by_local[id->local_id % BUCKETS] = id;
	return id;
}

struct vfab_cm_id *vfab_cm_id_find(uint32_t handle)
{
	for (struct vfab_cm_id *id = by_handle[handle % BUCKETS]; id; id = id->by_handle)
		if (id->handle == handle)
			return id;
	return NULL;
}

struct vfab_cm_id *vfab_cm_id_by_local(uint32_t local_id)
{
	for (struct vfab_cm_id *id = by_local[local_id % BUCKETS]; id; id = id->by_local)
		if (id->local_id == local_id)
			return id;
	return NULL;
}

static unsigned remote_bucket(uint32_t remote_id, pid_t pid)
{
	return (remote_id ^ (uint32_t)pid * 2654435761u) % BUCKETS;
}

void vfab_cm_id_set_remote(struct vfab_cm_id *id, uint32_t remote_id, pid_t pid)
{
	unsigned b = remote_bucket(remote_id, pid);

	id->remote_id = remote_id;
	id->remote_pid = pid;
	if (id->remote_indexed)
		return; /* a passive ID's peer never changes */
	id->by_remote = by_remote[b];
	by_remote[b] = id;
	id->remote_indexed = 1;
	id->remote_bucket = b;
}

struct vfab_cm_id *vfab_cm_id_by_remote(uint32_t remote_id, pid_t pid)
{
	for (struct vfab_cm_id *id = by_remote[remote_bucket(remote_id, pid)]; id;
	     id = id->by_remote)
		if (id->remote_id == remote_id && id->remote_pid == pid)
			return id;
	return NULL;
}

struct vfab_cm_id *vfab_cm_id_next(struct vfab_cm_id *prev)
{
	return prev ? prev->next : ids;
}

void vfab_cm_id_on_free(void (*fn)(struct vfab_cm_id *id))
{
	free_hook = fn;
}

void vfab_cm_id_free(struct vfab_cm_id *id)
{
	struct vfab_cm_id **pp;

	if (free_hook)
		free_hook(id);
	vfab_cm_event_drop(id);
	for (pp = &by_handle[id->handle % BUCKETS]; *pp && *pp != id; pp = &(*pp)->by_handle)
		;
	if (*pp)
		*pp = id->by_handle;
	for (pp = &by_local[id->local_id % BUCKETS]; *pp && *pp != id; pp = &(*pp)->by_local)
		;
	if (*pp)
		*pp = id->by_local;
	if (id->remote_indexed) {
		for (pp = &by_remote[id->remote_bucket]; *pp && *pp != id; pp = &(*pp)->by_remote)
			;
		if (*pp)
			*pp = id->by_remote;
	}
	if (id->prev)
		id->prev->next = id->next;
	else
		ids = id->next;
	if (id->next)
		id->next->prev = id->prev;
	free(id->pub);
	free(id);
}

int vfab_cm_event_push_mc(struct vfab_cm_id *id, const struct rdma_ucm_event_resp *resp,
			  uint32_t *mc_reported)
{
	struct vfab_cm_file *f = id->file;
	struct vfab_cm_event *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->id = id->handle;
	e->mc_reported = mc_reported;
	e->resp = *resp;
	if (f->tail)
		f->tail->next = e;
	else
		f->head = e;
	f->tail = e;
	/* eventfd_write, not write(): the preload library routes write() on this fd here. */
	if (f->installed && eventfd_write(f->fd, 1))
		return -errno;
	return 0;
}

int vfab_cm_event_push(struct vfab_cm_id *id, const struct rdma_ucm_event_resp *resp)
{
	return vfab_cm_event_push_mc(id, resp, NULL);
}

struct vfab_cm_event *vfab_cm_event_pop(struct vfab_cm_file *f)
{
	struct vfab_cm_event *e = f->head;
	struct vfab_cm_id *id;

	if (!e)
		return NULL;
	f->head = e->next;
	if (!f->head)
		f->tail = NULL;
	id = vfab_cm_id_find(e->id);
	if (id)
		id->events_reported++;
	if (e->mc_reported)
		(*e->mc_reported)++;
	return e;
}

/* Unlink the events of f of ID handle (and of membership mc, when not NULL), into *out. */
static void take_events(struct vfab_cm_file *f, uint32_t handle, const uint32_t *mc,
			struct vfab_cm_event **out)
{
	struct vfab_cm_event **pp = &f->head, *last = NULL;

	while (*pp) {
		struct vfab_cm_event *e = *pp;

		if (e->id == handle && (!mc || e->mc_reported == mc)) {
			*pp = e->next;
			e->next = *out;
			*out = e;
		} else {
			last = e;
			pp = &e->next;
		}
	}
	f->tail = last;
}

void vfab_cm_event_drop(struct vfab_cm_id *id)
{
	struct vfab_cm_event *gone = NULL;

	if (!id->file)
		return;
	take_events(id->file, id->handle, NULL, &gone);
	while (gone) {
		struct vfab_cm_event *e = gone;
		struct vfab_cm_id *child;

		gone = e->next;
		/* A request nobody saw: its ID goes with it, as the kernel's does. */
		if (e->resp.event == VFAB_EV_CONNECT_REQUEST && e->resp.id != id->handle &&
		    (child = vfab_cm_id_find(e->resp.id)) != NULL) {
			child->file = NULL;
			vfab_cm_id_free(child);
		}
		free(e);
	}
}

void vfab_cm_event_drop_mc(struct vfab_cm_id *id, const uint32_t *mc_reported)
{
	struct vfab_cm_event *gone = NULL;

	if (!id->file)
		return;
	take_events(id->file, id->handle, mc_reported, &gone);
	while (gone) {
		struct vfab_cm_event *e = gone;

		gone = e->next;
		free(e);
	}
}

void vfab_cm_event_move(struct vfab_cm_id *id, struct vfab_cm_file *from)
{
	struct vfab_cm_event *moved = NULL, *rev = NULL;

	take_events(from, id->handle, NULL, &moved);
	while (moved) { /* take_events reversed them */
		struct vfab_cm_event *e = moved;

		moved = e->next;
		e->next = rev;
		rev = e;
	}
	while (rev) {
		struct vfab_cm_event *e = rev;

		rev = e->next;
		e->next = NULL;
		if (id->file->tail)
			id->file->tail->next = e;
		else
			id->file->head = e;
		id->file->tail = e;
		if (id->file->installed && eventfd_write(id->file->fd, 1))
			break;
	}
}
