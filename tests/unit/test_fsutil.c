/* SPDX-License-Identifier: MIT */
/* vfab_path_public: whether every user can reach a file (vfab up's lib dir warning). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/fsutil.h"

static char top[64], dir[128], lib[192];

static int make_tree(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/vfab-fsutil.XXXXXX");
	if (!mkdtemp(top))
		return -1;
	snprintf(dir, sizeof(dir), "%s/lib", top);
	snprintf(lib, sizeof(lib), "%s/libx.so", dir);
	if (chmod(top, 0755) || mkdir(dir, 0755) || vfab_write_file(lib, "x", 1, 0644))
		return -1;
	return 0;
}

static int remove_tree(void **state)
{
	(void)state;
	return vfab_rm_rf(top);
}

static void test_public(void **state)
{
	char where[256] = "";

	(void)state;
	assert_int_equal(vfab_path_public(lib, where, sizeof(where)), 0);
	assert_string_equal(where, "");
}

static void test_private_directory(void **state)
{
	char where[256] = "";

	(void)state;
	assert_int_equal(chmod(top, 0700), 0);
	assert_int_equal(vfab_path_public(lib, where, sizeof(where)), -EACCES);
	assert_string_equal(where, top);
}

static void test_private_file(void **state)
{
	char where[256] = "";

	(void)state;
	assert_int_equal(chmod(lib, 0600), 0);
	assert_int_equal(vfab_path_public(lib, where, sizeof(where)), -EACCES);
	assert_string_equal(where, lib);
}

static void test_bad_paths(void **state)
{
	char where[256], missing[256];

	(void)state;
	snprintf(missing, sizeof(missing), "%s/none.so", dir);
	assert_int_equal(vfab_path_public("relative/x.so", where, sizeof(where)), -EINVAL);
	assert_int_equal(vfab_path_public(missing, where, sizeof(where)), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_public, make_tree, remove_tree),
	    cmocka_unit_test_setup_teardown(test_private_directory, make_tree, remove_tree),
	    cmocka_unit_test_setup_teardown(test_private_file, make_tree, remove_tree),
	    cmocka_unit_test_setup_teardown(test_bad_paths, make_tree, remove_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
