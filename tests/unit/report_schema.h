/* SPDX-License-Identifier: MIT */
/*
 * The field tables of docs/REPORT_SCHEMA.md, read at run time, and the check
 * of a parsed document against them (REPORT's and HISTORY's tests): a
 * section is "### `name`", its rows "| `field` | type | ...".
 */
#ifndef VFAB_TEST_REPORT_SCHEMA_H
#define VFAB_TEST_REPORT_SCHEMA_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "daemon/vfabd_json.h"

#define SCHEMA_MAX_FIELDS 32
#define SCHEMA_MAX_SECTIONS 16

struct schema_section {
	char name[64]; /* report, links[], ..., history, history.links[] */
	int n;
	char field[SCHEMA_MAX_FIELDS][64];
	char type[SCHEMA_MAX_FIELDS][32];
};

static struct schema_section schema[SCHEMA_MAX_SECTIONS];
static int schema_nsections;

static inline void schema_load(void)
{
	FILE *f = fopen(VFAB_REPORT_SCHEMA, "r");
	char line[1024];
	struct schema_section *cur = NULL;

	assert_non_null(f);
	schema_nsections = 0;
	while (fgets(line, sizeof(line), f)) {
		char name[64], type[32];

		if (sscanf(line, "### `%63[^`]`", name) == 1) {
			assert_true(schema_nsections < SCHEMA_MAX_SECTIONS);
			cur = &schema[schema_nsections++];
			memset(cur, 0, sizeof(*cur));
			snprintf(cur->name, sizeof(cur->name), "%s", name);
		} else if (cur && sscanf(line, "| `%63[^`]` | %31[a-z] |", name, type) == 2) {
			assert_true(cur->n < SCHEMA_MAX_FIELDS);
			snprintf(cur->field[cur->n], sizeof(cur->field[0]), "%s", name);
			snprintf(cur->type[cur->n], sizeof(cur->type[0]), "%s", type);
			cur->n++;
		}
	}
	fclose(f);
}

static inline const struct schema_section *schema_section(const char *name)
{
	if (!schema_nsections)
		schema_load();
	for (int i = 0; i < schema_nsections; i++)
		if (!strcmp(schema[i].name, name))
			return &schema[i];
	fail_msg("docs/REPORT_SCHEMA.md has no section `%s`", name);
	return NULL;
}

static inline bool schema_type_ok(const struct vjson *v, const char *type)
{
	if (!strcmp(type, "string"))
		return v->type == VJSON_STR;
	if (!strcmp(type, "integer"))
		return v->type == VJSON_NUM && v->is_uint;
	if (!strcmp(type, "array"))
		return v->type == VJSON_ARR;
	if (!strcmp(type, "object"))
		return v->type == VJSON_OBJ;
	fail_msg("unknown type '%s' in the schema", type);
	return false;
}

/* Exactly the documented members of section sect, each of its documented type. */
static inline void schema_check_object(const struct vjson *o, const char *sect)
{
	const struct schema_section *s = schema_section(sect);

	assert_non_null(o);
	assert_int_equal(o->type, VJSON_OBJ);
	for (int i = 0; i < s->n; i++) {
		const struct vjson *v = vjson_get(o, s->field[i]);

		if (!v)
			fail_msg("%s: field `%s` is missing", sect, s->field[i]);
		if (!schema_type_ok(v, s->type[i]))
			fail_msg("%s: field `%s` is a %s, documented as %s", sect, s->field[i],
				 vjson_type_name(v->type), s->type[i]);
	}
	for (const struct vjson *m = o->child; m; m = m->next) {
		bool documented = false;

		for (int i = 0; i < s->n && !documented; i++)
			documented = !strcmp(m->key, s->field[i]);
		if (!documented)
			fail_msg("%s: field `%s` is not in docs/REPORT_SCHEMA.md", sect, m->key);
	}
}

#endif /* VFAB_TEST_REPORT_SCHEMA_H */
