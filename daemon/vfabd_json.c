/* SPDX-License-Identifier: MIT */
/* JSON writer and reader for vfabd's REPORT (see vfabd_json.h). */
#include "daemon/vfabd_json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VJSON_MAX_DEPTH 64

static bool grow(struct vjson_buf *b, size_t more)
{
	size_t cap;
	char *p;

	if (b->oom)
		return false;
	if (b->len + more + 1 <= b->cap)
		return true;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more + 1)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

void vjson_raw(struct vjson_buf *b, const char *s, size_t n)
{
	if (!grow(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void vjson_text(struct vjson_buf *b, const char *s)
{
	vjson_raw(b, s, strlen(s));
}

void vjson_printf(struct vjson_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !grow(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void vjson_str(struct vjson_buf *b, const char *s)
{
	vjson_raw(b, "\"", 1);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\') {
			char esc[2] = {'\\', (char)ch};

			vjson_raw(b, esc, 2);
		} else if (ch < 0x20) {
			vjson_printf(b, "\\u%04x", ch);
		} else {
			vjson_raw(b, s, 1);
		}
	}
	vjson_raw(b, "\"", 1);
}

void vjson_key(struct vjson_buf *b, const char *key, bool first)
{
	if (!first)
		vjson_raw(b, ",", 1);
	vjson_str(b, key);
	vjson_raw(b, ":", 1);
}

/* ---- reader ---- */

struct parser {
	const char *start, *s, *end;
	char *err;
	size_t errlen;
	int depth;
};

static struct vjson *fail(struct parser *p, const char *what)
{
	/* The first failure is the cause; the callers up the tree only unwind. */
	if (p->err && p->errlen && !p->err[0])
		snprintf(p->err, p->errlen, "%s at offset %zu", what, (size_t)(p->s - p->start));
	return NULL;
}

static void ws(struct parser *p)
{
	while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
		p->s++;
}

static bool lit(struct parser *p, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(p->end - p->s) < n || memcmp(p->s, word, n))
		return false;
	p->s += n;
	return true;
}

static int hex4(const char *s)
{
	int v = 0;

	for (int i = 0; i < 4; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* Appends code point cp as UTF-8. */
static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A string at p->s (on the opening quote); malloc'd, NULL on error. */
static char *string(struct parser *p)
{
	const char *s = ++p->s;
	char *out, *o;

	/* The decoded text is never longer than the source. */
	while (p->s < p->end && *p->s != '"')
		p->s += (*p->s == '\\' && p->s + 1 < p->end) ? 2 : 1;
	if (p->s >= p->end)
		return (char *)fail(p, "unterminated string");
	out = o = malloc((size_t)(p->s - s) + 1);
	if (!out)
		return (char *)fail(p, "out of memory");
	for (; s < p->s; s++) {
		unsigned char ch = (unsigned char)*s;
		int cp;

		if (ch < 0x20) {
			free(out);
			return (char *)fail(p, "control character in string");
		}
		if (ch != '\\') {
			*o++ = (char)ch;
			continue;
		}
		switch (*++s) {
		case '"':
		case '\\':
		case '/':
			*o++ = *s;
			break;
		case 'b':
			*o++ = '\b';
			break;
		case 'f':
			*o++ = '\f';
			break;
		case 'n':
			*o++ = '\n';
			break;
		case 'r':
			*o++ = '\r';
			break;
		case 't':
			*o++ = '\t';
			break;
		case 'u':
			cp = p->s - s >= 5 ? hex4(s + 1) : -1;
			/* Surrogates are not needed by the report: refuse rather than mangle. */
			if (cp < 0 || (cp >= 0xd800 && cp <= 0xdfff)) {
				free(out);
				return (char *)fail(p, "bad \\u escape");
			}
			o += put_utf8(o, (unsigned)cp);
			s += 4;
			break;
		default:
			free(out);
			return (char *)fail(p, "bad escape");
		}
	}
	*o = '\0';
	p->s++; /* closing quote */
	return out;
}

static bool number(struct parser *p, struct vjson *v)
{
	const char *start = p->s;
	char buf[64], *end;
	bool integral = true;

	if (p->s < p->end && *p->s == '-')
		p->s++;
	if (p->s >= p->end || !(*p->s >= '0' && *p->s <= '9'))
		return false;
	if (*p->s == '0' && p->s + 1 < p->end && p->s[1] >= '0' && p->s[1] <= '9')
		return false; /* no leading zeros */
	while (p->s < p->end && ((*p->s >= '0' && *p->s <= '9') || *p->s == '.' || *p->s == 'e' ||
				 *p->s == 'E' || *p->s == '+' || *p->s == '-')) {
		if (*p->s == '.' || *p->s == 'e' || *p->s == 'E')
			integral = false;
		p->s++;
	}
	if ((size_t)(p->s - start) >= sizeof(buf))
		return false;
	memcpy(buf, start, (size_t)(p->s - start));
	buf[p->s - start] = '\0';
	errno = 0;
	v->num = strtod(buf, &end);
	if (*end || !isfinite(v->num))
		return false;
	if (integral && buf[0] != '-') {
		errno = 0;
		v->u = strtoull(buf, &end, 10);
		v->is_uint = !errno && !*end;
	}
	v->type = VJSON_NUM;
	return true;
}

static struct vjson *value(struct parser *p);

/* Elements of an array or members of an object, after the opening bracket. */
static bool container(struct parser *p, struct vjson *v, char close)
{
	struct vjson **tail = &v->child;

	ws(p);
	if (p->s < p->end && *p->s == close) {
		p->s++;
		return true;
	}
	for (;;) {
		char *key = NULL;
		struct vjson *e;

		ws(p);
		if (close == '}') {
			if (p->s >= p->end || *p->s != '"')
				return fail(p, "expected a member name"), false;
			key = string(p);
			if (!key)
				return false;
			ws(p);
			if (p->s >= p->end || *p->s != ':') {
				free(key);
				return fail(p, "expected ':'"), false;
			}
			p->s++;
		}
		e = value(p);
		if (!e) {
			free(key);
			return false;
		}
		e->key = key;
		*tail = e;
		tail = &e->next;
		v->n++;
		ws(p);
		if (p->s < p->end && *p->s == ',') {
			p->s++;
			continue;
		}
		if (p->s < p->end && *p->s == close) {
			p->s++;
			return true;
		}
		return fail(p, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'"), false;
	}
}

static struct vjson *value(struct parser *p)
{
	struct vjson *v;
	bool ok = true;

	ws(p);
	if (p->s >= p->end)
		return fail(p, "unexpected end");
	if (p->depth >= VJSON_MAX_DEPTH)
		return fail(p, "nested too deeply");
	v = calloc(1, sizeof(*v));
	if (!v)
		return fail(p, "out of memory");
	switch (*p->s) {
	case '{':
	case '[':
		v->type = *p->s == '{' ? VJSON_OBJ : VJSON_ARR;
		p->s++;
		p->depth++;
		ok = container(p, v, v->type == VJSON_OBJ ? '}' : ']');
		p->depth--;
		break;
	case '"':
		v->type = VJSON_STR;
		v->str = string(p);
		ok = v->str != NULL;
		break;
	case 't':
	case 'f':
		v->type = VJSON_BOOL;
		v->b = *p->s == 't';
		ok = lit(p, v->b ? "true" : "false");
		break;
	case 'n':
		ok = lit(p, "null");
		break;
	default:
		ok = number(p, v);
		if (!ok)
			fail(p, "bad number");
		break;
	}
	if (!ok) {
		fail(p, "bad value");
		vjson_free(v);
		return NULL;
	}
	return v;
}

struct vjson *vjson_parse(const char *text, size_t len, char *err, size_t errlen)
{
	struct parser p = {
	    .start = text, .s = text, .end = text + len, .err = err, .errlen = errlen};
	struct vjson *v;

	if (err && errlen)
		err[0] = '\0';
	v = value(&p);
	if (!v)
		return NULL;
	ws(&p);
	if (p.s != p.end) {
		fail(&p, "trailing text");
		vjson_free(v);
		return NULL;
	}
	return v;
}

void vjson_free(struct vjson *v)
{
	while (v) {
		struct vjson *next = v->next;

		vjson_free(v->child);
		free(v->key);
		free(v->str);
		free(v);
		v = next;
	}
}

const struct vjson *vjson_get(const struct vjson *v, const char *key)
{
	if (!v || v->type != VJSON_OBJ)
		return NULL;
	for (const struct vjson *m = v->child; m; m = m->next)
		if (m->key && strcmp(m->key, key) == 0)
			return m;
	return NULL;
}

const char *vjson_get_str(const struct vjson *o, const char *key, const char *dflt)
{
	const struct vjson *v = vjson_get(o, key);

	return v && v->type == VJSON_STR ? v->str : dflt;
}

uint64_t vjson_get_u64(const struct vjson *o, const char *key)
{
	const struct vjson *v = vjson_get(o, key);

	return v && v->type == VJSON_NUM && v->is_uint ? v->u : 0;
}

const char *vjson_type_name(enum vjson_type t)
{
	static const char *const names[] = {"null", "bool", "number", "string", "array", "object"};

	return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}
