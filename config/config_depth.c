/* SPDX-License-Identifier: MIT */
/*
 * A depth limit checked before the document is built. libyaml's loader
 * spends time in the square of the nesting depth (100k levels took 31 s;
 * the 4 MiB file cap allows some 2M), and no field of the schema nests
 * deeper than a handful of levels. So the file's events are read once on
 * their own, following where they are (the mapping key or sequence index of
 * every open level), and the first collection past CFG_MAX_DEPTH ends the
 * load with "FILE:LINE: FIELD: nested deeper than N levels".
 */
#include "config_yaml.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* One open mapping or sequence. */
struct level {
	bool map;
	bool want_key;	/* map: the next node is a key */
	size_t index;	/* seq: the index of the next item */
	char key[32];	/* map: the key whose value is being read */
};

/* The field an event at the top of levels[0..n) belongs to: "a.b[3].c". */
static void path_of(const struct level *lv, int n, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && used < len; i++) {
		int k = lv[i].map ? snprintf(buf + used, len - used, "%s%s", used ? "." : "",
					     lv[i].key)
				  : snprintf(buf + used, len - used, "[%zu]", lv[i].index);

		used += k > 0 ? (size_t)k : 0;
	}
	if (!buf[0])
		snprintf(buf, len, "(document)");
}

/* A node of the level on top is complete: the map moves to its next key, the seq on. */
static void node_done(struct level *top)
{
	if (!top)
		return;
	if (top->map)
		top->want_key = !top->want_key;
	else
		top->index++;
}

int cfg_check_depth(struct cfg_ctx *c, const char *yaml, size_t len)
{
	struct level lv[CFG_MAX_DEPTH];
	yaml_parser_t parser;
	yaml_event_t ev;
	int depth = 0, rc = 0;
	bool done = false;

	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	while (!done && !rc) {
		struct level *top = depth ? &lv[depth - 1] : NULL;
		bool key = top && top->map && top->want_key;

		if (!yaml_parser_parse(&parser, &ev))
			break; /* a syntax error: the loader says where */
		switch (ev.type) {
		case YAML_SCALAR_EVENT:
			if (key)
				snprintf(top->key, sizeof(top->key), "%s",
					 (const char *)ev.data.scalar.value);
			node_done(top);
			break;
		case YAML_ALIAS_EVENT:
			node_done(top);
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (key)
				snprintf(top->key, sizeof(top->key), "?");
			if (depth == CFG_MAX_DEPTH) {
				char path[CFG_PATH_MAX];

				path_of(lv, depth, path, sizeof(path));
				rc = cfg_fail_line(c, (uint32_t)ev.start_mark.line + 1, path,
						   "nested deeper than %d levels", CFG_MAX_DEPTH);
				break;
			}
			lv[depth++] = (struct level){.map = ev.type == YAML_MAPPING_START_EVENT,
						     .want_key = true};
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			if (depth)
				depth--;
			node_done(depth ? &lv[depth - 1] : NULL);
			break;
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	return rc;
}
