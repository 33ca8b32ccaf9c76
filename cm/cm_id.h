/* SPDX-License-Identifier: MIT */
/*
 * The ucma objects of one process: files (an opened /dev/infiniband/rdma_cm,
 * with its event queue) and CM IDs (handles, addresses, connection state).
 * The caller holds the agent's lock; nothing here sends or blocks.
 */
#ifndef VFAB_CM_ID_H
#define VFAB_CM_ID_H

#include <rdma/rdma_user_cm.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "cm/cm_path.h"
#include "cm/cm_route.h"
#include "cm/cm_wire.h"

/* rdma_cm event numbers (enum rdma_cm_event_type, librdmacm's ABI). */
enum vfab_cm_event_type {
	VFAB_EV_ADDR_RESOLVED,
	VFAB_EV_ADDR_ERROR,
	VFAB_EV_ROUTE_RESOLVED,
	VFAB_EV_ROUTE_ERROR,
	VFAB_EV_CONNECT_REQUEST,
	VFAB_EV_CONNECT_RESPONSE,
	VFAB_EV_CONNECT_ERROR,
	VFAB_EV_UNREACHABLE,
	VFAB_EV_REJECTED,
	VFAB_EV_ESTABLISHED,
	VFAB_EV_DISCONNECTED,
	VFAB_EV_DEVICE_REMOVAL,
	VFAB_EV_MULTICAST_JOIN,
	VFAB_EV_MULTICAST_ERROR,
	VFAB_EV_ADDR_CHANGE,
	VFAB_EV_TIMEWAIT_EXIT,
};

enum vfab_cm_state {
	VFAB_CS_IDLE,
	VFAB_CS_ADDR_QUERY,
	VFAB_CS_ADDR_RESOLVED,
	VFAB_CS_ROUTE_RESOLVED,
	VFAB_CS_LISTEN,
	VFAB_CS_REQ_SENT, /* also SIDR REQ */
	VFAB_CS_REQ_RCVD,
	VFAB_CS_REP_SENT,
	VFAB_CS_REP_RCVD,
	VFAB_CS_ESTABLISHED,
	VFAB_CS_DREQ_SENT,
	VFAB_CS_DISCONNECTED,
};

struct vfab_cm_event {
	struct vfab_cm_event *next;
	uint32_t id; /* whose event it is (for a CONNECT_REQUEST: the listener's) */
	struct rdma_ucm_event_resp resp;
};

struct vfab_cm_file {
	struct vfab_cm_file *next;
	int fd;	       /* the application's fd number */
	int installed; /* the eventfd sits on fd */
	struct vfab_cm_event *head, *tail;
};

struct vfab_cm_id {
	struct vfab_cm_id *next;
	uint32_t handle;
	uint64_t uid;
	struct vfab_cm_file *file;
	uint16_t ps;
	uint8_t qp_type; /* enum ibv_qp_type */
	enum vfab_cm_state state;
	struct sockaddr_storage src, dst;
	int have_dev; /* loc is valid */
	int loopback; /* resolved to a loopback destination: no netdev, no route */
	struct vfab_cm_local loc;
	int route; /* a path is resolved */
	uint8_t dgid[16];
	uint8_t tos;
	uint8_t ack_timeout; /* RDMA_OPTION_ID_ACK_TIMEOUT, 0 = the CM's */
	int published;	     /* listener entries were written */
	uint32_t listener;   /* a passive ID: its listener's handle */
	/* connection */
	uint32_t local_id, remote_id, remote_cm_qpn;
	pid_t remote_pid;
	uint8_t remote_gid[16];
	struct vfab_cm_qp_params qp;
	uint32_t qpn;
	struct vfab_cm_msg sent; /* what retries resend */
	uint64_t resend_ns;
	uint64_t req_deadline_ns; /* first REQ: when "nobody listens" becomes final */
	int retries;
	uint64_t alive_check_ns;
	uint64_t timewait_ns; /* when TIMEWAIT_EXIT is due, 0: none */
	uint32_t events_reported;
};

struct vfab_cm_file *vfab_cm_file_add(int fd);
struct vfab_cm_file *vfab_cm_file_find(int fd);
/* Unlink f and free it and its events (IDs must be gone first). */
void vfab_cm_file_free(struct vfab_cm_file *f);

struct vfab_cm_id *vfab_cm_id_new(struct vfab_cm_file *f, uint64_t uid, uint16_t ps,
				  uint8_t qp_type);
struct vfab_cm_id *vfab_cm_id_find(uint32_t handle);
struct vfab_cm_id *vfab_cm_id_by_local(uint32_t local_id);
/* The first ID after prev (NULL: the first); for scans. */
struct vfab_cm_id *vfab_cm_id_next(struct vfab_cm_id *prev);
void vfab_cm_id_free(struct vfab_cm_id *id);

/* Queue an event for id on its file (and wake the file's fd). */
int vfab_cm_event_push(struct vfab_cm_id *id, const struct rdma_ucm_event_resp *resp);
/* Take the first event of f, counting it as reported; NULL when none. */
struct vfab_cm_event *vfab_cm_event_pop(struct vfab_cm_file *f);
/* Drop id's queued events (for CONNECT_REQUESTs also the IDs they carry). */
void vfab_cm_event_drop(struct vfab_cm_id *id);
/* Move id's queued events to its (new) file. */
void vfab_cm_event_move(struct vfab_cm_id *id, struct vfab_cm_file *from);

#endif /* VFAB_CM_ID_H */
