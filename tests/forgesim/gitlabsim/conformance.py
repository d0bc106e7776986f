"""Every request and response checked against GitLab's OpenAPI document.

GitLab publishes its REST API as an OpenAPI 3.0 document
(doc/api/openapi/openapi_v3.yaml in gitlab-org/gitlab); the operations the
bridge and this simulator use are vendored in tests/data/gitlab/openapi/
(README.md there says from which version).  A Checker validates

  requests   the operation exists (method and path), every query
             parameter is declared, has the declared type and value (enum,
             integer, boolean, date-time) and the required ones are there;
             a JSON or form body matches the operation's requestBody;
  responses  a 2xx JSON body matches the response schema the document
             gives for that status.

Error bodies are not described by the document and are not checked.

The document has defects of its own: it says less than GitLab does, or
something else.  Each is listed in SPEC_DEFECTS with what GitLab really
does and where that is decided, and patched before validating, so that a
violation means the bridge or the simulator differs from GitLab, not the
document.  tests/data/gitlab/README.md lists them for readers.

Counts go to a report (JSON, rewritten atomically after every request)
that tests/tools/openapi_report.py sums up over the whole test suite.

Standard library only: the document is JSON, and the JSON Schema it uses
(type, nullable, enum, format, properties, required, items, $ref, anyOf,
oneOf, allOf) is checked by the small validator below, compiled once per
schema - a general validator costs more per response than the simulator
itself.  A keyword it does not know fails loudly (Unsupported), so a new
document cannot make the check silently weaker.
"""

import copy
import datetime
import json
import os
import re
import threading
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
SPEC = os.path.join(REPO, "tests", "data", "gitlab", "openapi",
                    "bridge-v4.json")

# Violations kept in the report, with their request; the rest are counted.
EXAMPLES_MAX = 50

_METHODS = ("get", "put", "post", "delete", "patch")

_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d+)?"
                      r"(Z|[+-]\d{2}:?\d{2})?)?$")

# Query parameters that are not operation parameters: authentication and
# Sudo (lib/api/api_guard.rb, lib/api/helpers.rb sudo!), which the
# document declares as security schemes or not at all.
_AUTH_PARAMS = {"private_token", "access_token", "sudo"}

# The document's own defects.  ("schema", NAME, PROPERTY, SCHEMA) replaces
# one property of a component schema; ("response", METHOD, PATH, STATUS,
# SCHEMA) one response body; ("operation", METHOD, PATH, OPERATION) adds an
# operation the document leaves out; ("param", METHOD, PATH, PARAMETER)
# adds a query parameter it leaves out; ("body", METHOD, PATH, PROPERTY,
# SCHEMA) replaces one property of a request body.
SPEC_DEFECTS = [
    # approved_by is a list of {user, approved_at}
    # (lib/api/entities/merge_request_approvals.rb: expose :approved_by,
    # using: Entities::Approvals -- a collection).
    ("schema", "APIEntitiesMergeRequestApprovals", "approved_by",
     {"type": "array", "nullable": True,
      "items": {"$ref": "#/components/schemas/APIEntitiesApprovals"}}),
    # identities is a list (lib/api/entities/user_with_admin.rb,
    # doc/api/users.md "identities": [...]).
    ("schema", "APIEntitiesUserPublic", "identities",
     {"type": "array", "nullable": True,
      "items": {"$ref": "#/components/schemas/APIEntitiesIdentity"}}),
    # last_activity_on is a date ("2012-05-23" in doc/api/users.md).
    ("schema", "APIEntitiesUserPublic", "last_activity_on",
     {"type": "string", "nullable": True}),
    # impersonation is a boolean (doc/api/user_tokens.md).
    ("schema", "APIEntitiesImpersonationToken", "impersonation",
     {"type": "boolean", "nullable": True}),
    ("schema", "APIEntitiesImpersonationTokenWithToken", "impersonation",
     {"type": "boolean", "nullable": True}),
    # An email's id is the database's integer ("id": 1 in
    # doc/api/user_email_addresses.md); the document says string.
    ("schema", "APIEntitiesEmail", "id", {"type": "integer"}),
    # GET .../discussions/:id/notes presents the notes
    # (lib/api/discussions.rb: present notes, with: Entities::Note).
    ("response", "get", "/api/v4/projects/{id}/merge_requests/{noteable_id}/"
     "discussions/{discussion_id}/notes", "200",
     {"type": "array",
      "items": {"$ref": "#/components/schemas/APIEntitiesNote"}}),
    # GET /personal_access_tokens/self is not in the document (its Grape
    # route, lib/api/personal_access_tokens/self_information.rb, has no
    # OpenAPI description); doc/api/personal_access_tokens.md documents it.
    ("operation", "get", "/api/v4/personal_access_tokens/self", {
        "operationId": "getApiV4PersonalAccessTokensSelf",
        "parameters": [],
        "responses": {"200": {"description": "OK", "content": {
            "application/json": {"schema": {
                "type": "object",
                "required": ["id", "name", "scopes", "user_id", "active"],
                "properties": {
                    "id": {"type": "integer"},
                    "name": {"type": "string"},
                    "revoked": {"type": "boolean"},
                    "created_at": {"type": "string",
                                   "format": "date-time"},
                    "description": {"type": "string", "nullable": True},
                    "scopes": {"type": "array",
                               "items": {"type": "string"}},
                    "user_id": {"type": "integer"},
                    "last_used_at": {"type": "string",
                                     "format": "date-time",
                                     "nullable": True},
                    "active": {"type": "boolean"},
                    "expires_at": {"type": "string", "nullable": True},
                }}}}}},
    }),
    # GET /application/settings (lib/api/settings.rb, administrators
    # only; doc/api/settings.md): the fields of Entities::ApplicationSetting
    # the simulator serves, as doc/api/settings.md shows them, in place of
    # the document's own description (APIEntitiesApplicationSetting),
    # against which the simulator's answers still fail (it types id as
    # a string; GitLab's is the row's integer, "id": 1 in the page).
    ("operation", "get", "/api/v4/application/settings", {
        "operationId": "getApiV4ApplicationSettings",
        "parameters": [],
        "responses": {
            "200": {"description": "OK", "content": {
                "application/json": {"schema": {
                    "type": "object",
                    "required": ["id", "commit_email_hostname"],
                    "properties": {
                        "id": {"type": "integer"},
                        "commit_email_hostname": {"type": "string",
                                                  "nullable": True},
                        "updated_at": {"type": "string",
                                       "format": "date-time"},
                    }}}}},
            "401": {"description": "Unauthorized"},
            "403": {"description": "Forbidden"}}}),
    # labels, add_labels and remove_labels are typed arrays; GitLab also
    # takes a comma-separated string (Grape's CommaSeparatedToArray,
    # lib/api/validations/types/comma_separated_to_array.rb, and the
    # examples of doc/api/merge_requests.md).
    ] + [("body", "put",
          "/api/v4/projects/{id}/merge_requests/{merge_request_iid}", prop,
          {"anyOf": [{"type": "array", "items": {"type": "string"}},
                     {"type": "string"}], "nullable": True})
         for prop in ("labels", "add_labels", "remove_labels")] + [
    # The note entity shows "internal" next to "confidential" since 15.3
    # (lib/api/entities/note.rb: expose :internal?, as: :internal), which
    # the document's APIEntitiesNote lacks; it is additionalProperties-free
    # so this only documents it.
    ("schema", "APIEntitiesNote", "internal",
     {"type": "boolean", "nullable": True}),
    # GET .../merge_requests/:iid/pipelines presents a page of pipelines
    # (lib/api/merge_requests.rb: present paginate(pipelines), with:
    # Entities::Ci::PipelineBasic), not one.
    ("response", "get", "/api/v4/projects/{id}/merge_requests/"
     "{merge_request_iid}/pipelines", "200",
     {"type": "array",
      "items": {"$ref": "#/components/schemas/APIEntitiesCiPipelineBasic"}}),
]

# Not defects but deliberate: the operations whose bodies are not JSON.
# A job's log is sent as it is kept, text/plain (lib/api/ci/jobs.rb "Get
# a trace of a specific job": content_type 'text/plain',
# env['api.format'] = :binary); the document says a job entity.
_TEXT_RESPONSES = {("get", "/api/v4/projects/{id}/merge_requests/"
                    "{merge_request_iid}/raw_diffs"),
                   ("get", "/api/v4/projects/{id}/jobs/{job_id}/trace")}


def _nullable(schema):
    """OpenAPI 3.0 nullable -> JSON Schema (type [T, "null"])."""
    if isinstance(schema, list):
        return [_nullable(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _nullable(v) for k, v in schema.items()
           if k not in ("nullable", "example", "examples", "discriminator",
                        "xml", "externalDocs", "deprecated", "readOnly",
                        "writeOnly")}
    if schema.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = list(out["enum"]) + [None]
        if "$ref" in out:
            out = {"anyOf": [{"$ref": out.pop("$ref")}, {"type": "null"}]}
    return out


def _validator_patches(doc):
    """What every strict validator needs to accept real GitLab traffic.

    P1: parameter schemas "oneOf: [string, integer]" (every :id) become
        anyOf: "42" is both, and oneOf then always fails.
    P3: response entities and their typed properties are nullable: the
        document marks none, GitLab returns null for merged_at, milestone,
        closed_by, avatar_url and many more.
    P4: JSON request bodies may come form-encoded too (Grape accepts both).
    """
    for item in doc["paths"].values():
        for method, op in item.items():
            if method not in _METHODS:
                continue
            for prm in op.get("parameters", []):
                s = prm.get("schema", {})
                if "oneOf" in s:
                    s["anyOf"] = s.pop("oneOf")
            rb = op.get("requestBody")
            content = rb.get("content", {}) if rb else {}
            if "application/json" in content and \
                    "application/x-www-form-urlencoded" not in content:
                content["application/x-www-form-urlencoded"] = \
                    copy.deepcopy(content["application/json"])
    for name, s in doc["components"]["schemas"].items():
        if name.startswith("RequestBody_"):
            continue
        if s.get("type") == "object":
            s["nullable"] = True
        for v in (s.get("properties") or {}).values():
            if isinstance(v, dict) and "$ref" not in v and v.get("type"):
                v["nullable"] = True


def _apply_defects(doc):
    schemas = doc["components"]["schemas"]
    for defect in SPEC_DEFECTS:
        kind = defect[0]
        if kind == "schema":
            _, name, prop, schema = defect
            schemas[name].setdefault("properties", {})[prop] = schema
        elif kind == "response":
            _, method, path, code, schema = defect
            doc["paths"][path][method]["responses"][code]["content"][
                "application/json"]["schema"] = schema
        elif kind == "operation":
            _, method, path, op = defect
            doc["paths"].setdefault(path, {})[method] = copy.deepcopy(op)
        elif kind == "body":
            _, method, path, prop, schema = defect
            content = doc["paths"][path][method]["requestBody"]["content"]
            for media in content.values():
                target = media["schema"]
                if "$ref" in target:
                    target = schemas[target["$ref"].rsplit("/", 1)[1]]
                target.setdefault("properties", {})[prop] = schema
        elif kind == "param":
            _, method, path, prm = defect
            doc["paths"][path][method].setdefault("parameters", []).append(
                copy.deepcopy(prm))


class Operation:
    def __init__(self, method, template, op):
        self.method = method
        self.template = template
        self.regex = re.compile("^" + re.sub(
            r"\\\{[^}]+\\\}", "([^/]+)", re.escape(template)) + "$")
        self.names = re.findall(r"\{([^}]+)\}", template)
        # (in, name) -> (parameter, its schema as JSON Schema); converted
        # once, so that validators can be cached by the schema's id.
        self.params = {}
        for prm in op.get("parameters", []):
            self.params[(prm.get("in"), prm["name"])] = (
                prm, _nullable(prm.get("schema") or {}))
        self.body = None
        self.body_required = False
        rb = op.get("requestBody")
        if rb:
            self.body = {ctype: (media, _nullable(media.get("schema") or {}))
                         for ctype, media in rb.get("content", {}).items()}
            self.body_required = bool(rb.get("required"))
        self.responses = {}
        for code, resp in op.get("responses", {}).items():
            content = (resp.get("content") or {}).get("application/json")
            if content and "schema" in content:
                self.responses[int(code)] = _nullable(content["schema"])


class Checker:
    """Loads the document once; check_request/check_response are safe to
    call from several threads."""

    def __init__(self, spec=SPEC, report=None):
        with open(spec) as f:
            doc = json.load(f)
        _validator_patches(doc)
        _apply_defects(doc)
        self.schemas = {n: _nullable(s) for n, s in
                        doc["components"]["schemas"].items()}
        self.operations = []
        for path, item in doc["paths"].items():
            for method, op in item.items():
                if method in _METHODS:
                    self.operations.append(Operation(method.upper(), path,
                                                     op))
        self.lock = threading.Lock()
        self.report = report
        self.counts = {"requests": 0, "responses": 0, "violations": 0}
        self.examples = []
        self._compiled = {}     # id(schema) -> (check, schema)
        self._refs = {}         # component name -> check

    # -- lookups --------------------------------------------------------------

    def operation(self, method, path):
        """The operation for a request path (without the query), the most
        specific template (fewest parameters) when several match."""
        best = None
        for op in self.operations:
            if op.method == method and op.regex.match(path):
                if best is None or len(op.names) < len(best.names):
                    best = op
        return best

    def _validate(self, schema, value, where):
        errors = []
        self._check_of(schema)(value, where, errors)
        return errors[:5]

    # -- the validator ----------------------------------------------------

    def _check_of(self, schema):
        """The compiled check of a schema (kept alive with it, so its id
        stays its own)."""
        with self.lock:
            hit = self._compiled.get(id(schema))
            if hit is None:
                hit = (_compile(schema, self._ref), schema)
                self._compiled[id(schema)] = hit
        return hit[0]

    def _ref(self, ref):
        """A check that looks the component up on first use (schemas
        refer to each other, and to themselves)."""
        name = ref.rsplit("/", 1)[1]
        if name not in self.schemas:
            raise Unsupported("no schema %s" % ref)
        cell = []

        def check(value, where, errors):
            if not cell:
                cell.append(self._check_of(self.schemas[name]))
            cell[0](value, where, errors)
        return check

    # -- requests -------------------------------------------------------------

    def check_request(self, method, path, query, content_type, body):
        """Problems with one request (path still percent-encoded)."""
        method = "GET" if method == "HEAD" else method
        op = self.operation(method, path)
        if op is None:
            return ["%s %s: no such operation in GitLab's OpenAPI document"
                    % (method, path)]
        problems = []
        values = op.regex.match(path).groups()
        path_values = {name: urllib.parse.unquote(raw)
                       for name, raw in zip(op.names, values)}
        for name, raw in zip(op.names, values):
            prm = op.params.get(("path", name))
            if prm is not None:
                problems += self._param(prm, urllib.parse.unquote(raw),
                                        "path parameter " + name)
        seen = set()
        # Grape merges the query into the parameters: a non-GET's body
        # parameters may come in the query string (lib/api: every declared
        # param is read from params, whatever its source).
        moved = []
        for key, value in urllib.parse.parse_qsl(query,
                                                 keep_blank_values=True):
            name = key[:-2] if key.endswith("[]") else key
            if name in _AUTH_PARAMS:
                continue
            prm = op.params.get(("query", name)) or \
                op.params.get(("query", key))
            # GitLab's own Link headers repeat the route's parameters in
            # the query (id=8&noteable_id=8, offset_header_builder.rb);
            # following them as given is what GitLab's docs ask.
            if prm is None and name in path_values:
                if value != path_values[name]:
                    problems.append("query parameter %s differs from the "
                                    "path's" % key)
                continue
            if prm is None and op.body is not None and method != "GET":
                moved.append((key, value))
                continue
            if prm is None:
                problems.append("query parameter %s is not declared" % key)
                continue
            seen.add(prm[0]["name"])
            problems += self._param(prm, value, "query parameter " + key)
        if method == "GET":
            for (where, name), (prm, _) in op.params.items():
                if where == "query" and prm.get("required") and \
                        name not in seen:
                    problems.append("query parameter %s is required" % name)
        problems += self._body(op, content_type, body, moved)
        return ["%s %s: %s" % (method, op.template, p) for p in problems]

    def _param(self, prm, raw, where):
        schema = prm[1]
        value = _coerce(schema, raw)
        return self._validate(schema, value, where)

    def _body(self, op, content_type, body, moved):
        """The body, with the body parameters the query carried."""
        ctype = (content_type or "").split(";")[0].strip().lower()
        if not body and not moved:
            if op.body is not None and op.body_required and \
                    op.method != "GET":
                return ["the request body is required"]
            return []
        if op.body is None:
            return ["a body where the operation takes none"]
        if not body:
            ctype = "application/x-www-form-urlencoded"
        media = op.body.get(ctype)
        if media is None:
            return ["a %s body where the operation takes %s" % (
                ctype or "untyped", ", ".join(sorted(op.body)))]
        schema = media[1]
        value = {}
        if body and ctype == "application/json":
            try:
                value = json.loads(body.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                return ["the JSON body does not parse"]
        elif body:
            value = _form(self._deref(schema),
                          body.decode("utf-8", "replace"))
        if moved and isinstance(value, dict):
            for k, v in _form(self._deref(schema),
                              urllib.parse.urlencode(moved)).items():
                value.setdefault(k, v)
        return self._validate(schema, value, "body")

    def _deref(self, schema):
        """A component schema for "$ref" (form values are coerced by the
        properties' types)."""
        while isinstance(schema, dict) and "$ref" in schema:
            schema = self.schemas[schema["$ref"].rsplit("/", 1)[1]]
        return schema

    # -- responses ------------------------------------------------------------

    def check_response(self, method, path, status, content_type, body):
        """Problems with one response; None when the document says nothing
        about it (an error, a status it does not list, text)."""
        method = "GET" if method == "HEAD" else method
        op = self.operation(method, path)
        if op is None or not 200 <= status < 300:
            return None
        if (op.method.lower(), op.template) in _TEXT_RESPONSES:
            return None
        schema = op.responses.get(status)
        if schema is None or "json" not in (content_type or "") or not body:
            return None
        try:
            value = json.loads(body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return ["%s %s %d: the JSON body does not parse" % (
                method, op.template, status)]
        return ["%s %s %d: %s" % (method, op.template, status, p)
                for p in self._validate(schema, value, "response")]

    # -- the report -----------------------------------------------------------

    def record(self, method, target, request_problems, response_problems):
        """Count one exchange; rewrite the report."""
        with self.lock:
            self.counts["requests"] += 1
            if response_problems is not None:
                self.counts["responses"] += 1
            problems = list(request_problems) + list(response_problems or [])
            self.counts["violations"] += len(problems)
            for p in problems:
                if len(self.examples) < EXAMPLES_MAX:
                    self.examples.append({"request": "%s %s" % (
                        method, target[:300]), "problem": p})
            self._write()

    def snapshot(self):
        with self.lock:
            return dict(self.counts, examples=list(self.examples))

    def _write(self):
        if not self.report:
            return
        data = dict(self.counts, examples=self.examples, spec=SPEC,
                    pid=os.getpid(),
                    at=datetime.datetime.now(datetime.timezone.utc)
                    .strftime("%Y-%m-%dT%H:%M:%SZ"))
        tmp = self.report + ".tmp"
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, self.report)


def _types(schema):
    t = schema.get("type")
    if isinstance(t, list):
        return t
    if t:
        return [t]
    out = []
    for sub in schema.get("anyOf", []) + schema.get("oneOf", []):
        out += _types(sub)
    return out


def _coerce(schema, raw):
    """A query or form string as the type its schema wants, the way
    Grape coerces it; left a string when it does not convert, so the
    validator names the mismatch."""
    types = _types(schema)
    if "string" in types:
        return raw
    if "integer" in types and re.fullmatch(r"-?\d+", raw):
        return int(raw)
    if "number" in types:
        try:
            return float(raw)
        except ValueError:
            return raw
    if "boolean" in types and raw in ("true", "false"):
        return raw == "true"
    if "array" in types:
        items = schema.get("items") or {}
        return [_coerce(items, v) for v in raw.split(",")]
    return raw


def _form(schema, text):
    """A form body (Rack nesting) as its schema's types."""
    props = schema.get("properties") or {}
    out = {}
    for key, value in urllib.parse.parse_qsl(text, keep_blank_values=True):
        m = re.match(r"^([^\[]+)(.*)$", key)
        name, rest = m.group(1), m.group(2)
        sub = props.get(name, {})
        if rest == "[]":
            items = sub.get("items") or {}
            out.setdefault(name, []).append(_coerce(items, value))
        elif rest.startswith("["):
            inner = rest[1:].split("]", 1)[0]
            node = out.setdefault(name, {})
            sprops = (sub.get("properties") or {}).get(inner, {})
            node[inner] = _coerce(sprops, value)
        else:
            out[name] = _coerce(sub, value)
    return out


# -- a small JSON Schema validator ------------------------------------------

class Unsupported(ValueError):
    """A schema keyword this validator does not check."""


# Keywords that say nothing to check (documentation and defaults).
_IGNORED = {"description", "example", "examples", "default", "title",
            "deprecated", "readOnly", "writeOnly", "externalDocs", "xml",
            "discriminator", "x-gitlab-description"}

_JSON_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and
    not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# word: (applies to, measure, within?, message)
_BOUNDS = {
    "maxLength": (lambda v: isinstance(v, str), len,
                  lambda n, b: n <= b, "is longer than"),
    "minLength": (lambda v: isinstance(v, str), len,
                  lambda n, b: n >= b, "is shorter than"),
    "maxItems": (lambda v: isinstance(v, list), len,
                 lambda n, b: n <= b, "has more items than"),
    "minItems": (lambda v: isinstance(v, list), len,
                 lambda n, b: n >= b, "has fewer items than"),
    "maximum": (_is_number, lambda v: v, lambda n, b: n <= b,
                "is greater than the maximum"),
    "minimum": (_is_number, lambda v: v, lambda n, b: n >= b,
                "is less than the minimum"),
}


def _where(where, key):
    return "%s[%s]" % (where, key)


def _compile(schema, ref):
    """schema -> check(value, where, errors), which appends one message
    per problem found (worded as the jsonschema package words them)."""
    if not isinstance(schema, dict):
        raise Unsupported("a schema that is not an object: %r" % (schema,))
    unknown = set(schema) - _IGNORED - set(_BOUNDS) - {
        "type", "enum", "format", "properties", "required", "items",
        "pattern", "uniqueItems",
        "$ref", "anyOf", "oneOf", "allOf", "additionalProperties"}
    if unknown:
        raise Unsupported("schema keywords %s" % sorted(unknown))
    checks = []
    if "$ref" in schema:
        checks.append(ref(schema["$ref"]))
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) \
            else [schema["type"]]
        tests = [_JSON_TYPES[t] for t in types]
        shown = ", ".join("'%s'" % t for t in types)

        def check_type(v, where, errors):
            if not any(t(v) for t in tests):
                errors.append("%s: %r is not of type %s" % (
                    where, _short(v), shown))
                return False
            return True
    else:
        check_type = None
    if "enum" in schema:
        allowed = schema["enum"]

        def check_enum(v, where, errors):
            if v not in allowed:
                errors.append("%s: %r is not one of %r" % (where, _short(v),
                                                         allowed))
        checks.append(check_enum)
    for word, (applies, measure, ok, text) in _BOUNDS.items():
        if word in schema:
            def check_bound(v, where, errors, bound=schema[word],
                            applies=applies, measure=measure, ok=ok,
                            text=text):
                if applies(v) and not ok(measure(v), bound):
                    errors.append("%s: %r %s %r" % (where, _short(v), text,
                                                    bound))
            checks.append(check_bound)
    if "pattern" in schema:
        pattern = re.compile(schema["pattern"])

        def check_pattern(v, where, errors):
            if isinstance(v, str) and not pattern.search(v):
                errors.append("%s: %r does not match %r" % (
                    where, _short(v), pattern.pattern))
        checks.append(check_pattern)
    if schema.get("format") == "date-time":
        def check_time(v, where, errors):
            if isinstance(v, str) and not _RFC3339.match(v):
                errors.append("%s: %r is not a 'date-time'" % (where, v))
        checks.append(check_time)
    props = {k: _compile(v, ref)
             for k, v in (schema.get("properties") or {}).items()}
    required = list(schema.get("required") or [])
    if props or required:
        def check_object(v, where, errors):
            if not isinstance(v, dict):
                return
            for k in required:
                if k not in v:
                    errors.append("%s: '%s' is a required property" %
                                  (where, k))
            for k, c in props.items():
                if k in v:
                    c(v[k], _where(where, k), errors)
        checks.append(check_object)
    if "items" in schema:
        item = _compile(schema["items"], ref)

        def check_items(v, where, errors):
            if isinstance(v, list):
                for i, x in enumerate(v):
                    item(x, _where(where, i), errors)
        checks.append(check_items)
    for word in ("anyOf", "oneOf"):
        if word in schema:
            alts = [_compile(a, ref) for a in schema[word]]

            def check_alts(v, where, errors, alts=alts, word=word):
                fits = 0
                for a in alts:
                    mine = []
                    a(v, where, mine)
                    fits += not mine
                if (word == "anyOf" and not fits) or \
                        (word == "oneOf" and fits != 1):
                    errors.append("%s: %r is not valid under %s" % (
                        where, _short(v),
                        "any of the given schemas" if word == "anyOf"
                        else "exactly one of the given schemas"))
            checks.append(check_alts)
    for sub in schema.get("allOf") or ():
        checks.append(_compile(sub, ref))

    def check(v, where, errors):
        if check_type is not None and not check_type(v, where, errors):
            return
        if v is None and check_type is not None:
            return
        for c in checks:
            c(v, where, errors)
    return check


def _short(v):
    text = json.dumps(v)
    return v if len(text) <= 80 else text[:77] + "..."
