/* SPDX-License-Identifier: MIT */
#include "cm/cm_peer.h"

#include <errno.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/proc.h"
#include "cm/cm_agent.h"
#include "cm/cm_id.h"

#define SLOTS 16

static struct {
	pid_t pid;
	unsigned long long start;
	bool alive;
	uint64_t until;
} cache[SLOTS];
static unsigned next_slot;

static bool look(pid_t pid, unsigned long long start)
{
	unsigned long long now_start;
	char state;
	int ret;

	if (!vfab_pid_alive(pid))
		return false;
	ret = vfab_proc_stat(pid, &state, &now_start);
	/* Unreadable counts as alive (base/proc.h); another start time is another process. */
	return ret || !start || now_start == start;
}

bool vfab_cm_peer_alive(pid_t pid, unsigned long long start)
{
	uint64_t now = vfab_mono_ns();
	unsigned i;

	if (pid <= 0)
		return true;
	for (i = 0; i < SLOTS; i++)
		if (cache[i].pid == pid && cache[i].start == start && now < cache[i].until)
			return cache[i].alive;
	i = next_slot++ % SLOTS;
	cache[i].pid = pid;
	cache[i].start = start;
	cache[i].alive = look(pid, start);
	cache[i].until = now + VFAB_CM_PEER_CACHE_MS * 1000000ull;
	return cache[i].alive;
}

uint64_t vfab_cm_peer_due(uint64_t now)
{
	const uint64_t slot = VFAB_CM_ALIVE_MS * 1000000ull / 10;
	uint64_t t = now + VFAB_CM_ALIVE_MS * 1000000ull;

	return t + slot - t % slot;
}

void vfab_cm_peer_watch(struct vfab_cm_id *id)
{
	id->alive_check_ns = vfab_cm_peer_due(vfab_mono_ns());
	vfab_cm_agent_arm(id->alive_check_ns);
}
