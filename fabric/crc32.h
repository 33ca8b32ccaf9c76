/* SPDX-License-Identifier: MIT */
/*
 * CRC-32 as Ethernet and the IBA's ICRC use it: polynomial 0x04C11DB7,
 * reflected (0xEDB88320). The register is updated raw: callers start from
 * and invert as their format says (roce_icrc). Every RoCE packet that
 * crosses machines is summed twice (vfabd's sender and receiver), so long
 * runs fold 64 bytes a step with carry-less multiplication where the CPU
 * has it (PCLMULQDQ), and walk a table otherwise.
 */
#ifndef VFAB_CRC32_H
#define VFAB_CRC32_H

#include <stddef.h>
#include <stdint.h>

uint32_t vfab_crc32_update(uint32_t crc, const uint8_t *p, size_t n);

#endif /* VFAB_CRC32_H */
