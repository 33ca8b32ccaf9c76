/* SPDX-License-Identifier: MIT */
/*
 * RoCE over a VLAN: a port whose netdev eth1 carries the VLAN eth1.100 gets
 * the upper's addresses, tagged with the VLAN (the kernel's
 * is_eth_port_of_netdev: the netdev and its uppers), and the upper's
 * link-local address, equal to the default GID but another netdev's, as a
 * pair of its own; gid_attrs/ndevs names the upper; vfabd's runtime
 * allocation keeps them apart; the config rules for `vlan`.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "config/config.h"
#include "daemon/vfabd_gidslots.h"
#include "fabric/gid.h"
#include "fabric/topology.h"
#include "netns/sysfs_view.h"

#define SHM_FIXTURE_PREFIX "unit-vlan"
#include "tests/unit/shm_region_fixture.h"

static char err[512];

static const struct vfab_port *node_port(const struct vfab_region *r, uint32_t node)
{
	return &r->hcas[r->nodes[node].hcas[0]].ports[0];
}

static void assert_gid(const struct vfab_gid *g, uint32_t index, const char *text, uint8_t type,
		       uint16_t vlan)
{
	uint8_t raw[16];

	assert_int_equal(vfab_gid_parse(text, raw), 0);
	assert_int_equal(g->index, index);
	assert_memory_equal(g->raw, raw, 16);
	assert_int_equal(g->type, type);
	assert_int_equal(g->vlan, vlan);
}

static void test_vlan_config_table(void **state)
{
	struct vfab_region *r = *state;
	struct vfab_config cfg;
	struct vfab_sysfs_gid_texts t;
	const struct vfab_port *p;
	char def[VFAB_GID_STR_LEN];
	uint8_t raw[16];

	if (vfab_config_load_file(VFAB_CONFIGS_DIR "/roce-vlan.yaml", &cfg, err, sizeof(err)))
		fail_msg("config: %s", err);
	assert_int_equal(cfg.nodes[0].netdevs[1].vlan, 100);
	assert_int_equal(vfab_topology_fill(r, &cfg), 0);
	vfab_config_free(&cfg);

	p = node_port(r, 0);
	assert_string_equal(p->netdev, "eth1");
	assert_int_equal(p->vlan, 100);
	assert_int_equal(r->nodes[0].netdevs[1].vlan, 100);
	/* The spine has no leg on a VLAN's leaf: its subnet is on-link only. */
	assert_int_equal(r->leaves[r->nodes[0].netdevs[1].leaf].ipv4_gw, 0);
	assert_int_equal(p->ngids, 6);
	vfab_gid_default(p->mac, raw);
	vfab_gid_format(raw, def);
	assert_gid(&p->gids[0], 0, def, VFAB_GID_ROCE_V1, 0);
	assert_gid(&p->gids[1], 1, def, VFAB_GID_ROCE_V2, 0);
	assert_gid(&p->gids[2], 2, "::ffff:198.18.100.1", VFAB_GID_ROCE_V1, 100);
	assert_gid(&p->gids[3], 3, "::ffff:198.18.100.1", VFAB_GID_ROCE_V2, 100);
	assert_gid(&p->gids[4], 4, def, VFAB_GID_ROCE_V1, 100);
	assert_gid(&p->gids[5], 5, def, VFAB_GID_ROCE_V2, 100);

	vfab_sysfs_gid_texts(&p->gids[1], p->netdev, &t);
	assert_string_equal(t.ndev, "eth1\n");
	vfab_sysfs_gid_texts(&p->gids[3], p->netdev, &t);
	assert_string_equal(t.ndev, "eth1.100\n");
	assert_string_equal(t.type, "RoCE v2\n");
	vfab_sysfs_gid_texts(NULL, p->netdev, &t);
	assert_string_equal(t.ndev, "\n");
}

static struct vfab_gid_addr addr(const char *text, uint16_t vlan)
{
	struct vfab_gid_addr a;
	char buf[64], *slash;

	memset(&a, 0, sizeof(a));
	snprintf(buf, sizeof(buf), "%s", text);
	slash = strchr(buf, '/');
	assert_non_null(slash);
	*slash = '\0';
	a.prefix = (uint8_t)atoi(slash + 1);
	a.family = inet_pton(AF_INET, buf, a.addr) == 1 ? AF_INET : AF_INET6;
	if (a.family == AF_INET6)
		assert_int_equal(inet_pton(AF_INET6, buf, a.addr), 1);
	a.vlan = vlan;
	return a;
}

/*
 * At run time (vfabd_gid_slots): the port's own link-local is the default
 * GID and adds nothing; the upper's, the same GID, is a pair of its own; an
 * address on both netdevs is two pairs; removing the upper's address leaves
 * its hole.
 */
static void test_vlan_slots(void **state)
{
	static const uint8_t mac[6] = {0x02, 0x76, 0x66, 0x12, 0x00, 0x00};
	struct vfab_gid cur[VFAB_PORT_GIDS], out[VFAB_PORT_GIDS];
	struct vfab_gid_addr want[4];
	char ll[64], def[VFAB_GID_STR_LEN];
	uint8_t raw[16];
	size_t dropped;

	(void)state;
	vfab_gid_default(mac, raw);
	vfab_gid_format(raw, def);
	inet_ntop(AF_INET6, raw, ll, sizeof(ll));
	strcat(ll, "/64");
	want[0] = addr(ll, 0);
	want[1] = addr("198.18.100.1/24", 100);
	want[2] = addr(ll, 100);
	want[3] = addr("198.18.100.1/24", 0);
	memset(cur, 0, sizeof(cur));
	assert_int_equal(vfabd_gid_slots(mac, cur, 0, want, 4, out, &dropped), 8);
	assert_int_equal(dropped, 0);
	assert_gid(&out[1], 1, def, VFAB_GID_ROCE_V2, 0);
	assert_gid(&out[3], 3, "::ffff:198.18.100.1", VFAB_GID_ROCE_V2, 100);
	assert_gid(&out[4], 4, def, VFAB_GID_ROCE_V1, 100);
	assert_gid(&out[7], 7, "::ffff:198.18.100.1", VFAB_GID_ROCE_V2, 0);

	/* The upper loses its IPv4 address: 2/3 empty, nothing moves. */
	memcpy(cur, out, sizeof(cur));
	want[1] = want[2];
	want[2] = want[3];
	assert_int_equal(vfabd_gid_slots(mac, cur, 8, want, 3, out, &dropped), 8);
	assert_int_equal(out[2].type, VFAB_GID_EMPTY);
	assert_int_equal(out[3].type, VFAB_GID_EMPTY);
	assert_gid(&out[5], 5, def, VFAB_GID_ROCE_V2, 100);
	assert_gid(&out[6], 6, "::ffff:198.18.100.1", VFAB_GID_ROCE_V1, 0);
}

static void expect_error(const char *yaml, const char *want)
{
	struct vfab_config cfg;

	assert_int_not_equal(vfab_config_load_string(yaml, "v.yaml", &cfg, err, sizeof(err)), 0);
	if (!strstr(err, want))
		fail_msg("error '%s' does not say '%s'", err, want);
}

static void test_vlan_config_errors(void **state)
{
	(void)state;
	expect_error("nodes:\n  - id: a\n    netdevs: [{name: eth1, vlan: 4095}]\n", "vlan");
	expect_error("nodes:\n  - id: a\n    netdevs: [{name: eth0, vlan: 10}]\n",
		     "eth0 carries the node's sockets untagged");
	expect_error("nodes:\n  - id: a\n    netdevs: [{name: eth1_longname, vlan: 10}]\n",
		     "longer than a netdev name");
	expect_error("nodes:\n  - id: a\n    netdevs: [{name: eth1, vlan: 10}]\n"
		     "  - id: b\n    netdevs: [{name: eth1, vlan: 20}]\n",
		     "one VLAN per leaf");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_vlan_config_table, shm_setup, shm_teardown),
	    cmocka_unit_test(test_vlan_slots),
	    cmocka_unit_test(test_vlan_config_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
