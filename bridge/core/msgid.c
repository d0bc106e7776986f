#include "core/msgid.h"

#include "util/err.h"
#include "util/scan.h"

#include <string.h>

static int is_keep(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static int is_hex_lower(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int hex_val(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int msgid_domain_ok(const char *domain)
{
	size_t i, len = domain ? strlen(domain) : 0, label = 0;

	if (len == 0 || len > MSGID_DOMAIN_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)domain[i];

		if (c == '.') {
			if (label == 0 || domain[i - 1] == '-')
				return 0;
			label = 0;
		} else if (is_keep(c) && c != '_') {
			if (label == 0 && c == '-')
				return 0;
			if (++label > 63)
				return 0;
		} else {
			return 0;
		}
	}
	return label > 0 && domain[len - 1] != '-';
}

static int encode_project(struct buf *out, const char *p)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i, len = strlen(p), used = 0;
	char tok[3];
	size_t tlen;
	int rc = 0;

	for (i = 0; i < len && !rc; i++) {
		unsigned char c = (unsigned char)p[i];

		if (is_keep(c)) {
			tok[0] = (char)c;
			tlen = 1;
		} else if (c == '/' && i > 0 && i + 1 < len &&
			   p[i - 1] != '/') {
			tok[0] = '.';
			tlen = 1;
		} else {
			tok[0] = '=';
			tok[1] = hex[c >> 4];
			tok[2] = hex[c & 15];
			tlen = 3;
		}
		if (used + tlen > MSGID_PROJECT_ENC_MAX) {
			/* Ids stay short; the thread map, not the id, is the
			 * authority on which project a mail belongs to. */
			if (out->data[out->len - 1] == '.')
				buf_truncate(out, out->len - 1);
			return buf_addch(out, '~');
		}
		rc = buf_add(out, tok, tlen);
		used += tlen;
	}
	return rc;
}

int msgid_format(struct buf *out, const struct msgid_parts *parts)
{
	size_t start = out->len, i;
	int rc;

	if (!parts->project || !*parts->project || parts->iid == 0 ||
	    parts->revision < 1 || parts->revision > MSGID_NUM_MAX ||
	    parts->total < 1 || parts->total > MSGID_NUM_MAX ||
	    parts->index > parts->total)
		return err_set(PB_EINVAL, "message-id: parts out of range");
	if (!parts->head_sha || strlen(parts->head_sha) < MSGID_SHA_LEN)
		return err_set(PB_EINVAL, "message-id: head sha too short");
	for (i = 0; i < MSGID_SHA_LEN; i++)
		if (!is_hex_lower((unsigned char)parts->head_sha[i]))
			return err_set(PB_EINVAL,
				       "message-id: head sha not hex");
	if (!msgid_domain_ok(parts->domain))
		return err_set(PB_EINVAL, "message-id: bad domain");

	rc = buf_addf(out, "pb.v%u.%u-%u.", parts->revision, parts->index,
		      parts->total);
	if (!rc)
		rc = encode_project(out, parts->project);
	if (!rc)
		rc = buf_addf(out, ".%llu.%.*s@%s",
			      (unsigned long long)parts->iid, MSGID_SHA_LEN,
			      parts->head_sha, parts->domain);
	if (rc)
		buf_truncate(out, start);
	return rc;
}

static int take_num(struct scan *s, uint64_t max, uint64_t *v)
{
	/* No leading zeros: one id, one spelling. */
	if (scan_left(s) > 1 && s->p[0] == '0' && s->p[1] >= '0' &&
	    s->p[1] <= '9')
		return 0;
	return scan_u64(s, max, v);
}

static int decode_project(struct msgid_parsed *out, const char *p, size_t len)
{
	size_t i, n = 0;
	int hi, lo;

	if (len && p[len - 1] == '~') {
		out->project_cut = 1;
		len--;
	}
	/* dot-atom-text: no empty atoms. */
	if (len == 0 || p[0] == '.' || p[len - 1] == '.' ||
	    mem_find(p, len, "..", 2))
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];

		if (n >= MSGID_PROJECT_MAX)
			return 0;
		if (is_keep(c)) {
			out->project[n++] = (char)c;
		} else if (c == '.') {
			out->project[n++] = '/';
		} else if (c == '=' && i + 2 < len) {
			/* Only what a GitLab project path may hold comes
			 * back: "." is the one character of such a path
			 * that msgid_format() escapes.  Whatever else a
			 * sender writes ("=0A" ...) is not our id, so no
			 * control byte reaches a log line or a lookup. */
			hi = hex_val((unsigned char)p[i + 1]);
			lo = hex_val((unsigned char)p[i + 2]);
			if (hi * 16 + lo != '.')
				return 0;
			out->project[n++] = '.';
			i += 2;
		} else {
			return 0;
		}
	}
	out->project[n] = '\0';
	return 1;
}

int msgid_parse(struct msgid_parsed *out, const char *id, size_t len)
{
	struct msgid_parsed r;
	struct scan s;
	const char *at, *local, *dot1, *dot2, *p;
	size_t llen, dlen, i;
	uint64_t rev, k, m, iid;

	memset(&r, 0, sizeof(r));
	mem_trim(&id, &len);
	if (len >= 2 && id[0] == '<' && id[len - 1] == '>') {
		id++;
		len -= 2;
	}
	at = NULL;
	for (p = id; p < id + len; p++)
		if (*p == '@')
			at = p;
	if (!at)
		return PB_EINVAL;
	local = id;
	llen = (size_t)(at - id);
	dlen = len - llen - 1;
	if (dlen == 0 || dlen > MSGID_DOMAIN_MAX)
		return PB_EINVAL;
	memcpy(r.domain, at + 1, dlen);
	r.domain[dlen] = '\0';
	if (!msgid_domain_ok(r.domain))
		return PB_EINVAL;

	scan_init(&s, local, llen);
	if (!scan_lit(&s, "pb.v") || !take_num(&s, MSGID_NUM_MAX, &rev) ||
	    !scan_char(&s, '.') || !take_num(&s, MSGID_NUM_MAX, &k) ||
	    !scan_char(&s, '-') || !take_num(&s, MSGID_NUM_MAX, &m) ||
	    !scan_char(&s, '.'))
		return PB_EINVAL;
	if (rev < 1 || m < 1 || k > m)
		return PB_EINVAL;

	/* From the right: ".<iid>.<sha>"; the project is what is between. */
	dot2 = NULL;
	dot1 = NULL;
	for (p = s.end - 1; p >= s.p; p--) {
		if (*p != '.')
			continue;
		if (!dot2) {
			dot2 = p;
		} else {
			dot1 = p;
			break;
		}
	}
	if (!dot1 || dot1 == s.p)
		return PB_EINVAL;
	if ((size_t)(s.end - dot2 - 1) != MSGID_SHA_LEN)
		return PB_EINVAL;
	for (i = 0; i < MSGID_SHA_LEN; i++) {
		if (!is_hex_lower((unsigned char)dot2[1 + i]))
			return PB_EINVAL;
		r.head_sha[i] = dot2[1 + i];
	}
	if (dot2 - dot1 - 1 > 1 && dot1[1] == '0')
		return PB_EINVAL;
	if (!mem_to_u64(dot1 + 1, (size_t)(dot2 - dot1 - 1), UINT64_MAX,
			&iid) ||
	    iid == 0)
		return PB_EINVAL;
	if (!decode_project(&r, s.p, (size_t)(dot1 - s.p)))
		return PB_EINVAL;
	r.revision = (unsigned)rev;
	r.index = (unsigned)k;
	r.total = (unsigned)m;
	r.iid = iid;
	*out = r;
	return 0;
}

int msgid_format_forge(struct buf *out, const char *event, const char *project,
		       uint64_t iid, uint64_t id, const char *domain)
{
	size_t start = out->len, i, n = event ? strlen(event) : 0;
	int rc;

	if (n == 0 || n > MSGID_EVENT_MAX || !project || !*project || !iid)
		return err_set(PB_EINVAL, "message-id: bad forge event");
	for (i = 0; i < n; i++)
		if (event[i] < 'a' || event[i] > 'z')
			return err_set(PB_EINVAL, "message-id: bad event name");
	if (!msgid_domain_ok(domain))
		return err_set(PB_EINVAL, "message-id: bad domain");
	rc = buf_addf(out, "pb.f.%s.%llu.", event, (unsigned long long)id);
	if (!rc)
		rc = encode_project(out, project);
	if (!rc)
		rc = buf_addf(out, ".%llu@%s", (unsigned long long)iid, domain);
	if (rc)
		buf_truncate(out, start);
	return rc;
}

int msgid_url_escape(struct buf *out, const char *id)
{
	int rc = 0;

	for (; *id && !rc; id++) {
		int c = (unsigned char)*id;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("-._~!$&'()*+,;=:@", c))
			rc = buf_addch(out, c);
		else
			rc = buf_addf(out, "%%%02X", c);
	}
	return rc;
}
