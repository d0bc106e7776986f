/*
 * storetest - what the state store's two test programs share
 * (test_store: each table's API and the store's guarantees;
 * test_store_migrate: the schema and its migrations): one temporary
 * directory per program, fresh databases on either engine (storebed.h),
 * and rows of the kinds most tests start from.
 */
#ifndef PB_TESTS_STORETEST_H
#define PB_TESTS_STORETEST_H

#include "state/store.h"

#include <stdint.h>

#define BUSY_MS 5000
#define SHA1 "1111111111111111111111111111111111111111"
#define SHA2 "2222222222222222222222222222222222222222"
#define SHA3 "3333333333333333333333333333333333333333"
#define BASE "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define START "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

/* The program's temporary directory (SQLite files go there). */
extern char dir[512];

/* For a group setup: the directory made, storebed_init(prog). */
int storetest_setup(const char *prog);
/* The group teardown: the directory removed. */
int storetest_teardown(void **state);

/* A fresh database for one test: its file, or its connection string. */
const char *db_path(const char *name);
/* The store opened for writing; fails the test when it cannot be. */
struct store *open_rw(const char *path);
/* SQLite's own check of the file; PostgreSQL has none of the kind. */
void raw_integrity_ok(const char *path);
/* Revision start of project!iid with head on BASE; its number. */
int start_rev(struct store *st, const char *project, int64_t iid,
	      const char *head);
/* A patch mail k/total of revision rev of g/p!1. */
void fill_patch(struct store_mail *m, const char *msgid, int rev, int k,
		int total, const char *diff);
/* A reply journaled for g/p!1 v2 patch 1, due at next. */
void record(struct store *st, const char *msgid, int64_t next);

#endif
