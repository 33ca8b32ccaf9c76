/* SPDX-License-Identifier: MIT */
/* Robust, process-shared mutexes in the region (declared in region.h). */
#include "fabric/region.h"

#include <errno.h>

int vfab_mutex_init_shared(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int rc;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	rc = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return -rc;
}

/*
 * A process can die (SIGKILL) while holding a region lock; the robust mutex
 * hands the lock to the next taker, and the protected state is made of single
 * stores that are consistent at every step, so marking it consistent is safe.
 */
int vfab_lock(pthread_mutex_t *m)
{
	int rc = pthread_mutex_lock(m);

	if (rc == EOWNERDEAD) {
		pthread_mutex_consistent(m);
		rc = 0;
	}
	return -rc;
}

void vfab_unlock(pthread_mutex_t *m)
{
	pthread_mutex_unlock(m);
}
