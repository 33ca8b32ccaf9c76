/* SPDX-License-Identifier: MIT */
/*
 * The config schema: walks the YAML document key by key (unknown keys are
 * errors, except under `cluster`, which belongs to the seed tool's format),
 * fills struct vfab_config, then hands over to config_check.c for the rules
 * that span several fields.
 */
#include "config_parse.h"
#include "fabric/ipnet.h"
#include "fabric/region.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CFG_MAX_FILE (4u << 20)
#define NKEYS(t) (sizeof(t) / sizeof((t)[0]))

/* ---- cluster ---- */

static int parse_cluster_name(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct cfg_parse *p = obj;

	return cfg_string(c, v, path, p->cfg->name, sizeof(p->cfg->name));
}

static int parse_backend(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct cfg_parse *p = obj;

	return cfg_string(c, v, path, p->cfg->default_backend, sizeof(p->cfg->default_backend));
}

static int parse_cluster(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	static const struct cfg_key keys[] = {{"name", parse_cluster_name},
					      {"default_backend", parse_backend}};
	uint32_t seen;

	/* Lenient: the seed tool keeps more settings here that vfab has no use for. */
	return cfg_mapping(c, v, path, keys, NKEYS(keys), true, obj, &seen);
}

static int parse_version(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct cfg_parse *p = obj;

	return cfg_uint(c, v, path, 1, 1, &p->cfg->version);
}

/* ---- fabric ---- */

static int parse_link_type(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct vfab_cfg_link *l = obj;

	if (cfg_string(c, v, path, l->type, sizeof(l->type)))
		return -EINVAL;
	if (!l->type[0] || !cfg_name_ok(l->type, "-"))
		return cfg_fail(c, v, path, "'%s' is not a link type name", l->type);
	return 0;
}

static int parse_link_bw(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct vfab_cfg_link *l = obj;

	l->has_bandwidth = true;
	return cfg_double(c, v, path, 0.001, 100000.0, &l->bandwidth_gbps);
}

static int parse_link_lat(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct vfab_cfg_link *l = obj;

	l->has_latency = true;
	return cfg_double(c, v, path, 0.0, 10000000.0, &l->latency_us);
}

static int parse_link_oversub(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct vfab_cfg_link *l = obj;

	return cfg_double(c, v, path, 1.0, 1024.0, &l->oversubscription);
}

static int parse_link_loss(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct vfab_cfg_link *l = obj;

	return cfg_double(c, v, path, 0.0, 1.0, &l->loss);
}

static int parse_link(struct cfg_ctx *c, yaml_node_t *v, const char *path, struct vfab_cfg_link *l)
{
	static const struct cfg_key keys[] = {
	    {"type", parse_link_type},	    {"bandwidth_gbps", parse_link_bw},
	    {"latency_us", parse_link_lat}, {"oversubscription", parse_link_oversub},
	    {"loss", parse_link_loss},
	};
	uint32_t seen;

	if (cfg_mapping(c, v, path, keys, NKEYS(keys), false, l, &seen))
		return -EINVAL;
	l->shaped = l->has_bandwidth || l->has_latency;
	return 0;
}

static int parse_intra(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	return parse_link(c, v, path, &((struct cfg_parse *)obj)->cfg->intra_node);
}

static int parse_inter(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	return parse_link(c, v, path, &((struct cfg_parse *)obj)->cfg->inter_node);
}

static int parse_subnet(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct cfg_parse *p = obj;
	struct vfab_cfg_addr *s = &p->cfg->subnet;
	char text[64], why[192];
	uint32_t mask;

	p->subnet_line = cfg_line(v);
	if (cfg_string(c, v, path, text, sizeof(text)))
		return -EINVAL;
	if (!strchr(text, '/') || strchr(text, ':'))
		return cfg_fail(c, v, path, "expected an IPv4 network such as 198.18.0.0/24");
	if (cfg_parse_addr(text, s, why, sizeof(why)))
		return cfg_fail(c, v, path, "%s", why);
	if (s->prefix < CFG_SUBNET_PREFIX || s->prefix > 30)
		return cfg_fail(c, v, path, "prefix length must be %d..30", CFG_SUBNET_PREFIX);
	mask = ~0u << (32 - s->prefix);
	if (cfg_addr_v4(s) & ~mask)
		return cfg_fail(c, v, path, "%s has host bits set", text);
	return 0;
}

static int parse_mtu(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct cfg_parse *p = obj;

	p->mtu_line = cfg_line(v);
	return cfg_uint(c, v, path, 1280, 9000, &p->cfg->mtu);
}

static int parse_leaf_size(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct cfg_parse *p = obj;

	p->leaf_size_line = cfg_line(v);
	return cfg_uint(c, v, path, 1, VFAB_MAX_NODES, &p->cfg->leaf_size);
}

/* The region's ring pool (fabric/region.h vfab_pool_bytes), MiB. */
static int parse_ring_pool(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	return cfg_uint(c, v, path, 64, (uint32_t)(VFAB_POOL_BYTES_MAX >> 20),
			&((struct cfg_parse *)obj)->cfg->ring_pool_mib);
}

/* fabric.limits: what each HCA gives of a kind (region.h vfab_dev_limit). */
#define LIMIT_PARSER(fn, kind)                                                                     \
	static int fn(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)              \
	{                                                                                          \
		return cfg_uint(c, v, path, 1, 1u << 24,                                           \
				&((struct cfg_parse *)obj)->cfg->limits[kind]);                    \
	}
LIMIT_PARSER(parse_max_pd, VFAB_OBJ_PD)
LIMIT_PARSER(parse_max_mr, VFAB_OBJ_MR)
LIMIT_PARSER(parse_max_cq, VFAB_OBJ_CQ)
LIMIT_PARSER(parse_max_srq, VFAB_OBJ_SRQ)
LIMIT_PARSER(parse_max_qp, VFAB_OBJ_QP)

static int parse_limits(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	static const struct cfg_key keys[] = {
	    {"max_pd", parse_max_pd},	{"max_mr", parse_max_mr}, {"max_cq", parse_max_cq},
	    {"max_srq", parse_max_srq}, {"max_qp", parse_max_qp},
	};
	uint32_t seen;

	return cfg_mapping(c, v, path, keys, NKEYS(keys), false, obj, &seen);
}

static int parse_ipv6(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	return cfg_bool(c, v, path, &((struct cfg_parse *)obj)->cfg->ipv6);
}

/* An IPv6 network of at most /64: leaves take /64 blocks of it. */
static int parse_ipv6_prefix(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct cfg_parse *p = obj;
	struct vfab_cfg_addr *a = &p->cfg->ipv6_prefix;
	uint8_t net[16];
	char text[64], why[192];

	if (cfg_string(c, v, path, text, sizeof(text)))
		return -EINVAL;
	if (!strchr(text, '/') || !strchr(text, ':'))
		return cfg_fail(c, v, path, "expected an IPv6 network such as fd00:198:18::/48");
	if (cfg_parse_addr(text, a, why, sizeof(why)))
		return cfg_fail(c, v, path, "%s", why);
	if (a->prefix < 16 || a->prefix > 64)
		return cfg_fail(c, v, path, "prefix length must be 16..64 (leaves get /64s)");
	memcpy(net, a->addr, 16);
	vfab_ipnet_mask(net, a->prefix, 16);
	if (memcmp(net, a->addr, 16))
		return cfg_fail(c, v, path, "%s has host bits set", text);
	if (a->addr[0] == 0xfe && (a->addr[1] & 0xc0) == 0x80)
		return cfg_fail(c, v, path, "%s is link-local: leaves need routable prefixes",
				text);
	return 0;
}

static int parse_spine_lat(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct cfg_parse *p = obj;

	return cfg_double(c, v, path, 0.0, 10000000.0, &p->cfg->spine_latency_us);
}

static int parse_spine(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	static const struct cfg_key keys[] = {{"latency_us", parse_spine_lat}};
	uint32_t seen;

	return cfg_mapping(c, v, path, keys, NKEYS(keys), false, obj, &seen);
}

static int parse_fabric(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	static const struct cfg_key keys[] = {
	    {"intra_node", parse_intra},	{"inter_node", parse_inter},
	    {"subnet", parse_subnet},		{"mtu", parse_mtu},
	    {"leaf_size", parse_leaf_size},	{"ipv6", parse_ipv6},
	    {"ipv6_prefix", parse_ipv6_prefix}, {"spine", parse_spine},
	    {"ring_pool_mib", parse_ring_pool}, {"limits", parse_limits},
	};
	uint32_t seen;

	return cfg_mapping(c, v, path, keys, NKEYS(keys), false, obj, &seen);
}

/* ---- entry points ---- */

static void set_defaults(struct vfab_config *cfg, const char *display)
{
	char why[64];

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->source, sizeof(cfg->source), "%s", display);
	snprintf(cfg->name, sizeof(cfg->name), "vfab");
	cfg->version = 1;
	cfg->local_host = -1;
	cfg->mtu = VFAB_CFG_DEFAULT_MTU;
	cfg_parse_addr("198.18.0.0/24", &cfg->subnet, why, sizeof(why));
	cfg_parse_addr(VFAB_CFG_DEFAULT_IPV6_PREFIX, &cfg->ipv6_prefix, why, sizeof(why));
	snprintf(cfg->intra_node.type, sizeof(cfg->intra_node.type), "loopback");
	snprintf(cfg->inter_node.type, sizeof(cfg->inter_node.type), "roce");
	cfg->intra_node.oversubscription = 1.0;
	cfg->inter_node.oversubscription = 1.0;
}

static int load_root(struct cfg_parse *p)
{
	static const struct cfg_key keys[] = {{"version", parse_version},
					      {"cluster", parse_cluster},
					      {"nodes", cfg_parse_nodes},
					      {"fabric", parse_fabric},
					      {"hosts", cfg_parse_hosts}};
	yaml_node_t *root = yaml_document_get_root_node(&p->ctx.doc);
	uint32_t seen;
	int rc;

	if (!root || cfg_is_null(root))
		return cfg_fail_line(&p->ctx, 1, "nodes", "the config is empty");
	rc = cfg_mapping(&p->ctx, root, "", keys, NKEYS(keys), false, p, &seen);
	if (rc)
		return rc;
	if (!(seen & 4))
		return cfg_fail(&p->ctx, root, "nodes", "missing: a fabric needs nodes");
	rc = cfg_check(p);
	rc = rc ? rc : cfg_check_hosts(p);
	return rc ? rc : cfg_check_machines(p);
}

int vfab_config_load_string(const char *yaml, const char *display_name, struct vfab_config *cfg,
			    char *err, size_t errlen)
{
	struct cfg_parse p = {.cfg = cfg};
	yaml_parser_t parser;
	uint32_t i;
	int rc;

	set_defaults(cfg, display_name ? display_name : "<config>");
	p.ctx.source = cfg->source;
	p.ctx.err = err;
	p.ctx.errlen = errlen;
	if (err && errlen)
		err[0] = '\0';
	rc = cfg_check_depth(&p.ctx, yaml, strlen(yaml));
	if (rc) {
		vfab_config_free(cfg);
		return rc;
	}
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, strlen(yaml));
	if (!yaml_parser_load(&parser, &p.ctx.doc)) {
		yaml_mark_t m = parser.problem_mark;

		rc = cfg_fail_line(&p.ctx, (uint32_t)m.line + 1, "yaml", "%s%s%s",
				   parser.problem ? parser.problem : "syntax error",
				   parser.context ? " " : "", parser.context ? parser.context : "");
		yaml_parser_delete(&parser);
		vfab_config_free(cfg);
		return rc;
	}
	yaml_parser_delete(&parser);
	rc = load_root(&p);
	if (rc == -ENOMEM && !p.ctx.failed)
		cfg_fail_line(&p.ctx, 0, "config", "out of memory");
	yaml_document_delete(&p.ctx.doc);
	for (i = 0; p.lines && i < cfg->nnodes; i++)
		free(p.lines[i].rank);
	free(p.lines);
	if (rc)
		vfab_config_free(cfg);
	return rc;
}

int vfab_config_load_file(const char *path, struct vfab_config *cfg, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	ssize_t n;
	int fd, rc;

	memset(cfg, 0, sizeof(*cfg));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto io_fail;
	}
	buf = malloc(CFG_MAX_FILE + 1);
	if (!buf) {
		close(fd);
		rc = -ENOMEM;
		goto io_fail;
	}
	while ((n = read(fd, buf + len, CFG_MAX_FILE + 1 - len)) > 0)
		len += (size_t)n;
	rc = n < 0 ? -errno : 0;
	close(fd);
	if (!rc && len > CFG_MAX_FILE)
		rc = -EFBIG;
	if (!rc && memchr(buf, '\0', len))
		rc = -EINVAL;
	if (rc)
		goto io_fail;
	buf[len] = '\0';
	rc = vfab_config_load_string(buf, path, cfg, err, errlen);
	free(buf);
	return rc;
io_fail:
	free(buf);
	if (err && errlen)
		snprintf(err, errlen, "%s: %s", path,
			 rc == -EINVAL ? "not a text file" : strerror(-rc));
	return rc;
}

int vfab_config_load_default(struct vfab_config *cfg, char *err, size_t errlen)
{
	return vfab_config_load_string(vfab_default_config_yaml, "default.yaml (built in)", cfg,
				       err, errlen);
}

void vfab_config_free(struct vfab_config *cfg)
{
	struct vfab_cfg_node *all;
	uint32_t i, nall;

	if (!cfg)
		return;
	/* After vfab_config_select_host, nodes[] shares these with cluster[]. */
	all = (struct vfab_cfg_node *)vfab_config_cluster(cfg, &nall);
	for (i = 0; all && i < nall; i++) {
		free(all[i].ranks);
		free(all[i].gpu_profiles);
	}
	free(cfg->cluster);
	cfg->cluster = NULL;
	cfg->ncluster = 0;
	free(cfg->routes);
	cfg->routes = NULL;
	cfg->nroutes = 0;
	free(cfg->nodes);
	free(cfg->leaves);
	free(cfg->hosts);
	cfg->hosts = NULL;
	cfg->nhosts = 0;
	cfg->nodes = NULL;
	cfg->nnodes = 0;
	cfg->leaves = NULL;
	cfg->nleaves = 0;
}
