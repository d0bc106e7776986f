"""Offset pagination with GitLab's response headers.

lib/gitlab/pagination/offset_header_builder.rb: every page carries
X-Page, X-Per-Page, X-Prev-Page, X-Next-Page (empty on the last page),
X-Total, X-Total-Pages and a Link header with rel prev/next/first/last.
Above the count limit (10,000 rows) GitLab stops counting: X-Total,
X-Total-Pages and rel="last" are omitted, and the next page is offered
whenever the current page is full.

The Link URLs are the request's URL with its host and port replaced by
those of the configured external URL (base_request_uri: uri.host =
Gitlab.config.gitlab.host, uri.port = Gitlab.config.gitlab.port), and
its query rebuilt from Grape's params - the route's own (id,
merge_request_iid ...) included - sorted by name (Hash#to_query).  A
client that reaches GitLab under another name or port than the external
URL gets links to that other origin.
"""

import urllib.parse


def paginate(request, items, params, totals_limit, external_url,
             route_args=None):
    """Slice `items` for the request; return (page items, headers)."""
    page, per_page = params.pagination()
    total = len(items)
    start = (page - 1) * per_page
    chunk = items[start:start + per_page]
    counted = total <= totals_limit
    if counted:
        total_pages = max(1, -(-total // per_page))
        has_next = page < total_pages
    else:
        has_next = len(chunk) == per_page and start + per_page < total
    prev_page = page - 1 if page > 1 else None
    next_page = page + 1 if has_next else None

    headers = {
        "X-Page": str(page),
        "X-Per-Page": str(per_page),
        "X-Prev-Page": str(prev_page) if prev_page else "",
        "X-Next-Page": str(next_page) if next_page else "",
    }

    def url(n):
        return _page_url(request, external_url, route_args, n, per_page)

    links = []
    if prev_page:
        links.append('<%s>; rel="prev"' % url(prev_page))
    if next_page:
        links.append('<%s>; rel="next"' % url(next_page))
    links.append('<%s>; rel="first"' % url(1))
    if counted:
        headers["X-Total"] = str(total)
        headers["X-Total-Pages"] = str(total_pages)
        links.append('<%s>; rel="last"' % url(total_pages))
    headers["Link"] = ", ".join(links)
    return chunk, headers


def _page_url(request, external_url, route_args, page, per_page):
    """The request's URL with the external URL's host and port, page and
    per_page replaced, the query sorted by name (Hash#to_query)."""
    ext = urllib.parse.urlsplit(external_url)
    scheme = urllib.parse.urlsplit(request.base_url).scheme or "http"
    query = [(k, v) for k, v in urllib.parse.parse_qsl(
        request.query_string, keep_blank_values=True)
        if k not in ("page", "per_page") and k not in (route_args or {})]
    query += list((route_args or {}).items())
    query += [("page", str(page)), ("per_page", str(per_page))]
    query.sort(key=lambda kv: kv[0])
    return "%s://%s%s?%s" % (scheme, ext.netloc, request.path,
                             urllib.parse.urlencode(query))
