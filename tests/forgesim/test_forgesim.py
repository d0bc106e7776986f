#!/usr/bin/python3
"""Tests for forgesim, the GitLab simulator.

Run:  /usr/bin/python3 tests/forgesim/test_forgesim.py [-v] [TestClass...]

One simulator process serves the whole module; every test starts from
POST /_sim/reset (the default seed).  The simulator checks every request
and response against GitLab's OpenAPI document (tests/data/gitlab/openapi/,
gitlabsim/conformance.py),
and a test whose exchanges broke it fails.  A request a test sends wrong on
purpose (to see GitLab's 400) says so in a header.  GitLab's documented
payloads come from tests/data/gitlab/examples/; a missing one fails the
test that needs it.
"""

import hashlib
import http.client
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PYTHON = sys.executable or "/usr/bin/python3"


EXAMPLES = os.path.join(REPO, "tests", "data", "gitlab", "examples")
# The header that marks a request wrong on purpose (gitlabsim/server.py).
ON_PURPOSE = "X-Forgesim-Invalid-On-Purpose"


# -- a small client -----------------------------------------------------------

class Reply:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def json(self):
        return json.loads(self.body.decode("utf-8")) if self.body else None

    def header(self, name):
        return self.headers.get(name.lower())


class Sim:
    """A forgesim process and helpers to talk to it."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="forgesim-test.")
        url_file = os.path.join(self.tmp, "url")
        self.log = open(os.path.join(self.tmp, "log"), "w+")
        # Checked against the OpenAPI document in any case; the report
        # goes with the whole suite's when CTest collects them.
        report_dir = os.environ.get("PB_OPENAPI_REPORT_DIR") or self.tmp
        report = os.path.join(report_dir, "forgesim-test-%d.json"
                              % os.getpid())
        if report_dir != self.tmp:
            report = os.path.join(report_dir, "forgesim-%d-tests.json"
                                  % os.getpid())
        self.proc = subprocess.Popen(
            [PYTHON, os.path.join(HERE, "forgesim.py"), "--port", "0",
             "--state-dir", os.path.join(self.tmp, "state"), "--port-file",
             url_file, "--openapi-report", report],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not os.path.exists(url_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.log.seek(0)
                raise RuntimeError("forgesim did not start:\n" +
                                   self.log.read())
            time.sleep(0.05)
        with open(url_file) as f:
            self.url = f.read().strip()
        self.port = int(self.url.rsplit(":", 1)[1])

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        finally:
            self.log.close()
            shutil.rmtree(self.tmp, ignore_errors=True)

    def raw(self, method, path, body=None, headers=None, timeout=10):
        """One request; returns Reply, raises OSError/HTTPException."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                          timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return Reply(resp.status, {k.lower(): v for k, v in
                                       resp.getheaders()}, resp.read())
        finally:
            conn.close()

    def api(self, method, path, token="user-token", body=None, form=None,
            headers=None, query=None, on_purpose=None):
        """Call /api/v4; JSON body by default, form-encoded with form=.
        on_purpose: why this request breaks GitLab's OpenAPI document."""
        hdrs = dict(headers or {})
        if on_purpose:
            hdrs[ON_PURPOSE] = on_purpose
        if token:
            hdrs["PRIVATE-TOKEN"] = token
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        elif form is not None:
            data = urllib.parse.urlencode(form, doseq=True).encode()
            hdrs["Content-Type"] = "application/x-www-form-urlencoded"
        full = "/api/v4" + path
        if query:
            full += "?" + urllib.parse.urlencode(query, doseq=True)
        return self.raw(method, full, data, hdrs)

    def ctl(self, method, path, body=None, expect=(200, 201)):
        data = json.dumps(body).encode() if body is not None else None
        reply = self.raw(method, "/_sim" + path, data,
                         {"Content-Type": "application/json"})
        if expect and reply.status not in expect:
            raise AssertionError("control %s %s -> %d %s" % (
                method, path, reply.status, reply.body[:500]))
        return reply.json


SIM = None


def setUpModule():
    global SIM
    SIM = Sim()


def tearDownModule():
    if SIM is not None:
        SIM.stop()


def example(name):
    """A documented GitLab body (a missing file fails the test)."""
    path = os.path.join(EXAMPLES, name)
    if not os.path.exists(path):
        raise AssertionError("GitLab example %s is missing (the test data "
                             "in tests/data/gitlab/examples/)" % path)
    with open(path) as f:
        return json.load(f)


def sha1(text):
    return hashlib.sha1(text.encode()).hexdigest()


# -- test base ----------------------------------------------------------------

class SimTestCase(unittest.TestCase):
    """Resets the simulator before; fails when an exchange broke GitLab's
    OpenAPI document."""

    sim = property(lambda self: SIM)

    def setUp(self):
        SIM.ctl("POST", "/reset", {})
        self.openapi_before = SIM.ctl("GET", "/openapi")

    def tearDown(self):
        after = SIM.ctl("GET", "/openapi")
        new = after["violations"] - self.openapi_before["violations"]
        if new:
            seen = len(self.openapi_before["examples"])
            self.fail("%d exchanges break GitLab's OpenAPI document:\n%s"
                      % (new, "\n".join(
                          "%s: %s" % (e["request"], e["problem"])
                          for e in after["examples"][seen:seen + 10])))

    # helpers ---------------------------------------------------------------

    def mr(self, iid=1, token="user-token"):
        reply = SIM.api("GET", "/projects/1/merge_requests/%d" % iid, token)
        self.assertEqual(reply.status, 200, reply.body)
        return reply.json

    def state_mr(self, iid=1, project="group/project"):
        state = SIM.ctl("GET", "/state")
        proj = next(p for p in state["projects"]
                    if p["path_with_namespace"] == project)
        return next(m for m in proj["merge_requests"] if m["iid"] == iid)

    def make_mr(self, base_files, head_files, path="grp/diffs",
                extra_head_commits=()):
        """A project whose MR !1 changes base_files into head_files."""
        SIM.ctl("POST", "/projects", {
            "path": path, "files": base_files,
            "members": {"alice": "developer", "bob": "maintainer",
                        "gus": "guest"}})
        encoded = urllib.parse.quote(path, safe="")
        commits = [{"message": "change\n", "files": head_files}]
        commits += list(extra_head_commits)
        SIM.ctl("POST", "/projects/%s/commits" % encoded, {
            "branch": "topic", "start": "main", "commits": commits})
        SIM.ctl("POST", "/projects/%s/merge_requests" % encoded, {
            "source_branch": "topic", "title": "Topic", "author": "alice"})
        return encoded

    def position(self, pid, **lines):
        refs = SIM.api("GET", "/projects/%s/merge_requests/1" % pid).json[
            "diff_refs"]
        pos = {"position_type": "text", "base_sha": refs["base_sha"],
               "start_sha": refs["start_sha"], "head_sha": refs["head_sha"]}
        pos.update(lines)
        return pos

    def assertBody(self, reply, status, body):
        self.assertEqual(reply.status, status, reply.body)
        self.assertEqual(reply.json, body)


# Twelve lines; the MR changes line 3, removes line 6 and adds one after 10.
BASE_TEXT = "".join("line %d\n" % i for i in range(1, 13))
HEAD_TEXT = BASE_TEXT.replace("line 3\n", "line three\n") \
    .replace("line 6\n", "").replace("line 10\n", "line 10\nline 10b\n")
# Forty lines with one change at the top: lines 8.. are outside the hunk.
LONG_BASE = "".join("row %d\n" % i for i in range(1, 41))
LONG_HEAD = LONG_BASE.replace("row 2\n", "row 2\nrow 2b\n")


# -- what real deployments have -------------------------------------------

class ThrottledTouchTest(SimTestCase):
    """A note touches its MR at most once a minute (ThrottledTouch)."""

    def note(self, body, token="user-token"):
        reply = SIM.api("POST", "/projects/1/merge_requests/1/notes", token,
                        body={"body": body})
        self.assertEqual(reply.status, 201, reply.body)
        return reply.json

    def test_second_note_within_the_minute_keeps_updated_at(self):
        SIM.ctl("POST", "/time", {"advance_s": 120})
        first = self.note("first")
        after_first = self.mr()["updated_at"]
        self.assertGreaterEqual(after_first, first["created_at"])
        SIM.ctl("POST", "/time", {"advance_s": 10})
        second = self.note("second")
        self.assertGreater(second["created_at"], after_first)
        self.assertEqual(self.mr()["updated_at"], after_first)
        # A list bounded by the second note's time does not show the MR.
        listed = SIM.api("GET", "/projects/1/merge_requests",
                         query={"updated_after": second["created_at"]})
        self.assertEqual(listed.json, [])
        # Past the minute, the next note moves it again.
        SIM.ctl("POST", "/time", {"advance_s": 61})
        third = self.note("third")
        self.assertGreaterEqual(self.mr()["updated_at"], third["created_at"])

    def test_label_change_is_a_save_and_always_moves_updated_at(self):
        SIM.ctl("POST", "/time", {"advance_s": 120})
        self.note("first")
        before = self.mr()["updated_at"]
        SIM.ctl("POST", "/time", {"advance_s": 5})
        SIM.api("PUT", "/projects/1/merge_requests/1",
                body={"add_labels": ["x"]})
        self.assertGreater(self.mr()["updated_at"], before)

    def test_touch_interval_is_a_setting(self):
        SIM.ctl("PUT", "/settings", {"touch_interval_s": 0})
        SIM.ctl("POST", "/time", {"advance_s": 1})
        self.note("first")
        SIM.ctl("POST", "/time", {"advance_s": 1})
        second = self.note("second")
        self.assertGreaterEqual(self.mr()["updated_at"], second["created_at"])


class MovedProjectTest(SimTestCase):
    """A renamed or transferred project (lib/api/helpers.rb find_project!,
    project_moved?, url_with_project_id; doc/api/rest/_index.md)."""

    def setUp(self):
        super().setUp()
        self.old = self.make_mr({"a.txt": "a\n"}, {"a.txt": "b\n"},
                                path="grp/old")
        self.pid = SIM.api("GET", "/projects/" + self.old).json["id"]
        moved = SIM.ctl("POST", "/projects/%s/move" % self.old,
                        {"path": "other/new"})
        self.assertEqual(moved["path_with_namespace"], "other/new")
        self.assertEqual(moved["previous_path"], "grp/old")
        self.assertEqual(moved["id"], self.pid)

    def test_get_on_the_old_path_redirects_to_the_id(self):
        reply = SIM.api("GET", "/projects/%s/merge_requests/1" % self.old,
                        query={"render_html": "false"})
        self.assertEqual(reply.status, 301, reply.body)
        want = "%s/api/v4/projects/%d/merge_requests/1?render_html=false" % (
            SIM.url, self.pid)
        self.assertEqual(reply.header("Location"), want)
        self.assertEqual(reply.body.decode(),
                         "This resource has been moved permanently to " +
                         want)
        for ident in ("other%2Fnew", "OTHER%2FNEW", str(self.pid)):
            reply = SIM.api("GET", "/projects/%s" % ident)
            self.assertEqual(reply.status, 200, reply.body)
            self.assertEqual(reply.json["path_with_namespace"], "other/new")

    def test_writes_on_the_old_path_are_refused(self):
        for method, path, body in (
                ("POST", "/merge_requests/1/notes", {"body": "hi"}),
                ("POST", "/merge_requests/1/approve", {}),
                ("PUT", "/merge_requests/1", {"add_labels": "x"})):
            reply = SIM.api(method, "/projects/%s%s" % (self.old, path),
                            body=body)
            self.assertBody(reply, 405, {
                "message": "Non GET methods are not allowed for moved "
                           "projects"})
        reply = SIM.api("POST", "/projects/%d/merge_requests/1/notes" %
                        self.pid, body={"body": "hi"})
        self.assertEqual(reply.status, 201, reply.body)

    def test_a_new_project_on_the_old_path_takes_it_over(self):
        SIM.ctl("POST", "/projects", {"path": "grp/old",
                                      "members": {"alice": "developer"}})
        reply = SIM.api("GET", "/projects/" + self.old)
        self.assertEqual(reply.status, 200, reply.body)
        self.assertNotEqual(reply.json["id"], self.pid)
        # ... and git on the old path reads the newcomer's repository.
        for path, has_topic in (("grp/old", False), ("other/new", True)):
            reply = SIM.raw("GET", "/%s.git/info/refs?service="
                            "git-upload-pack" % path)
            self.assertEqual(reply.status, 200, reply.body[:200])
            self.assertEqual(b"refs/heads/topic" in reply.body, has_topic)

    def test_the_repository_answers_on_both_paths(self):
        for path in ("grp/old", "other/new"):
            reply = SIM.raw("GET", "/%s.git/info/refs?service="
                            "git-upload-pack" % path)
            self.assertEqual(reply.status, 200, reply.body[:200])
            self.assertIn(b"refs/heads/topic", reply.body)


class ExternalUrlTest(SimTestCase):
    """Link headers and web_url from the configured external URL."""

    def setUp(self):
        super().setUp()
        SIM.ctl("PUT", "/settings",
                {"external_url": "https://gitlab.example.org:8443"})

    def test_link_header_names_the_external_host_and_route_params(self):
        for i in range(3):
            SIM.api("POST", "/projects/1/merge_requests/1/notes",
                    body={"body": "n%d" % i})
        reply = SIM.api("GET", "/projects/1/merge_requests/1/notes",
                        query={"sort": "asc", "per_page": 2})
        links = dict((rel, url) for url, rel in re.findall(
            r'<([^>]+)>; rel="(\w+)"', reply.header("link")))
        self.assertEqual(
            links["next"], "http://gitlab.example.org:8443/api/v4/projects/"
            "1/merge_requests/1/notes?id=1&noteable_id=1&page=2&per_page=2"
            "&sort=asc")
        self.assertEqual(reply.header("x-next-page"), "2")
        mr = self.mr()
        self.assertTrue(mr["web_url"].startswith(
            "https://gitlab.example.org:8443/group/project/"))


class InternalNoteTest(SimTestCase):
    """Internal notes (GitLab 16.9+ on merge requests)."""

    def test_internal_note_and_replies_are_internal_for_reporters_only(self):
        reply = SIM.api("POST", "/projects/1/merge_requests/1/notes",
                        "bob-token", body={"body": "secret",
                                           "internal": True})
        self.assertEqual(reply.status, 201, reply.body)
        self.assertTrue(reply.json["internal"])
        self.assertTrue(reply.json["confidential"])
        disc = reply.json["noteable_iid"] and SIM.api(
            "GET", "/projects/1/merge_requests/1/discussions",
            "bob-token").json
        thread = next(d for d in disc if d["notes"][0]["body"] == "secret")
        # A reply inherits the thread's visibility, whatever it asks.
        answer = SIM.api("POST", "/projects/1/merge_requests/1/discussions/"
                         "%s/notes" % thread["id"], "user-token",
                         body={"body": "answer"})
        self.assertEqual(answer.status, 201, answer.body)
        self.assertTrue(answer.json["internal"])
        # A guest sees neither, and cannot reply.
        guest = SIM.api("GET", "/projects/1/merge_requests/1/discussions",
                        "guest-token").json
        self.assertNotIn(thread["id"], [d["id"] for d in guest])
        self.assertEqual(SIM.api(
            "POST", "/projects/1/merge_requests/1/discussions/%s/notes"
            % thread["id"], "guest-token", body={"body": "x"}).status, 404)

    def test_guest_cannot_make_a_note_internal(self):
        reply = SIM.api("POST", "/projects/1/merge_requests/1/notes",
                        "guest-token", body={"body": "hi",
                                             "internal": True})
        self.assertEqual(reply.status, 201, reply.body)
        self.assertFalse(reply.json["internal"])


class AdminModeAndScopesTest(SimTestCase):
    def test_token_self_shows_scopes(self):
        reply = SIM.api("GET", "/personal_access_tokens/self",
                        "admin-nosudo-token")
        self.assertEqual(reply.status, 200, reply.body)
        self.assertEqual(reply.json["scopes"], ["api"])
        self.assertTrue(reply.json["active"])
        me = SIM.api("GET", "/user", "admin-nosudo-token").json
        self.assertTrue(me["is_admin"])
        self.assertNotIn("is_admin",
                         SIM.api("GET", "/user", "bob-token").json)

    def test_application_settings_for_admins_only(self):
        """lib/api/settings.rb authenticated_as_admin!; the default
        commit_email_hostname is users.noreply. and the host
        (app/models/application_setting_implementation.rb)."""
        self.assertBody(SIM.api("GET", "/application/settings",
                                "bob-token"), 403,
                        {"message": "403 Forbidden"})
        reply = SIM.api("GET", "/application/settings", "admin-token")
        self.assertEqual(reply.status, 200, reply.body)
        self.assertEqual(reply.json["commit_email_hostname"],
                         "users.noreply.127.0.0.1")
        SIM.ctl("PUT", "/settings",
                {"commit_email_hostname": "noreply.example.net"})
        reply = SIM.api("GET", "/application/settings", "admin-token")
        self.assertEqual(reply.json["commit_email_hostname"],
                         "noreply.example.net")

    def test_admin_mode_needs_the_admin_mode_scope(self):
        SIM.ctl("PUT", "/settings", {"admin_mode": True})
        sudo = {"Sudo": "bob"}
        self.assertBody(SIM.api("GET", "/user", "admin-token",
                                headers=sudo), 403,
                        example("errors/403_sudo_not_admin.json"))
        self.assertNotIn("is_admin", SIM.api("GET", "/user",
                                             "admin-token").json)
        SIM.ctl("POST", "/tokens", {"user": "root", "token": "am-token",
                                    "scopes": ["api", "sudo",
                                               "admin_mode"]})
        me = SIM.api("GET", "/user", "am-token", headers=sudo)
        self.assertEqual(me.json["username"], "bob")
        self.assertTrue(SIM.api("GET", "/user", "am-token").json[
            "is_admin"])


class SecondaryEmailTest(SimTestCase):
    def setUp(self):
        super().setUp()
        SIM.ctl("POST", "/users/bob/emails",
                {"email": "bob@home.example", "confirmed": True})
        SIM.ctl("POST", "/users/bob/emails",
                {"email": "bob@old.example", "confirmed": False})

    def test_admin_search_matches_confirmed_secondary_emails(self):
        found = SIM.api("GET", "/users", "admin-token",
                        query={"search": "bob@home.example"}).json
        self.assertEqual([u["username"] for u in found], ["bob"])
        # The result shows only the primary email.
        self.assertEqual(found[0]["email"], "bob@corp.example")
        self.assertEqual(SIM.api("GET", "/users", "admin-token",
                                 query={"search": "bob@old.example"}).json,
                         [])
        self.assertEqual(SIM.api("GET", "/users", "user-token",
                                 query={"search": "bob@home.example"}).json,
                         [])

    def test_user_emails_for_admins_only(self):
        emails = SIM.api("GET", "/users/3/emails", "admin-token")
        self.assertEqual(emails.status, 200, emails.body)
        self.assertEqual([(e["email"], e["confirmed_at"] is not None)
                          for e in emails.json],
                         [("bob@home.example", True),
                          ("bob@old.example", False)])
        self.assertEqual(SIM.api("GET", "/users/3/emails",
                                 "user-token").status, 403)


# -- diff positions -----------------------------------------------------------

class DiffPositionTest(SimTestCase):
    """Diff notes are validated against the version's diff like GitLab."""

    def setUp(self):
        super().setUp()
        self.pid = self.make_mr({"f.txt": BASE_TEXT}, {"f.txt": HEAD_TEXT})
        self.invalid = example("errors/400_discussion_invalid_position.json")

    def post(self, body="comment", **lines):
        lines.setdefault("old_path", "f.txt")
        lines.setdefault("new_path", "f.txt")
        return SIM.api("POST", "/projects/%s/merge_requests/1/discussions"
                       % self.pid, body={"body": body,
                                         "position": self.position(
                                             self.pid, **lines)})

    def test_bad_position_line_not_in_diff_gives_gitlab_400(self):
        self.assertBody(self.post(new_line=99), 400, self.invalid)

    def test_bad_position_unknown_shas_gives_gitlab_400(self):
        pos = self.position(self.pid, old_path="f.txt", new_path="f.txt",
                            new_line=3)
        pos["head_sha"] = "0" * 40
        reply = SIM.api("POST", "/projects/%s/merge_requests/1/discussions"
                        % self.pid, body={"body": "x", "position": pos})
        self.assertBody(reply, 400, self.invalid)

    def test_bad_position_unknown_path_gives_gitlab_400(self):
        self.assertBody(self.post(old_path="nope.txt", new_path="nope.txt",
                                  new_line=3), 400, self.invalid)

    def test_bad_position_type_gives_grape_400(self):
        pos = self.position(self.pid, new_path="f.txt", new_line=3)
        pos["position_type"] = "line"
        reply = SIM.api("POST", "/projects/%s/merge_requests/1/discussions"
                        % self.pid, body={"body": "x", "position": pos},
                        on_purpose="an unknown position_type")
        self.assertBody(reply, 400,
                        example("errors/400_position_type_invalid.json"))

    def test_missing_position_shas_gives_grape_400(self):
        reply = SIM.api("POST", "/projects/%s/merge_requests/1/discussions"
                        % self.pid, body={"body": "x", "position": {
                            "position_type": "text", "new_line": 3}},
                        on_purpose="a position without its SHAs")
        self.assertBody(reply, 400, {"error": (
            "position[base_sha] is missing, position[start_sha] is missing,"
            " position[head_sha] is missing")})

    def test_wrong_old_new_line_combination_gives_400(self):
        # Line 3 was replaced: "-line 3" is old 3, "+line three" new 3.
        # Added line with both numbers, removed line with new_line,
        # context line with one number, context with mismatched numbers.
        for lines in ({"old_line": 3, "new_line": 3},
                      {"new_line": 5, "old_line": None},
                      {"old_line": 6, "new_line": 6},
                      {"old_line": 4},
                      {"new_line": 4},
                      {"old_line": 4, "new_line": 5}):
            with self.subTest(lines=lines):
                self.assertBody(self.post(**lines), 400, self.invalid)

    def _diff_note(self, expected_code, **lines):
        reply = self.post(**lines)
        self.assertEqual(reply.status, 201, reply.body)
        discussion = reply.json
        self.assertRegex(discussion["id"], r"^[0-9a-f]{40}$")
        self.assertFalse(discussion["individual_note"])
        note = discussion["notes"][0]
        self.assertEqual(note["type"], "DiffNote")
        for key, value in lines.items():
            self.assertEqual(note["position"][key], value)
        self.assertEqual(note["position"]["position_type"], "text")
        self.assertEqual(note["commit_id"], note["position"]["head_sha"])
        stored = self.state_mr(project="grp/diffs")["discussions"][-1]
        self.assertEqual(stored["notes"][0]["line_code"], expected_code)

    def test_valid_diff_note_on_added_line(self):
        # "+line three" follows "-line 3": the old counter is already 4.
        self._diff_note("%s_4_3" % sha1("f.txt"), new_line=3)

    def test_valid_diff_note_on_removed_line(self):
        # "-line 6" follows two context lines: both counters are at 6.
        self._diff_note("%s_6_6" % sha1("f.txt"), old_line=6)

    def test_valid_diff_note_on_context_line(self):
        self._diff_note("%s_4_4" % sha1("f.txt"), old_line=4, new_line=4)

    def test_suggestions_are_stored_as_gitlab_parses_them(self):
        # lib/gitlab/diff/suggestions_parser.rb and suggestion.rb,
        # app/models/concerns/suggestible.rb: the fenced block's text is
        # to_content (with the line break of the last replaced line);
        # from_content the new file's lines new_line-X .. new_line+Y.
        body = ("Two of them:\n\n```suggestion:-1+1\nline two\n"
                "line 3\nline four\n```\n\n```python\nnot one\n```\n"
                "\n```suggestion\n```\n")
        reply = self.post(body, new_line=3)
        self.assertEqual(reply.status, 201, reply.body)
        note = reply.json["notes"][0]
        self.assertEqual(note["suggestions"], [
            {"id": note["suggestions"][0]["id"], "from_line": 2,
             "to_line": 4, "appliable": True, "applied": False,
             "from_content": "line 2\nline three\nline 4\n",
             "to_content": "line two\nline 3\nline four\n"},
            {"id": note["suggestions"][1]["id"], "from_line": 3,
             "to_line": 3, "appliable": True, "applied": False,
             "from_content": "line three\n", "to_content": ""}])
        listed = SIM.api("GET", "/projects/%s/merge_requests/1/discussions"
                         % self.pid).json[-1]["notes"][0]
        self.assertEqual(listed["suggestions"], note["suggestions"])

    def test_no_suggestion_on_a_removed_line(self):
        # DiffNote#supports_suggestion?: the line must be suggestible
        # (not a removed one); the block stays in the body as it is.
        reply = self.post("```suggestion\nline 6\n```\n", old_line=6)
        self.assertEqual(reply.status, 201, reply.body)
        self.assertEqual(reply.json["notes"][0]["suggestions"], [])

    def test_reply_in_a_diff_thread_is_a_diff_note_there(self):
        # Discussion#reply_attributes: type and position of the first note.
        thread = self.post(new_line=3).json
        reply = SIM.api("POST", "/projects/%s/merge_requests/1/discussions/"
                        "%s/notes" % (self.pid, thread["id"]),
                        body={"body": "answer"})
        self.assertEqual(reply.status, 201, reply.body)
        self.assertEqual(reply.json["type"], "DiffNote")
        self.assertEqual(reply.json["position"],
                         thread["notes"][0]["position"])
        stored = self.state_mr(project="grp/diffs")["discussions"][-1]
        self.assertEqual([n["type"] for n in stored["notes"]],
                         ["DiffNote", "DiffNote"])
        self.assertEqual(stored["notes"][1]["line_code"],
                         stored["notes"][0]["line_code"])
        # Below the removal and the replacement the numbers differ.
        self._diff_note("%s_9_8" % sha1("f.txt"), old_line=9, new_line=8)

    def test_added_line_in_new_file_carries_old_zero(self):
        pid = self.make_mr({"a.txt": "a\n"}, {"new.c": "x\ny\n"},
                           path="grp/newfile")
        reply = SIM.api("POST", "/projects/%s/merge_requests/1/discussions"
                        % pid, body={"body": "x", "position": self.position(
                            pid, old_path="new.c", new_path="new.c",
                            new_line=2)})
        self.assertEqual(reply.status, 201, reply.body)
        note = self.state_mr(project="grp/newfile")["discussions"][-1][
            "notes"][0]
        self.assertEqual(note["line_code"], "%s_0_2" % sha1("new.c"))

    def test_unchanged_line_outside_hunks_is_unfolded_like_gitlab(self):
        pid = self.make_mr({"long.txt": LONG_BASE}, {"long.txt": LONG_HEAD},
                           path="grp/long")

        def post(**lines):
            return SIM.api(
                "POST", "/projects/%s/merge_requests/1/discussions" % pid,
                body={"body": "x", "position": self.position(
                    pid, old_path="long.txt", new_path="long.txt", **lines)})
        # Old line 20 is new line 21 (one line was added above it).
        reply = post(old_line=20, new_line=21)
        self.assertEqual(reply.status, 201, reply.body)
        self.assertEqual(reply.json["notes"][0]["type"], "DiffNote")
        for lines in ({"old_line": 20, "new_line": 20},
                      {"old_line": 41, "new_line": 42}):
            with self.subTest(lines=lines):
                self.assertBody(post(**lines), 400, self.invalid)

    def test_shas_of_no_version_are_accepted_like_gitlab(self):
        # GitLab compares the three SHAs itself when they name no version
        # (gitlab-org/gitlab#296829); the note then belongs to no version.
        # A client that takes start_sha from the target tip instead of
        # the version: main moved on after the version was made.
        tip = SIM.ctl("POST", "/projects/%s/commits" % self.pid, {
            "branch": "main", "message": "later\n",
            "files": {"later.txt": "l\n"}})["head"]
        pos = self.position(self.pid, start_sha=tip, old_path="f.txt",
                            new_path="f.txt", new_line=3)
        reply = SIM.api("POST", "/projects/%s/merge_requests/1/discussions"
                        % self.pid, body={"body": "x", "position": pos})
        self.assertEqual(reply.status, 201, reply.body)
        note = self.state_mr(project="grp/diffs")["discussions"][-1][
            "notes"][0]
        self.assertIsNone(note["version_id"])
        version = SIM.api("GET", "/projects/%s/merge_requests/1/versions"
                          % self.pid).json[0]
        ok = self.post(new_line=3)
        self.assertEqual(ok.status, 201)
        note = self.state_mr(project="grp/diffs")["discussions"][-1][
            "notes"][0]
        self.assertEqual(note["version_id"], version["id"])

    def test_diff_note_on_an_older_version_stays_valid(self):
        old_pos = self.position(self.pid, old_path="f.txt",
                                new_path="f.txt", new_line=3)
        SIM.ctl("POST", "/projects/%s/merge_requests/1/push" % self.pid, {
            "commits": [{"message": "more\n", "files": {"g.txt": "g\n"}}]})
        reply = SIM.api("POST", "/projects/%s/merge_requests/1/discussions"
                        % self.pid, body={"body": "x", "position": old_pos})
        self.assertEqual(reply.status, 201, reply.body)

    def push(self, files):
        SIM.ctl("POST", "/projects/%s/merge_requests/1/push" % self.pid, {
            "commits": [{"message": "more\n", "files": files}]})
        return SIM.api("GET", "/projects/%s/merge_requests/1/versions"
                       % self.pid).json[0]

    def threads(self):
        return [d for d in SIM.api(
            "GET", "/projects/%s/merge_requests/1/discussions"
            % self.pid).json if d["notes"][0]["type"] == "DiffNote"]

    def test_push_moves_the_thread_of_an_unchanged_file(self):
        # Discussions::UpdateDiffPositionService: the file's diff is the
        # same in the new version, so the thread takes its SHAs, keeps its
        # lines, and the notes keep their updated_at (save(touch: false)).
        thread = self.post(new_line=3).json
        SIM.api("POST", "/projects/%s/merge_requests/1/discussions/%s/notes"
                % (self.pid, thread["id"]), body={"body": "answer"})
        before = self.threads()[0]["notes"]
        v2 = self.push({"g.txt": "g\n"})
        notes = self.threads()[0]["notes"]
        self.assertEqual(len(notes), 2)
        for n, b in zip(notes, before):
            self.assertEqual(n["position"]["head_sha"], v2["head_commit_sha"])
            self.assertEqual(n["position"]["base_sha"], v2["base_commit_sha"])
            self.assertEqual(n["position"]["start_sha"],
                             v2["start_commit_sha"])
            self.assertEqual((n["position"]["old_line"],
                              n["position"]["new_line"]), (None, 3))
            self.assertEqual(n["updated_at"], b["updated_at"])
        stored = next(d for d in self.state_mr(project="grp/diffs")[
            "discussions"] if d["id"] == thread["id"])
        self.assertEqual(stored["notes"][0]["version_id"], v2["id"])
        self.assertEqual(stored["notes"][0]["line_code"],
                         "%s_4_3" % sha1("f.txt"))
        # a reply now is at the moved position too
        reply = SIM.api("POST", "/projects/%s/merge_requests/1/discussions/"
                        "%s/notes" % (self.pid, thread["id"]),
                        body={"body": "fixed in v2"})
        self.assertEqual(reply.json["position"], notes[0]["position"])

    def test_push_leaves_the_thread_of_a_changed_file(self):
        thread = self.post(new_line=3).json
        v1 = thread["notes"][0]["position"]
        self.push({"f.txt": HEAD_TEXT + "line 13\n"})
        self.assertEqual(self.threads()[0]["notes"][0]["position"], v1)

    def test_note_on_an_older_version_takes_the_newest_position(self):
        # DiffPositionableNote#update_position, before the note is saved.
        old_pos = self.position(self.pid, old_path="f.txt",
                                new_path="f.txt", new_line=3)
        v2 = self.push({"g.txt": "g\n"})
        reply = SIM.api("POST", "/projects/%s/merge_requests/1/discussions"
                        % self.pid, body={"body": "x", "position": old_pos})
        self.assertEqual(reply.status, 201, reply.body)
        pos = reply.json["notes"][0]["position"]
        self.assertEqual((pos["base_sha"], pos["start_sha"],
                          pos["head_sha"], pos["new_line"]),
                         (v2["base_commit_sha"], v2["start_commit_sha"],
                          v2["head_commit_sha"], 3))

    def test_plain_discussion_and_individual_note_types(self):
        reply = SIM.api("POST", "/projects/1/merge_requests/1/discussions",
                        body={"body": "thread"})
        self.assertEqual(reply.status, 201)
        self.assertEqual(reply.json["notes"][0]["type"], "DiscussionNote")
        self.assertNotIn("position", reply.json["notes"][0])
        reply = SIM.api("POST", "/projects/1/merge_requests/1/notes",
                        body={"body": "plain"})
        self.assertEqual(reply.status, 201)
        self.assertIsNone(reply.json["type"])
        discussions = SIM.api("GET",
                              "/projects/1/merge_requests/1/discussions").json
        individual = [d for d in discussions if d["individual_note"]]
        self.assertEqual(individual[-1]["notes"][0]["body"], "plain")


# -- authentication and sudo --------------------------------------------------

class AuthTest(SimTestCase):
    def note(self, token, sudo=None, via="header"):
        headers, query = {}, None
        if sudo is not None and via == "header":
            headers["Sudo"] = sudo
        elif sudo is not None:
            query = {"sudo": sudo}
        return SIM.api("POST", "/projects/1/merge_requests/1/notes", token,
                       body={"body": "hi"}, headers=headers, query=query)

    def test_sudo_with_regular_token_is_403_must_be_admin(self):
        self.assertBody(self.note("user-token", sudo="bob"), 403,
                        example("errors/403_sudo_not_admin.json"))

    def test_sudo_with_admin_token_without_sudo_scope_is_403(self):
        self.assertBody(self.note("admin-nosudo-token", sudo="alice"), 403,
                        example("errors/403_sudo_insufficient_scope.json"))

    def test_sudo_unknown_user_is_404(self):
        self.assertBody(self.note("admin-token", sudo="123", via="query"),
                        404, example("errors/404_sudo_user_not_found.json"))

    def test_sudo_acts_as_the_user_for_every_check(self):
        reply = self.note("admin-token", sudo="alice")
        self.assertEqual(reply.status, 201)
        self.assertEqual(reply.json["author"]["username"], "alice")
        me = SIM.api("GET", "/user", "admin-token", headers={"Sudo": "3"})
        self.assertEqual(me.json["username"], "bob")
        # Alice authored MR !1 and may not approve it, even through sudo.
        sha = self.mr()["sha"]
        reply = SIM.api("POST", "/projects/1/merge_requests/1/approve",
                        "admin-token", body={"sha": sha},
                        headers={"Sudo": "alice"})
        self.assertBody(reply, 401, {"message": "401 Unauthorized"})
        # The guest cannot resolve threads.
        thread = SIM.api("POST", "/projects/1/merge_requests/1/discussions",
                         body={"body": "t"}).json
        reply = SIM.api("PUT", "/projects/1/merge_requests/1/discussions/"
                        + thread["id"], "admin-token",
                        query={"resolved": "true", "sudo": "gus"})
        self.assertBody(reply, 403, {"message": "403 Forbidden"})

    def test_token_forms_and_401(self):
        ok = SIM.raw("GET", "/api/v4/user",
                     headers={"Authorization": "Bearer bob-token"})
        self.assertEqual(ok.json["username"], "bob")
        ok = SIM.raw("GET", "/api/v4/user?private_token=bob-token")
        self.assertEqual(ok.json["username"], "bob")
        self.assertBody(SIM.api("GET", "/user", "wrong"), 401,
                        {"message": "401 Unauthorized"})
        self.assertBody(SIM.api("GET", "/projects/1/merge_requests/1/notes",
                                None), 401, {"message": "401 Unauthorized"})

    def test_expired_and_revoked_tokens_answer_like_api_guard(self):
        # lib/api/api_guard.rb: Bearer::Unauthorized(:invalid_token, ...)
        SIM.ctl("POST", "/tokens", {"user": "bob", "token": "year-token",
                                    "expires_at": "2999-01-01"})
        me = SIM.api("GET", "/personal_access_tokens/self", "year-token")
        self.assertEqual(me.json["expires_at"], "2999-01-01")
        self.assertTrue(me.json["active"])
        today = SIM.ctl("GET", "/time")["now"][:10]
        state = SIM.ctl("PUT", "/tokens/year-token", {"expires_at": today})
        self.assertTrue(state["expired"])
        expired = {"error": "invalid_token",
                   "error_description": "Token is expired. You can either "
                   "do re-authorization or token refresh."}
        for reply in (SIM.api("GET", "/user", "year-token"),
                      SIM.api("GET", "/personal_access_tokens/self",
                              "year-token"),
                      self.note("year-token")):
            self.assertBody(reply, 401, expired)
            self.assertIn('error="invalid_token"',
                          reply.header("WWW-Authenticate"))
        # Expired wins over revoked (access_token_validation_service.rb).
        SIM.ctl("PUT", "/tokens/year-token", {"revoked": True})
        self.assertBody(SIM.api("GET", "/user", "year-token"), 401, expired)
        SIM.ctl("PUT", "/tokens/year-token", {"expires_at": None})
        self.assertBody(SIM.api("GET", "/user", "year-token"), 401, {
            "error": "invalid_token", "error_description":
            "Token was revoked. You have to re-authorize from the user."})
        SIM.ctl("PUT", "/tokens/year-token", {"revoked": False})
        self.assertEqual(SIM.api("GET", "/user", "year-token").status, 200)

    def test_token_expires_when_the_clock_reaches_its_date(self):
        SIM.ctl("POST", "/tokens", {"user": "bob", "token": "soon-token",
                                    "expires_at": "2999-01-01"})
        self.assertEqual(SIM.api("GET", "/user", "soon-token").status, 200)
        SIM.ctl("POST", "/time", {"set": "2999-01-01T00:00:01Z"})
        reply = SIM.api("GET", "/user", "soon-token")
        self.assertEqual(reply.status, 401)
        self.assertEqual(reply.json["error"], "invalid_token")

    def test_read_api_token_cannot_write(self):
        reply = self.note("readonly-token")
        self.assertEqual(reply.status, 403)
        self.assertEqual(reply.json["error"], "insufficient_scope")
        self.assertEqual(SIM.api("GET", "/projects/1",
                                 "readonly-token").status, 200)

    def test_project_lookup_by_path_and_404(self):
        self.assertEqual(SIM.api("GET", "/projects/group%2Fproject").json[
            "id"], 1)
        self.assertBody(SIM.api("GET", "/projects/group%2Fnope"), 404,
                        {"message": "404 Project Not Found"})
        SIM.ctl("POST", "/projects", {"path": "secret/repo"})
        self.assertBody(SIM.api("GET", "/projects/secret%2Frepo"), 404,
                        {"message": "404 Project Not Found"})
        self.assertEqual(SIM.api("GET", "/projects/secret%2Frepo",
                                 "admin-token").status, 200)

    def test_unknown_route_404_and_wrong_method_405(self):
        self.assertBody(SIM.api("GET", "/nope", on_purpose="no such route"),
                        404,
                        {"error": "404 Not Found"})
        reply = SIM.api("DELETE", "/projects/1/merge_requests/1")
        self.assertBody(reply, 405, {"error": "405 Not Allowed"})
        self.assertEqual(reply.header("allow"), "GET, PUT")
        self.assertBody(SIM.api("GET", "/projects/1/merge_requests/99"),
                        404, {"message": "404 Not found"})


# -- approvals ----------------------------------------------------------------

class ApprovalTest(SimTestCase):
    def approve(self, token="bob-token", sha=None):
        body = {"sha": sha} if sha else {}
        return SIM.api("POST", "/projects/1/merge_requests/1/approve",
                       token, body=body)

    def test_stale_sha_approve_is_409(self):
        reply = self.approve(sha="1" * 40)
        self.assertEqual(reply.status, 409)
        # GitLab appends the current head to the documented message.
        expected = example("errors/409_sha_mismatch.json")["message"]
        self.assertEqual(reply.json["message"],
                         "%s: %s" % (expected, self.mr()["sha"]))
        self.assertEqual(self.state_mr()["approvals"], [])

    def test_repeated_approve_is_401_and_the_approval_stands(self):
        sha = self.mr()["sha"]
        first = self.approve(sha=sha)
        self.assertEqual(first.status, 201, first.body)
        self.assertEqual([a["user"]["username"]
                          for a in first.json["approved_by"]], ["bob"])
        # ApprovalService refuses a second approval: unauthorized!, no 304.
        self.assertBody(self.approve(sha=sha), 401,
                        {"message": "401 Unauthorized"})
        state = SIM.api("GET", "/projects/1/merge_requests/1/approvals",
                        "bob-token").json
        self.assertTrue(state["user_has_approved"])
        self.assertEqual([a["user"]["username"]
                          for a in state["approved_by"]], ["bob"])

    def test_unapprove_when_not_approved_is_404(self):
        reply = SIM.api("POST", "/projects/1/merge_requests/1/unapprove",
                        "bob-token")
        self.assertBody(reply, 404, {"message": "404 Not Found"})
        # Not the same body as Sudo's unknown user or a missing MR.
        self.assertBody(SIM.api("POST", "/projects/1/merge_requests/1/"
                                "unapprove", "admin-token",
                                headers={"Sudo": "nobody"}), 404,
                        {"message": "404 User with ID or username 'nobody' "
                                    "Not Found"})
        self.assertEqual(self.approve().status, 201)
        reply = SIM.api("POST", "/projects/1/merge_requests/1/unapprove",
                        "bob-token")
        self.assertEqual(reply.status, 201)
        self.assertEqual(reply.json["approved_by"], [])

    def test_author_self_approval_is_401_unless_allowed(self):
        self.assertBody(self.approve("user-token"), 401,
                        {"message": "401 Unauthorized"})
        SIM.ctl("PUT", "/projects/1/settings",
                {"merge_requests_author_approval": True})
        self.assertEqual(self.approve("user-token").status, 201)

    def test_guest_may_not_approve(self):
        self.assertBody(self.approve("guest-token"), 403,
                        {"message": "403 Forbidden"})

    def test_approvals_shapes_and_state(self):
        SIM.ctl("PUT", "/projects/1/settings", {"approvals_required": 2})
        self.assertEqual(self.mr()["detailed_merge_status"], "not_approved")
        reply = self.approve()
        self.assertEqual(reply.json["approvals_left"], 1)
        self.assertFalse(reply.json["approved"])
        state = SIM.api("GET", "/projects/1/merge_requests/1/approval_state")
        self.assertEqual(state.json["rules"][0]["approved_by"][0][
            "username"], "bob")
        SIM.ctl("PUT", "/settings", {"edition": "ce"})
        ce = SIM.api("GET", "/projects/1/merge_requests/1/approvals").json
        self.assertEqual(set(ce), {"user_has_approved", "user_can_approve",
                                   "approved", "approved_by"})
        self.assertEqual(SIM.api("GET", "/projects/1/merge_requests/1/"
                                 "approval_state").status, 404)

    def test_merged_mr_approve_401_unapprove_404(self):
        """ApprovalService and RemoveApprovalService both `return if
        merge_request.merged?`: 401 and 404, and the approval stays."""
        self.assertEqual(self.approve().status, 201)
        reply = SIM.api("PUT", "/projects/1/merge_requests/1/merge",
                        "bob-token", body={})
        self.assertEqual(reply.status, 200, reply.body)
        # root: an owner who has not approved and did not write the MR
        self.assertBody(self.approve("admin-token"), 401,
                        {"message": "401 Unauthorized"})
        self.assertBody(SIM.api("POST", "/projects/1/merge_requests/1/"
                                "unapprove", "bob-token"), 404,
                        {"message": "404 Not Found"})
        self.assertEqual([a["user"] for a in self.state_mr()["approvals"]],
                         ["bob"])

    def test_password_to_approve_is_401(self):
        SIM.ctl("PUT", "/projects/1/settings",
                {"require_password_to_approve": True})
        state = SIM.api("GET", "/projects/1/merge_requests/1/approvals",
                        "bob-token").json
        self.assertTrue(state["require_password_to_approve"])
        self.assertBody(self.approve(), 401, {"message": "401 Unauthorized"})
        reply = SIM.api("POST", "/projects/1/merge_requests/1/approve",
                        "bob-token", body={"approval_password": "guess"})
        self.assertEqual(reply.status, 401)
        self.assertEqual(self.state_mr()["approvals"], [])
        SIM.ctl("PUT", "/projects/1/settings",
                {"require_password_to_approve": False})
        self.assertEqual(self.approve().status, 201)

    def test_reset_approvals_on_push(self):
        self.assertEqual(self.approve().status, 201)
        SIM.ctl("POST", "/projects/1/merge_requests/1/push", {
            "commits": [{"message": "x\n", "files": {"x": "x\n"}}]})
        self.assertEqual(len(self.state_mr()["approvals"]), 1)
        SIM.ctl("PUT", "/projects/1/settings",
                {"reset_approvals_on_push": True})
        SIM.ctl("POST", "/projects/1/merge_requests/1/push", {
            "commits": [{"message": "y\n", "files": {"y": "y\n"}}]})
        self.assertEqual(self.state_mr()["approvals"], [])


# -- notes and quick actions --------------------------------------------------

class NotesTest(SimTestCase):
    def post(self, body, token="bob-token", **extra):
        payload = {"body": body}
        payload.update(extra)
        return SIM.api("POST", "/projects/1/merge_requests/1/notes", token,
                       body=payload)

    def user_notes(self):
        return [n for d in self.state_mr()["discussions"]
                for n in d["notes"] if not n["system"]]

    def test_held_note_appears_after_a_higher_id(self):
        # A note's id comes from the sequence at INSERT and the row is
        # seen at COMMIT: a slow note shows up after a later, higher one.
        SIM.ctl("PUT", "/settings", {"hold_notes": True})
        slow = self.post("slow").json
        SIM.ctl("PUT", "/settings", {"hold_notes": False})
        fast = self.post("fast").json
        self.assertLess(slow["id"], fast["id"])
        listed = SIM.api("GET", "/projects/1/merge_requests/1/notes").json
        self.assertEqual([n["id"] for n in listed if not n["system"]],
                         [fast["id"]])
        self.assertEqual(SIM.api("GET", "/projects/1/merge_requests/1/notes"
                                 "/%d" % slow["id"]).status,
                         404)
        self.assertEqual(SIM.ctl("POST", "/notes/commit", {}),
                         {"committed": [slow["id"]]})
        listed = SIM.api("GET", "/projects/1/merge_requests/1/notes").json
        self.assertEqual(sorted(n["id"] for n in listed if not n["system"]),
                         [slow["id"], fast["id"]])

    def test_quick_action_only_note_is_202_and_label_added(self):
        SIM.api("POST", "/projects/1/labels", body={
            "name": "needs review", "color": "#ff0000"})
        reply = self.post('/label ~"needs review"')
        self.assertEqual(reply.status, 202, reply.body)
        label_id = SIM.api("GET", "/projects/1/labels").json[0]["id"]
        self.assertEqual(reply.json, {
            "commands_changes": {"add_label_ids": [label_id]},
            "summary": ['Added ~"needs review" label.']})
        self.assertEqual(self.mr()["labels"], ["needs review"])
        self.assertEqual(self.user_notes(), [])

    def test_quick_action_only_note_is_202_and_approved(self):
        reply = self.post("/approve")
        self.assertEqual(reply.status, 202, reply.body)
        self.assertEqual(reply.json["summary"],
                         ["Approved the current merge request."])
        self.assertEqual([a["user"] for a in self.state_mr()["approvals"]],
                         ["bob"])
        self.assertEqual(self.user_notes(), [])

    def test_mixed_note_runs_commands_and_saves_the_rest(self):
        SIM.api("PUT", "/projects/1/merge_requests/1",
                body={"add_labels": ["acked"], "remove_labels": ["acked"]})
        reply = self.post("Looks good to me.\n/approve\n/label ~acked\n"
                          "Thanks!")
        self.assertEqual(reply.status, 201, reply.body)
        self.assertEqual(reply.json["body"], "Looks good to me.\nThanks!")
        self.assertIn("add_label_ids", reply.json["commands_changes"])
        self.assertEqual(self.mr()["labels"], ["acked"])
        self.assertEqual(len(self.state_mr()["approvals"]), 1)

    def test_quoted_and_fenced_commands_are_plain_text(self):
        body = "> /approve\n  /approve\n```\n/approve\n```"
        reply = self.post(body)
        self.assertEqual(reply.status, 201)
        self.assertEqual(reply.json["body"], body)
        self.assertEqual(self.state_mr()["approvals"], [])

    def test_unlabel_close_reopen_unapprove_quick_actions(self):
        SIM.api("PUT", "/projects/1/merge_requests/1",
                body={"add_labels": ["a", "b", "c"]})
        reply = self.post("/unlabel ~a b")
        self.assertEqual(reply.json["summary"], ["Removed ~a ~b labels."])
        self.assertEqual(self.mr()["labels"], ["c"])
        self.assertEqual(self.post("/unlabel").json["summary"],
                         ["Removed all labels."])
        self.assertEqual(self.mr()["labels"], [])
        self.assertEqual(self.post("/close").json["commands_changes"],
                         {"state_event": "close"})
        self.assertEqual(self.mr()["state"], "closed")
        self.assertEqual(self.post("/close").status, 400)
        self.post("/reopen")
        self.assertEqual(self.mr()["state"], "opened")
        self.post("/approve")
        self.assertEqual(self.post("/unapprove").json["summary"],
                         ["Unapproved the current merge request."])
        self.assertEqual(self.state_mr()["approvals"], [])

    def test_refused_quick_action_is_400(self):
        self.assertBody(self.post("/approve", token="user-token"), 400, {
            "message": "400 Bad request - Could not apply approve command."})

    def test_merge_quick_action_needs_the_head_sha(self):
        self.assertEqual(self.post("/merge").status, 400)
        reply = self.post("/merge",
                          merge_request_diff_head_sha=self.mr()["sha"])
        self.assertEqual(reply.status, 202, reply.body)
        self.assertEqual(self.mr()["state"], "merged")

    def test_body_limits_and_missing_body(self):
        self.assertBody(
            SIM.api("POST", "/projects/1/merge_requests/1/notes",
                    body={"internal": False}, on_purpose="no body"),
            400, {"error": "body is missing"})
        self.assertBody(self.post("x" * 1_000_001), 400, {
            "message": "400 Bad request - Note {:note=>[\"is too long "
                       "(maximum is 1000000 characters)\"]}"})
        self.assertBody(self.post("   "), 400, {
            "message": "400 Bad request - Note {:note=>[\"can't be blank\"]}"
        })

    def test_note_get_update_delete_and_permissions(self):
        note = self.post("first").json
        path = "/projects/1/merge_requests/1/notes/%d" % note["id"]
        self.assertEqual(SIM.api("GET", path).json["body"], "first")
        self.assertBody(SIM.api("PUT", path, "user-token",
                                body={"body": "hijack"}), 403,
                        {"message": "403 Forbidden"})
        reply = SIM.api("PUT", path, "bob-token", body={"body": "second"})
        self.assertEqual(reply.json["body"], "second")
        self.assertEqual(SIM.api("DELETE", path, "bob-token").status, 204)
        self.assertBody(SIM.api("GET", path), 404,
                        {"message": "404 Not found"})

    def test_form_encoded_bodies_are_accepted(self):
        reply = SIM.api("POST", "/projects/1/merge_requests/1/notes",
                        form={"body": "via form"})
        self.assertEqual(reply.status, 201)
        self.assertEqual(reply.json["body"], "via form")

    def test_discussion_reply_and_resolve(self):
        thread = SIM.api("POST", "/projects/1/merge_requests/1/discussions",
                         "bob-token", body={"body": "question"}).json
        base = "/projects/1/merge_requests/1/discussions/" + thread["id"]
        reply = SIM.api("POST", base + "/notes", body={"body": "answer"})
        self.assertEqual(reply.status, 201)
        self.assertEqual(reply.json["type"], "DiscussionNote")
        self.assertBody(SIM.api("PUT", base, "guest-token",
                                query={"resolved": "true"}),
                        403, {"message": "403 Forbidden"})
        mr = "/projects/1/merge_requests/1"
        SIM.ctl("POST", "/time", {"advance_s": 120})
        before = SIM.api("GET", mr).json["updated_at"]
        resolved = SIM.api("PUT", base, query={"resolved": "true"})
        self.assertEqual(resolved.status, 200)
        self.assertTrue(all(n["resolved"] for n in resolved.json["notes"]))
        self.assertEqual(resolved.json["notes"][0]["resolved_by"][
            "username"], "alice")
        self.assertIsNotNone(resolved.json["notes"][0]["resolved_at"])
        # A whole thread: an update_all, no touch (resolvable_note.rb).
        self.assertEqual(SIM.api("GET", mr).json["updated_at"], before)
        self.assertEqual(resolved.json["notes"][1]["updated_at"],
                         reply.json["updated_at"])
        SIM.api("PUT", base, query={"resolved": "false"})
        # One note: a save!, which touches the MR.
        one = SIM.api("PUT", base + "/notes/%d" % reply.json["id"],
                      query={"resolved": "true"})
        self.assertEqual(one.status, 200)
        self.assertTrue(one.json["resolved"])
        self.assertNotEqual(SIM.api("GET", mr).json["updated_at"], before)
        self.assertEqual(len(SIM.api("GET", base + "/notes").json), 2)
        self.assertBody(SIM.api("GET", "/projects/1/merge_requests/1/"
                                "discussions/" + "f" * 40), 404,
                        {"message": "404 Discussion Not Found"})

    def test_reply_turns_an_individual_note_into_a_thread(self):
        note = self.post("plain").json
        discussions = SIM.api("GET",
                              "/projects/1/merge_requests/1/discussions").json
        did = next(d["id"] for d in discussions
                   if d["notes"][0]["id"] == note["id"])
        SIM.api("POST", "/projects/1/merge_requests/1/discussions/%s/notes"
                % did, body={"body": "reply"})
        thread = SIM.api("GET", "/projects/1/merge_requests/1/discussions/"
                         + did).json
        self.assertFalse(thread["individual_note"])
        self.assertEqual([n["type"] for n in thread["notes"]],
                         ["DiscussionNote", "DiscussionNote"])

    def test_notes_sort_and_system_notes(self):
        for text in ("one", "two"):
            self.post(text)
        self.approve_as_bob()
        notes = SIM.api("GET", "/projects/1/merge_requests/1/notes").json
        self.assertEqual(notes[0]["body"], "approved this merge request")
        self.assertTrue(notes[0]["system"])
        asc = SIM.api("GET", "/projects/1/merge_requests/1/notes",
                      query={"sort": "asc",
                             "activity_filter": "only_comments"}).json
        self.assertEqual([n["body"] for n in asc], ["one", "two"])

    def approve_as_bob(self):
        SIM.api("POST", "/projects/1/merge_requests/1/approve", "bob-token")

    def test_locked_discussion_only_members_comment(self):
        """IssuablePolicy: locked & ~is_project_member prevents
        create_note; root is an administrator but no member."""
        mr = "/projects/1/merge_requests/1"
        self.assertIsNone(self.mr()["discussion_locked"])
        reply = SIM.api("PUT", mr, "bob-token",
                        body={"discussion_locked": True})
        self.assertEqual(reply.status, 200, reply.body)
        self.assertTrue(reply.json["discussion_locked"])
        for path, body in ((mr + "/notes", {"body": "n"}),
                           (mr + "/discussions", {"body": "d"})):
            self.assertBody(SIM.api("POST", path, "admin-token", body=body),
                            403, {"message": "403 Forbidden"})
            self.assertEqual(SIM.api("POST", path, "bot-token",
                                     body=body).status, 201)
        SIM.api("PUT", mr, "bob-token", body={"discussion_locked": False})
        self.assertFalse(self.mr()["discussion_locked"])
        self.assertEqual(SIM.api("POST", mr + "/notes", "admin-token",
                                 body={"body": "open"}).status, 201)


# -- pagination ---------------------------------------------------------------

class PaginationTest(SimTestCase):
    def setUp(self):
        super().setUp()
        SIM.ctl("PUT", "/settings", {"system_notes": False})
        for i in range(45):
            SIM.api("POST", "/projects/1/merge_requests/1/notes",
                    body={"body": "note %d" % i})

    def links(self, reply):
        out = {}
        for part in reply.header("link").split(", "):
            url, rel = re.match(r'<([^>]+)>; rel="(\w+)"', part).groups()
            out[rel] = url
        return out

    def test_list_spanning_three_pages(self):
        path = "/api/v4/projects/1/merge_requests/1/notes?sort=asc"
        seen, pages, url = [], 0, SIM.url + path
        while url:
            pages += 1
            reply = SIM.raw("GET", url[len(SIM.url):],
                            headers={"PRIVATE-TOKEN": "user-token"})
            self.assertEqual(reply.header("x-total"), "45")
            self.assertEqual(reply.header("x-total-pages"), "3")
            self.assertEqual(reply.header("x-per-page"), "20")
            self.assertEqual(reply.header("x-page"), str(pages))
            links = self.links(reply)
            self.assertIn("first", links)
            self.assertIn("last", links)
            self.assertIn("sort=asc", links["first"])
            seen += [n["body"] for n in reply.json]
            if pages == 3:
                self.assertEqual(reply.header("x-next-page"), "")
                self.assertNotIn("next", links)
                self.assertEqual(reply.header("x-prev-page"), "2")
            else:
                self.assertEqual(reply.header("x-next-page"), str(pages + 1))
            url = links.get("next")
        self.assertEqual(pages, 3)
        self.assertEqual(seen, ["note %d" % i for i in range(45)])

    def test_per_page_is_clamped_to_100(self):
        for i in range(60):
            SIM.api("POST", "/projects/1/merge_requests/1/notes",
                    body={"body": "more %d" % i})
        reply = SIM.api("GET", "/projects/1/merge_requests/1/notes",
                        query={"per_page": 500})
        self.assertEqual(reply.header("x-per-page"), "100")
        self.assertEqual(len(reply.json), 100)
        self.assertEqual(reply.header("x-total-pages"), "2")

    def test_totals_omitted_above_the_count_limit(self):
        SIM.ctl("PUT", "/settings", {"pagination_totals_limit": 30})
        reply = SIM.api("GET", "/projects/1/merge_requests/1/notes",
                        query={"per_page": 20})
        self.assertIsNone(reply.header("x-total"))
        self.assertIsNone(reply.header("x-total-pages"))
        self.assertNotIn("last", self.links(reply))
        self.assertEqual(reply.header("x-next-page"), "2")
        last = SIM.api("GET", "/projects/1/merge_requests/1/notes",
                       query={"per_page": 20, "page": 3})
        self.assertEqual(len(last.json), 5)
        self.assertEqual(last.header("x-next-page"), "")


# -- merge methods and squash ---------------------------------------------------

class MergeMethodTest(SimTestCase):
    """PUT .../merge by the project's merge method, with squash."""

    PATH = "/projects/1/merge_requests/1/merge"

    def git(self, *args):
        repo = SIM.ctl("GET", "/state")["projects"][0]["repo_path"]
        return subprocess.run(["git", "--git-dir", repo] + list(args),
                              capture_output=True, text=True,
                              check=True).stdout.strip()

    def settings(self, **values):
        reply = SIM.ctl("PUT", "/projects/1/settings", values)
        self.assertEqual(reply["merge_method"],
                         values.get("merge_method", reply["merge_method"]))

    def move_main(self):
        SIM.ctl("POST", "/projects/1/commits", {
            "branch": "main", "commits": [{"message": "elsewhere\n",
                                           "files": {"other.txt": "x\n"}}]})

    def merge(self, **body):
        mr = self.mr()
        body.setdefault("sha", mr["sha"])
        reply = SIM.api("PUT", self.PATH, "bob-token", body=body)
        self.assertEqual(reply.status, 200, reply.body)
        return mr, reply.json

    def test_project_shows_its_merge_method(self):
        self.settings(merge_method="ff", squash_option="default_on")
        project = SIM.api("GET", "/projects/1").json
        self.assertEqual(project["merge_method"], "ff")
        self.assertEqual(project["squash_option"], "default_on")
        bad = SIM.ctl("PUT", "/projects/1/settings",
                      {"merge_method": "octopus"}, expect=(400,))
        self.assertIn("merge_method must be one of", bad["error"])

    def test_merge_commit_keeps_the_commits(self):
        before, mr = self.merge()
        self.assertEqual(mr["sha"], before["sha"])
        self.assertIsNone(mr["squash_commit_sha"])
        self.assertFalse(mr["squash"])
        parents = self.git("rev-parse", mr["merge_commit_sha"] + "^@")
        self.assertEqual(parents.split()[1], before["sha"])

    def test_squash_with_a_merge_commit(self):
        before, mr = self.merge(squash=True,
                                squash_commit_message="Greet, squashed\n")
        self.assertTrue(mr["squash"] and mr["squash_on_merge"])
        squash, merge = mr["squash_commit_sha"], mr["merge_commit_sha"]
        self.assertTrue(squash and merge and squash != merge)
        self.assertEqual(self.git("rev-parse", merge + "^2"), squash)
        self.assertEqual(self.git("rev-parse", squash + "^{tree}"),
                         self.git("rev-parse", before["sha"] + "^{tree}"))
        self.assertEqual(self.git("rev-parse", squash + "^"),
                         before["diff_refs"]["base_sha"])
        self.assertEqual(self.git("log", "-1", "--format=%s", squash),
                         "Greet, squashed")

    def test_squash_option_always_and_never(self):
        self.settings(squash_option="always")
        self.assertTrue(self.mr()["squash_on_merge"])
        _, mr = self.merge()
        self.assertTrue(mr["squash_commit_sha"])

    def test_fast_forward_needs_a_rebase_then_has_no_merge_commit(self):
        self.settings(merge_method="ff")
        self.move_main()
        mr = self.mr()
        self.assertEqual(mr["detailed_merge_status"], "need_rebase")
        reply = SIM.api("PUT", self.PATH, "bob-token",
                        body={"sha": mr["sha"]})
        self.assertEqual(reply.status, 405)
        old = [c["id"] for c in SIM.api(
            "GET", "/projects/1/merge_requests/1/commits").json]
        out = SIM.ctl("POST", "/projects/1/merge_requests/1/rebase", {})
        self.assertTrue(out["rebased"])
        rebased = self.mr()
        self.assertEqual(rebased["detailed_merge_status"], "mergeable")
        new = [c["id"] for c in SIM.api(
            "GET", "/projects/1/merge_requests/1/commits").json]
        self.assertEqual(len(new), len(old))
        self.assertFalse(set(new) & set(old))
        _, merged = self.merge()
        self.assertIsNone(merged["merge_commit_sha"])
        self.assertIsNone(merged["squash_commit_sha"])
        self.assertEqual(merged["sha"], rebased["sha"])
        branches = SIM.ctl("GET", "/state")["projects"][0]["branches"]
        self.assertEqual(branches["main"], rebased["sha"])
        again = SIM.ctl("POST", "/projects/1/merge_requests/1/rebase", {},
                        expect=(409,))
        self.assertEqual(again, {"error": "merge request !1 is merged"})

    def test_fast_forward_squash(self):
        self.settings(merge_method="ff")
        _, mr = self.merge(squash=True)
        self.assertIsNone(mr["merge_commit_sha"])
        branches = SIM.ctl("GET", "/state")["projects"][0]["branches"]
        self.assertEqual(branches["main"], mr["squash_commit_sha"])

    def test_semi_linear_merge_commit(self):
        self.settings(merge_method="rebase_merge")
        self.move_main()
        self.assertEqual(self.mr()["detailed_merge_status"], "need_rebase")
        SIM.ctl("POST", "/projects/1/merge_requests/1/rebase", {})
        before, mr = self.merge()
        self.assertEqual(self.git("rev-parse", mr["merge_commit_sha"] +
                                  "^2"), before["sha"])
        self.assertEqual(self.git("rev-parse", mr["merge_commit_sha"] +
                                  "^1"), before["diff_refs"]["base_sha"])


# -- merge request lists, labels, updates -------------------------------------

class MergeRequestTest(SimTestCase):
    def test_updated_after_is_inclusive_and_bumped_by_activity(self):
        first = self.mr()
        since = first["updated_at"]
        listed = SIM.api("GET", "/projects/1/merge_requests",
                         query={"updated_after": since, "state": "all"})
        self.assertEqual([m["iid"] for m in listed.json], [1])
        SIM.ctl("POST", "/time", {"advance_s": 60})
        SIM.api("POST", "/projects/1/merge_requests/1/notes",
                body={"body": "bump"})
        bumped = self.mr()["updated_at"]
        self.assertGreater(bumped, since)
        after = SIM.api("GET", "/projects/1/merge_requests",
                        query={"updated_after": bumped})
        self.assertEqual(len(after.json), 1)
        before = SIM.api("GET", "/projects/1/merge_requests",
                         query={"updated_before": bumped})
        self.assertEqual(len(before.json), 1)
        earlier = SIM.api("GET", "/projects/1/merge_requests",
                          query={"updated_before": since})
        self.assertEqual(earlier.json, [])
        none = SIM.api("GET", "/projects/1/merge_requests",
                       query={"updated_after": "2999-01-01T00:00:00Z"})
        self.assertEqual(none.json, [])

    def test_list_filters_order_and_grape_errors(self):
        SIM.ctl("POST", "/projects/1/commits", {
            "branch": "second", "start": "main",
            "message": "second\n", "files": {"s.txt": "s\n"}})
        SIM.ctl("POST", "/projects/1/merge_requests", {
            "source_branch": "second", "title": "Second", "author": "bob"})
        SIM.ctl("POST", "/time", {"advance_s": 5})
        SIM.api("PUT", "/projects/1/merge_requests/1", "bob-token",
                body={"state_event": "close"})
        asc = SIM.api("GET", "/projects/1/merge_requests",
                      query={"order_by": "updated_at", "sort": "asc"}).json
        self.assertEqual([m["iid"] for m in asc], [2, 1])
        opened = SIM.api("GET", "/projects/1/merge_requests",
                         query={"state": "opened"}).json
        self.assertEqual([m["iid"] for m in opened], [2])
        by_iid = SIM.api("GET", "/projects/1/merge_requests",
                         query={"iids[]": [1]}).json
        self.assertEqual([m["iid"] for m in by_iid], [1])
        self.assertNotIn("diff_refs", by_iid[0])
        self.assertBody(SIM.api("GET", "/projects/1/merge_requests",
                                query={"state": "open"},
                                on_purpose="an unknown state"), 400,
                        {"error": "state does not have a valid value"})
        self.assertBody(SIM.api("GET", "/projects/1/merge_requests",
                                query={"updated_after": "yesterday"},
                                on_purpose="not a time"), 400,
                        {"error": "updated_after is invalid"})

    def test_scoped_labels_are_not_replaced_on_free(self):
        path = "/projects/1/merge_requests/1"
        SIM.api("PUT", path, body={"add_labels": ["Acks::NACKed"]})
        reply = SIM.api("PUT", path, body={"add_labels": ["Acks::ACKed"]})
        self.assertEqual(reply.json["labels"],
                         ["Acks::ACKed", "Acks::NACKed"])

    def test_scoped_labels_exclusive_with_premium_switch(self):
        SIM.ctl("PUT", "/projects/1/settings",
                {"scoped_labels_exclusive": True})
        path = "/projects/1/merge_requests/1"
        SIM.api("PUT", path, body={"add_labels": ["Acks::NACKed", "other"]})
        reply = SIM.api("PUT", path, body={"add_labels": ["Acks::ACKed"]})
        self.assertEqual(reply.json["labels"], ["Acks::ACKed", "other"])

    def test_labels_as_comma_string_or_array_are_created(self):
        path = "/projects/1/merge_requests/1"
        reply = SIM.api("PUT", path, form={"add_labels": "a,b c"})
        self.assertEqual(reply.json["labels"], ["a", "b c"])
        reply = SIM.api("PUT", path, body={"remove_labels": ["a"],
                                           "add_labels": "d"})
        self.assertEqual(reply.json["labels"], ["b c", "d"])
        names = [lb["name"] for lb in
                 SIM.api("GET", "/projects/1/labels").json]
        self.assertEqual(names, ["a", "b c", "d"])
        reply = SIM.api("PUT", path, body={"labels": ""})
        self.assertEqual(reply.json["labels"], [])
        self.assertEqual(SIM.api("PUT", path, body={}).status, 400)
        self.assertBody(SIM.api("PUT", path, "guest-token",
                                body={"title": "x"}), 403,
                        {"message": "403 Forbidden"})

    def test_title_draft_close_and_reopen(self):
        path = "/projects/1/merge_requests/1"
        reply = SIM.api("PUT", path, body={"title": "Draft: wip"})
        self.assertTrue(reply.json["draft"])
        self.assertEqual(reply.json["detailed_merge_status"], "draft_status")
        reply = SIM.api("PUT", path, body={"state_event": "close"})
        self.assertEqual(reply.json["state"], "closed")
        self.assertEqual(reply.json["detailed_merge_status"], "not_open")
        reply = SIM.api("PUT", path, body={"state_event": "reopen"})
        self.assertEqual(reply.json["state"], "opened")

    def test_merge_with_stale_sha_then_merge(self):
        path = "/projects/1/merge_requests/1/merge"
        reply = SIM.api("PUT", path, "bob-token", body={"sha": "2" * 40})
        self.assertEqual(reply.status, 409)
        self.assertBody(SIM.api("PUT", path, "guest-token"), 401,
                        {"message": "401 Unauthorized"})
        reply = SIM.api("PUT", path, "bob-token",
                        body={"sha": self.mr()["sha"]})
        self.assertEqual(reply.status, 200, reply.body)
        self.assertEqual(reply.json["state"], "merged")
        state = SIM.ctl("GET", "/state")["projects"][0]
        self.assertEqual(state["branches"]["main"],
                         reply.json["merge_commit_sha"])
        self.assertBody(SIM.api("PUT", path, "bob-token"), 405,
                        {"message": "405 Method Not Allowed"})

    def test_commits_diffs_raw_and_changes(self):
        commits = SIM.api("GET", "/projects/1/merge_requests/1/commits").json
        self.assertEqual([c["title"] for c in commits],
                         ["Add greet.h, tidy docs",
                          "hello: greet more loudly"])
        self.assertEqual(commits[0]["trailers"], {
            "Signed-off-by": "Alice Developer <alice@example.com>"})
        diffs = SIM.api("GET", "/projects/1/merge_requests/1/diffs").json
        by_path = {d["new_path"]: d for d in diffs}
        self.assertTrue(by_path["src/greet.h"]["new_file"])
        self.assertEqual(by_path["src/greet.h"]["a_mode"], "0")
        self.assertTrue(by_path["obsolete.txt"]["deleted_file"])
        self.assertTrue(by_path["docs/new-name.txt"]["renamed_file"])
        self.assertEqual(by_path["docs/new-name.txt"]["old_path"],
                         "docs/old-name.txt")
        self.assertTrue(by_path["src/hello.c"]["diff"].startswith("@@ -3,7"))
        raw = SIM.api("GET", "/projects/1/merge_requests/1/raw_diffs")
        self.assertTrue(raw.body.startswith(b"diff --git a/"))
        changes = SIM.api("GET", "/projects/1/merge_requests/1/changes").json
        self.assertEqual(len(changes["changes"]), 4)

    def test_preparing_window_hides_diff_refs(self):
        SIM.ctl("PUT", "/settings", {"prepare_delay_ms": 60000})
        SIM.ctl("POST", "/projects/1/commits", {
            "branch": "slow", "start": "main", "message": "slow\n",
            "files": {"slow.txt": "s\n"}})
        SIM.ctl("POST", "/projects/1/merge_requests", {
            "source_branch": "slow", "author": "alice"})
        mr = self.mr(2)
        self.assertIsNone(mr["diff_refs"])
        self.assertIsNone(mr["changes_count"])
        self.assertEqual(mr["detailed_merge_status"], "preparing")
        self.assertEqual(SIM.api("GET", "/projects/1/merge_requests/2/"
                                 "versions").json, [])
        SIM.ctl("POST", "/time", {"advance_s": 61})
        mr = self.mr(2)
        self.assertIsNotNone(mr["diff_refs"])
        self.assertEqual(mr["changes_count"], "1")


# -- versions and git ---------------------------------------------------------

def git(*args, cwd=None):
    env = dict(os.environ, GIT_CONFIG_GLOBAL="/dev/null",
               GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="T",
               GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="T",
               GIT_COMMITTER_EMAIL="t@example.com",
               GIT_TERMINAL_PROMPT="0")
    for key in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        env.pop(key, None)
    return subprocess.run(["git"] + list(args), cwd=cwd, env=env,
                          check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE).stdout.decode().strip()


class VersionsAndGitTest(SimTestCase):
    def versions(self, iid=1):
        return SIM.api("GET", "/projects/1/merge_requests/%d/versions"
                       % iid).json

    def test_push_creates_version_with_base_start_head(self):
        first = self.versions()[0]
        # Move the target branch, then push a new head to the MR.
        target = SIM.ctl("POST", "/projects/1/commits", {
            "branch": "main", "message": "main moves\n",
            "files": {"MAIN.txt": "m\n"}})["head"]
        pushed = SIM.ctl("POST", "/projects/1/merge_requests/1/push", {
            "commits": [{"message": "v2\n", "files": {"v2.txt": "2\n"}}]})
        self.assertTrue(pushed["created"])
        versions = self.versions()
        self.assertEqual(len(versions), 2)
        newest = versions[0]
        self.assertGreater(newest["id"], first["id"])
        self.assertEqual(newest["start_commit_sha"], target)
        # The source branch did not merge main: the base stays put.
        self.assertEqual(newest["base_commit_sha"], first["base_commit_sha"])
        self.assertEqual(self.mr()["diff_refs"], {
            "base_sha": newest["base_commit_sha"],
            "start_sha": newest["start_commit_sha"],
            "head_sha": newest["head_commit_sha"]})
        self.assertEqual(newest["merge_request_id"], self.mr()["id"])
        detail = SIM.api("GET", "/projects/1/merge_requests/1/versions/%d"
                         % newest["id"]).json
        self.assertEqual([c["title"] for c in detail["commits"]][0], "v2")
        self.assertIn("v2.txt", [d["new_path"] for d in detail["diffs"]])
        notes = SIM.api("GET", "/projects/1/merge_requests/1/notes").json
        self.assertTrue(notes[0]["system"])
        self.assertTrue(notes[0]["body"].startswith("added 1 commit"))

    def test_retarget_makes_a_version_of_the_same_head(self):
        # app/models/merge_request.rb, reload_diff_if_branch_changed.
        first = self.versions()[0]
        commits = SIM.api("GET", "/projects/1/merge_requests/1/commits").json
        oldest = commits[-1]["id"]
        moved = SIM.ctl("PUT", "/projects/1/branches/next", {"sha": oldest})
        self.assertEqual(moved["updated"], [])
        mr = SIM.api("PUT", "/projects/1/merge_requests/1",
                     body={"target_branch": "next"}).json
        self.assertEqual(mr["target_branch"], "next")
        versions = self.versions()
        self.assertEqual(len(versions), 2)
        self.assertEqual(versions[0]["head_commit_sha"],
                         first["head_commit_sha"])
        self.assertEqual(versions[0]["base_commit_sha"], oldest)
        self.assertEqual(versions[0]["start_commit_sha"], oldest)
        notes = SIM.api("GET", "/projects/1/merge_requests/1/notes").json
        self.assertEqual(notes[0]["body"],
                         "changed target branch from `main` to `next`")
        # The same target again changes nothing.
        SIM.api("PUT", "/projects/1/merge_requests/1",
                body={"target_branch": "next"})
        self.assertEqual(len(self.versions()), 2)
        # The source branch as its own target: validate_branches.
        r = SIM.api("PUT", "/projects/1/merge_requests/1",
                    body={"target_branch": self.mr()["source_branch"]})
        self.assertEqual(r.status, 400)
        self.assertEqual(r.json, {"message": {"branch_conflict": [
            "You can't use same project/branch for source and target"]}})

    def test_target_push_with_an_mr_commit_reloads_its_diff(self):
        # app/services/merge_requests/refresh_service.rb,
        # reload_merge_requests: only an MR whose diff has a pushed commit.
        first = self.versions()[0]
        other = SIM.ctl("POST", "/projects/1/commits", {
            "branch": "side", "start": "main", "message": "side\n",
            "files": {"SIDE": "s\n"}})["head"]
        moved = SIM.ctl("PUT", "/projects/1/branches/main", {"sha": other})
        self.assertEqual(moved["updated"], [])
        self.assertEqual(len(self.versions()), 1)
        commits = SIM.api("GET", "/projects/1/merge_requests/1/commits").json
        oldest = commits[-1]["id"]
        SIM.ctl("PUT", "/projects/1/branches/main", {"sha": oldest})
        # main went back to before "side" and took the MR's first commit
        # (a push that is not a fast-forward is a push too).
        versions = self.versions()
        self.assertEqual(len(versions), 2)
        self.assertEqual(versions[0]["head_commit_sha"],
                         first["head_commit_sha"])
        self.assertEqual(versions[0]["base_commit_sha"], oldest)

    def test_rebase_keeps_patch_id(self):
        before = self.versions()[0]
        SIM.ctl("POST", "/projects/1/commits", {
            "branch": "main", "message": "unrelated\n",
            "files": {"UNRELATED": "u\n"}})
        # Rebase: rebuild the same two changes on the new main tip.
        with open(os.path.join(HERE, "seed-default.json")) as f:
            seed = json.load(f)
        commits = seed["projects"][0]["branches"][0]["commits"]
        SIM.ctl("POST", "/projects/1/merge_requests/1/push",
                {"start": "main", "commits": commits})
        after = self.versions()[0]
        self.assertNotEqual(after["head_commit_sha"],
                            before["head_commit_sha"])
        self.assertNotEqual(after["base_commit_sha"],
                            before["base_commit_sha"])
        self.assertEqual(after["patch_id_sha"], before["patch_id_sha"])

    def test_git_push_over_http_and_fetch_merge_request_head(self):
        work = tempfile.mkdtemp(prefix="forgesim-git.")
        try:
            clone = os.path.join(work, "clone")
            git("clone", "-q", SIM.url + "/group/project.git", clone)
            git("checkout", "-q", "feature", cwd=clone)
            old_head = git("rev-parse", "HEAD", cwd=clone)
            with open(os.path.join(clone, "NEW.txt"), "w") as f:
                f.write("pushed over http\n")
            git("add", "NEW.txt", cwd=clone)
            git("commit", "-q", "-m", "Pushed over HTTP", cwd=clone)
            new_head = git("rev-parse", "HEAD", cwd=clone)
            # A push needs a token as the password, as on GitLab (doc/
            # user/profile/personal_access_tokens.md): none, a read-only
            # token, or a guest's is refused and moves nothing.
            for url in (SIM.url,
                        SIM.url.replace("://", "://oauth2:readonly-token@"),
                        SIM.url.replace("://", "://oauth2:guest-token@")):
                with self.assertRaises(subprocess.CalledProcessError) as cm:
                    git("-c", "credential.helper=", "push", "-q",
                        url + "/group/project.git", "feature", cwd=clone)
                self.assertNotEqual(cm.exception.returncode, 0)
            self.assertEqual(len(self.versions()), 1)
            git("push", "-q",
                SIM.url.replace("://", "://oauth2:user-token@") +
                "/group/project.git", "feature", cwd=clone)
            # The push alone makes a new version, as on GitLab.
            versions = self.versions()
            self.assertEqual(len(versions), 2)
            self.assertEqual(versions[0]["head_commit_sha"], new_head)
            # A fresh repository fetches the MR head ref with real git...
            other = os.path.join(work, "other")
            git("init", "-q", other)
            git("fetch", "-q", SIM.url + "/group/project.git",
                "refs/merge-requests/1/head:refs/remotes/mr/1", cwd=other)
            self.assertEqual(git("rev-parse", "refs/remotes/mr/1",
                                 cwd=other), new_head)
            # ...and the previous head by SHA: kept alive by a keep-around
            # ref that, as on GitLab, is not advertised.
            refs = git("ls-remote", SIM.url + "/group/project.git",
                       cwd=other)
            self.assertNotIn("refs/keep-around", refs)
            git("fetch", "-q", SIM.url + "/group/project.git", old_head,
                cwd=other)
            self.assertEqual(git("cat-file", "-t", old_head, cwd=other),
                             "commit")
            # Telling the simulator explicitly is idempotent.
            reply = SIM.ctl("POST", "/projects/1/merge_requests/1/push",
                            {"sha": new_head})
            self.assertFalse(reply["created"])
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def test_head_ref_expires_14_days_after_close(self):
        SIM.api("PUT", "/projects/1/merge_requests/1", "bob-token",
                body={"state_event": "close"})
        work = tempfile.mkdtemp(prefix="forgesim-git.")
        try:
            refs = git("ls-remote", SIM.url + "/group/project.git", cwd=work)
            self.assertIn("refs/merge-requests/1/head", refs)
            SIM.ctl("POST", "/time", {"advance_s": 15 * 86400})
            refs = git("ls-remote", SIM.url + "/group/project.git", cwd=work)
            self.assertNotIn("refs/merge-requests/1/head", refs)
        finally:
            shutil.rmtree(work, ignore_errors=True)


# -- users --------------------------------------------------------------------

class UsersTest(SimTestCase):
    def search(self, term, token):
        return SIM.api("GET", "/users", token, query={"search": term}).json

    def test_regular_user_search_matches_public_email_only(self):
        found = self.search("alice@example.com", "bob-token")
        self.assertEqual([u["username"] for u in found], ["alice"])
        self.assertNotIn("email", found[0])
        # Bob's address is private: invisible to a regular user.
        self.assertEqual(self.search("bob@corp.example", "user-token"), [])

    def test_admin_search_matches_private_email_and_shows_email(self):
        found = self.search("bob@corp.example", "admin-token")
        self.assertEqual([u["username"] for u in found], ["bob"])
        self.assertEqual(found[0]["email"], "bob@corp.example")
        # Emails match whole, names and usernames fuzzily.
        self.assertEqual(self.search("corp.example", "admin-token"), [])
        self.assertEqual([u["username"] for u in
                          self.search("Maint", "user-token")], ["bob"])

    def test_username_is_exact_and_case_insensitive(self):
        found = SIM.api("GET", "/users", query={"username": "ALICE"}).json
        self.assertEqual([u["username"] for u in found], ["alice"])
        self.assertEqual(SIM.api("GET", "/users",
                                 query={"username": "ali"}).json, [])

    def test_single_user_and_current_user(self):
        regular = SIM.api("GET", "/users/3").json
        self.assertNotIn("email", regular)
        self.assertIsNone(regular["public_email"])
        admin = SIM.api("GET", "/users/3", "admin-token").json
        self.assertEqual(admin["email"], "bob@corp.example")
        self.assertBody(SIM.api("GET", "/users/999"), 404,
                        {"message": "404 User Not Found"})
        me = SIM.api("GET", "/user").json
        self.assertEqual(me["email"], "alice@example.com")


# -- rate limiting ------------------------------------------------------------

class RateLimitTest(SimTestCase):
    def test_429_with_retry_after_and_reset_and_write_not_applied(self):
        SIM.ctl("POST", "/rate_limit", {"limit": 2, "period_s": 60})
        ok = SIM.api("GET", "/projects/1")
        self.assertEqual(ok.status, 200)
        self.assertEqual(ok.header("ratelimit-limit"), "2")
        self.assertEqual(ok.header("ratelimit-remaining"), "1")
        SIM.api("GET", "/projects/1")
        refused = SIM.api("POST", "/projects/1/merge_requests/1/notes",
                          body={"body": "should not exist"})
        self.assertEqual(refused.status, 429)
        self.assertEqual(refused.body, b"Retry later\n")
        self.assertTrue(refused.header("content-type").startswith(
            "text/plain"))
        retry_after = int(refused.header("retry-after"))
        reset = int(refused.header("ratelimit-reset"))
        self.assertTrue(1 <= retry_after <= 60)
        self.assertTrue(time.time() - 1 <= reset <= time.time() + 61)
        self.assertEqual(refused.header("ratelimit-name"),
                         "throttle_authenticated_api")
        self.assertEqual(refused.header("ratelimit-remaining"), "0")
        self.assertEqual(refused.header("ratelimit-observed"), "3")
        self.assertTrue(refused.header("ratelimit-resettime").endswith(
            "GMT"))
        SIM.ctl("POST", "/rate_limit", {"enabled": False})
        bodies = [n["body"] for d in self.state_mr()["discussions"]
                  for n in d["notes"]]
        self.assertNotIn("should not exist", bodies)

    def test_notes_create_limit_has_no_headers(self):
        SIM.ctl("POST", "/rate_limit", {"name": "notes_create", "limit": 1})
        self.assertEqual(SIM.api("POST", "/projects/1/merge_requests/1/notes",
                                 body={"body": "one"}).status, 201)
        refused = SIM.api("POST", "/projects/1/merge_requests/1/notes",
                          body={"body": "two"})
        self.assertBody(refused, 429, {"message": {
            "error": "This endpoint has been requested too many times. "
                     "Try again later."}})
        self.assertIsNone(refused.header("retry-after"))
        self.assertEqual(SIM.api("GET", "/projects/1").status, 200)


# -- fault injection ----------------------------------------------------------

class FaultTest(SimTestCase):
    NOTES = "/projects/1/merge_requests/1/notes"

    def bodies(self):
        return [n["body"] for d in self.state_mr()["discussions"]
                for n in d["notes"]]

    def test_5xx_for_the_next_n_matching_requests(self):
        SIM.ctl("POST", "/faults", {"kind": "error", "status": 503,
                                    "count": 2, "method": "GET",
                                    "path": "/merge_requests/1$"})
        first = SIM.api("GET", "/projects/1/merge_requests/1")
        self.assertEqual(first.status, 503)
        self.assertIn(b"<html>", first.body)
        self.assertEqual(SIM.api("GET", "/projects/1").status, 200)
        self.assertEqual(SIM.api("GET", "/projects/1/merge_requests/1")
                         .status, 503)
        self.assertEqual(SIM.api("GET", "/projects/1/merge_requests/1")
                         .status, 200)
        SIM.ctl("POST", "/faults", {"kind": "error", "count": 1})
        failed = SIM.api("POST", self.NOTES, body={"body": "lost"})
        self.assertBody(failed, 500,
                        {"message": "500 Internal Server Error"})
        self.assertNotIn("lost", self.bodies())

    def test_latency(self):
        SIM.ctl("POST", "/faults", {"kind": "latency", "ms": 300,
                                    "count": 1})
        started = time.monotonic()
        self.assertEqual(SIM.api("GET", "/projects/1").status, 200)
        self.assertGreaterEqual(time.monotonic() - started, 0.3)
        started = time.monotonic()
        SIM.api("GET", "/projects/1")
        self.assertLess(time.monotonic() - started, 0.3)

    def test_connection_refused_for_t_seconds_then_back(self):
        SIM.ctl("POST", "/faults/refuse", {"seconds": 1.0})
        with self.assertRaises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", SIM.port), timeout=2)
        deadline = time.monotonic() + 5
        while True:
            try:
                reply = SIM.api("GET", "/projects/1")
                break
            except ConnectionRefusedError:
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.1)
        self.assertEqual(reply.status, 200)

    def test_commit_and_drop_response(self):
        SIM.ctl("POST", "/faults", {"kind": "drop_after_commit",
                                    "path": "/notes$"})
        with self.assertRaises((http.client.RemoteDisconnected,
                                ConnectionResetError)):
            SIM.api("POST", self.NOTES, body={"body": "<!-- marker-1 -->"})
        self.assertIn("<!-- marker-1 -->", self.bodies())
        self.assertEqual(SIM.api("POST", self.NOTES,
                                 body={"body": "after"}).status, 201)

    def test_commit_then_502(self):
        SIM.ctl("POST", "/faults", {"kind": "error_after_commit"})
        reply = SIM.api("POST", self.NOTES, body={"body": "<!-- m2 -->"})
        self.assertEqual(reply.status, 502)
        self.assertIn("<!-- m2 -->", self.bodies())

    def test_drop_without_commit(self):
        SIM.ctl("POST", "/faults", {"kind": "drop", "method": "POST"})
        with self.assertRaises((http.client.RemoteDisconnected,
                                ConnectionResetError)):
            SIM.api("POST", self.NOTES, body={"body": "never"})
        self.assertNotIn("never", self.bodies())
        faults = SIM.ctl("GET", "/faults")
        self.assertEqual(faults[0]["hits"], 1)
        log = SIM.ctl("GET", "/requests")
        self.assertEqual(log[-1]["fault"], "drop")

    def test_hold_until_cleared(self):
        """A held request waits, not run, until the rule is cleared, then
        is closed unanswered; its hits show it held meanwhile."""
        SIM.ctl("POST", "/faults", {"kind": "hold", "method": "POST",
                                    "path": "/notes$"})
        errors = []

        def post():
            try:
                SIM.api("POST", self.NOTES, body={"body": "held"})
            except (http.client.RemoteDisconnected,
                    ConnectionResetError) as e:
                errors.append(e)

        t = threading.Thread(target=post)
        t.start()
        deadline = time.monotonic() + 60
        while SIM.ctl("GET", "/faults")[0]["hits"] < 1:
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        self.assertTrue(t.is_alive())
        SIM.ctl("DELETE", "/faults")
        t.join(60)
        self.assertFalse(t.is_alive())
        self.assertEqual(len(errors), 1)
        self.assertNotIn("held", self.bodies())

    def test_resource_lock(self):
        """lib/api/api.rb's 409 for a lock: nothing is written."""
        SIM.ctl("POST", "/faults", {"kind": "resource_lock",
                                    "method": "POST", "path": "/notes$"})
        reply = SIM.api("POST", self.NOTES, body={"body": "locked out"})
        self.assertBody(reply, 409,
                        {"message": "409 Conflict: Resource lock"})
        self.assertNotIn("locked out", self.bodies())
        self.assertEqual(SIM.api("POST", self.NOTES,
                                 body={"body": "after"}).status, 201)
        self.assertEqual(SIM.ctl("GET", "/requests")[-2]["fault"],
                         "resource_lock")


# -- webhooks -----------------------------------------------------------------

class _Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.received.append((dict(self.headers), json.loads(body)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


class WebhookTest(SimTestCase):
    def setUp(self):
        super().setUp()
        self.receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                        _Receiver)
        self.receiver.received = []
        threading.Thread(target=self.receiver.serve_forever,
                         daemon=True).start()
        self.url = "http://127.0.0.1:%d/hook" % self.receiver.server_port

    def tearDown(self):
        self.receiver.shutdown()
        self.receiver.server_close()
        super().tearDown()

    def wait(self):
        self.assertEqual(SIM.ctl("POST", "/webhooks/wait",
                                 {"timeout_s": 10})["idle"], True)
        return self.receiver.received

    def test_webhooks_delivered_with_token_and_headers(self):
        SIM.ctl("POST", "/webhooks", {"project": "group/project",
                                      "url": self.url, "token": "s3cret"})
        old_head = self.mr()["sha"]
        SIM.ctl("POST", "/projects/1/merge_requests/1/push", {
            "commits": [{"message": "v2\n", "files": {"v2": "2\n"}}]})
        thread = SIM.api("POST", "/projects/1/merge_requests/1/discussions",
                         "bob-token", body={"body": "inline?"}).json
        SIM.api("POST", "/projects/1/merge_requests/1/approve", "bob-token")
        received = self.wait()
        events = [(h["X-Gitlab-Event"], p.get("object_attributes", {})
                   .get("action")) for h, p in received]
        self.assertEqual(events, [("Merge Request Hook", "update"),
                                  ("Note Hook", "create"),
                                  ("Merge Request Hook", "approved")])
        for headers, _ in received:
            self.assertEqual(headers["X-Gitlab-Token"], "s3cret")
            self.assertEqual(headers["Content-Type"], "application/json")
            for name in ("X-Gitlab-Event-UUID", "X-Gitlab-Webhook-UUID",
                         "Idempotency-Key"):
                self.assertRegex(headers[name], r"^[0-9a-f-]{36}$")
        push, note, approval = [p for _, p in received]
        self.assertEqual(push["object_attributes"]["oldrev"], old_head)
        self.assertNotIn("oldrev", approval["object_attributes"])
        self.assertEqual(note["object_attributes"]["discussion_id"],
                         thread["id"])
        self.assertEqual(note["object_attributes"]["type"], "DiscussionNote")
        self.assertRegex(note["object_attributes"]["created_at"],
                         r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")
        # Redelivery keeps the Idempotency-Key.
        deliveries = SIM.ctl("GET", "/webhooks/deliveries")
        self.assertTrue(all(d["status"] == "delivered" for d in deliveries))
        SIM.ctl("POST", "/webhooks/deliveries/%d/redeliver"
                % deliveries[0]["id"])
        again = self.wait()[-1][0]
        self.assertEqual(again["Idempotency-Key"],
                         received[0][0]["Idempotency-Key"])

    def test_failing_hook_is_disabled(self):
        """app/models/concerns/web_hooks/auto_disabling.rb: the 4th
        failure in a row rests the hook (disabled_until, nothing
        delivered meanwhile), a delivery that works forgets them."""
        hook = SIM.ctl("POST", "/webhooks", {"project": "group/project",
                                             "url": "http://127.0.0.1:9/x"})
        for i in range(5):
            SIM.api("POST", "/projects/1/merge_requests/1/notes",
                    "bob-token", body={"body": "note %d" % i})
            self.wait()
        deliveries = SIM.ctl("GET", "/webhooks/deliveries")
        self.assertEqual([d["status"] for d in deliveries], ["failed"] * 4)
        hooks = SIM.api("GET", "/projects/1/hooks", "bob-token").json
        self.assertEqual(hooks[0]["alert_status"], "temporarily_disabled")
        self.assertIsNotNone(hooks[0]["disabled_until"])
        SIM.ctl("POST", "/time", {"advance_s": 3600})
        hooks = SIM.api("GET", "/projects/1/hooks", "bob-token").json
        self.assertEqual(hooks[0]["alert_status"], "executable")
        SIM.ctl("POST", "/webhooks/%d/failures" % hook["id"], {"count": 1})
        for _ in range(35):
            SIM.ctl("POST", "/time", {"advance_s": 86401})
            SIM.ctl("POST", "/webhooks/%d/failures" % hook["id"],
                    {"count": 1})
        hooks = SIM.api("GET", "/projects/1/hooks", "bob-token").json
        self.assertEqual(hooks[0]["alert_status"], "disabled")
        SIM.ctl("POST", "/webhooks/%d/enable" % hook["id"], {})
        hooks = SIM.api("GET", "/projects/1/hooks", "bob-token").json
        self.assertEqual(hooks[0]["alert_status"], "executable")
        self.assertIsNone(hooks[0]["disabled_until"])

    def test_diff_note_hook_carries_position(self):
        SIM.api("POST", "/projects/1/hooks", "bob-token", body={
            "url": self.url, "note_events": True, "token": "t"})
        pos = self.position(1, old_path="src/hello.c",
                            new_path="src/hello.c", new_line=7)
        reply = SIM.api("POST", "/projects/1/merge_requests/1/discussions",
                        body={"body": "why fflush?", "position": pos})
        self.assertEqual(reply.status, 201, reply.body)
        (headers, payload), = self.wait()
        attrs = payload["object_attributes"]
        self.assertEqual(attrs["type"], "DiffNote")
        self.assertEqual(attrs["position"]["new_line"], 7)
        self.assertEqual(attrs["line_code"],
                         "%s_7_7" % sha1("src/hello.c"))


# -- the process and run-with-sim.sh ------------------------------------------

class ProcessTest(unittest.TestCase):
    def test_startup_url_custom_seed_and_clean_sigterm(self):
        tmp = tempfile.mkdtemp(prefix="forgesim-proc.")
        try:
            seed = os.path.join(tmp, "seed.json")
            with open(seed, "w") as f:
                json.dump({"users": [{"username": "solo", "admin": True}],
                           "tokens": [{"token": "t", "user": "solo"}]}, f)
            url_file = os.path.join(tmp, "url")
            proc = subprocess.Popen(
                [PYTHON, os.path.join(HERE, "forgesim.py"), "--port", "0",
                 "--state-dir", os.path.join(tmp, "state"),
                 "--port-file", url_file, "--seed", seed],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            printed = proc.stdout.readline().decode().strip()
            with open(url_file) as f:
                self.assertEqual(f.read().strip(), printed)
            self.assertRegex(printed, r"^http://127\.0\.0\.1:\d+$")
            port = int(printed.rsplit(":", 1)[1])
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/v4/user",
                         headers={"PRIVATE-TOKEN": "t"})
            self.assertEqual(json.loads(conn.getresponse().read())[
                "username"], "solo")
            conn.close()
            proc.terminate()
            self.assertEqual(proc.wait(10), 0)
            proc.stdout.close()
            proc.stderr.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_run_with_sim_exports_url_and_returns_status(self):
        check = (
            "import json, os, sys, urllib.request\n"
            "req = urllib.request.Request(os.environ['PB_FORGESIM_URL'] +\n"
            "    '/api/v4/user', headers={'PRIVATE-TOKEN': 'user-token'})\n"
            "opener = urllib.request.build_opener(\n"
            "    urllib.request.ProxyHandler({}))\n"
            "user = json.load(opener.open(req))['username']\n"
            "repos = os.path.join(os.environ['PB_FORGESIM_STATE_DIR'],\n"
            "                     'repos')\n"
            "sys.exit(7 if user == 'alice' and os.path.isdir(repos) else 1)\n")
        proc = subprocess.run([os.path.join(HERE, "run-with-sim.sh"), PYTHON,
                               "-c", check], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(proc.returncode, 7, proc.stderr)


# -- conformance with GitLab's documents --------------------------------------

def json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(value)]


# Example keys GitLab no longer sends, or only sends on request; each is
# (example file, dotted key path with [] for list items).
EXAMPLE_EXCEPTIONS = {
    # A 2013 docs example: today's UserBasic has no email or created_at.
    ("GET_projects_id_merge_requests_iid_notes_note_id.json",
     "author.email"),
    ("GET_projects_id_merge_requests_iid_notes_note_id.json",
     "author.created_at"),
    # Only with include_diverged_commits_count=true on GET.
    ("PUT_projects_id_merge_requests_iid.json", "diverged_commits_count"),
    # The docs show an individual note with "resolvable": true; GitLab's
    # Note entity exposes resolved* only for resolvable notes, and only
    # DiscussionNote/DiffNote are (app/models/concerns/resolvable_note.rb).
    ("discussions#individual", "[].notes[].resolved"),
    ("discussions#individual", "[].notes[].resolved_by"),
    ("discussions#individual", "[].notes[].resolved_at"),
}


def compare_with_example(example_value, actual, where, name, problems):
    """Every example key must exist in `actual` with the same JSON type."""
    if example_value is None or actual is None:
        return
    if (name, where) in EXAMPLE_EXCEPTIONS:
        return
    et, at = json_type(example_value), json_type(actual)
    if et != at:
        problems.append("%s: %s is %s, example has %s" % (name, where or ".",
                                                          at, et))
        return
    if et == "object":
        if where.endswith("changes"):
            return      # which fields changed depends on the event
        for key, value in example_value.items():
            path = "%s.%s" % (where, key) if where else key
            if (name, path) in EXAMPLE_EXCEPTIONS:
                continue
            if key not in actual:
                problems.append("%s: %s missing" % (name, path))
                continue
            compare_with_example(value, actual[key], path, name, problems)
    elif et == "array" and example_value and actual:
        merged = _merge_items(example_value)
        for item in actual:
            compare_with_example(merged, item, where + "[]", name, problems)


def _merge_items(items):
    """One template from all example items (union of keys)."""
    if not all(isinstance(i, dict) for i in items):
        return items[0]
    merged = {}
    for item in items:
        for key, value in item.items():
            if merged.get(key) is None:
                merged[key] = value
    return merged


class OpenApiConformanceTest(SimTestCase):
    """Responses against the OpenAPI subset and the documented examples."""

    def exercise_everything(self):
        """Call every simulated operation once; return named replies."""
        sha = self.mr()["sha"]
        got = {}
        api = SIM.api
        got["mr_list"] = api("GET", "/projects/1/merge_requests")
        got["mr"] = api("GET", "/projects/1/merge_requests/1")
        got["mr_put"] = api("PUT", "/projects/1/merge_requests/1",
                            body={"add_labels": ["x"]})
        got["commits"] = api("GET", "/projects/1/merge_requests/1/commits")
        got["diffs"] = api("GET", "/projects/1/merge_requests/1/diffs")
        got["changes"] = api("GET", "/projects/1/merge_requests/1/changes")
        got["versions"] = api("GET", "/projects/1/merge_requests/1/versions")
        got["version"] = api("GET", "/projects/1/merge_requests/1/versions/"
                             "%d" % got["versions"].json[0]["id"])
        got["note"] = api("POST", "/projects/1/merge_requests/1/notes",
                          body={"body": "note"})
        note_path = "/projects/1/merge_requests/1/notes/%d" % \
            got["note"].json["id"]
        got["note_get"] = api("GET", note_path)
        got["note_put"] = api("PUT", note_path, body={"body": "edited"})
        got["thread"] = api("POST", "/projects/1/merge_requests/1/"
                            "discussions", body={"body": "thread"})
        thread = "/projects/1/merge_requests/1/discussions/" + \
            got["thread"].json["id"]
        got["reply"] = api("POST", thread + "/notes", body={"body": "re"})
        got["thread_notes"] = api("GET", thread + "/notes")
        got["thread_note"] = api("GET", thread + "/notes/%d"
                                 % got["reply"].json["id"])
        got["thread_note_put"] = api("PUT", thread + "/notes/%d"
                                     % got["reply"].json["id"],
                                     body={"resolved": True})
        got["resolve"] = api("PUT", thread, query={"resolved": "false"})
        pos = self.position(1, old_path="src/hello.c",
                            new_path="src/hello.c", old_line=9, new_line=10,
                            line_range={
                                "start": {"line_code": "%s_9_10"
                                          % sha1("src/hello.c"),
                                          "type": None, "old_line": 9,
                                          "new_line": 10},
                                "end": {"line_code": "%s_9_10"
                                        % sha1("src/hello.c"),
                                        "type": None, "old_line": 9,
                                        "new_line": 10}})
        got["diffnote"] = api("POST", "/projects/1/merge_requests/1/"
                              "discussions", body={"body": "diff",
                                                   "position": pos})
        got["discussions"] = api("GET", "/projects/1/merge_requests/1/"
                                 "discussions")
        got["thread_get"] = api("GET", thread)
        got["notes"] = api("GET", "/projects/1/merge_requests/1/notes")
        got["approve"] = api("POST", "/projects/1/merge_requests/1/approve",
                             "bob-token", body={"sha": sha})
        got["approvals"] = api("GET", "/projects/1/merge_requests/1/"
                               "approvals")
        got["approval_state"] = api("GET", "/projects/1/merge_requests/1/"
                                    "approval_state")
        got["unapprove"] = api("POST", "/projects/1/merge_requests/1/"
                               "unapprove", "bob-token")
        got["users"] = api("GET", "/users", query={"search": "a"})
        got["users_admin"] = api("GET", "/users", "admin-token",
                                 query={"search": "a"})
        got["user"] = api("GET", "/users/2")
        got["me"] = api("GET", "/user", "admin-token")
        got["labels"] = api("GET", "/projects/1/labels")
        got["label_new"] = api("POST", "/projects/1/labels",
                               body={"name": "y", "color": "#00ff00"})
        got["project"] = api("GET", "/projects/1")
        got["hook"] = api("POST", "/projects/1/hooks", "bob-token",
                          body={"url": "http://127.0.0.1:9/h"})
        got["hooks"] = api("GET", "/projects/1/hooks", "bob-token")
        got["commit"] = api("GET", "/projects/1/repository/commits/" + sha)
        signed = SIM.ctl("POST", "/projects/1/commits", {
            "branch": "signed", "start": "main", "message": "signed\n",
            "files": {"signed.txt": "s\n"},
            "author": {"name": "Alice Developer",
                       "email": "alice@example.com"},
            "signature": {"type": "SSH", "user": "alice"}})["head"]
        got["signature"] = api("GET", "/projects/1/repository/commits/%s/"
                               "signature" % signed)
        got["version_api"] = api("GET", "/version")
        got["imp_token"] = api("POST", "/users/2/impersonation_tokens",
                               "admin-token", body={"name": "bridge",
                                                    "scopes": ["api"]})
        got["imp_tokens"] = api("GET", "/users/2/impersonation_tokens",
                                "admin-token")
        SIM.ctl("POST", "/projects/1/commits", {
            "branch": "other", "start": "main", "message": "other\n",
            "files": {"other.txt": "o\n"}})
        got["create_mr"] = api("POST", "/projects/1/merge_requests",
                               body={"source_branch": "other",
                                     "target_branch": "main",
                                     "title": "Other"})
        got["merge"] = api("PUT", "/projects/1/merge_requests/1/merge",
                           "bob-token", body={"sha": sha})
        got["note_delete"] = api("DELETE", note_path)
        return got

    def test_openapi_validates_responses_of_every_operation(self):
        got = self.exercise_everything()
        for name, reply in got.items():
            self.assertLess(reply.status, 300, "%s: %d %s" % (
                name, reply.status, reply.body[:300]))
        after = SIM.ctl("GET", "/openapi")
        # Every one of them was checked: the request, and the response
        # wherever the document describes it (tearDown fails on a
        # violation).
        self.assertGreaterEqual(
            after["requests"] - self.openapi_before["requests"], len(got))
        self.assertGreaterEqual(
            after["responses"] - self.openapi_before["responses"], 35)

    def test_responses_match_documented_example_fields(self):
        got = self.exercise_everything()
        pairs = [
            ("GET_projects_id_merge_requests.json", got["mr_list"]),
            ("GET_projects_id_merge_requests_iid.json", got["mr"]),
            ("PUT_projects_id_merge_requests_iid.json", got["mr_put"]),
            ("GET_projects_id_merge_requests_iid_commits.json",
             got["commits"]),
            ("GET_projects_id_merge_requests_iid_diffs.json", got["diffs"]),
            ("GET_projects_id_merge_requests_iid_versions.json",
             got["versions"]),
            ("GET_projects_id_merge_requests_iid_versions_version_id.json",
             got["version"]),
            ("GET_projects_id_merge_requests_iid_notes_note_id.json",
             got["note_get"]),
            ("POST_projects_id_merge_requests_iid_approve.json",
             got["approve"]),
            ("GET_projects_id_merge_requests_iid_approvals.json",
             got["approvals"]),
            ("GET_projects_id_merge_requests_iid_approval_state.json",
             got["approval_state"]),
            ("GET_users_regular_user.json", got["users"]),
            ("GET_users_as_admin.json", got["users_admin"]),
        ]
        discussions = [d for d in got["discussions"].json
                       if not d["notes"][0]["system"]]
        pairs.append(("GET_projects_id_merge_requests_iid_discussions_"
                      "diffnote.json",
                      [d for d in discussions
                       if d["notes"][0]["type"] == "DiffNote"]))
        # The discussions example holds a thread and an individual note;
        # compare each with its own kind.
        threads_example = example(
            "GET_projects_id_merge_requests_iid_discussions.json")
        problems = []
        for name, reply in pairs:
            actual = reply.json if isinstance(reply, Reply) else reply
            self.assertTrue(actual, name)
            compare_with_example(example(name), actual, "", name, problems)
        for kind, individual in (("thread", False), ("individual", True)):
            compare_with_example(
                [d for d in threads_example
                 if d["individual_note"] == individual],
                [d for d in discussions if d["individual_note"] == individual
                 and d["notes"][0]["type"] != "DiffNote"],
                "", "discussions#" + kind, problems)
        self.assertEqual(problems, [])

    def test_webhook_payloads_match_documented_example_fields(self):
        receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                   _Receiver)
        receiver.received = []
        threading.Thread(target=receiver.serve_forever, daemon=True).start()
        try:
            SIM.ctl("POST", "/webhooks", {
                "url": "http://127.0.0.1:%d/" % receiver.server_port})
            SIM.api("PUT", "/projects/1/merge_requests/1", body={
                "add_labels": ["API"], "assignee_ids": [3]})
            SIM.api("POST", "/projects/1/merge_requests/1/notes",
                    body={"body": "hook me"})
            SIM.ctl("POST", "/webhooks/wait", {"timeout_s": 10})
        finally:
            receiver.shutdown()
            receiver.server_close()
        by_event = {h["X-Gitlab-Event"]: p for h, p in receiver.received}
        problems = []
        compare_with_example(example("webhooks/merge_request_hook.json"),
                             by_event["Merge Request Hook"], "",
                             "merge_request_hook", problems)
        compare_with_example(example("webhooks/note_hook_merge_request.json"),
                             by_event["Note Hook"], "", "note_hook",
                             problems)
        self.assertEqual(problems, [])


def load_tests(loader, tests, pattern):
    """With PB_FORGESIM_SHARD=K/N, only test classes K, K+N, K+2N ... (by
    name), so that CTest runs the suite as N tests side by side; every
    class is in exactly one shard."""
    shard = os.environ.get("PB_FORGESIM_SHARD")
    if not shard:
        return tests
    k, n = (int(x) for x in shard.split("/"))
    classes = [c for c in globals().values()
               if isinstance(c, type) and issubclass(c, unittest.TestCase)
               and loader.getTestCaseNames(c)]
    classes.sort(key=lambda c: c.__name__)
    suite = unittest.TestSuite()
    for i, c in enumerate(classes):
        if i % n == k - 1:
            suite.addTests(loader.loadTestsFromTestCase(c))
    return suite


# -- pipelines and jobs -------------------------------------------------------

class CommitSignatureTest(SimTestCase):
    """GET /projects/:id/repository/commits/:sha/signature (lib/api/
    commits.rb; doc/api/commits.md "Get signature of a commit"): 404 for
    an unsigned commit, else the documented shape per kind, the verdict
    as lib/gitlab/ssh/signature.rb calculates it."""

    def commit(self, branch, signature=None, email="alice@example.com"):
        body = {"branch": branch, "start": "main", "message": branch + "\n",
                "files": {branch + ".txt": "x\n"},
                "author": {"name": "Alice Developer", "email": email}}
        if signature:
            body["signature"] = signature
        return SIM.ctl("POST", "/projects/1/commits", body)["head"]

    def sig(self, sha):
        return SIM.api("GET", "/projects/1/repository/commits/%s/signature"
                       % sha)

    def test_unsigned_and_missing(self):
        reply = self.sig(self.commit("plain"))
        self.assertEqual((reply.status, reply.json),
                         (404, {"message": "404 GPG Signature Not Found"}))
        reply = self.sig("0" * 40)
        self.assertEqual((reply.status, reply.json),
                         (404, {"message": "404 Commit Not Found"}))

    def test_pgp_ssh_x509_and_verdicts(self):
        pgp = self.sig(self.commit("pgp", {"type": "PGP", "user": "alice"}))
        self.assertEqual(pgp.status, 200, pgp.body)
        self.assertEqual({k: pgp.json[k] for k in (
            "signature_type", "verification_status", "gpg_key_user_name",
            "gpg_key_user_email", "commit_source")}, {
            "signature_type": "PGP", "verification_status": "verified",
            "gpg_key_user_name": "Alice Developer",
            "gpg_key_user_email": "alice@example.com",
            "commit_source": "gitaly"})
        self.assertEqual(len(pgp.json["gpg_key_primary_keyid"]), 16)
        ssh = self.sig(self.commit("ssh", {"type": "SSH", "user": "alice",
                                           "title": "laptop"})).json
        self.assertEqual((ssh["signature_type"], ssh["verification_status"],
                          ssh["key"]["title"], ssh["key"]["usage_type"]),
                         ("SSH", "verified", "laptop", "auth_and_signing"))
        x509 = self.sig(self.commit("x509", {"type": "X509",
                                             "user": "alice"})).json
        self.assertEqual((x509["signature_type"],
                          x509["verification_status"],
                          x509["x509_certificate"]["email"]),
                         ("X509", "verified", "alice@example.com"))
        # Bob's key on a commit Alice committed: other_user; a key no
        # user uploaded: unknown_key; a verdict the test gives is kept.
        self.assertEqual(self.sig(self.commit("bob", {
            "type": "PGP", "user": "bob"})).json["verification_status"],
            "other_user")
        unknown = self.sig(self.commit("nobody", {"type": "SSH"})).json
        self.assertEqual((unknown["verification_status"], unknown["key"]),
                         ("unknown_key", None))
        self.assertEqual(self.sig(self.commit("revoked", {
            "type": "PGP", "user": "alice",
            "status": "revoked_key"})).json["verification_status"],
            "revoked_key")


class PipelineTest(SimTestCase):
    """MR pipelines, their jobs and a job's log (lib/api/merge_requests.rb,
    lib/api/ci/jobs.rb), steered through /_sim/."""

    def start(self, jobs=None):
        return SIM.ctl("POST", "/projects/1/merge_requests/1/pipelines",
                       {"jobs": jobs or [
                           {"name": "build", "stage": "build"},
                           {"name": "unit", "stage": "test"},
                           {"name": "lint", "stage": "test",
                            "allow_failure": True}]})

    def test_pipeline_runs_then_fails_then_passes_on_retry(self):
        head = self.mr()["sha"]
        started = self.start()
        reply = SIM.api("GET", "/projects/1/merge_requests/1/pipelines")
        self.assertEqual(reply.status, 200, reply.body)
        [pl] = reply.json
        self.assertEqual((pl["id"], pl["sha"], pl["status"]),
                         (started["id"], head, "running"))
        self.assertTrue(pl["web_url"].endswith(
            "/group/project/-/pipelines/%d" % pl["id"]))
        SIM.ctl("POST", "/projects/1/pipelines/%d/finish" % pl["id"], {
            "results": {"unit": "failed", "lint": "failed"},
            "traces": {"unit": "\x1b[31mFAIL\x1b[0m: test_x\n"}})
        [pl] = SIM.api("GET", "/projects/1/merge_requests/1/pipelines").json
        self.assertEqual(pl["status"], "failed")
        jobs = SIM.api("GET", "/projects/1/pipelines/%d/jobs" %
                       pl["id"]).json
        self.assertEqual([(j["name"], j["stage"], j["status"],
                           j["allow_failure"]) for j in jobs],
                         [("build", "build", "success", False),
                          ("unit", "test", "failed", False),
                          ("lint", "test", "failed", True)])
        unit = jobs[1]
        self.assertTrue(unit["web_url"].endswith("/-/jobs/%d" % unit["id"]))
        trace = SIM.api("GET", "/projects/1/jobs/%d/trace" % unit["id"])
        self.assertEqual(trace.status, 200)
        self.assertTrue(trace.headers["content-type"].startswith(
            "text/plain"))
        self.assertEqual(trace.body, b"\x1b[31mFAIL\x1b[0m: test_x\n")
        # Only lint fails on the retry: allowed to, so the pipeline passes.
        SIM.ctl("POST", "/projects/1/pipelines/%d/finish" % pl["id"], {
            "results": {"lint": "failed"}})
        [pl] = SIM.api("GET", "/projects/1/merge_requests/1/pipelines").json
        self.assertEqual(pl["status"], "success")

    def test_newest_first_and_errors(self):
        first = self.start()
        second = self.start()
        ids = [p["id"] for p in SIM.api(
            "GET", "/projects/1/merge_requests/1/pipelines").json]
        self.assertEqual(ids, [second["id"], first["id"]])
        self.assertEqual(SIM.api("GET", "/projects/1/pipelines/999999/jobs")
                         .status, 404)
        self.assertEqual(SIM.api("GET", "/projects/1/jobs/999999/trace")
                         .status, 404)
        # A guest may not read pipelines (app/policies/project_policy.rb).
        self.assertEqual(SIM.api("GET", "/projects/1/merge_requests/1/"
                                 "pipelines", "guest-token").status, 403)

    def test_pipeline_hook(self):
        received = []

        class Receiver(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append((self.headers["X-Gitlab-Event"],
                                 json.loads(body)))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            SIM.ctl("POST", "/webhooks", {
                "project": "group/project", "pipeline_events": True,
                "merge_requests_events": False, "note_events": False,
                "url": "http://127.0.0.1:%d/h" % server.server_port})
            pl = self.start([{"name": "unit"}])
            SIM.ctl("POST", "/projects/1/pipelines/%d/finish" % pl["id"],
                    {"results": {"unit": "failed"}})
            self.assertTrue(SIM.ctl("POST", "/webhooks/wait",
                                    {"timeout_s": 10})["idle"])
        finally:
            server.shutdown()
            server.server_close()
        self.assertEqual([(e, p["object_attributes"]["status"])
                          for e, p in received],
                         [("Pipeline Hook", "running"),
                          ("Pipeline Hook", "failed")])
        payload = received[-1][1]
        self.assertEqual(payload["object_kind"], "pipeline")
        self.assertEqual(payload["merge_request"]["iid"], 1)
        self.assertEqual(payload["object_attributes"]["id"], pl["id"])
        self.assertEqual(payload["project"]["path_with_namespace"],
                         "group/project")
        self.assertEqual([b["status"] for b in payload["builds"]],
                         ["failed"])


if __name__ == "__main__":
    unittest.main()
