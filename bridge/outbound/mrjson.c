#include "outbound/mrjson.h"

#include "forge/json.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/fileio.h"
#include "util/limits.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

void mrjson_release(struct mrjson *mr)
{
	free(mr->project);
	free(mr->title);
	free(mr->description);
	free(mr->web_url);
	free(mr->source_branch);
	free(mr->target_branch);
	free(mr->author_name);
	free(mr->author_username);
	free(mr->sha);
	memset(mr, 0, sizeof(*mr));
}

/* The project path of an MR URL:
 * "https://host/group/sub/project/-/merge_requests/12" -> "group/sub/project"
 */
static char *project_from_url(const char *url)
{
	const char *p = strstr(url, "://"), *cut;

	if (!p)
		return NULL;
	p = strchr(p + 3, '/');
	cut = strstr(url, "/-/merge_requests/");
	if (!p || !cut || cut <= p + 1)
		return NULL;
	return xstrndup(p + 1, (size_t)(cut - p - 1));
}

int mrjson_parse(struct mrjson *out, const char *text, size_t len)
{
	struct json_doc *doc = NULL;
	const struct json_value *root, *author = NULL, *refs = NULL;
	struct mrjson mr;
	char *full = NULL;
	int64_t iid;
	int rc;

	memset(&mr, 0, sizeof(mr));
	rc = json_parse(&doc, text, len, PB_JSON_DEPTH_MAX);
	if (rc)
		goto out;
	root = json_doc_root(doc);
	rc = json_expect(root, JSON_OBJECT, "merge request");
	if (!rc)
		rc = json_get_int(&iid, root, "iid");
	if (!rc && iid <= 0)
		rc = err_set(PB_EINVAL, "field 'iid': not positive");
	if (!rc)
		rc = json_get_str_opt(&mr.title, root, "title");
	if (!rc)
		rc = json_get_str_opt(&mr.description, root, "description");
	if (!rc)
		rc = json_get_str_opt(&mr.web_url, root, "web_url");
	if (!rc)
		rc = json_get_str_opt(&mr.source_branch, root, "source_branch");
	if (!rc)
		rc = json_get_str_opt(&mr.target_branch, root, "target_branch");
	if (!rc)
		rc = json_get_str_opt(&mr.sha, root, "sha");
	if (!rc)
		rc = json_get_obj_opt(&author, root, "author");
	if (!rc && author)
		rc = json_get_str_opt(&mr.author_name, author, "name");
	if (!rc && author)
		rc = json_get_str_opt(&mr.author_username, author, "username");
	if (!rc)
		rc = json_get_obj_opt(&refs, root, "references");
	if (!rc && refs)
		rc = json_get_str_opt(&full, refs, "full");
	if (rc)
		goto out;
	mr.iid = (uint64_t)iid;
	if (full && strchr(full, '!') && strchr(full, '!') != full)
		mr.project = xstrndup(full, (size_t)(strchr(full, '!') - full));
	else if (mr.web_url)
		mr.project = project_from_url(mr.web_url);
out:
	free(full);
	json_doc_free(doc);
	if (rc) {
		mrjson_release(&mr);
		return err_prefix(rc, "merge request JSON");
	}
	*out = mr;
	return 0;
}

int mrjson_read(struct mrjson *out, const char *path)
{
	struct buf b = BUF_INIT(PB_HTTP_BODY_MAX_DEFAULT);
	int rc = file_read(&b, path);

	if (!rc)
		rc = mrjson_parse(out, b.data, b.len);
	buf_release(&b);
	return rc;
}
