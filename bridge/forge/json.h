/*
 * json - strict reading of forge responses and writing of request bodies.
 *
 * The only json-c user.  A response body is parsed once into a json_doc
 * (depth-capped, strict grammar, UTF-8 validated, no trailing garbage);
 * values inside it are reached through typed getters that fail cleanly
 * when a peer sends the wrong type, so no caller ever touches json-c or
 * guesses at a type.
 *
 * Ownership: a json_doc owns every json_value reachable from it; those
 * pointers are borrowed and die with json_doc_free().  The string getters
 * copy into memory the caller owns (free()).  A JSON null is represented
 * by a NULL json_value pointer.
 *
 * Errors: PB_EINVAL with a message naming the field ("field 'iid':
 * expected integer, got string", "field 'sha' missing") or the parse
 * failure; the _opt getters treat a missing field and null alike as
 * "absent" and fail only on a wrong type.
 *
 * Request bodies are written with util/jsonw, which needs no json-c.
 *
 * Thread safety: none shared; a doc or writer belongs to one thread.
 */
#ifndef PB_FORGE_JSON_H
#define PB_FORGE_JSON_H

#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

struct json_doc;
struct json_value;

enum json_kind {
	JSON_NULL,
	JSON_BOOL,
	JSON_INT,
	JSON_DOUBLE,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT,
};

/*
 * Parse len bytes of text.  depth_max caps nesting (use PB_JSON_DEPTH_MAX);
 * deeper input, bad grammar, invalid UTF-8, NUL bytes or trailing
 * non-space bytes give PB_EINVAL.
 */
int json_parse(struct json_doc **out, const char *text, size_t len,
	       int depth_max);
void json_doc_free(struct json_doc *doc);

/* The top-level value (NULL when the document is the literal null). */
const struct json_value *json_doc_root(const struct json_doc *doc);

enum json_kind json_kind_of(const struct json_value *v);
/* "integer", "string", … for messages. */
const char *json_kind_name(enum json_kind t);

/* Fail with PB_EINVAL unless v is of type t; what names it in the message. */
int json_expect(const struct json_value *v, enum json_kind t, const char *what);

/*
 * Object members.  obj must be an object (PB_EINVAL otherwise).  The plain
 * getters require the member and its type; the _opt getters accept a
 * missing member or null as absent (*present = 0, or *out = NULL).
 */
int json_get_int(int64_t *out, const struct json_value *obj, const char *key);
int json_get_int_opt(int64_t *out, int *present, const struct json_value *obj,
		     const char *key);
int json_get_bool(int *out, const struct json_value *obj, const char *key);
/* Absent or null reads as false (GitLab: "a null boolean means false"). */
int json_get_bool_opt(int *out, const struct json_value *obj, const char *key);
/* Copies; strings holding a NUL byte are rejected. */
int json_get_str(char **out, const struct json_value *obj, const char *key);
int json_get_str_opt(char **out, const struct json_value *obj, const char *key);
int json_get_obj(const struct json_value **out, const struct json_value *obj,
		 const char *key);
int json_get_obj_opt(const struct json_value **out,
		     const struct json_value *obj, const char *key);
int json_get_array(const struct json_value **out, const struct json_value *obj,
		   const char *key);
int json_get_array_opt(const struct json_value **out,
		       const struct json_value *obj, const char *key);

/* True when obj is an object that has the member key (even if null). */
int json_has(const struct json_value *obj, const char *key);
/* The member's value of any type; NULL when missing, null, or obj is not
 * an object.  Check it with json_kind_of(). */
const struct json_value *json_member(const struct json_value *obj,
				     const char *key);

/* Arrays.  json_array_len() of a non-array is 0. */
size_t json_array_len(const struct json_value *arr);
const struct json_value *json_array_at(const struct json_value *arr, size_t i);

/* A value itself (array items); what names it in messages. */
int json_value_int(int64_t *out, const struct json_value *v, const char *what);
int json_value_str(char **out, const struct json_value *v, const char *what);
/* Borrowed view of a string value (valid while the doc lives). */
int json_value_strref(const char **out, size_t *len, const struct json_value *v,
		      const char *what);

/* Walk an object's members in order; stops when fn returns non-zero. */
int json_object_foreach(const struct json_value *obj,
			int (*fn)(const char *key, const struct json_value *v,
				  void *arg),
			void *arg);

#endif
