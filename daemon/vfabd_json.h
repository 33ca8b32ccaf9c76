/* SPDX-License-Identifier: MIT */
/*
 * The JSON of vfabd's REPORT: a growable writer for the daemon and a small
 * reader (a tree) for its clients, the CLI's summary and the schema test.
 * Only what the report needs: UTF-8 passes through, numbers are doubles with
 * the exact unsigned value kept when the text is a non-negative integer.
 */
#ifndef VFAB_VFABD_JSON_H
#define VFAB_VFABD_JSON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vjson_buf {
	char *p;
	size_t len, cap;
	bool oom; /* an allocation failed: the text is incomplete */
};

void vjson_raw(struct vjson_buf *b, const char *s, size_t n);
void vjson_text(struct vjson_buf *b, const char *s); /* unescaped, as is */
void vjson_printf(struct vjson_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A quoted, escaped string. */
void vjson_str(struct vjson_buf *b, const char *s);
/* "key": with a leading comma unless first. */
void vjson_key(struct vjson_buf *b, const char *key, bool first);

enum vjson_type { VJSON_NULL, VJSON_BOOL, VJSON_NUM, VJSON_STR, VJSON_ARR, VJSON_OBJ };

struct vjson {
	enum vjson_type type;
	char *key; /* member name when inside an object */
	bool b;
	double num;
	bool is_uint; /* num is a non-negative integer; u holds it exactly */
	uint64_t u;
	char *str;
	struct vjson *child; /* first element / member */
	struct vjson *next;  /* next sibling */
	size_t n;	     /* number of children */
};

/* Parses exactly one value (whitespace around it allowed). NULL with err on failure. */
struct vjson *vjson_parse(const char *text, size_t len, char *err, size_t errlen);
void vjson_free(struct vjson *v);
/* Member of an object by name; NULL when absent or v is not an object. */
const struct vjson *vjson_get(const struct vjson *v, const char *key);
const char *vjson_type_name(enum vjson_type t);
/* Member key of object o as a string (dflt when absent or not a string). */
const char *vjson_get_str(const struct vjson *o, const char *key, const char *dflt);
/* Member key of object o as an unsigned integer (0 when absent or not one). */
uint64_t vjson_get_u64(const struct vjson *o, const char *key);

#endif /* VFAB_VFABD_JSON_H */
