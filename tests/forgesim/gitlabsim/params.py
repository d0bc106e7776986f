"""Request parameters the way Rack parses them and Grape validates them.

GitLab merges query-string, form-encoded and JSON parameters into one hash.
Query and form keys use Rack's nesting: `iids[]=1&iids[]=2` is a list and
`position[new_line]=5` a nested hash.  Grape then validates declared
parameters and answers 400 {"error": "a is missing, b is invalid"} with
every failure joined, so Params collects errors and raises them together.
"""

import json
import re
import urllib.parse

from . import errors
from .clock import parse_iso8601

_KEY = re.compile(r"^([^\[\]]+)((?:\[[^\[\]]*\])*)$")


def _assign(target, key, value):
    m = _KEY.match(key)
    if not m:
        target[key] = value
        return
    name, rest = m.group(1), m.group(2)
    parts = re.findall(r"\[([^\[\]]*)\]", rest)
    node = target
    path = [name] + parts
    for i, part in enumerate(path[:-1]):
        nxt = path[i + 1]
        want_list = nxt == ""
        if part == "":
            # "a[][b]" nesting is not used by any GitLab call we model.
            return
        existing = node.get(part)
        if want_list and not isinstance(existing, list):
            existing = node[part] = []
        elif not want_list and not isinstance(existing, dict):
            existing = node[part] = {}
        if want_list:
            existing.append(value)
            return
        node = existing
    node[path[-1]] = value


def parse_query(qs):
    result = {}
    for key, value in urllib.parse.parse_qsl(qs, keep_blank_values=True):
        _assign(result, key, value)
    return result


def parse_body(content_type, body):
    """Body parameters; raises Grape's 400 for a malformed JSON body."""
    if not body:
        return {}
    ctype = (content_type or "").split(";")[0].strip().lower()
    if ctype == "application/json":
        try:
            data = json.loads(body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise errors.grape("message body does not match declared format")
        if not isinstance(data, dict):
            raise errors.grape("message body does not match declared format")
        return data
    if ctype == "application/x-www-form-urlencoded":
        return parse_query(body.decode("utf-8", "replace"))
    return {}


_MISSING = object()


class Params:
    """Typed access to one request's parameters, collecting Grape errors.

    Call the accessors for every declared parameter, then check(), which
    raises one 400 naming every failure in declaration order.
    """

    def __init__(self, values, prefix=""):
        self.values = values
        self.prefix = prefix
        self.errors = []

    def _name(self, key):
        return "%s[%s]" % (self.prefix, key) if self.prefix else key

    def has(self, key):
        return key in self.values

    def _get(self, key, required):
        value = self.values.get(key, _MISSING)
        if value is _MISSING:
            if required:
                self.errors.append(self._name(key) + " is missing")
            return _MISSING
        return value

    def string(self, key, required=False, default=None, values=None,
               allow_blank=True):
        value = self._get(key, required)
        if value is _MISSING:
            return default
        if isinstance(value, (dict, list)):
            self.errors.append(self._name(key) + " is invalid")
            return default
        value = "" if value is None else str(value)
        if not allow_blank and not value.strip():
            self.errors.append(self._name(key) + " is empty")
            return default
        if values is not None and value not in values:
            self.errors.append(self._name(key) +
                               " does not have a valid value")
            return default
        return value

    def integer(self, key, required=False, default=None):
        value = self._get(key, required)
        if value is _MISSING or value is None or value == "":
            return default
        if isinstance(value, bool):
            self.errors.append(self._name(key) + " is invalid")
            return default
        if isinstance(value, int):
            return value
        if isinstance(value, str) and re.fullmatch(r"[+-]?\d+", value.strip()):
            return int(value)
        self.errors.append(self._name(key) + " is invalid")
        return default

    def boolean(self, key, required=False, default=None):
        value = self._get(key, required)
        if value is _MISSING or value is None:
            return default
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "t", "yes", "y"):
            return True
        if text in ("false", "0", "f", "no", "n", ""):
            return False
        self.errors.append(self._name(key) + " is invalid")
        return default

    def time(self, key):
        value = self._get(key, False)
        if value is _MISSING or value in (None, ""):
            return None
        t = parse_iso8601(value)
        if t is None:
            self.errors.append(self._name(key) + " is invalid")
        return t

    def string_list(self, key, default=None):
        """Grape's CommaSeparatedToArray: a list, or "a,b" split on commas."""
        value = self._get(key, False)
        if value is _MISSING or value is None:
            return default
        if isinstance(value, list):
            out = []
            for item in value:
                out.extend(p.strip() for p in str(item).split(","))
            return [p for p in out if p]
        if isinstance(value, (dict, bool)):
            self.errors.append(self._name(key) + " is invalid")
            return default
        return [p.strip() for p in str(value).split(",") if p.strip()]

    def int_list(self, key):
        value = self._get(key, False)
        if value is _MISSING or value is None:
            return None
        items = value if isinstance(value, list) else str(value).split(",")
        out = []
        for item in items:
            if isinstance(item, int) and not isinstance(item, bool):
                out.append(item)
            elif isinstance(item, str) and item.strip().isdigit():
                out.append(int(item))
            else:
                self.errors.append(self._name(key) + " is invalid")
                return None
        return out

    def nested(self, key, required=False):
        """Params for a Hash-typed parameter, sharing this error list."""
        value = self._get(key, required)
        if value is _MISSING or value is None:
            return None
        if not isinstance(value, dict):
            self.errors.append(self._name(key) + " is invalid")
            return None
        child = Params(value, self._name(key))
        child.errors = self.errors
        return child

    def check(self):
        if self.errors:
            raise errors.grape(", ".join(self.errors))

    def pagination(self):
        """Kaminari page/per_page: per_page defaults to 20, clamps at 100."""
        page = self.integer("page", default=1)
        per_page = self.integer("per_page", default=20)
        if page is None or page < 1:
            page = 1
        if per_page is None or per_page < 1:
            per_page = 20
        return page, min(per_page, 100)
