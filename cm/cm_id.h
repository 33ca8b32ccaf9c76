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
	/* A multicast event: its membership's count of events reported (cm_mcast.h). */
	uint32_t *mc_reported;
	struct rdma_ucm_event_resp resp;
};

struct vfab_cm_file {
	struct vfab_cm_file *next;
	int fd;	       /* the application's fd number */
	int installed; /* the eventfd sits on fd */
	struct vfab_cm_event *head, *tail;
};

/* How far an ID's REQ is in the window of its listener's CM QP (cm_window.h). */
enum vfab_cm_win {
	VFAB_WIN_NONE,
	VFAB_WIN_WAITING, /* queued behind the window */
	VFAB_WIN_OUT,	  /* sent, not yet answered */
};

/* An entry a listener published in the listener directory (cm_dir.h). */
struct vfab_cm_pub {
	char name[64];
	uint32_t cm_qpn;
};

struct vfab_cm_id {
	struct vfab_cm_id *next, *prev;			     /* all IDs, for scans */
	struct vfab_cm_id *by_handle, *by_local, *by_remote; /* hash chains */
	int remote_indexed;				     /* on by_remote, in bucket: */
	unsigned remote_bucket;
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
	uint32_t ece_vendor; /* the consumer's ECE for the next REQ or REP (rdma_set_local_ece) */
	uint32_t ece_options;
	/* a listener: the entries it published */
	struct vfab_cm_pub *pub;
	int npub;
	struct vfab_cm_id *listen_next; /* the process's listeners (cm_listen.c) */
	uint32_t listener;		/* a passive ID: its listener's handle */
	/* connection */
	uint32_t local_id, remote_id, remote_cm_qpn;
	pid_t remote_pid;
	unsigned long long remote_start; /* the peer's start time, 0 unknown */
	uint8_t remote_gid[16];
	struct vfab_cm_qp_params qp;
	uint32_t qpn;
	/*
	 * An MRA went out (passive side in REQ_RCVD, active side in REP_RCVD)
	 * or came in (active side in REQ_SENT, passive side in REP_SENT): the
	 * kernel's MRA_* states.
	 */
	int mra;
	int reserved;		 /* receives reserved on its port for the peer's answers */
	struct vfab_cm_msg sent; /* what retries resend */
	uint64_t resend_ns;
	uint64_t req_deadline_ns; /* first REQ: when "nobody listens" becomes final */
	int retries;
	enum vfab_cm_win win;
	struct vfab_cm_id *win_next; /* waiting behind the same window */
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
/*
 * A passive ID's peer: its communication ID and pid, indexed so that a
 * resent REQ finds the ID it made (vfab_cm_id_by_remote).
 */
void vfab_cm_id_set_remote(struct vfab_cm_id *id, uint32_t remote_id, pid_t pid);
struct vfab_cm_id *vfab_cm_id_by_remote(uint32_t remote_id, pid_t pid);
/* The first ID after prev (NULL: the first); for scans. */
struct vfab_cm_id *vfab_cm_id_next(struct vfab_cm_id *prev);
void vfab_cm_id_free(struct vfab_cm_id *id);
/* Called for every ID before it is freed (by the layer that holds resources for IDs). */
void vfab_cm_id_on_free(void (*fn)(struct vfab_cm_id *id));

/* A random 24-bit value (starting PSNs). */
uint32_t vfab_cm_random24(void);

/* Queue an event for id on its file (and wake the file's fd). */
int vfab_cm_event_push(struct vfab_cm_id *id, const struct rdma_ucm_event_resp *resp);
/*
 * The same for an event of one of id's multicast memberships, which counts
 * it in *mc_reported too when it is reported (as the kernel counts it in
 * both the ID's and the membership's events_reported).
 */
int vfab_cm_event_push_mc(struct vfab_cm_id *id, const struct rdma_ucm_event_resp *resp,
			  uint32_t *mc_reported);
/* Drop the queued events of the membership whose count is mc_reported. */
void vfab_cm_event_drop_mc(struct vfab_cm_id *id, const uint32_t *mc_reported);
/* Take the first event of f, counting it as reported; NULL when none. */
struct vfab_cm_event *vfab_cm_event_pop(struct vfab_cm_file *f);
/* Drop id's queued events (for CONNECT_REQUESTs also the IDs they carry). */
void vfab_cm_event_drop(struct vfab_cm_id *id);
/* Move id's queued events to its (new) file. */
void vfab_cm_event_move(struct vfab_cm_id *id, struct vfab_cm_file *from);

#endif /* VFAB_CM_ID_H */
