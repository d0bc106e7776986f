/*
 * mrjson - the merge request metadata `patchbridge format` reads from a
 * file: the body of GitLab's GET /projects/:id/merge_requests/:iid.
 *
 * Only what the series needs is taken; every string is copied and may be
 * NULL when GitLab sent null or nothing.  The project path comes from
 * references.full ("group/project!12"), else from web_url.
 *
 * Ownership: the struct owns its strings; mrjson_release() frees them.
 * Errors: PB_ENOTFOUND / PB_ELIMIT reading the file, PB_EINVAL for JSON
 * that is not an MR (the message names the field).
 * Thread safety: none shared.
 */
#ifndef PB_OUTBOUND_MRJSON_H
#define PB_OUTBOUND_MRJSON_H

#include <stddef.h>
#include <stdint.h>

struct mrjson {
	uint64_t iid;
	char *project; /* "group/project" */
	char *title;
	char *description;
	char *web_url;
	char *source_branch;
	char *target_branch;
	char *author_name;
	char *author_username;
	char *sha; /* head commit GitLab knows */
};

/* Parse len bytes of JSON text. */
int mrjson_parse(struct mrjson *out, const char *text, size_t len);
/* Read and parse a file (capped at PB_HTTP_BODY_MAX_DEFAULT). */
int mrjson_read(struct mrjson *out, const char *path);
void mrjson_release(struct mrjson *mr);

#endif
