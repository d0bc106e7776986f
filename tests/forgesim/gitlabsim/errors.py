"""Error responses in the exact shapes GitLab produces.

Two families (doc/api/rest/troubleshooting.md):
- GitLab's helpers (lib/api/helpers.rb): {"message": "..."} where message
  may also be an object ({"message": {"field": ["msg"]}});
- Grape's own parameter validation and routing: {"error": "..."}.
"""


class ApiError(Exception):
    def __init__(self, status, body, headers=None):
        super().__init__(status, body)
        self.status = status
        self.body = body            # dict (JSON), or None for no body
        self.headers = headers or {}


def message(status, text):
    return ApiError(status, {"message": text})


def bad_request(reason=None):
    return message(400, "400 Bad request - " + reason if reason
                   else "400 Bad request")


def note_invalid(errors):
    """bad_request!("Note #{note.errors.messages}") with Ruby's Hash#inspect.

    errors is [(attribute, [messages])]; the rendering follows the
    pre-Ruby-3.4 inspect format that GitLab users report
    (errors/400_discussion_invalid_position.json).
    """
    parts = []
    for attr, msgs in errors:
        parts.append(":%s=>[%s]" % (attr, ", ".join(
            '"%s"' % m.replace('"', '\\"') for m in msgs)))
    return bad_request("Note {%s}" % ", ".join(parts))


def unauthorized():
    return message(401, "401 Unauthorized")


def forbidden(reason=None):
    return message(403, "403 Forbidden - " + reason if reason
                   else "403 Forbidden")


def not_found(resource=None):
    """not_found!(resource): "404 <resource> Not Found"."""
    return message(404, "404 %s Not Found" % resource if resource
                   else "404 Not Found")


def record_not_found():
    """ActiveRecord::RecordNotFound rescued by the API: note the lower case."""
    return message(404, "404 Not found")


def not_allowed(text=None):
    """not_allowed!(message = nil) in lib/api/helpers.rb."""
    return message(405, text or "405 Method Not Allowed")


class Moved(Exception):
    """redirect! in lib/api/helpers.rb (API::API::MovedPermanentlyError):
    301 with Location; the body says where (doc/api/rest/_index.md,
    "Redirects")."""

    def __init__(self, location):
        super().__init__(location)
        self.location = location


def moved(location):
    return Moved(location)


def conflict(text):
    return message(409, text)


def grape(text, status=400):
    return ApiError(status, {"error": text})


def insufficient_scope(scope):
    return ApiError(403, {
        "error": "insufficient_scope",
        "error_description": "The request requires higher privileges than "
                             "provided by the access token.",
        "scope": scope})


# lib/api/api_guard.rb, oauth2_bearer_token_error_handler: a token that
# is found but expired or revoked (Gitlab::Auth::ExpiredError,
# RevokedError) is answered by rack-oauth2's Bearer::Unauthorized, a 401
# whose body is the OAuth error, with WWW-Authenticate saying the same.
TOKEN_EXPIRED = ("Token is expired. You can either do re-authorization "
                 "or token refresh.")
TOKEN_REVOKED = "Token was revoked. You have to re-authorize from the user."


def invalid_token(description):
    return ApiError(401, {"error": "invalid_token",
                          "error_description": description},
                    {"WWW-Authenticate":
                     'Bearer realm="The API", error="invalid_token", '
                     'error_description="%s"' % description})


def route_not_found():
    return grape("404 Not Found", 404)


def route_not_allowed(allowed):
    return ApiError(405, {"error": "405 Not Allowed"},
                    {"Allow": ", ".join(sorted(allowed))})
