#!/usr/bin/python3
"""End-to-end test of forge -> list comments: forgesim -> patchbridge run
-> private Postfix (pfbed) -> list archive.  Reuses outbound_e2e's bed.

usage: forgemail_e2e.py comments --patchbridge BIN --work DIR

  comments  an MR mailed as a 3-patch series; rob's diff note on patch 1
            -> "Re: [PATCH 1/3]" In-Reply-To that patch, quoting the hunk
            down to the line, then the comment; a general comment -> a
            reply to the cover; a reply in the diff note's discussion ->
            under the first note's mail; a note with our marker and a
            system note are not mailed; run --once again mails nothing;
            merging on the simulator -> "applied" with the SHAs.

Exit status: 0 pass, 1 fail, 77 skipped (not root, no Postfix).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import outbound_e2e as ob  # noqa: E402
from outbound_e2e import Fail, check, say, sim, msgid  # noqa: E402

SEED = dict(ob.SEED)
SEED["users"] = ob.SEED["users"] + [
    {"username": "rob", "name": "Rob Reviewer", "email": "rob@example.com",
     "public_email": "rob@example.com"}]
SEED["tokens"] = ob.SEED["tokens"] + [
    {"token": "rob-token", "user": "rob", "scopes": ["api"]},
    {"token": "bob-token", "user": "bob", "scopes": ["api"]}]
SEED["projects"] = [dict(ob.SEED["projects"][0])]
SEED["projects"][0]["members"] = dict(SEED["projects"][0]["members"],
                                      rob="developer")


def api(method, path, token, body=None, ok=(200, 201, 202)):
    import json
    import urllib.error
    import urllib.request
    url = os.environ["PB_FORGESIM_URL"] + "/api/v4" + path
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    req.add_header("PRIVATE-TOKEN", token)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, text = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read()
    if status not in ok:
        raise Fail("%s %s: %d %s" % (method, path, status, text[:300]))
    return json.loads(text) if text else None


def forge_mails(bed):
    return [m for m in bed.archive()
            if m["X-Patchbridge-Origin"] == "forge"]


def text(m):
    return m.get_content()


def scenario_comments(bed):
    bed.start_postfix()
    bed.config()
    # [forge] bot_username: the simulator's bot user.
    with open(bed.cfg, encoding="utf-8") as f:
        cfg = f.read().replace("[forge]\n", "[forge]\nbot_username = "
                               "patchbridge\n", 1)
    with open(bed.cfg, "w", encoding="utf-8") as f:
        f.write(cfg)
    ob.create_mr("topic", "Teach x and y to count")
    bed.run("run", "--once")
    bed.wait_mail(4)
    bed.settle()
    s = ob.series_of(bed.archive(), 1, 1)
    ob.check_threading(s, 3)
    ver = api("GET", "/projects/1/merge_requests/1/versions", "rob-token")[0]

    say("rob: a diff note on src/a/x.c line 3 (added)")
    pos = {"position_type": "text", "base_sha": ver["base_commit_sha"],
           "start_sha": ver["start_commit_sha"],
           "head_sha": ver["head_commit_sha"],
           "old_path": "src/a/x.c", "new_path": "src/a/x.c", "new_line": 3}
    disc = api("POST", "/projects/1/merge_requests/1/discussions",
               "rob-token", {"body": "Why **+ 1**? See "
                             "[the docs](https://example.org/d).",
                             "position": pos})
    say("rob: a general comment")
    api("POST", "/projects/1/merge_requests/1/notes", "rob-token",
        {"body": "## Overall\n\nLooks fine otherwise."})
    say("a note with our marker, as the inbound side writes them")
    api("POST", "/projects/1/merge_requests/1/notes", "rob-token",
        {"body": "From the list\n\n<!-- patchbridge:abc.0 -->"})
    say("the bot's own note")
    api("POST", "/projects/1/merge_requests/1/notes", "bot-token",
        {"body": "written by the bridge"})
    bed.run("run", "--once")
    bed.wait_mail(6)
    bed.settle()
    fm = forge_mails(bed)
    check(len(fm) == 2, "want 2 forge mails, got %d: %s" %
          (len(fm), [m["Subject"] for m in fm]))
    diff_mail = [m for m in fm if "1/3" in m["Subject"]]
    check(diff_mail, "no reply to patch 1: %s" % [m["Subject"] for m in fm])
    d = diff_mail[0]
    check(d["Subject"] == "Re: [PATCH 1/3] a: count in x",
          "diff note subject: %s" % d["Subject"])
    check(d["In-Reply-To"].strip("<> ") == msgid(s[1]),
          "diff note not In-Reply-To patch 1")
    check("Rob Reviewer via patchbridge" in d["From"], "From: %s" % d["From"])
    body = text(d)
    want = "> @@ -1,4 +1,4 @@\n> -int x(void)\n> +int x(int n)\n>  {\n" \
           "> -\treturn 1;\n> +\treturn n + 1;\n\n"
    check(want in body, "quote wrong:\n" + body)
    check(body.index(want) < body.index("Why *+ 1*? See the docs "
                                        "<https://example.org/d>."),
          "comment not after the quote / markdown:\n" + body)
    g = [m for m in fm if m is not d][0]
    check(g["In-Reply-To"].strip("<> ") == msgid(s[0]),
          "general comment not a reply to the cover")
    check(g["Subject"] == "Re: [PATCH 0/3] Teach x and y to count",
          "general subject: %s" % g["Subject"])
    check("Overall\n\nLooks fine otherwise." in text(g), text(g))
    for m in fm:
        check(m["X-Patchbridge-Project"] == "group/project" and
              m["X-Patchbridge-MR"] == "1", "loop-guard headers missing")
        check("patchbridge:" not in text(m), "marker leaked")

    say("a reply in the diff note's discussion")
    api("POST", "/projects/1/merge_requests/1/discussions/%s/notes" %
        disc["id"], "bob-token", {"body": "Because it counts."})
    bed.run("run", "--once")
    bed.wait_mail(7)
    bed.settle()
    fm2 = forge_mails(bed)
    r = [m for m in fm2 if "Because it counts." in text(m)]
    check(len(r) == 1, "reply not mailed once")
    check(r[0]["In-Reply-To"].strip("<> ") == msgid(d),
          "discussion reply not under the first note's mail")

    say("run --once again: nothing new")
    bed.run("run", "--once")
    time.sleep(1)
    bed.settle()
    check(len(bed.archive()) == 7, "a re-run mailed again")
    notes = api("GET", "/projects/1/merge_requests/1/notes?per_page=100",
                "rob-token")
    check(not [n for n in notes if "via patchbridge" in n["body"]],
          "a forge mail came back as a note")

    say("bob merges on the forge")
    mr = api("GET", "/projects/1/merge_requests/1", "bob-token")
    api("PUT", "/projects/1/merge_requests/1/merge", "bob-token",
        {"sha": mr["sha"]})
    bed.run("run", "--once")
    bed.wait_mail(8)
    bed.settle()
    a = [m for m in forge_mails(bed) if "applied" in text(m)]
    check(len(a) == 1, "no applied mail")
    check(a[0]["In-Reply-To"].strip("<> ") == msgid(s[0]),
          "applied not a reply to the cover")
    commits = api("GET", "/projects/1/merge_requests/1/commits", "bob-token")
    for c in commits:
        check(c["id"] in text(a[0]), "applied misses %s:\n%s" %
              (c["id"], text(a[0])))


SCENARIOS = {"comments": scenario_comments}


def main():
    ob.SEED = SEED
    ob.SCENARIOS = SCENARIOS
    return ob.main()


if __name__ == "__main__":
    sys.exit(main())
