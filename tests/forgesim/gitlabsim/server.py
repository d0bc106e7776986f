"""The HTTP front: one threaded server for the API, git and /_sim/.

Every response carries "Connection: close".  One request per connection
keeps the fault modes exact: a refused listener refuses the very next
request, a dropped response loses exactly one answer, and no client keeps
a pooled connection alive across a simulated outage.

pause_listening() really closes the listening socket (clients get
ECONNREFUSED) and re-binds the same port later.
"""

import collections
import socket
import sys
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import githttp
from .api import PREFIX as API_PREFIX
from .api import Api
from .clock import iso
from .control import PREFIX as SIM_PREFIX
from .control import Control
from .faults import HOLD_MAX_S, FaultInjector, RateLimits, error_body
from .web import Request, Response
from .webhooks import Dispatcher

MAX_BODY = 256 * 1024 * 1024
ON_PURPOSE_HEADER = "X-Forgesim-Invalid-On-Purpose"
REQUEST_LOG_SIZE = 2000


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class SimServer:
    def __init__(self, forge, host="127.0.0.1", port=0, verbose=False,
                 conformance=None):
        self.forge = forge
        self.verbose = verbose
        # A conformance.Checker: every API exchange checked against
        # GitLab's OpenAPI document (None: not checked).
        self.conformance = conformance
        self.faults = FaultInjector()
        self.rate_limits = RateLimits()
        self.dispatcher = Dispatcher(forge)
        forge.on_event = self.dispatcher.on_event
        self.api = Api(forge)
        self.control = Control(forge, self.dispatcher, self.faults,
                               self.rate_limits, self)
        self.httpd = _HTTPServer((host, port), _Handler)
        self.httpd.sim = self
        self.port = self.httpd.server_address[1]
        self.url = "http://%s:%d" % (host, self.port)
        forge.base_url = self.url
        self._log = collections.deque(maxlen=REQUEST_LOG_SIZE)
        self._log_lock = threading.Lock()
        self._listen_lock = threading.Lock()
        self._thread = None
        self._stopped = False

    # -- listening ------------------------------------------------------------

    def start(self):
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
            name="listener", daemon=True)
        self._thread.start()

    def stop(self):
        with self._listen_lock:
            self._stopped = True
            if self._thread is not None:
                self.httpd.shutdown()
                self._thread = None
            self.httpd.server_close()
        self.dispatcher.stop()

    def pause_listening(self, seconds):
        """Close the listening socket now; re-open the same port later."""
        with self._listen_lock:
            if self._thread is None:
                return
            self.httpd.shutdown()
            self._thread = None
            self.httpd.socket.close()
        timer = threading.Timer(seconds, self._resume_listening)
        timer.daemon = True
        timer.start()

    def _resume_listening(self):
        with self._listen_lock:
            if self._stopped or self._thread is not None:
                return
            self.httpd.socket = socket.socket(self.httpd.address_family,
                                              self.httpd.socket_type)
            self.httpd.server_bind()
            self.httpd.server_activate()
            self.start()

    # -- request log ----------------------------------------------------------

    def log_request(self, entry):
        with self._log_lock:
            self._log.append(entry)

    def request_log(self):
        with self._log_lock:
            return list(self._log)

    def clear_request_log(self):
        with self._log_lock:
            self._log.clear()

    # -- dispatch -------------------------------------------------------------

    def dispatch(self, request):
        """Answer one request; None means: close without answering."""
        if request.path == SIM_PREFIX or \
                request.path.startswith(SIM_PREFIX + "/"):
            return self.control.handle(request)
        entry = {"at": iso(self.forge.now()), "method": request.method,
                 "path": request.path, "query": request.query_string,
                 "status": None, "fault": None}
        latency, rule = self.faults.plan(request.method, request.path)
        if rule is not None:
            entry["fault"] = rule.kind
        response = None
        try:
            if rule is not None and rule.kind == "drop":
                return None
            if rule is not None and rule.kind == "hold":
                rule.released.wait(HOLD_MAX_S)
                return None
            if rule is not None and rule.kind in ("error",
                                                  "resource_lock"):
                response = _injected_error(rule)
            else:
                response = self._serve(request, entry)
            if latency:
                time.sleep(latency / 1000.0)
            if rule is not None and rule.kind == "drop_after_commit":
                return None
            if rule is not None and rule.kind == "error_after_commit":
                response = _injected_error(rule)
            entry["status"] = response.status
            return response
        finally:
            self.log_request(entry)
            injected = rule is not None and rule.kind in (
                "error", "error_after_commit", "resource_lock")
            self._conform(request, None if injected else response)

    def _conform(self, request, response):
        """Check one /api/v4 exchange against the OpenAPI document (the
        request even when no response was sent: a dropped connection, or
        an answer a fault injected in GitLab's place)."""
        if self.conformance is None or not (
                request.path == API_PREFIX or
                request.path.startswith(API_PREFIX + "/")):
            return
        target = request.path + ("?" + request.query_string
                                 if request.query_string else "")
        req = self.conformance.check_request(
            request.method, request.path, request.query_string,
            request.header("Content-Type"), request.body)
        # The simulator's own tests send some requests wrong on purpose
        # (to see GitLab's 400 or 404); they say so in this header.  Their
        # request is not counted as a violation; the response still is.
        if request.header(ON_PURPOSE_HEADER):
            req = []
        resp = None
        if response is not None:
            resp = self.conformance.check_response(
                request.method, request.path, response.status,
                response.headers.get("Content-Type"), response.body)
        self.conformance.record(request.method, target, req, resp)
        if self.verbose and (req or resp):
            for p in req + (resp or []):
                sys.stderr.write("forgesim: OpenAPI: %s\n" % p)

    def _serve(self, request, entry):
        if request.path == API_PREFIX or \
                request.path.startswith(API_PREFIX + "/"):
            refusal, limit_headers = self.rate_limits.check(
                request.method, request.path, _client_key(request))
            if refusal is not None:
                status, ctype, text, headers = refusal
                return Response.text(status, text, ctype, headers)
            response, details = self.api.handle(request)
            entry.update(details)
            response.headers.update(limit_headers)
            return response
        m = githttp.match(request.path)
        if m:
            return githttp.serve(self.forge, request, m)
        return Response.text(404, "Not Found\n")


def _injected_error(rule):
    ctype, body = error_body(rule.status)
    if rule.body is not None:
        ctype, body = rule.content_type or "text/plain", rule.body
    return Response.text(rule.status, body, ctype)


def _client_key(request):
    """Who a rate limit counts: the token if any, else the address."""
    token = request.header("PRIVATE-TOKEN") or \
        request.header("Authorization")
    return token or request.client


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # A client that connects and goes silent must not pin a thread forever.
    timeout = 60

    def version_string(self):
        return "nginx"

    def do_GET(self):
        self._handle()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_GET

    def _handle(self):
        sim = self.server.sim
        self.close_connection = True
        try:
            body = self._read_body()
        except ValueError as e:
            self._send(Response.text(400, "Bad Request: %s\n" % e))
            return
        path, _, query = self.path.partition("?")
        host = self.headers.get("Host") or "%s:%d" % (
            self.server.server_address[:2])
        request = Request(self.command, path, query, self.headers, body,
                          "http://" + host, self.client_address[0])
        try:
            response = sim.dispatch(request)
        except Exception:       # noqa: BLE001 -- a bug must not kill the sim
            traceback.print_exc(file=sys.stderr)
            response = Response.json(500, {
                "message": "500 Internal Server Error"})
        if response is not None:
            self._send(response)

    def _read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks, total = [], 0
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                total += size
                if total > MAX_BODY:
                    raise ValueError("body too large")
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ValueError("body too large")
        return self.rfile.read(length) if length else b""

    def _send(self, response):
        self.send_response(response.status)
        for key, value in response.headers.items():
            self.send_header(key, value)
        self.send_header("X-Request-Id", uuid.uuid4().hex[:26].upper())
        if response.status not in (204, 304):
            self.send_header("Content-Length", str(len(response.body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD" and response.status not in (204, 304):
            self.wfile.write(response.body)

    def log_message(self, fmt, *args):
        if self.server.sim.verbose:
            sys.stderr.write("forgesim: %s - %s\n" % (self.address_string(),
                                                     fmt % args))
