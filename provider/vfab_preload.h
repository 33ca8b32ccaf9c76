/* SPDX-License-Identifier: MIT */
/*
 * What the preload library's parts share (provider/vfab_preload.c): the
 * libraries they load on demand sit next to the preload library itself.
 */
#ifndef VFAB_PRELOAD_H
#define VFAB_PRELOAD_H

/* dlopen of lib in the preload library's own directory; NULL when it is not there. */
void *vfab_preload_sibling(const char *lib);

#endif /* VFAB_PRELOAD_H */
