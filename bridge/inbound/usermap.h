/*
 * usermap - the explicit map from mail addresses to forge users.
 *
 * [inbound] user_map names a file of "email username" lines, for people
 * whose address the forge cannot find (a private address seen only by
 * admins, a list address different from the account's):
 *
 *	# comment
 *	alice@example.org    alice
 *	Bob@Corp.Example     bob
 *
 * Blank lines and lines starting with "#" are ignored; fields are
 * separated by blanks; addresses compare ignoring ASCII case; a username
 * is [A-Za-z0-9_.-]+.  A malformed line, or an address listed twice with
 * different users, fails the whole load with PB_EINVAL naming FILE:LINE.
 * Caps: USERMAP_FILE_MAX bytes (PB_ELIMIT).
 *
 * The map is consulted before the forge's own user search, so it also
 * overrides it.  It is an authorisation input: keep the file writable by
 * the operator only.
 *
 * Ownership: a struct usermap is a heap object (usermap_free); looked-up
 * strings belong to it.  Thread safety: a loaded map is read-only.
 */
#ifndef PB_INBOUND_USERMAP_H
#define PB_INBOUND_USERMAP_H

#include <stddef.h>

#define USERMAP_FILE_MAX (4 * 1024 * 1024)
#define USERMAP_USER_MAX 255

struct usermap;

int usermap_load(struct usermap **out, const char *path);
/* name stands for the file in messages. */
int usermap_load_mem(struct usermap **out, const char *data, size_t len,
		     const char *name);
void usermap_free(struct usermap *m);

/* The username mapped to email, or NULL (also for m == NULL). */
const char *usermap_lookup(const struct usermap *m, const char *email);

#endif
