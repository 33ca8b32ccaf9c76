/* SPDX-License-Identifier: MIT */
/* Typed, line-aware access to a libyaml document (see config_yaml.h). */
#include "config_yaml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int cfg_fail_line(struct cfg_ctx *c, uint32_t line, const char *path, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (c->failed)
		return -EINVAL;
	c->failed = true;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!c->err || !c->errlen)
		return -EINVAL;
	if (line)
		snprintf(c->err, c->errlen, "%s:%u: %s: %s", c->source, line, path, msg);
	else
		snprintf(c->err, c->errlen, "%s: %s: %s", c->source, path, msg);
	return -EINVAL;
}

int cfg_fail(struct cfg_ctx *c, const yaml_node_t *at, const char *path, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return cfg_fail_line(c, cfg_line(at), path, "%s", msg);
}

yaml_node_t *cfg_node(struct cfg_ctx *c, int id)
{
	return yaml_document_get_node(&c->doc, id);
}

static const char *scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static bool is_plain(const yaml_node_t *n)
{
	return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

bool cfg_is_null(const yaml_node_t *n)
{
	if (!n || n->type != YAML_SCALAR_NODE || !is_plain(n))
		return false;
	return !strcmp(scalar(n), "") || !strcmp(scalar(n), "~") || !strcmp(scalar(n), "null") ||
	       !strcmp(scalar(n), "Null") || !strcmp(scalar(n), "NULL");
}

const char *cfg_path_key(char *buf, const char *parent, const char *key)
{
	if (parent && *parent)
		snprintf(buf, CFG_PATH_MAX, "%s.%s", parent, key);
	else
		snprintf(buf, CFG_PATH_MAX, "%s", key);
	return buf;
}

const char *cfg_path_index(char *buf, const char *parent, size_t i)
{
	snprintf(buf, CFG_PATH_MAX, "%s[%zu]", parent, i);
	return buf;
}

static const char *type_name(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_MAPPING_NODE:
		return "a mapping";
	case YAML_SEQUENCE_NODE:
		return "a sequence";
	default:
		return "a scalar";
	}
}

int cfg_mapping(struct cfg_ctx *c, yaml_node_t *map, const char *path, const struct cfg_key *keys,
		size_t nkeys, bool lenient, void *obj, uint32_t *seen)
{
	yaml_node_pair_t *p;
	char sub[CFG_PATH_MAX];
	int rc;

	*seen = 0;
	if (map->type != YAML_MAPPING_NODE)
		return cfg_fail(c, map, path, "expected a mapping, got %s", type_name(map));
	for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = cfg_node(c, p->key), *v = cfg_node(c, p->value);
		const char *name;
		yaml_node_pair_t *q;
		size_t i;

		if (k->type != YAML_SCALAR_NODE)
			return cfg_fail(c, k, path, "mapping keys must be plain names");
		name = scalar(k);
		for (q = map->data.mapping.pairs.start; q < p; q++)
			if (!strcmp(scalar(cfg_node(c, q->key)), name))
				return cfg_fail(c, k, cfg_path_key(sub, path, name),
						"duplicate key (first at line %u)",
						cfg_line(cfg_node(c, q->key)));
		for (i = 0; i < nkeys; i++)
			if (!strcmp(keys[i].name, name))
				break;
		if (i == nkeys) {
			if (lenient)
				continue;
			return cfg_fail(c, k, cfg_path_key(sub, path, name), "unknown key '%s'",
					name);
		}
		if (cfg_is_null(v))
			continue;
		*seen |= 1u << i;
		rc = keys[i].parse(c, v, cfg_path_key(sub, path, name), obj);
		if (rc)
			return rc;
	}
	return 0;
}

bool cfg_name_ok(const char *s, const char *extra)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
		    !(*s >= '0' && *s <= '9') && *s != '_' && !strchr(extra, *s))
			return false;
	return true;
}

int cfg_expect_sequence(struct cfg_ctx *c, yaml_node_t *n, const char *path, const char *what)
{
	if (n->type != YAML_SEQUENCE_NODE)
		return cfg_fail(c, n, path, "expected a sequence of %s", what);
	return 0;
}

int cfg_string(struct cfg_ctx *c, yaml_node_t *n, const char *path, char *buf, size_t len)
{
	size_t l;

	if (n->type != YAML_SCALAR_NODE)
		return cfg_fail(c, n, path, "expected a string, got %s", type_name(n));
	l = n->data.scalar.length;
	if (l != strlen(scalar(n)))
		return cfg_fail(c, n, path, "string contains a NUL character");
	if (l >= len)
		return cfg_fail(c, n, path, "too long (at most %zu characters)", len - 1);
	memcpy(buf, scalar(n), l + 1);
	return 0;
}

/* Numbers must be plain scalars: a quoted "200" is a string, as YAML says. */
static int number_text(struct cfg_ctx *c, yaml_node_t *n, const char *path, const char *what)
{
	if (n->type != YAML_SCALAR_NODE || !is_plain(n) || !*scalar(n))
		return cfg_fail(c, n, path, "expected %s", what);
	return 0;
}

int cfg_uint(struct cfg_ctx *c, yaml_node_t *n, const char *path, uint32_t min, uint32_t max,
	     uint32_t *out)
{
	const char *s;
	char *end;
	unsigned long long v;

	if (number_text(c, n, path, "an integer"))
		return -EINVAL;
	s = scalar(n);
	if (*s == '-' || *s == '+')
		return cfg_fail(c, n, path, "expected an integer in %u..%u", min, max);
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end)
		return cfg_fail(c, n, path, "expected an integer, got '%s'", s);
	if (errno || v < min || v > max)
		return cfg_fail(c, n, path, "%s is out of range %u..%u", s, min, max);
	*out = (uint32_t)v;
	return 0;
}

int cfg_double(struct cfg_ctx *c, yaml_node_t *n, const char *path, double min, double max,
	       double *out)
{
	const char *s;
	char *end;
	double v;

	if (number_text(c, n, path, "a number"))
		return -EINVAL;
	s = scalar(n);
	errno = 0;
	v = strtod(s, &end);
	if (*end || errno || !isfinite(v))
		return cfg_fail(c, n, path, "expected a number, got '%s'", s);
	if (v < min || v > max)
		return cfg_fail(c, n, path, "%s is out of range %g..%g", s, min, max);
	*out = v;
	return 0;
}

int cfg_bool(struct cfg_ctx *c, yaml_node_t *n, const char *path, bool *out)
{
	const char *s;

	if (number_text(c, n, path, "true or false"))
		return -EINVAL;
	s = scalar(n);
	if (!strcasecmp(s, "true"))
		*out = true;
	else if (!strcasecmp(s, "false"))
		*out = false;
	else
		return cfg_fail(c, n, path, "expected true or false, got '%s'", s);
	return 0;
}
