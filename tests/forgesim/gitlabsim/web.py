"""Request, Response and a small method+path router shared by the APIs."""

import json
import re
import urllib.parse

from . import errors


class Request:
    """One parsed HTTP request.

    path is the raw path (still percent-encoded, so "group%2Fproject" stays
    one segment, as GitLab requires); query_string is the raw query.
    """

    def __init__(self, method, path, query_string, headers, body, base_url,
                 client):
        self.method = method
        self.path = path
        self.query_string = query_string
        self.headers = headers
        self.body = body
        self.base_url = base_url
        self.client = client

    def header(self, name, default=None):
        return self.headers.get(name, default)

    def json(self):
        """Body as JSON for the control API (which only speaks JSON)."""
        if not self.body:
            return {}
        try:
            data = json.loads(self.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise errors.ApiError(400, {"error": "body is not JSON"})
        if not isinstance(data, dict):
            raise errors.ApiError(400, {"error": "body must be an object"})
        return data


class Response:
    def __init__(self, status, body=b"", headers=None):
        self.status = status
        self.body = body
        self.headers = dict(headers or {})

    @classmethod
    def json(cls, status, obj, headers=None):
        hdrs = {"Content-Type": "application/json"}
        hdrs.update(headers or {})
        if obj is None:
            # 204/304 carry no body and no content type.
            hdrs.pop("Content-Type")
            return cls(status, b"", hdrs)
        # GitLab emits compact JSON.
        text = json.dumps(obj, separators=(",", ":"))
        return cls(status, text.encode("utf-8"), hdrs)

    @classmethod
    def text(cls, status, text, content_type="text/plain; charset=utf-8",
             headers=None):
        hdrs = {"Content-Type": content_type}
        hdrs.update(headers or {})
        return cls(status, text.encode("utf-8"), hdrs)

    @classmethod
    def error(cls, err):
        return cls.json(err.status, err.body, err.headers)


class Router:
    """Routes "/projects/:id/merge_requests/:iid" style patterns.

    A path that matches some route but not with this method answers Grape's
    405 with an Allow header; no match at all answers Grape's 404.
    """

    def __init__(self):
        self.routes = []

    def add(self, method, pattern, handler):
        regex = "^" + re.sub(r":(\w+)", r"(?P<\1>[^/]+)", pattern) + "$"
        self.routes.append((method, re.compile(regex), handler))

    def route(self, method, pattern):
        def register(handler):
            self.add(method, pattern, handler)
            return handler
        return register

    def resolve(self, method, path):
        allowed = set()
        for route_method, regex, handler in self.routes:
            m = regex.match(path)
            if not m:
                continue
            if route_method == method:
                args = {k: urllib.parse.unquote(v)
                        for k, v in m.groupdict().items()}
                return handler, args
            allowed.add(route_method)
        if allowed:
            raise errors.route_not_allowed(allowed)
        raise errors.route_not_found()
