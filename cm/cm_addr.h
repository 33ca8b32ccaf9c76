/* SPDX-License-Identifier: MIT */
/*
 * Socket addresses as the CM keeps them (IPv4 or IPv6 in a
 * sockaddr_storage): lengths, ports, the raw address bytes of the wire
 * format, the kernel's wildcard test and its ephemeral ports. Pure.
 */
#ifndef VFAB_CM_ADDR_H
#define VFAB_CM_ADDR_H

#include <stdint.h>
#include <sys/socket.h>

/* sizeof the sockaddr_in or sockaddr_in6 that sa is. */
socklen_t vfab_cm_sa_len(const struct sockaddr *sa);

/* The port, host order; and setting it. */
uint16_t vfab_cm_sa_port(const struct sockaddr_storage *ss);
void vfab_cm_sa_set_port(struct sockaddr_storage *ss, uint16_t port);

/* The address bytes (4 or 16) into a[16], zero-padded; and back into a sockaddr. */
void vfab_cm_sa_bytes(const struct sockaddr_storage *ss, uint8_t a[16]);
void vfab_cm_sa_make(struct sockaddr_storage *ss, int family, const uint8_t a[16], uint16_t port);

/* A copy of sa (its own length) in *ss, zero elsewhere. */
void vfab_cm_sa_copy(struct sockaddr_storage *ss, const struct sockaddr *sa);

/*
 * Whether addr binds to no device, as the kernel's cma_any_addr says: the
 * wildcard address or a loopback one (127/8, ::1). Binding there succeeds
 * without an HCA and listening there covers every address of the node;
 * libfabric's verbs provider binds "localhost" to probe for devices.
 */
int vfab_cm_addr_any(const struct sockaddr *addr);

/* A port the kernel would pick for a bind to port 0 (its ephemeral range). */
uint16_t vfab_cm_ephemeral_port(void);

/*
 * Ports below this need CAP_NET_BIND_SERVICE (the kernel's PROT_SOCK,
 * which cma_use_port checks; ip_unprivileged_port_start does not apply).
 */
#define VFAB_CM_PROT_SOCK 1024

#endif /* VFAB_CM_ADDR_H */
