"""Fault injection and rate limiting, applied in front of the API.

Faults model the infrastructure between a client and GitLab, so they are
decided per request before (or, for the *_after_commit kinds, after) the
API runs:

  error               answer `status` without running the request
  drop                close the connection without running the request
  latency             sleep `ms`, then answer normally
  drop_after_commit   run the request (the write is committed), then
                      close the connection without answering
  error_after_commit  run the request, then answer `status` (default 502)
                      instead of the real response
  resource_lock       answer GitLab's 409 for a lock it could not take,
                      without running the request
  hold                keep the request waiting, not run, until the rule
                      is cleared; then close the connection without
                      running it (a test kills its client meanwhile: the
                      rule's hits say when a request is being held)

Each rule matches a method ("*", a method name, or "write" for anything
but GET/HEAD) and a path regex (re.search on the path, query excluded),
and fires `count` times (None: until cleared).  The /_sim/ control API is
never subject to faults or rate limits.

Rate limiting reproduces the two systems of doc/security/rate_limits.md:
"throttle_authenticated_api" (Rack::Attack: 429, plain "Retry later" body
and RateLimit-* headers on every response) and "notes_create" (an
application limit on note creation: 429 with a JSON body and no headers,
so RateLimit-Remaining can look healthy while notes are refused).
"""

import email.utils
import math
import re
import threading
import time

_KINDS = ("error", "drop", "latency", "drop_after_commit",
          "error_after_commit", "resource_lock", "hold")

# A held request waits this long at most for its rule to be cleared.
HOLD_MAX_S = 600

# lib/api/api.rb: rescue_from ActiveRecord::StaleObjectError and
# Gitlab::ExclusiveLeaseHelpers::FailedToObtainLockError answer this (a
# lost optimistic lock, or a lease another worker holds): temporary, and
# nothing was written.  Its status is that of a stale `sha` to approve.
RESOURCE_LOCK_BODY = '{"message":"409 Conflict: Resource lock"}'

# What nginx/Workhorse answer when Rails is unreachable: HTML, not JSON.
_PROXY_PAGE = ("<!DOCTYPE html>\n<html>\n<head><title>%d %s</title></head>\n"
               "<body><h1>%d</h1><p>Whoops, GitLab is taking too much time "
               "to respond.</p></body>\n</html>\n")

_REASONS = {500: "Internal Server Error", 502: "Bad Gateway",
            503: "Service Unavailable", 504: "Gateway Timeout"}


class FaultError(ValueError):
    pass


def error_body(status):
    """Default (content type, body) of an injected error."""
    if status == 500:
        return "application/json", '{"message":"500 Internal Server Error"}'
    reason = _REASONS.get(status, "Error")
    return "text/html; charset=utf-8", _PROXY_PAGE % (status, reason, status)


class Rule:
    def __init__(self, rule_id, spec):
        self.id = rule_id
        self.kind = spec.get("kind")
        if self.kind not in _KINDS:
            raise FaultError("kind must be one of " + ", ".join(_KINDS))
        self.method = (spec.get("method") or
                       ("write" if self.kind.endswith("after_commit")
                        else "*")).upper()
        try:
            self.path = re.compile(spec.get("path") or "")
        except re.error as e:
            raise FaultError("bad path regex: %s" % e)
        default_count = None if self.kind == "latency" else 1
        self.count = spec.get("count", default_count)
        self.status = int(spec.get("status") or
                          (502 if self.kind == "error_after_commit" else 500))
        self.ms = int(spec.get("ms") or 0)
        self.body = spec.get("body")
        self.content_type = spec.get("content_type")
        if self.kind == "resource_lock":
            self.status = 409
            self.body = RESOURCE_LOCK_BODY
            self.content_type = "application/json"
        self.hits = 0
        self.released = threading.Event()
        if self.kind == "latency" and self.ms <= 0:
            raise FaultError("latency needs ms > 0")

    def matches(self, method, path):
        if self.count is not None and self.hits >= self.count:
            return False
        if self.method == "WRITE":
            if method in ("GET", "HEAD"):
                return False
        elif self.method != "*" and self.method != method:
            return False
        return bool(self.path.search(path))

    def describe(self):
        return {"id": self.id, "kind": self.kind, "method": self.method,
                "path": self.path.pattern, "count": self.count,
                "status": self.status, "ms": self.ms, "hits": self.hits,
                "remaining": None if self.count is None
                else max(0, self.count - self.hits)}


class FaultInjector:
    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []
        self.next_id = 0

    def add(self, spec):
        with self.lock:
            self.next_id += 1
            rule = Rule(self.next_id, spec)
            self.rules.append(rule)
            return rule.describe()

    def clear(self):
        with self.lock:
            for rule in self.rules:
                rule.released.set()
            self.rules = []

    def describe(self):
        with self.lock:
            return [r.describe() for r in self.rules]

    def plan(self, method, path):
        """Faults for one request: (latency ms, first other matching Rule).

        Every matching latency rule adds up; of the other kinds the first
        matching rule in creation order wins.  Matching consumes a count;
        spent rules stay listed (with their hits) until cleared.
        """
        latency, chosen = 0, None
        with self.lock:
            for rule in self.rules:
                if not rule.matches(method, path):
                    continue
                if rule.kind == "latency":
                    rule.hits += 1
                    latency += rule.ms
                elif chosen is None:
                    rule.hits += 1
                    chosen = rule
        return latency, chosen


class Limiter:
    """A fixed-window counter (Rack::Attack's throttle)."""

    def __init__(self, name, limit, period_s):
        self.name = name
        self.limit = int(limit)
        self.period = int(period_s)
        if self.limit < 0 or self.period < 1:
            raise FaultError("limit must be >= 0 and period_s >= 1")
        self.counts = {}

    def hit(self, key, now):
        """Count a request; return (allowed, observed, window reset epoch)."""
        window = int(now // self.period)
        reset = (window + 1) * self.period
        count = self.counts.get((key, window), 0) + 1
        self.counts = {k: v for k, v in self.counts.items()
                       if k[1] == window}
        self.counts[(key, window)] = count
        return count <= self.limit, count, reset


class RateLimits:
    API = "throttle_authenticated_api"
    NOTES = "notes_create"

    def __init__(self):
        self.lock = threading.Lock()
        self.limiters = {}

    def configure(self, spec):
        name = spec.get("name") or self.API
        if name not in (self.API, self.NOTES):
            raise FaultError("name must be %s or %s" % (self.API, self.NOTES))
        with self.lock:
            if spec.get("enabled", True):
                self.limiters[name] = Limiter(name, spec.get("limit", 0),
                                              spec.get("period_s", 60))
            else:
                self.limiters.pop(name, None)
        return self.describe()

    def clear(self):
        with self.lock:
            self.limiters = {}

    def describe(self):
        with self.lock:
            return {n: {"limit": lim.limit, "period_s": lim.period}
                    for n, lim in self.limiters.items()}

    def check(self, method, path, key):
        """Decide one API request.

        Returns (refusal or None, headers to add to any response).  The
        refusal is (status, content type, body, headers).
        """
        now = time.time()
        with self.lock:
            api = self.limiters.get(self.API)
            notes = self.limiters.get(self.NOTES)
            headers = {}
            if api is not None:
                allowed, observed, reset = api.hit(key, now)
                headers = {
                    "RateLimit-Limit": str(api.limit),
                    "RateLimit-Name": api.name,
                    "RateLimit-Observed": str(observed),
                    "RateLimit-Remaining": str(max(0, api.limit - observed)),
                    "RateLimit-Reset": str(reset),
                }
                if not allowed:
                    refused = dict(headers)
                    refused["Retry-After"] = str(max(1, math.ceil(
                        reset - now)))
                    refused["RateLimit-ResetTime"] = \
                        email.utils.formatdate(reset, usegmt=True)
                    return (429, "text/plain", "Retry later\n",
                            refused), headers
            if notes is not None and method == "POST" and re.search(
                    r"/merge_requests/[^/]+/(notes|discussions)(/[^/]+"
                    r"/notes)?$", path):
                allowed, _, _ = notes.hit(key, now)
                if not allowed:
                    return (429, "application/json",
                            '{"message":{"error":"This endpoint has been '
                            'requested too many times. Try again later."}}',
                            {}), headers
            return None, headers
