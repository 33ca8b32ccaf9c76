/* SPDX-License-Identifier: MIT */
/*
 * Typed access to a libyaml document with errors that name the file, line and
 * field ("FILE:LINE: FIELD: message"). Internal to the config parser.
 */
#ifndef VFAB_CONFIG_YAML_H
#define VFAB_CONFIG_YAML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#define CFG_PATH_MAX 128
/* Deepest nesting of mappings and sequences a config may have (the schema needs 6). */
#define CFG_MAX_DEPTH 32

struct cfg_ctx {
	yaml_document_t doc;
	const char *source;
	char *err;
	size_t errlen;
	bool failed; /* the first error wins: later ones are consequences */
};

/*
 * A handler for one key of a mapping. obj is the caller's object; index is the
 * key's position in the table (lets one handler serve several keys).
 */
typedef int (*cfg_key_fn)(struct cfg_ctx *c, yaml_node_t *val, const char *path, void *obj);

struct cfg_key {
	const char *name;
	cfg_key_fn parse;
};

/* Records the error (once) and returns -EINVAL. line is 1-based; 0 = none. */
int cfg_fail_line(struct cfg_ctx *c, uint32_t line, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int cfg_fail(struct cfg_ctx *c, const yaml_node_t *at, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static inline uint32_t cfg_line(const yaml_node_t *n)
{
	return n ? (uint32_t)n->start_mark.line + 1 : 0;
}

yaml_node_t *cfg_node(struct cfg_ctx *c, int id);

/*
 * config_depth.c: fails (cfg_fail_line: file, line, field) on the first
 * mapping or sequence nested deeper than CFG_MAX_DEPTH, before libyaml
 * builds the document, whose cost grows with the square of the depth.
 * 0 also for a syntax error, which the loader then reports.
 */
int cfg_check_depth(struct cfg_ctx *c, const char *yaml, size_t len);
/* Empty value, "~" or "null" (plain): treated as "not given". */
bool cfg_is_null(const yaml_node_t *n);

/* "parent.key" or "parent[i]" into buf (truncated paths only shorten messages). */
const char *cfg_path_key(char *buf, const char *parent, const char *key);
const char *cfg_path_index(char *buf, const char *parent, size_t i);

/*
 * Walks a mapping: every key must be a scalar, appear once and be in keys[]
 * (unless lenient, then unknown keys are skipped). *seen gets bit i for
 * keys[i] found (null values count as absent and are not passed on).
 */
int cfg_mapping(struct cfg_ctx *c, yaml_node_t *map, const char *path, const struct cfg_key *keys,
		size_t nkeys, bool lenient, void *obj, uint32_t *seen);

/* Non-empty, only [A-Za-z0-9_] and the characters in extra. */
bool cfg_name_ok(const char *s, const char *extra);

int cfg_expect_sequence(struct cfg_ctx *c, yaml_node_t *n, const char *path, const char *what);
int cfg_string(struct cfg_ctx *c, yaml_node_t *n, const char *path, char *buf, size_t len);
int cfg_uint(struct cfg_ctx *c, yaml_node_t *n, const char *path, uint32_t min, uint32_t max,
	     uint32_t *out);
/* true / false (plain scalars, any case). */
int cfg_bool(struct cfg_ctx *c, yaml_node_t *n, const char *path, bool *out);
int cfg_double(struct cfg_ctx *c, yaml_node_t *n, const char *path, double min, double max,
	       double *out);

#endif /* VFAB_CONFIG_YAML_H */
