"""Offset pagination with GitLab's response headers.

lib/gitlab/pagination/offset_header_builder.rb: every page carries
X-Page, X-Per-Page, X-Prev-Page, X-Next-Page (empty on the last page),
X-Total, X-Total-Pages and a Link header with rel prev/next/first/last.
Above the count limit (10,000 rows) GitLab stops counting: X-Total,
X-Total-Pages and rel="last" are omitted, and the next page is offered
whenever the current page is full.
"""

import urllib.parse


def paginate(request, items, params, totals_limit):
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
    links = []
    if prev_page:
        links.append('<%s>; rel="prev"' % _page_url(request, prev_page,
                                                    per_page))
    if next_page:
        links.append('<%s>; rel="next"' % _page_url(request, next_page,
                                                    per_page))
    links.append('<%s>; rel="first"' % _page_url(request, 1, per_page))
    if counted:
        headers["X-Total"] = str(total)
        headers["X-Total-Pages"] = str(total_pages)
        links.append('<%s>; rel="last"' % _page_url(request, total_pages,
                                                    per_page))
    headers["Link"] = ", ".join(links)
    return chunk, headers


def _page_url(request, page, per_page):
    """The request's own URL with page and per_page replaced."""
    query = [(k, v) for k, v in urllib.parse.parse_qsl(
        request.query_string, keep_blank_values=True)
        if k not in ("page", "per_page")]
    query += [("page", str(page)), ("per_page", str(per_page))]
    return "%s%s?%s" % (request.base_url, request.path,
                        urllib.parse.urlencode(query))
