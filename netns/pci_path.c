/* SPDX-License-Identifier: MIT */
#include "netns/pci_path.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int vfab_pci_parse_bdf(const char *name, struct vfab_pci_addr *a)
{
	unsigned dom, bus, dev, fn;
	int end = 0;

	if (sscanf(name, "%x:%x:%x.%x%n", &dom, &bus, &dev, &fn, &end) != 4 || name[end] ||
	    bus > 0xff || dev > 0x1f || fn > 7)
		return -EINVAL;
	*a = (struct vfab_pci_addr){
	    .domain = dom, .bus = (uint8_t)bus, .dev = (uint8_t)dev, .fn = (uint8_t)fn};
	return 0;
}

/* Appends component c (length n) to out, or drops the last one for "..". */
static int push(char *out, size_t len, size_t *used, const char *c, size_t n)
{
	if (n == 0 || (n == 1 && c[0] == '.'))
		return 0;
	if (n == 2 && c[0] == '.' && c[1] == '.') {
		char *slash;

		if (*used == 0)
			return -EINVAL;
		slash = strrchr(out, '/');
		*used = slash ? (size_t)(slash - out) : 0;
		out[*used] = '\0';
		return 0;
	}
	if (*used + (*used > 0) + n + 1 > len)
		return -ENAMETOOLONG;
	if (*used > 0)
		out[(*used)++] = '/';
	memcpy(out + *used, c, n);
	*used += n;
	out[*used] = '\0';
	return 0;
}

static int push_all(char *out, size_t len, size_t *used, const char *path)
{
	while (*path) {
		size_t n = strcspn(path, "/");
		int ret = push(out, len, used, path, n);

		if (ret)
			return ret;
		path += n;
		path += *path == '/';
	}
	return 0;
}

int vfab_pci_path_join(const char *base, const char *rel, char *out, size_t len)
{
	size_t used = 0;
	int ret;

	if (len == 0)
		return -ENAMETOOLONG;
	out[0] = '\0';
	if (rel[0] == '/') {
		if (strlen(rel) >= len)
			return -ENAMETOOLONG;
		strcpy(out, rel);
		return 0;
	}
	ret = push_all(out, len, &used, base);
	return ret ? ret : push_all(out, len, &used, rel);
}

int vfab_pci_rel_link(const char *from, const char *to, char *out, size_t len)
{
	size_t used = 0;

	for (const char *p = from; *p;) {
		size_t n = strcspn(p, "/");

		if (n > 0) {
			if (used + 4 > len)
				return -ENAMETOOLONG;
			memcpy(out + used, "../", 3);
			used += 3;
		}
		p += n;
		p += *p == '/';
	}
	if (used + strlen(to) + 1 > len)
		return -ENAMETOOLONG;
	strcpy(out + used, to);
	return 0;
}
