#include "forge/json.h"

#include "util/err.h"
#include "util/xalloc.h"

#include <json-c/json.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A json_value is a json_object seen through an opaque type; JSON null is
 * json-c's NULL object, which json_object_get_type() reports as null.
 */
#define JO(v) ((struct json_object *)(v))
#define JV(o) ((const struct json_value *)(o))

struct json_doc {
	struct json_object *root;
};

static int is_json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int json_parse(struct json_doc **out, const char *text, size_t len,
	       int depth_max)
{
	struct json_tokener *tok = NULL;
	struct json_object *root = NULL;
	enum json_tokener_error jerr;
	struct json_doc *doc;
	size_t end;
	int rc = 0;

	*out = NULL;
	if (len > INT32_MAX)
		return err_set(PB_ELIMIT, "JSON text too large");
	if (memchr(text, '\0', len))
		return err_set(PB_EINVAL, "JSON text contains a NUL byte");
	while (len > 0 && is_json_space(text[len - 1]))
		len--;
	if (len == 0)
		return err_set(PB_EINVAL, "empty JSON text");

	tok = json_tokener_new_ex(depth_max);
	if (!tok)
		return err_set(PB_ERROR, "cannot create JSON tokener");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
					    JSON_TOKENER_VALIDATE_UTF8);
	root = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	/* A top-level number or literal ends only at the end of input,
	 * which json-c learns from a NUL byte. */
	if (jerr == json_tokener_continue && end == len) {
		root = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
	}
	if (jerr == json_tokener_continue) {
		rc = err_set(PB_EINVAL, "truncated JSON text");
		goto out;
	}
	if (jerr != json_tokener_success) {
		rc = err_set(PB_EINVAL, "malformed JSON near byte %zu: %s", end,
			     json_tokener_error_desc(jerr));
		goto out;
	}
	if (end < len) {
		rc = err_set(PB_EINVAL, "trailing bytes after JSON value");
		goto out;
	}

	doc = xmalloc(sizeof(*doc));
	doc->root = root;
	root = NULL;
	*out = doc;
out:
	json_object_put(root);
	json_tokener_free(tok);
	return rc;
}

void json_doc_free(struct json_doc *doc)
{
	if (!doc)
		return;
	json_object_put(doc->root);
	free(doc);
}

const struct json_value *json_doc_root(const struct json_doc *doc)
{
	return JV(doc->root);
}

enum json_kind json_kind_of(const struct json_value *v)
{
	switch (json_object_get_type(JO(v))) {
	case json_type_boolean:
		return JSON_BOOL;
	case json_type_int:
		return JSON_INT;
	case json_type_double:
		return JSON_DOUBLE;
	case json_type_string:
		return JSON_STRING;
	case json_type_array:
		return JSON_ARRAY;
	case json_type_object:
		return JSON_OBJECT;
	case json_type_null:
	default:
		return JSON_NULL;
	}
}

const char *json_kind_name(enum json_kind t)
{
	switch (t) {
	case JSON_NULL:
		return "null";
	case JSON_BOOL:
		return "boolean";
	case JSON_INT:
		return "integer";
	case JSON_DOUBLE:
		return "number";
	case JSON_STRING:
		return "string";
	case JSON_ARRAY:
		return "array";
	case JSON_OBJECT:
		return "object";
	}
	return "?";
}

int json_expect(const struct json_value *v, enum json_kind t, const char *what)
{
	enum json_kind got = json_kind_of(v);

	if (got == t)
		return 0;
	return err_set(PB_EINVAL, "%s: expected %s, got %s", what,
		       json_kind_name(t), json_kind_name(got));
}

/*
 * Look up key in obj.  Returns 1 and *v when present (*v NULL for null),
 * 0 when missing, PB_EINVAL when obj is not an object.
 */
static int member(const struct json_value **v, const struct json_value *obj,
		  const char *key)
{
	struct json_object *o = NULL;

	*v = NULL;
	if (json_kind_of(obj) != JSON_OBJECT)
		return err_set(PB_EINVAL, "looking up '%s': not an object (%s)",
			       key, json_kind_name(json_kind_of(obj)));
	if (!json_object_object_get_ex(JO(obj), key, &o))
		return 0;
	*v = JV(o);
	return 1;
}

/* Required member of type t. */
static int get_typed(const struct json_value **v, const struct json_value *obj,
		     const char *key, enum json_kind t)
{
	enum json_kind got;
	int rc = member(v, obj, key);

	if (rc < 0)
		return rc;
	if (rc == 0)
		return err_set(PB_EINVAL, "field '%s' missing", key);
	got = json_kind_of(*v);
	if (got != t)
		return err_set(PB_EINVAL, "field '%s': expected %s, got %s",
			       key, json_kind_name(t), json_kind_name(got));
	return 0;
}

/* Optional member of type t: 1 present, 0 absent or null. */
static int get_typed_opt(const struct json_value **v,
			 const struct json_value *obj, const char *key,
			 enum json_kind t)
{
	enum json_kind got;
	int rc = member(v, obj, key);

	if (rc <= 0)
		return rc;
	got = json_kind_of(*v);
	if (got == JSON_NULL)
		return 0;
	if (got != t)
		return err_set(PB_EINVAL,
			       "field '%s': expected %s or null, "
			       "got %s",
			       key, json_kind_name(t), json_kind_name(got));
	return 1;
}

int json_get_int(int64_t *out, const struct json_value *obj, const char *key)
{
	const struct json_value *v;
	int rc = get_typed(&v, obj, key, JSON_INT);

	*out = 0;
	if (rc < 0)
		return rc;
	*out = json_object_get_int64(JO(v));
	return 0;
}

int json_get_int_opt(int64_t *out, int *present, const struct json_value *obj,
		     const char *key)
{
	const struct json_value *v;
	int rc = get_typed_opt(&v, obj, key, JSON_INT);

	*out = 0;
	*present = 0;
	if (rc <= 0)
		return rc;
	*out = json_object_get_int64(JO(v));
	*present = 1;
	return 0;
}

int json_get_bool(int *out, const struct json_value *obj, const char *key)
{
	const struct json_value *v;
	int rc = get_typed(&v, obj, key, JSON_BOOL);

	*out = 0;
	if (rc < 0)
		return rc;
	*out = json_object_get_boolean(JO(v)) ? 1 : 0;
	return 0;
}

int json_get_bool_opt(int *out, const struct json_value *obj, const char *key)
{
	const struct json_value *v;
	int rc = get_typed_opt(&v, obj, key, JSON_BOOL);

	*out = 0;
	if (rc <= 0)
		return rc;
	*out = json_object_get_boolean(JO(v)) ? 1 : 0;
	return 0;
}

static int copy_str(char **out, const struct json_value *v, const char *what)
{
	const char *s = json_object_get_string(JO(v));
	size_t len = (size_t)json_object_get_string_len(JO(v));

	if (memchr(s, '\0', len))
		return err_set(PB_EINVAL, "%s: string contains a NUL byte",
			       what);
	*out = xstrndup(s, len);
	return 0;
}

int json_get_str(char **out, const struct json_value *obj, const char *key)
{
	const struct json_value *v;
	int rc = get_typed(&v, obj, key, JSON_STRING);

	*out = NULL;
	if (rc < 0)
		return rc;
	return copy_str(out, v, key);
}

int json_get_str_opt(char **out, const struct json_value *obj, const char *key)
{
	const struct json_value *v;
	int rc = get_typed_opt(&v, obj, key, JSON_STRING);

	*out = NULL;
	if (rc <= 0)
		return rc;
	return copy_str(out, v, key);
}

int json_get_obj(const struct json_value **out, const struct json_value *obj,
		 const char *key)
{
	int rc = get_typed(out, obj, key, JSON_OBJECT);

	if (rc < 0)
		*out = NULL;
	return rc;
}

int json_get_obj_opt(const struct json_value **out,
		     const struct json_value *obj, const char *key)
{
	int rc = get_typed_opt(out, obj, key, JSON_OBJECT);

	if (rc <= 0)
		*out = NULL;
	return rc < 0 ? rc : 0;
}

int json_get_array(const struct json_value **out, const struct json_value *obj,
		   const char *key)
{
	int rc = get_typed(out, obj, key, JSON_ARRAY);

	if (rc < 0)
		*out = NULL;
	return rc;
}

int json_get_array_opt(const struct json_value **out,
		       const struct json_value *obj, const char *key)
{
	int rc = get_typed_opt(out, obj, key, JSON_ARRAY);

	if (rc <= 0)
		*out = NULL;
	return rc < 0 ? rc : 0;
}

int json_has(const struct json_value *obj, const char *key)
{
	if (json_kind_of(obj) != JSON_OBJECT)
		return 0;
	return json_object_object_get_ex(JO(obj), key, NULL) ? 1 : 0;
}

const struct json_value *json_member(const struct json_value *obj,
				     const char *key)
{
	struct json_object *o = NULL;

	if (json_kind_of(obj) != JSON_OBJECT ||
	    !json_object_object_get_ex(JO(obj), key, &o))
		return NULL;
	return JV(o);
}

size_t json_array_len(const struct json_value *arr)
{
	if (json_kind_of(arr) != JSON_ARRAY)
		return 0;
	return json_object_array_length(JO(arr));
}

const struct json_value *json_array_at(const struct json_value *arr, size_t i)
{
	if (i >= json_array_len(arr))
		return NULL;
	return JV(json_object_array_get_idx(JO(arr), i));
}

int json_value_int(int64_t *out, const struct json_value *v, const char *what)
{
	int rc = json_expect(v, JSON_INT, what);

	*out = 0;
	if (rc < 0)
		return rc;
	*out = json_object_get_int64(JO(v));
	return 0;
}

int json_value_str(char **out, const struct json_value *v, const char *what)
{
	int rc = json_expect(v, JSON_STRING, what);

	*out = NULL;
	if (rc < 0)
		return rc;
	return copy_str(out, v, what);
}

int json_value_strref(const char **out, size_t *len, const struct json_value *v,
		      const char *what)
{
	int rc = json_expect(v, JSON_STRING, what);

	*out = NULL;
	*len = 0;
	if (rc < 0)
		return rc;
	*out = json_object_get_string(JO(v));
	*len = (size_t)json_object_get_string_len(JO(v));
	return 0;
}

int json_object_foreach(const struct json_value *obj,
			int (*fn)(const char *key, const struct json_value *v,
				  void *arg),
			void *arg)
{
	struct json_object_iterator it, end;
	int rc;

	rc = json_expect(obj, JSON_OBJECT, "value");
	if (rc < 0)
		return rc;
	it = json_object_iter_begin(JO(obj));
	end = json_object_iter_end(JO(obj));
	while (!json_object_iter_equal(&it, &end)) {
		rc = fn(json_object_iter_peek_name(&it),
			JV(json_object_iter_peek_value(&it)), arg);
		if (rc)
			return rc;
		json_object_iter_next(&it);
	}
	return 0;
}
