/* SPDX-License-Identifier: MIT */
#include "rdmanl/nl_dev.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* dir/path's text (at most len - 1 bytes) into buf; 0 or -errno. */
static int read_all(int dir, const char *path, char *buf, size_t len)
{
	int fd = openat(dir, path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = '\0';
	return 0;
}

/* Its first line, without the newline. */
static int read_line(int dir, const char *path, char *buf, size_t len)
{
	int ret = read_all(dir, path, buf, len);

	if (!ret)
		buf[strcspn(buf, "\n")] = '\0';
	return ret;
}

/* dir/path as a directory stream; NULL with errno set. */
static DIR *open_dir(int dir, const char *path)
{
	int fd = openat(dir, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

int vfab_nl_parse_lead_number(const char *s, uint32_t *v)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(s, &end, 0);
	if (errno || end == s || n > UINT32_MAX)
		return -EINVAL;
	*v = (uint32_t)n;
	return 0;
}

int vfab_nl_parse_guid(const char *s, uint64_t *v)
{
	unsigned a, b, c, d;
	int n = 0;

	if (sscanf(s, "%4x:%4x:%4x:%4x%n", &a, &b, &c, &d, &n) != 4 || s[n])
		return -EINVAL;
	*v = (uint64_t)a << 48 | (uint64_t)b << 32 | (uint64_t)c << 16 | d;
	return 0;
}

static int read_number(int dir, const char *path, uint32_t *v)
{
	char buf[64];
	int ret = read_line(dir, path, buf, sizeof(buf));

	return ret ? ret : vfab_nl_parse_lead_number(buf, v);
}

static void read_port(int devfd, uint32_t p, struct vfab_nl_port *port)
{
	char path[128], buf[64];
	uint32_t v;

	memset(port, 0, sizeof(*port));
#define PORT_FILE(f) (snprintf(path, sizeof(path), "ports/%u/%s", p, f), path)
	if (!read_number(devfd, PORT_FILE("state"), &v))
		port->state = (uint8_t)v;
	if (!read_number(devfd, PORT_FILE("phys_state"), &v))
		port->phys_state = (uint8_t)v;
	if (!read_number(devfd, PORT_FILE("cap_mask"), &v))
		port->cap_flags = v;
	port->ib = !read_line(devfd, PORT_FILE("link_layer"), buf, sizeof(buf)) &&
		   !strcmp(buf, "InfiniBand");
	if (port->ib) {
		if (!read_number(devfd, PORT_FILE("lid"), &v))
			port->lid = v;
		if (!read_number(devfd, PORT_FILE("sm_lid"), &v))
			port->sm_lid = v;
		if (!read_number(devfd, PORT_FILE("lid_mask_count"), &v))
			port->lmc = (uint8_t)v;
	}
	if (!read_line(devfd, PORT_FILE("gid_attrs/ndevs/0"), buf, sizeof(buf)) && buf[0] &&
	    strlen(buf) < sizeof(port->netdev)) {
		memcpy(port->netdev, buf, strlen(buf) + 1);
		port->ifindex = if_nametoindex(port->netdev);
	}
#undef PORT_FILE
}

/* device/infiniband_verbs/uverbsN: the name, the device numbers and the ABI. */
static int read_uverbs(int devfd, struct vfab_nl_dev *d)
{
	DIR *dir = open_dir(devfd, "device/infiniband_verbs");
	char path[96], buf[64];
	struct dirent *de;
	int ret = -ENOENT;
	uint32_t v;

	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		if (strncmp(de->d_name, "uverbs", 6) || strlen(de->d_name) >= sizeof(d->uverbs) ||
		    vfab_nl_parse_lead_number(de->d_name + 6, &d->index))
			continue;
		memcpy(d->uverbs, de->d_name, strlen(de->d_name) + 1);
		snprintf(path, sizeof(path), "%s/dev", d->uverbs);
		if (read_line(dirfd(dir), path, buf, sizeof(buf)) ||
		    sscanf(buf, "%u:%u", &d->cdev_major, &d->cdev_minor) != 2)
			break;
		snprintf(path, sizeof(path), "%s/abi_version", d->uverbs);
		d->abi = read_number(dirfd(dir), path, &v) ? 0 : v;
		ret = 0;
		break;
	}
	closedir(dir);
	return ret;
}

static int read_dev(int classfd, const char *name, uint32_t only, struct vfab_nl_dev *d)
{
	char path[128], buf[64];
	int devfd, ret;
	uint32_t v;

	memset(d, 0, sizeof(*d));
	if (strlen(name) >= sizeof(d->name))
		return -ENAMETOOLONG;
	snprintf(path, sizeof(path), "infiniband/%s", name);
	devfd = openat(classfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (devfd < 0)
		return -errno;
	memcpy(d->name, name, strlen(name) + 1);
	ret = read_uverbs(devfd, d);
	/* Not the device asked for: its uverbs entry says so, the rest is not read. */
	if (!ret && only != VFAB_NL_ANY_DEV && d->index != only)
		ret = -ENOENT;
	if (!ret)
		ret = read_line(devfd, "node_guid", buf, sizeof(buf));
	if (!ret)
		ret = vfab_nl_parse_guid(buf, &d->node_guid);
	if (!ret && !read_line(devfd, "sys_image_guid", buf, sizeof(buf)))
		vfab_nl_parse_guid(buf, &d->sys_image_guid);
	if (!ret && !read_number(devfd, "node_type", &v))
		d->node_type = (uint8_t)v;
	if (!ret)
		read_line(devfd, "fw_ver", d->fw, sizeof(d->fw));
	if (!ret && read_all(devfd, "device/vfab", d->locator, sizeof(d->locator)))
		d->locator[0] = '\0';
	for (uint32_t p = 1; !ret && p <= VFAB_NL_MAX_PORTS; p++) {
		snprintf(path, sizeof(path), "ports/%u", p);
		if (faccessat(devfd, path, F_OK, 0))
			break;
		read_port(devfd, p, &d->port[p - 1]);
		d->nports = p;
	}
	close(devfd);
	return ret ? ret : d->nports ? 0 : -ENOENT;
}

static int by_index(const void *a, const void *b)
{
	const struct vfab_nl_dev *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

int vfab_nl_devs_read(int class_fd, uint32_t only, struct vfab_nl_dev *out, int max)
{
	DIR *dir = open_dir(class_fd, "infiniband");
	struct dirent *de;
	int n = 0;

	if (!dir)
		return errno == ENOENT ? 0 : -errno;
	while (n < max && (de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		if (!read_dev(class_fd, de->d_name, only, &out[n]))
			n++;
	}
	closedir(dir);
	qsort(out, (size_t)n, sizeof(*out), by_index);
	return n;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct vfab_nl_counter *)a)->name,
		      ((const struct vfab_nl_counter *)b)->name);
}

int vfab_nl_hw_counters_read(int class_fd, const char *dev, uint32_t port,
			     struct vfab_nl_counter *out, int max)
{
	char path[160], buf[64];
	struct dirent *de;
	DIR *dir;
	int n = 0;

	if (snprintf(path, sizeof(path), "infiniband/%s/ports/%u/hw_counters", dev, port) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	dir = open_dir(class_fd, path);
	if (!dir)
		return -errno;
	while (n < max && (de = readdir(dir))) {
		char *end;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, "lifespan") ||
		    strlen(de->d_name) >= sizeof(out[n].name) ||
		    read_line(dirfd(dir), de->d_name, buf, sizeof(buf)))
			continue;
		errno = 0;
		out[n].value = strtoull(buf, &end, 10);
		if (errno || end == buf)
			continue;
		memcpy(out[n].name, de->d_name, strlen(de->d_name) + 1);
		n++;
	}
	closedir(dir);
	qsort(out, (size_t)n, sizeof(*out), by_name);
	return n;
}
