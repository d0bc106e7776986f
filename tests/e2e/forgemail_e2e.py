#!/usr/bin/python3
"""End-to-end test of forge -> list comments: forgesim -> patchbridge run
-> private Postfix (pfbed) -> list archive.  Reuses outbound_e2e's bed.

usage: forgemail_e2e.py comments|merges|internal|quick|stuck|quicklook|
                        noreply|pushed|late|commit|suggest|unack|retargeted|
                        pipelines|waitci|threads|listthread|reviews
                        --patchbridge BIN --work DIR

  comments  an MR mailed as a 3-patch series; rob's diff note on patch 1
            -> "Re: [PATCH 1/3]" In-Reply-To that patch, quoting the hunk
            down to the line, then the comment; a general comment -> a
            reply to the cover; a reply in the diff note's discussion ->
            under the first note's mail; a note with our marker and a
            system note are not mailed; run --once again mails nothing;
            list replies (through Postfix and patchbridge-milter) to the
            diff note's mail and to the general comment's mail -> notes in
            those same forge discussions (the first a DiffNote reply at
            the same position), never mailed back; merging on the
            simulator -> "applied" with the SHAs and the merge commit.
  merges    the "applied" mail per merge method: a squash with a merge
            commit names the squash and the merge commit and each patch
            as mailed; a fast-forward after GitLab's rebase names each
            patch's rebased commit (paired by patch-id through the git
            mirror) beside the mailed one; a fast-forward squash; a
            semi-linear merge commit after a rebase.
  internal  an internal note, and a reply in an internal thread, on the
            forge: the list gets neither, a public comment made meanwhile
            is mailed, and `status` says two were kept back as internal.
  quick     two forge comments 10 s apart on one MR (GitLab's
            ThrottledTouch leaves updated_at as it was for the second;
            the simulated clock moves, nobody waits): both reach the list,
            once each, by polling; then the same with a note webhook and
            `run --foreground`, which mails each at once.
  quicklook once an MR's discussions were read, later runs look at its
            newest notes first and read the discussions only for a note
            that needs them: the bridge's own notes and an edited comment
            do not (nothing mailed, no discussions read); an answer in an
            old thread among our notes is mailed under the thread's mail;
            an internal note is kept back and counted.
  noreply   an approval on the forge by a user with no public email is
            mailed with GitLab's no-reply address: its host is the
            forge's commit_email_hostname when the token may read it (an
            administrator's), else GitLab's default users.noreply.HOST.
  pushed    rob's diff note on v1 is mailed; a push (v2) leaves its
            file's diff as it was, so GitLab moves the thread to v2; a
            list reply to the note's mail still continues that thread
            (one diff thread, the answer a DiffNote at its position).
  late      a diff note whose transaction is slow (its id lower than a
            comment seen before it) is mailed when it appears, once;
            later runs neither mail it again nor read the threads (with
            mail_resolved = no, which reads them while a mailed thread
            is open).
  commit    a comment on one commit's own diff (the Commits tab), at a
            line a later commit changes: mailed under that commit's
            patch, quoting that patch's hunk.
  suggest   a diff note's suggestion (```suggestion:-1+1) is mailed as
            the change it makes: "Suggested change to src/a/x.c lines
            2-4:", the lines it replaces as "-", the suggestion as "+";
            a one-line suggestion in a reply of its thread too; a
            suggestion block in a general comment stays code.
  unack     an approval withdrawn on the forge ("unapproved this merge
            request") is mailed once, under the approval's mail: "Bob
            Maintainer withdrew the approval given on v1 (the forge no
            longer counts it)."; one the bridge made for a list trailer
            likewise, under the cover letter; no trailer in it, nothing
            comes back through the milter; the daemon, with merge
            request hooks firing, mails a second approval and its
            withdrawal once each.
  retargeted an MR stacked on another branch is retargeted onto it: the
            same head on a new base is v2; rob's diff note on v1's
            version, on the file only v1 has, is mailed under v1's
            patch of that file, quoting it.
  pipelines v1's pipeline fails (a test job with a coloured log, a lint
            job allowed to fail): one reply to v1's cover names the failed
            jobs, their stage and links, and quotes the end of the log
            without its escapes; v2 is pushed, its pipeline passes (the
            daemon told by a Pipeline Hook): one reply to v2's cover says
            so; v1's pipeline retried and passing is mailed under v1's
            cover; nothing is mailed twice, with mail_pipelines = no
            nothing is mailed.
  waitci    [project] wait_for_pipeline = yes: v1 waits while its pipeline
            runs and is mailed once it passed; v2's pipeline never
            finishes: v2 is mailed after pipeline_wait_max with a note in
            its cover letter saying so.
  threads   rob opens three review threads on v1 (diff notes on
            src/a/x.c, src/b/y.c and docs/readme.txt), mailed under
            their patches; alice resolves the docs thread on the forge
            (which touches neither the MR nor its notes): the list gets
            "This thread (docs/readme.txt:1) was resolved by Alice
            Developer on the forge." as a reply to that thread's mail,
            once; a push (v2) is mailed with a cover letter that lists
            the two open threads under "Open from v1:" with file:line,
            who, the first line and the link, and the resolved one under
            "Resolved since v1:", and the reviewers of the subsystems it
            touches; the v2 series still applies with git am.
  listthread dave comments inline on patch 1 from the list; the bridge
            makes it a diff thread; alice resolves it on the forge: the
            list gets the resolution as a reply to dave's mail, once.
  reviews   owners.yaml requires bob's approval for src/a/ and tells
            anna of src/b/: v1's cover letter says so; bob approves on
            the forge: "All required reviews are in: sub-a (Bob
            Maintainer)." under the cover letter, once; he withdraws it:
            "The required reviews are no longer all in: waiting for
            sub-a."
  stuck     every git fetch fails: a rebased MR's applied mail waits
            (pending cursor) while a later MR's comment is mailed; with
            its first failure an hour back, the mail names the tip and
            each patch as mailed; then, the mirror removed before a
            rebased merge, each patch "could not be compared".

Exit status: 0 pass, 1 fail, 77 skipped (not root, no Postfix).
"""

import html
import os
import re
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bedlib  # noqa: E402
import outbound_e2e as ob  # noqa: E402
from bedlib import Fail, check, quote, reply, say, the_mr  # noqa: E402
from outbound_e2e import sim, msgid  # noqa: E402

SEED = dict(ob.SEED)
SEED["users"] = ob.SEED["users"] + [
    {"username": "rob", "name": "Rob Reviewer", "email": "rob@example.com",
     "public_email": "rob@example.com"}]
SEED["tokens"] = ob.SEED["tokens"] + [
    {"token": "rob-token", "user": "rob", "scopes": ["api"]},
    {"token": "bob-token", "user": "bob", "scopes": ["api"]},
    {"token": "carol-token", "user": "carol", "scopes": ["api"]},
    {"token": "root-token", "user": "root", "scopes": ["api"]},
    {"token": "alice-token", "user": "alice", "scopes": ["api"]}]
SEED["projects"] = [dict(ob.SEED["projects"][0])]
SEED["projects"][0]["members"] = dict(SEED["projects"][0]["members"],
                                      rob="developer")


def api(method, path, token, body=None, ok=(200, 201, 202)):
    return bedlib.sim(method, "/api/v4" + path, body, token=token, ok=ok)


# A list subscriber with no forge account.
DAVE = "Dave Reader <dave@reader.example>"


def start_list(bed):
    """The private Postfix with patchbridge-milter in front of the list,
    as in inbound_e2e: list replies to bridged mail are spooled for
    `patchbridge run`; the bridge's own mail passes through it too."""
    milter = os.environ.get("PB_MILTER") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(bed.patchbridge))),
        "milter", "patchbridge-milter")
    if not os.access(milter, os.X_OK):
        raise Fail("no patchbridge-milter at %s (set PB_MILTER)" % milter)
    msock = os.path.join(bed.sockets(), "patchbridge.sock")
    bed.start_postfix("--milter", "unix:" + msock)
    os.makedirs(os.path.join(bed.work, "spool"), exist_ok=True)
    # [forge] bot_username: the simulator's bot user.
    bed.config(extra="\n[milter]\nsocket = unix:%s\n[spool]\ndir = %s\n"
               % (msock, os.path.join(bed.work, "spool")))
    with open(bed.cfg, encoding="utf-8") as f:
        cfg = f.read().replace("[forge]\n", "[forge]\nbot_username = "
                               "patchbridge\n", 1)
    bed.write("patchbridge.conf", cfg)  # (on every host of a pair)
    bed.start_milter(milter, msock)
    say("postfix on port %d with patchbridge-milter" % bed.port)


def discussion_with(mr, text):
    """The discussions holding a note whose body has text."""
    return [d for d in mr["discussions"]
            if any(text in html.unescape(n["body"]) for n in d["notes"])]


def forge_mails(bed):
    return [m for m in bed.archive()
            if m["X-Patchbridge-Origin"] == "forge"]


def text(m):
    return m.get_content()


def scenario_comments(bed):
    start_list(bed)
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
    say("rob pastes our marker, as the inbound side writes it: mailed")
    api("POST", "/projects/1/merge_requests/1/notes", "rob-token",
        {"body": "Hidden from the list?\n\n<!-- patchbridge:"
         "pb1-%032x.0 -->" % 7})
    say("the bridge's own note, with its marker: not mailed")
    api("POST", "/projects/1/merge_requests/1/notes", "bot-token",
        {"body": "From the list\n\n<!-- patchbridge:pb1-%032x.0 -->" % 8})
    say("the bot's own note")
    api("POST", "/projects/1/merge_requests/1/notes", "bot-token",
        {"body": "written by the bridge"})
    bed.run("run", "--once")
    bed.wait_mail(7)
    bed.settle()
    fm = forge_mails(bed)
    check(len(fm) == 3, "want 3 forge mails, got %d: %s" %
          (len(fm), [m["Subject"] for m in fm]))
    check(len([m for m in fm if "Hidden from the list?" in text(m)]) == 1,
          "rob's note with a pasted marker not mailed")
    check(not [m for m in fm if "From the list" in text(m) or
               "written by the bridge" in text(m)],
          "the bridge's own note mailed")
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
    g = [m for m in fm if "Looks fine otherwise." in text(m)][0]
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
    bed.wait_mail(8)
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
    check(len(bed.archive()) == 8, "a re-run mailed again")
    notes = api("GET", "/projects/1/merge_requests/1/notes?per_page=100",
                "rob-token")
    check(not [n for n in notes if "via patchbridge" in n["body"]],
          "a forge mail came back as a note")

    archived = list_replies(bed, disc, d, g)

    say("bob merges on the forge")
    mr = api("GET", "/projects/1/merge_requests/1", "bob-token")
    api("PUT", "/projects/1/merge_requests/1/merge", "bob-token",
        {"sha": mr["sha"]})
    bed.run("run", "--once")
    bed.wait_mail(archived + 1)
    bed.settle()
    a = [m for m in forge_mails(bed) if "applied" in text(m)]
    check(len(a) == 1, "no applied mail")
    check(a[0]["In-Reply-To"].strip("<> ") == msgid(s[0]),
          "applied not a reply to the cover")
    commits = api("GET", "/projects/1/merge_requests/1/commits", "bob-token")
    for c in commits:
        check(c["id"] in text(a[0]), "applied misses %s:\n%s" %
              (c["id"], text(a[0])))
    merged = api("GET", "/projects/1/merge_requests/1", "bob-token")
    check("Merged in %s." % merged["merge_commit_sha"] in text(a[0]),
          "applied does not name the merge commit:\n" + text(a[0]))


def list_replies(bed, disc, d, g):
    """A list reply to a forge comment's mail
    becomes a reply in that same forge discussion, and is not mailed
    back."""
    say("dave replies on the list to the diff note's and the general "
        "comment's mails")
    before = len(bed.archive())
    forge_before = len(forge_mails(bed))
    raw, rid_d = reply(d, DAVE, quote(text(d)) +
                          "\nLIST-REPLY-DIFF: x(0) must stay 1, so n + 1 "
                          "it is.\n")
    bed.send(raw, "dave@reader.example")
    raw, rid_g = reply(g, DAVE, quote(text(g)) +
                          "\nLIST-REPLY-GENERAL: thanks, a v2 follows.\n")
    bed.send(raw, "dave@reader.example")
    bed.wait_mail(before + 2)
    bed.settle()
    for m in bed.archive():
        if msgid(m) in (rid_d, rid_g):
            check(m.get("X-Patchbridge"),
                  "the milter did not take the reply %s" % m["Subject"])
    bed.run("run", "--once")
    mr = the_mr()

    found = discussion_with(mr, "LIST-REPLY-DIFF")
    check(len(found) == 1, "the diff-note reply is in %d discussions"
          % len(found))
    check(found[0]["id"] == disc["id"],
          "the diff-note reply started a discussion of its own, not a "
          "reply in %s: %s" % (disc["id"], found[0]["id"]))
    first, last = found[0]["notes"][0], found[0]["notes"][-1]
    check("LIST-REPLY-DIFF" in html.unescape(last["body"]),
          "the reply is not the discussion's newest note")
    check(last["author"] == "patchbridge", "posted as %s" % last["author"])
    check("Dave Reader" in html.unescape(last["body"]),
          "the footer does not name the sender:\n" + last["body"])
    check(last["type"] == "DiffNote" and
          last["position"] == first["position"],
          "not a DiffNote reply at the thread's position: %s %s" %
          (last["type"], last["position"]))
    say("the diff-note reply is note %d of discussion %s (DiffNote at "
        "%s:%s)" % (len(found[0]["notes"]), disc["id"][:8],
                    last["position"]["new_path"],
                    last["position"]["new_line"]))

    general = discussion_with(mr, "Looks fine otherwise.")
    check(len(general) == 1, "general comment in %d discussions" %
          len(general))
    found = discussion_with(mr, "LIST-REPLY-GENERAL")
    check(len(found) == 1 and found[0]["id"] == general[0]["id"],
          "the reply to the general comment did not continue its "
          "discussion: %s" % [f["id"] for f in found])
    check(not found[0]["individual_note"] and
          len(found[0]["notes"]) == 2,
          "the general comment's discussion: %s" % found[0])
    say("the general-comment reply continues discussion %s" %
        general[0]["id"][:8])

    say("run --once twice more: the replies are not mailed back")
    bed.run("run", "--once")
    bed.run("run", "--once")
    time.sleep(1)
    bed.settle()
    check(len(forge_mails(bed)) == forge_before,
          "a list reply came back to the list: %s" %
          [m["Subject"] for m in forge_mails(bed)][forge_before:])
    check(len(bed.archive()) == before + 2, "the archive grew")
    return before + 2


# --- merges: the applied mail names the final commits -------------------

def two_commits(tag):
    return [ob.commit("%s: add one" % tag,
                      {"%s/one.c" % tag: "int one(void) { return 1; }\n"}),
            ob.commit("%s: add two" % tag,
                      {"%s/two.c" % tag: "int two(void) { return 2; }\n"})]


def mail_mr(bed, tag):
    """An MR of two commits, branched from main now, mailed as v1.
    Returns its iid and its commits oldest first, as mailed."""
    before = len(bed.archive())
    mr, _ = ob.create_mr(tag, "Add %s" % tag, commits=two_commits(tag))
    bed.run("run", "--once")
    bed.wait_mail(before + 3)
    bed.settle()
    commits = api("GET", "/projects/1/merge_requests/%d/commits" %
                  mr["iid"], "bob-token")
    return mr["iid"], [c["id"] for c in reversed(commits)]


def move_main(tag):
    sim("POST", "/_sim/projects/1/commits",
        {"branch": "main", "commits": [ob.commit(
            "main moves on before %s" % tag,
            {"NEWS.%s" % tag: "news\n"})]})


def merge(iid, **extra):
    mr = api("GET", "/projects/1/merge_requests/%d" % iid, "bob-token")
    body = dict(sha=mr["sha"], **extra)
    return api("PUT", "/projects/1/merge_requests/%d/merge" % iid,
               "bob-token", body)


def applied_mail(bed, iid):
    before = len(bed.archive())
    bed.run("run", "--once")
    bed.wait_mail(before + 1)
    bed.settle()
    a = [m for m in forge_mails(bed) if m["X-Patchbridge-MR"] == str(iid)
         and "applied" in text(m)]
    check(len(a) == 1, "!%d: %d applied mails" % (iid, len(a)))
    body = text(a[0])
    say("!%d applied:\n    %s" % (iid, "\n    ".join(
        body.split("\n-- \n")[0].strip().splitlines()[2:])))
    return body


def patch_lines(body):
    """[k/M] title -> the lines under it."""
    out, cur = {}, None
    for line in body.splitlines():
        m = re.match(r"\[(\d+)/\d+\] ", line)
        if m:
            cur = out.setdefault(int(m.group(1)), [])
        elif cur is not None and line.startswith("      "):
            cur.append(line.strip())
        else:
            cur = None
    return out


def scenario_merges(bed):
    start_list(bed)

    say("squash with a merge commit (merge_method merge, squash), "
        "approved on the forge first")
    iid, mailed = mail_mr(bed, "squash")
    before = len(bed.archive())
    api("POST", "/projects/1/merge_requests/%d/approve" % iid, "bob-token",
        {})
    bed.run("run", "--once")
    bed.wait_mail(before + 1)
    bed.settle()
    done = merge(iid, squash=True)
    check(done["squash_commit_sha"] and done["merge_commit_sha"],
          "the simulator did not squash: %s" % done)
    body = applied_mail(bed, iid)
    check("\nApprovals:\n- Bob Maintainer: on the forge\n" in body,
          "the applied mail does not say where the approval came from")
    check("Squashed into one commit: %s" % done["squash_commit_sha"]
          in body, "no squash commit:\n" + body)
    check("Merged in %s." % done["merge_commit_sha"] in body,
          "no merge commit:\n" + body)
    lines = patch_lines(body)
    for k, sha in enumerate(mailed, 1):
        check(lines.get(k) == ["mailed as %s" % sha],
              "patch %d: %s" % (k, lines.get(k)))

    say("fast-forward after GitLab's rebase (merge_method ff)")
    sim("PUT", "/_sim/projects/1/settings", {"merge_method": "ff"})
    iid, mailed = mail_mr(bed, "ff")
    move_main("ff")
    sim("POST", "/_sim/projects/1/merge_requests/%d/rebase" % iid, {})
    landed = [c["id"] for c in reversed(api(
        "GET", "/projects/1/merge_requests/%d/commits" % iid, "bob-token"))]
    check(not set(landed) & set(mailed), "the rebase kept the SHAs")
    done = merge(iid)
    check(done["merge_commit_sha"] is None, "ff made a merge commit")
    body = applied_mail(bed, iid)
    check("paired with the mailed\none by patch-id" in body, body)
    lines = patch_lines(body)
    for k, (old, new) in enumerate(zip(mailed, landed), 1):
        check(lines.get(k) == ["commit: %s" % new, "mailed as %s" % old],
              "patch %d: %s, want %s from %s" % (k, lines.get(k), new, old))
    check("Merged in" not in body, "a merge commit named for ff")

    say("fast-forward with squash")
    iid, mailed = mail_mr(bed, "ffsquash")
    done = merge(iid, squash=True)
    check(done["merge_commit_sha"] is None and done["squash_commit_sha"],
          "ff squash: %s" % done)
    body = applied_mail(bed, iid)
    check("Squashed into one commit: %s" % done["squash_commit_sha"]
          in body and "Merged in" not in body, body)

    say("fast-forward, nothing to rebase: the commits as mailed")
    iid, mailed = mail_mr(bed, "ffplain")
    done = merge(iid)
    body = applied_mail(bed, iid)
    lines = patch_lines(body)
    for k, sha in enumerate(mailed, 1):
        check(lines.get(k) == ["commit: %s" % sha], "patch %d: %s" %
              (k, lines.get(k)))
    check("Fast-forwarded: main ends at %s." % mailed[-1] in body, body)

    say("merge commit with semi-linear history (merge_method "
        "rebase_merge), after a rebase")
    sim("PUT", "/_sim/projects/1/settings",
        {"merge_method": "rebase_merge"})
    iid, mailed = mail_mr(bed, "semi")
    move_main("semi")
    sim("POST", "/_sim/projects/1/merge_requests/%d/rebase" % iid, {})
    landed = [c["id"] for c in reversed(api(
        "GET", "/projects/1/merge_requests/%d/commits" % iid, "bob-token"))]
    done = merge(iid)
    body = applied_mail(bed, iid)
    lines = patch_lines(body)
    for k, (old, new) in enumerate(zip(mailed, landed), 1):
        check(lines.get(k) == ["commit: %s" % new, "mailed as %s" % old],
              "patch %d: %s" % (k, lines.get(k)))
    check("Merged in %s." % done["merge_commit_sha"] in body, body)

    say("a push after the last mailed revision changed patch 2, and was "
        "merged before the bridge saw it")
    iid, mailed = mail_mr(bed, "edit")
    again = two_commits("edit")
    again[1]["files"]["edit/two.c"] = "int two(void) { return 22; }\n"
    sim("POST", "/_sim/projects/1/merge_requests/%d/push" % iid,
        {"commits": again, "start": "main"})
    landed = [c["id"] for c in reversed(api(
        "GET", "/projects/1/merge_requests/%d/commits" % iid, "bob-token"))]
    done = merge(iid)
    body = applied_mail(bed, iid)
    lines = patch_lines(body)
    check(lines.get(1) == ["commit: %s" % landed[0],
                           "mailed as %s" % mailed[0]], lines.get(1))
    check(lines.get(2) == ["commit: ? (none has its patch-id: it changed "
                           "after it was mailed)",
                           "mailed as %s" % mailed[1]], lines.get(2))

    say("run --once again: no second applied mail")
    n = len(bed.archive())
    bed.run("run", "--once")
    time.sleep(1)
    bed.settle()
    check(len(bed.archive()) == n, "mailed again")


# --- stuck: the git mirror fails, the other MRs go on -------------------

def pending_cursor(bed, value=None):
    """forgemail's pending MRs of group/project in the state db; with
    value, set them (as if the first failure was long ago)."""
    return bed.state_cursor("forgemail:pending:group/project", value)


def scenario_stuck(bed):
    start_list(bed)
    sim("PUT", "/_sim/projects/1/settings", {"merge_method": "ff"})
    other, _ = mail_mr(bed, "other")
    iid, mailed = mail_mr(bed, "stuck")
    move_main("stuck")
    sim("POST", "/_sim/projects/1/merge_requests/%d/rebase" % iid, {})
    merge(iid)
    tip = api("GET", "/projects/1/merge_requests/%d" % iid,
              "bob-token")["sha"]
    api("POST", "/projects/1/merge_requests/%d/notes" % other, "rob-token",
        {"body": "A comment after the merge of !%d." % iid})

    say("every git fetch fails: !%d's applied mail waits, !%d's comment "
        "does not" % (iid, other))
    sim("POST", "/_sim/faults", {"kind": "error", "path": r"\.git/",
                                 "status": 503, "count": 1000})
    before = len(bed.archive())
    bed.run("run", "--once")
    bed.wait_mail(before + 1)
    bed.settle()
    fm = forge_mails(bed)
    check([m for m in fm if m["X-Patchbridge-MR"] == str(other)
           and "after the merge" in text(m)], "the comment was not mailed")
    check(not [m for m in fm if m["X-Patchbridge-MR"] == str(iid)],
          "!%d mailed while the fetch fails" % iid)
    pending = pending_cursor(bed)
    check(pending and pending.startswith("%d:" % iid),
          "pending cursor: %r" % pending)
    say("pending: %s" % pending)

    say("an hour of failures later: the applied mail names the tip only")
    pending_cursor(bed, "%d:%d:0:5" % (iid, (time.time() - 7200) * 1000))
    body = applied_mail(bed, iid)
    check("series ends at %s." % tip in body, body)
    lines = patch_lines(body)
    for k, sha in enumerate(mailed, 1):
        check(lines.get(k) == ["mailed as %s" % sha],
              "patch %d: %s" % (k, lines.get(k)))
    check(pending_cursor(bed) == "", "still pending: %r" %
          pending_cursor(bed))
    sim("DELETE", "/_sim/faults")

    say("the mirror lost before a rebased merge: the mailed commits could "
        "not be compared")
    iid, mailed = mail_mr(bed, "lost")
    move_main("lost")
    sim("POST", "/_sim/projects/1/merge_requests/%d/rebase" % iid, {})
    merge(iid)
    tip = api("GET", "/projects/1/merge_requests/%d" % iid,
              "bob-token")["sha"]
    mirrors = [d for d in bed.local_paths(os.path.join("state", "mirrors"))
               if os.path.isdir(d)]
    check(mirrors, "no git mirror to lose")
    for d in mirrors:
        shutil.rmtree(d)
    body = applied_mail(bed, iid)
    check("series ends at %s." % tip in body, body)
    lines = patch_lines(body)
    for k, sha in enumerate(mailed, 1):
        check(lines.get(k) == ["commit: ? (the mailed commit could not be "
                               "compared)", "mailed as %s" % sha],
              "patch %d: %s" % (k, lines.get(k)))


def mailed_once(bed, text_, total):
    """The list has total mails, one forge mail holding text_."""
    bed.wait_mail(total)
    bed.settle()
    got = [m for m in forge_mails(bed) if text_ in text(m)]
    check(len(got) == 1, "%r mailed %d times" % (text_, len(got)))
    check(len(bed.archive()) == total,
          "want %d mails, got %d" % (total, len(bed.archive())))
    return got[0]


def mail_v1(bed):
    """The list server without the milter, and MR !1 mailed as v1 (a
    cover letter and 3 patches): its series by patch number."""
    bed.start_postfix()
    bed.config()
    ob.create_mr("topic", "Teach x and y to count")
    bed.run("run", "--once")
    bed.wait_mail(4)
    bed.settle()
    return ob.series_of(bed.archive(), 1, 1)


def scenario_internal(bed):
    mail_v1(bed)

    say("bob: an internal note; rob replies in its thread")
    note = api("POST", "/projects/1/merge_requests/1/notes", "bob-token",
               {"body": "INTERNAL: the CVE is not public yet",
                "internal": True})
    check(note["internal"], "the note is not internal: %s" % note)
    disc = [d for d in the_mr()["discussions"]
            if d["notes"][0]["id"] == note["id"]][0]
    answer = api("POST", "/projects/1/merge_requests/1/discussions/%s/notes"
                 % disc["id"], "rob-token",
                 {"body": "INTERNAL: agreed, embargo until Friday"})
    check(answer["internal"], "the reply is not internal: %s" % answer)
    say("rob: a public comment")
    api("POST", "/projects/1/merge_requests/1/notes", "rob-token",
        {"body": "Public: looks fine to me."})
    bed.run("run", "--once")
    mailed_once(bed, "Public: looks fine to me.", 5)
    bed.run("run", "--once")
    time.sleep(1)
    bed.settle()
    for m in bed.archive():
        check("INTERNAL" not in m.raw.decode("utf-8", "replace"),
              "an internal note reached the list: %s" % m["Subject"])
    check(len(bed.archive()) == 5, "a re-run mailed again")
    status = bed.run("status")
    check("forge comments kept on the forge as internal: 2" in status,
          "status does not say they were kept back:\n" + status)
    check("kept on the forge: internal" in bed.log_text(),
          "no log line for a kept note")


def scenario_noreply(bed):
    bed.start_postfix()
    bed.config()
    # An administrator changed the host of private commit emails.
    sim("PUT", "/_sim/settings",
        {"commit_email_hostname": "users.noreply.git.example.net"})
    ob.create_mr("topic", "Teach x and y to count")
    bed.run("run", "--once")
    bed.wait_mail(4)
    bed.settle()
    carol = [u for u in api("GET", "/users?username=carol", "bob-token")][0]

    say("carol (no public email) approves; the bridge's token is no "
        "administrator's: GitLab's default host stands in")
    api("POST", "/projects/1/merge_requests/1/approve", "carol-token")
    bed.run("run", "--once")
    m = mailed_once(bed, "Carol Private approved", 5)
    host = "users.noreply." + re.sub(r"^https?://([^/:]+).*", r"\1",
                                      os.environ["PB_FORGESIM_URL"])
    want = "<%d-carol@%s>" % (carol["id"], host)
    check(want in text(m), "not %s:\n%s" % (want, text(m)))

    say("with an administrator's token, the host GitLab is set to")
    api("POST", "/projects/1/merge_requests/1/unapprove", "carol-token")
    bed.write("token", "root-token\n", 0o600)
    bed.run("run", "--once")
    bed.settle()
    api("POST", "/projects/1/merge_requests/1/approve", "carol-token")
    bed.run("run", "--once")
    bed.wait_mail(6)
    bed.settle()
    got = [x for x in forge_mails(bed) if "Carol Private approved" in text(x)]
    check(len(got) == 2, "want two approval mails, got %d" % len(got))
    want = "<%d-carol@users.noreply.git.example.net>" % carol["id"]
    check(any(want in text(x) for x in got),
          "no approval mail names %s:\n%s" % (
              want, "\n".join(text(x) for x in got)))


def note_at(token, body, advance_s):
    """A comment after moving the simulated clock on advance_s."""
    sim("POST", "/_sim/time", {"advance_s": advance_s})
    return api("POST", "/projects/1/merge_requests/1/notes", token,
               {"body": body})


def scenario_quick(bed):
    bed.start_postfix()
    port = bedlib.free_port()
    secret = bed.write("webhook.secret", "s3cret-token\n", 0o600)
    # No overlap: the listing starts at the newest updated_at seen, as a
    # busy project's watermark soon does after a minute or two.
    bed.config(outbound="poll_overlap = 0s")
    ob.create_mr("topic", "Teach x and y to count")
    ob.create_mr("other", "Count in y too", commits=[ob.V1[0]])
    bed.run("run", "--once")
    bed.wait_mail(5)
    bed.settle()

    say("polling: comment 1, then comment 2 10 s later")
    first = note_at("rob-token", "Quick one.", 120)
    moved = api("GET", "/projects/1/merge_requests/1", "rob-token")
    check(moved["updated_at"] >= first["created_at"],
          "comment 1 did not touch the MR")
    bed.run("run", "--once")
    mailed_once(bed, "Quick one.", 6)
    say("!2 changes, and a poll moves the watermark past !1")
    sim("POST", "/_sim/time", {"advance_s": 5})
    api("PUT", "/projects/1/merge_requests/2", "bob-token",
        {"add_labels": ["busy"]})
    bed.run("run", "--once")
    second = note_at("rob-token", "Quick two.", 5)
    after = api("GET", "/projects/1/merge_requests/1", "rob-token")
    check(after["updated_at"] == moved["updated_at"] and
          second["created_at"] > after["updated_at"],
          "the throttle did not hold updated_at: %s / %s" %
          (after["updated_at"], second["created_at"]))
    bed.run("run", "--once")
    mailed_once(bed, "Quick two.", 7)
    bed.run("run", "--once")
    time.sleep(1)
    bed.settle()
    check(len(bed.archive()) == 7, "a re-run mailed again")

    say("a note webhook and the daemon: comments 3 and 4, 10 s apart")
    extra = ("[webhook]\nenabled = yes\nlisten = 127.0.0.1:%d\n"
             "secret_file = %s\n" % (port, secret))
    bed.config(extra=extra, outbound="poll_overlap = 0s")
    d = bed.daemon()
    ob.wait_listen(port, d, bed)
    url = "http://127.0.0.1:%d/hooks/gitlab" % port
    sim("POST", "/_sim/webhooks", {"project": 1, "url": url,
                                   "token": "s3cret-token",
                                   "merge_requests_events": False,
                                   "note_events": True})
    note_at("rob-token", "Quick three.", 120)
    got = ob.deliveries(url)
    check(got and got[-1]["event"] == "Note Hook" and
          got[-1]["response_status"] == 200,
          "the note hook: %s" % [(x["event"], x["response_status"])
                                 for x in got])
    mailed_once(bed, "Quick three.", 8)
    note_at("rob-token", "Quick four.", 9)
    got = ob.deliveries(url)
    check(len(got) == 2 and got[-1]["response_status"] == 200,
          "the second note hook: %s" % [x["response_status"] for x in got])
    mailed_once(bed, "Quick four.", 9)
    d.send_signal(signal.SIGTERM)
    check(d.wait(timeout=bedlib.bound(30)) == 0, "the daemon did not stop cleanly")
    bed.run("run", "--once")
    time.sleep(1)
    bed.settle()
    check(len(bed.archive()) == 9, "a comment was mailed twice")
    check(bed.log_text().count("Note Hook") >= 2,
          "the receiver did not log the note hooks")


def ours(i):
    """A note as the bridge posts a list reply: its hidden marker."""
    return api("POST", "/projects/1/merge_requests/1/notes", "bot-token",
               {"body": "Applied from the list (%d).\n\n<!-- patchbridge:"
                "pb1-%032x.0 -->" % (i, i)})


def read_discussions(since):
    """The GETs of MR !1's discussions logged since request number since."""
    log = sim("GET", "/_sim/requests")[since:]
    return [r for r in log if r["method"] == "GET" and
            r["path"].endswith("/merge_requests/1/discussions")]


def log_len():
    return len(sim("GET", "/_sim/requests"))


def scenario_quicklook(bed):
    bed.start_postfix()
    bed.config()
    ob.create_mr("topic", "Teach x and y to count")
    bed.run("run", "--once")
    bed.wait_mail(4)
    bed.settle()

    say("rob: a comment and a thread, mailed as before")
    first = api("POST", "/projects/1/merge_requests/1/notes", "rob-token",
                {"body": "First: looks right."})
    thread = api("POST", "/projects/1/merge_requests/1/discussions",
                 "rob-token", {"body": "Thread: why a step of 2?"})
    bed.run("run", "--once")
    bed.wait_mail(6)
    bed.settle()
    tmail = mailed_once(bed, "Thread: why a step of 2?", 6)

    say("the bridge's own notes only: the notes are read, not the threads")
    for i in range(5):
        ours(i)
    mark = log_len()
    bed.run("run", "--once")
    check(not read_discussions(mark),
          "the discussions were read for notes that are never mailed")
    time.sleep(1)
    bed.settle()
    check(len(bed.archive()) == 6, "a note of ours was mailed")

    say("an old comment edited: not mailed again, the threads not read")
    api("PUT", "/projects/1/merge_requests/1/notes/%d" % first["id"],
        "rob-token", {"body": "First: looks right (edited)."})
    mark = log_len()
    bed.run("run", "--once")
    check(not read_discussions(mark), "an edit made the threads be read")
    time.sleep(1)
    bed.settle()
    check(len(bed.archive()) == 6, "an edited comment was mailed again")

    say("bob answers in the old thread, behind more notes of ours")
    for i in range(5, 8):
        ours(i)
    api("POST", "/projects/1/merge_requests/1/discussions/%s/notes"
        % thread["id"], "bob-token", {"body": "Answer: to skip odd ones."})
    ours(8)
    mark = log_len()
    bed.run("run", "--once")
    check(read_discussions(mark), "the threads were not read for a reply")
    answer = mailed_once(bed, "Answer: to skip odd ones.", 7)
    check(answer["In-Reply-To"].strip("<> ") == msgid(tmail),
          "the answer is not under the thread's mail")

    say("an internal note among ours: kept on the forge, counted")
    ours(9)
    api("POST", "/projects/1/merge_requests/1/notes", "bob-token",
        {"body": "INTERNAL: hold until Friday", "internal": True})
    bed.run("run", "--once")
    time.sleep(1)
    bed.settle()
    check(len(bed.archive()) == 7, "the internal note was mailed")
    status = bed.run("status")
    check("forge comments kept on the forge as internal: 1" in status,
          "status does not say it was kept back:\n" + status)

    say("nothing new: nothing mailed, the threads not read")
    mark = log_len()
    bed.run("run", "--once")
    check(not read_discussions(mark), "the threads were read for nothing")
    time.sleep(1)
    bed.settle()
    check(len(bed.archive()) == 7, "a re-run mailed again")

    say("rob ends a note with our marker, exactly as ours end: mailed "
        "(no bot_username: the token's user asked from the forge)")
    api("POST", "/projects/1/merge_requests/1/notes", "rob-token",
        {"body": "Hidden from the list?\n\n<!-- patchbridge:"
         "pb1-%032x.0 -->" % 99})
    ours(10)
    bed.run("run", "--once")
    mailed_once(bed, "Hidden from the list?", 8)
    check("the bridge's user is patchbridge" in bed.log_text(),
          "the bridge's user was not asked from the forge")


def scenario_pushed(bed):
    start_list(bed)
    ob.create_mr("topic", "Teach x and y to count")
    bed.run("run", "--once")
    bed.wait_mail(4)
    bed.settle()
    ver = api("GET", "/projects/1/merge_requests/1/versions", "rob-token")[0]
    say("rob: a diff note on src/a/x.c line 3 of v1")
    pos = {"position_type": "text", "base_sha": ver["base_commit_sha"],
           "start_sha": ver["start_commit_sha"],
           "head_sha": ver["head_commit_sha"],
           "old_path": "src/a/x.c", "new_path": "src/a/x.c", "new_line": 3}
    disc = api("POST", "/projects/1/merge_requests/1/discussions",
               "rob-token", {"body": "Why + 1?", "position": pos})
    bed.run("run", "--once")
    bed.wait_mail(5)
    bed.settle()
    d = [m for m in forge_mails(bed) if "Why + 1?" in text(m)]
    check(len(d) == 1, "the diff note was mailed %d times" % len(d))
    d = d[0]
    check("1/3" in d["Subject"], "diff note subject: %s" % d["Subject"])

    say("push v2, a new docs patch: src/a/x.c's diff is unchanged")
    sim("POST", "/_sim/projects/1/merge_requests/1/push",
        {"commits": [ob.commit("docs: more on counting",
                               {"docs/more.txt": "more\n"})]})
    head = api("GET", "/projects/1/merge_requests/1/versions",
               "rob-token")[0]["head_commit_sha"]
    moved = discussion_with(the_mr(), "Why + 1?")[0]["notes"][0]
    check(moved["position"]["head_sha"] == head,
          "the forge did not move the thread to v2: %s" % moved["position"])
    before = len(bed.archive())
    bed.run("run", "--once")
    bed.wait_mail(before + 5)
    bed.settle()
    check(ob.series_of(bed.archive(), 1, 2), "v2 not mailed")

    say("dave answers the v1 diff note's mail: \"fixed in v2\"")
    before = len(bed.archive())
    raw, rid = reply(d, DAVE, quote(text(d)) +
                     "\nLIST-REPLY-PUSHED: fixed in v2.\n")
    bed.send(raw, "dave@reader.example")
    bed.wait_mail(before + 1)
    bed.settle()
    bed.run("run", "--once")
    mr = the_mr()
    found = discussion_with(mr, "LIST-REPLY-PUSHED")
    check(len(found) == 1 and found[0]["id"] == disc["id"],
          "the answer did not continue the diff thread %s: %s" %
          (disc["id"], [f["id"] for f in found]))
    last = found[0]["notes"][-1]
    check(last["type"] == "DiffNote" and
          last["position"] == moved["position"],
          "not a DiffNote reply at the thread's position: %s" % last)
    threads = [x for x in mr["discussions"]
               if x["notes"][0]["type"] == "DiffNote"]
    check(len(threads) == 1, "threads split: %d diff threads" %
          len(threads))
    say("the answer is note %d of discussion %s, on v2" %
        (len(found[0]["notes"]), disc["id"][:8]))


def scenario_late(bed):
    bed.start_postfix()
    # While a mailed diff thread is open, every reading reads the threads
    # to see it resolved (scenario_threads); here the quick look is what
    # is shown, so resolutions are not watched.
    bed.config(outbound="mail_resolved = no")
    ob.create_mr("topic", "Teach x and y to count")
    bed.run("run", "--once")
    bed.wait_mail(4)
    bed.settle()
    note_at("rob-token", "Early: looks right.", 5)
    bed.run("run", "--once")
    mailed_once(bed, "Early: looks right.", 5)

    say("rob's diff note commits slowly: bob's later comment, with a "
        "higher id, is seen first")
    ver = api("GET", "/projects/1/merge_requests/1/versions", "rob-token")[0]
    sim("POST", "/_sim/time", {"advance_s": 5})
    sim("PUT", "/_sim/settings", {"hold_notes": True})
    slow = api("POST", "/projects/1/merge_requests/1/discussions",
               "rob-token", {"body": "SLOW: why + 1?", "position": {
                   "position_type": "text",
                   "base_sha": ver["base_commit_sha"],
                   "start_sha": ver["start_commit_sha"],
                   "head_sha": ver["head_commit_sha"],
                   "old_path": "src/a/x.c", "new_path": "src/a/x.c",
                   "new_line": 3}})
    sim("PUT", "/_sim/settings", {"hold_notes": False})
    fast = note_at("bob-token", "FAST: fine by me.", 2)
    held = [n for d in the_mr()["discussions"] if d["id"] == slow["id"]
            for n in d["notes"]]
    check(held and held[0]["held"] and held[0]["id"] < fast["id"],
          "the ids are not out of order: %s, %d" % (held, fast["id"]))
    bed.run("run", "--once")
    mailed_once(bed, "FAST: fine by me.", 6)

    say("the slow note commits: mailed, once")
    sim("POST", "/_sim/notes/commit", {})
    bed.run("run", "--once")
    m = mailed_once(bed, "SLOW: why + 1?", 7)
    check("1/3" in m["Subject"], "not a reply to patch 1: %s" % m["Subject"])
    mark = log_len()
    bed.run("run", "--once")
    check(not read_discussions(mark), "the threads were read for nothing")
    time.sleep(1)
    bed.settle()
    check(len(bed.archive()) == 7, "a re-run mailed again")


def scenario_commit(bed):
    bed.start_postfix()
    bed.config()
    _, made = ob.create_mr("topic", "Count in c", commits=[
        ob.commit("c: add a counter", {"src/c.c": "int c(int n)\n{\n"
                                       "\treturn n + 3;\n}\n"}),
        ob.commit("d: add another", {"src/d.c": "int d(void);\n"}),
        ob.commit("c: count by four", {"src/c.c": "/* counts */\n"
                                       "int c(int n)\n{\n"
                                       "\treturn n + 4;\n}\n"})])
    bed.run("run", "--once")
    bed.wait_mail(4)
    bed.settle()
    first = made["shas"][0]
    parent = sim("GET", "/api/v4/projects/1/repository/commits/%s" %
                 first)["parent_ids"][0]
    say("rob comments on line 3 of the first commit's own diff, a line "
        "the third commit changes")
    api("POST", "/projects/1/merge_requests/1/discussions", "rob-token",
        {"body": "COMMIT-NOTE: why three?", "position": {
            "position_type": "text", "base_sha": parent,
            "start_sha": parent, "head_sha": first,
            "old_path": "src/c.c", "new_path": "src/c.c", "new_line": 3}})
    bed.run("run", "--once")
    m = mailed_once(bed, "COMMIT-NOTE: why three?", 5)
    check(m["Subject"] == "Re: [PATCH 1/3] c: add a counter",
          "not a reply to the commit's patch: %s" % m["Subject"])
    body = text(m)
    check("> +\treturn n + 3;\n" in body and "n + 4" not in body,
          "not quoted from the commit's patch:\n" + body)


def scenario_suggest(bed):
    bed.start_postfix()
    bed.config()
    ob.create_mr("topic", "Teach x and y to count")
    bed.run("run", "--once")
    bed.wait_mail(4)
    bed.settle()
    ver = api("GET", "/projects/1/merge_requests/1/versions", "rob-token")[0]

    say("rob: a suggestion on src/a/x.c line 3, one line above and below")
    pos = {"position_type": "text", "base_sha": ver["base_commit_sha"],
           "start_sha": ver["start_commit_sha"],
           "head_sha": ver["head_commit_sha"],
           "old_path": "src/a/x.c", "new_path": "src/a/x.c", "new_line": 3}
    disc = api("POST", "/projects/1/merge_requests/1/discussions",
               "rob-token", {"body": "Count from zero:\n\n"
                             "```suggestion:-1+1\n{\n\treturn n ? n + 1 "
                             ": 1;\n}\n```\n", "position": pos})
    check(len(disc["notes"][0]["suggestions"]) == 1,
          "the forge stored no suggestion: %s" % disc["notes"][0])
    say("bob answers in the thread with a one-line suggestion")
    api("POST", "/projects/1/merge_requests/1/discussions/%s/notes" %
        disc["id"], "bob-token",
        {"body": "Or simply:\n\n```suggestion\n\treturn n + 2;\n```"})
    say("a general comment's suggestion block is only code on GitLab")
    api("POST", "/projects/1/merge_requests/1/notes", "rob-token",
        {"body": "Elsewhere:\n\n```suggestion\nint z;\n```"})
    bed.run("run", "--once")
    bed.wait_mail(7)
    bed.settle()
    fm = forge_mails(bed)
    check(len(fm) == 3, "want 3 forge mails, got %d" % len(fm))
    first = [m for m in fm if "Count from zero" in text(m)]
    check(len(first) == 1, "the suggestion mailed %d times" % len(first))
    body = text(first[0])
    say("mailed:\n" + body)
    want = ("Count from zero:\n\nSuggested change to src/a/x.c lines 2-4:\n"
            "-{\n-\treturn n + 1;\n-}\n"
            "+{\n+\treturn n ? n + 1 : 1;\n+}\n")
    check(want in body, "the suggestion is not mailed as the change it "
          "makes:\n" + body)
    check(body.index("> +\treturn n + 1;") < body.index(want),
          "the hunk is not quoted first:\n" + body)
    answer = [m for m in fm if "Or simply" in text(m)]
    check(len(answer) == 1 and
          answer[0]["In-Reply-To"].strip("<> ") == msgid(first[0]),
          "the answer is not under the suggestion's mail")
    want = ("Or simply:\n\nSuggested change to src/a/x.c line 3:\n"
            "-\treturn n + 1;\n+\treturn n + 2;\n")
    check(want in text(answer[0]), "the answer's suggestion:\n" +
          text(answer[0]))
    general = [m for m in fm if "Elsewhere" in text(m)]
    check(general and "Elsewhere:\n\n    int z;\n" in text(general[0]),
          "a general comment's block is not mailed as code:\n%s" %
          (text(general[0]) if general else None))
    check(not [m for m in fm if "Suggested change" in text(m) and
               "Elsewhere" in text(m)],
          "a general comment was read as a suggestion")


def list_approval(bed, user, head):
    """The cursor the inbound side sets before it approves as user for a
    list trailer (store.h, STORE_CURSOR_LIST_APPROVAL)."""
    import sqlite3
    db = sqlite3.connect(os.path.join(bed.work, "state", "state.db"))
    try:
        db.execute("INSERT OR REPLACE INTO cursors (name, value, updated) "
                   "VALUES (?, ?, 0)",
                   ("list-approval:group/project!1:%s" % user, head))
        db.commit()
    finally:
        db.close()


def scenario_unack(bed):
    start_list(bed)
    ob.create_mr("topic", "Teach x and y to count")
    bed.run("run", "--once")
    bed.wait_mail(4)
    bed.settle()
    s = ob.series_of(bed.archive(), 1, 1)

    say("bob approves on the forge: mailed as a trailer")
    api("POST", "/projects/1/merge_requests/1/approve", "bob-token", {})
    bed.run("run", "--once")
    bed.wait_mail(5)
    bed.settle()
    ack = [m for m in forge_mails(bed)
           if "approved this merge request" in text(m)]
    check(len(ack) == 1 and "Acked-by: Bob Maintainer <" in text(ack[0]),
          "the approval is not mailed as a trailer")
    check("Given there by the user signed in to it, not by email" in
          text(ack[0]), "the approval's mail does not say it came from "
          "the forge")

    say("bob withdraws it on the forge")
    api("POST", "/projects/1/merge_requests/1/unapprove", "bob-token")
    bed.run("run", "--once")
    bed.wait_mail(6)
    bed.settle()
    w = [m for m in forge_mails(bed) if "withdrew" in text(m)]
    check(len(w) == 1, "the withdrawal mailed %d times" % len(w))
    body = text(w[0])
    say("mailed: " + body.strip())
    check(body.startswith("Bob Maintainer withdrew the approval given on v1 "
                          "(the forge no longer counts it).\n"),
          "the withdrawal says:\n" + body)
    check(w[0]["In-Reply-To"].strip("<> ") == msgid(ack[0]),
          "the withdrawal is not under the approval's mail")
    check(w[0]["Subject"] == "Re: [PATCH 0/3] Teach x and y to count",
          "subject: %s" % w[0]["Subject"])
    check("Bob Maintainer via patchbridge" in w[0]["From"],
          "From: %s" % w[0]["From"])
    check(not re.search(r"^\s*[A-Za-z-]+-by:", body, re.M),
          "a trailer in the withdrawal would be collected:\n" + body)

    say("rob's list trailer was applied as an approval; rob withdraws it "
        "on the forge")
    head = api("GET", "/projects/1/merge_requests/1", "rob-token")["sha"]
    list_approval(bed, "rob", head)
    api("POST", "/projects/1/merge_requests/1/approve", "rob-token",
        {"sha": head})
    api("POST", "/projects/1/merge_requests/1/unapprove", "rob-token")
    bed.run("run", "--once")
    bed.wait_mail(7)
    bed.settle()
    fm = forge_mails(bed)
    check(not [m for m in fm if "Rob Reviewer approved" in text(m)],
          "the list's own trailer came back as an approval mail")
    r = [m for m in fm if "Rob Reviewer withdrew" in text(m)]
    check(len(r) == 1 and text(r[0]).startswith(
        "Rob Reviewer withdrew the approval given on v1 (the forge no "
        "longer counts it).\n"), "rob's withdrawal: %s" %
        [text(m) for m in r])
    check(r[0]["In-Reply-To"].strip("<> ") == msgid(s[0]),
          "rob's withdrawal is not under the cover letter")

    say("run --once twice more: each withdrawal once, none comes back")
    bed.run("run", "--once")
    bed.run("run", "--once")
    time.sleep(1)
    bed.settle()
    check(len(bed.archive()) == 7, "mailed again: %s" %
          [m["Subject"] for m in bed.archive()][7:])
    notes = api("GET", "/projects/1/merge_requests/1/notes?per_page=100",
                "rob-token")
    check(not [n for n in notes if "withdrew" in n["body"]],
          "a withdrawal mail came back as a note")

    say("the daemon, with merge request hooks: bob approves again and "
        "withdraws it")
    port = bedlib.free_port()
    secret = bed.write("webhook.secret", "s3cret-token\n", 0o600)
    with open(bed.cfg, encoding="utf-8") as f:
        cfg = f.read()
    bed.write("patchbridge.conf", cfg + "[webhook]\nenabled = yes\n"
              "listen = 127.0.0.1:%d\nsecret_file = %s\n" % (port, secret))
    d = bed.daemon()
    ob.wait_listen(port, d, bed)
    url = "http://127.0.0.1:%d/hooks/gitlab" % port
    sim("POST", "/_sim/webhooks", {"project": 1, "url": url,
                                   "token": "s3cret-token",
                                   "merge_requests_events": True,
                                   "note_events": False})
    sim("POST", "/_sim/time", {"advance_s": 120})
    api("POST", "/projects/1/merge_requests/1/approve", "bob-token", {})
    bed.wait_mail(8)
    bed.settle()
    check(len([m for m in forge_mails(bed) if "Bob Maintainer approved "
               "this merge request" in text(m)]) == 2,
          "bob's second approval is not mailed once")
    sim("POST", "/_sim/time", {"advance_s": 10})
    api("POST", "/projects/1/merge_requests/1/unapprove", "bob-token")
    got = ob.deliveries(url)
    check(len(got) == 2 and all(x["response_status"] == 200 for x in got),
          "the hooks: %s" % [(x["event"], x["response_status"])
                             for x in got])
    bed.wait_mail(9)
    bed.settle()
    w = [m for m in forge_mails(bed)
         if "Bob Maintainer withdrew" in text(m)]
    check(len(w) == 2, "the second withdrawal mailed %d times" %
          (len(w) - 1))
    acks = [m for m in forge_mails(bed) if "Bob Maintainer approved "
            "this merge request" in text(m)]
    check(msgid(acks[1]) != msgid(acks[0]) and
          {x["In-Reply-To"].strip("<> ") for x in w} ==
          {msgid(acks[0]), msgid(acks[1])},
          "each withdrawal is not under its own approval's mail")
    d.send_signal(signal.SIGTERM)
    check(d.wait(timeout=bedlib.bound(30)) == 0, "the daemon did not stop cleanly")


def scenario_retargeted(bed):
    start_list(bed)
    sim("POST", "/_sim/projects/1/commits",
        {"branch": "dep", "start": "main", "commits": [
            ob.commit("lib: add a helper",
                      {"src/lib/h.c": "int h(void)\n{\n\treturn 0;\n}\n"})]})
    sim("POST", "/_sim/projects/1/commits",
        {"branch": "topic", "start": "dep", "commits": ob.V1})
    sim("POST", "/_sim/projects/1/merge_requests",
        {"source_branch": "topic", "target_branch": "main",
         "title": "Teach x and y to count", "author": "alice"})
    bed.run("run", "--once")
    bed.wait_mail(5)
    bed.settle()
    v1 = ob.series_of(bed.archive(), 1, 1)
    ver1 = api("GET", "/projects/1/merge_requests/1/versions",
               "rob-token")[0]

    say("retarget onto dep: v2, the same head on a new base")
    api("PUT", "/projects/1/merge_requests/1", "rob-token",
        {"target_branch": "dep"})
    bed.run("run", "--once")
    bed.wait_mail(9)
    bed.settle()
    check(ob.series_of(bed.archive(), 1, 2), "v2 not mailed")

    say("rob: a diff note on src/lib/h.c line 3 of v1's version")
    pos = {"position_type": "text", "base_sha": ver1["base_commit_sha"],
           "start_sha": ver1["start_commit_sha"],
           "head_sha": ver1["head_commit_sha"],
           "old_path": "src/lib/h.c", "new_path": "src/lib/h.c",
           "new_line": 3}
    api("POST", "/projects/1/merge_requests/1/discussions", "rob-token",
        {"body": "Why 0?", "position": pos})
    bed.run("run", "--once")
    bed.wait_mail(10)
    bed.settle()
    d = [m for m in forge_mails(bed) if "Why 0?" in text(m)]
    check(len(d) == 1, "the diff note was mailed %d times" % len(d))
    d = d[0]
    check("[PATCH 1/4]" in d["Subject"],
          "diff note subject: %s" % d["Subject"])
    check(d["In-Reply-To"].strip("<> ") == msgid(v1[1]),
          "the note is not under v1's patch 1")
    check("> +\treturn 0;" in text(d), "no quote of h.c:\n" + text(d))


def scenario_threads(bed):
    mail_v1(bed)
    mrp = "/projects/1/merge_requests/1"
    ver = api("GET", mrp + "/versions", "rob-token")[0]

    def thread(path, line, body):
        pos = {"position_type": "text", "base_sha": ver["base_commit_sha"],
               "start_sha": ver["start_commit_sha"],
               "head_sha": ver["head_commit_sha"],
               "old_path": path, "new_path": path, "new_line": line}
        return api("POST", mrp + "/discussions", "rob-token",
                   {"body": body, "position": pos})

    say("rob: three review threads on v1")
    dx = thread("src/a/x.c", 3, "Why + 1?")
    dy = thread("src/b/y.c", 3, "Why + 2?\n\nAnd not + 1 as in x?")
    dd = thread("docs/readme.txt", 1, "Say what they count.")
    bed.run("run", "--once")
    bed.wait_mail(7)
    bed.settle()
    mailed = {}
    for key, what in (("x", "Why + 1?"), ("y", "Why + 2?"),
                      ("docs", "Say what they count.")):
        got = [m for m in forge_mails(bed) if what in text(m)]
        check(len(got) == 1, "%s: %d mails" % (what, len(got)))
        mailed[key] = got[0]

    say("alice resolves the docs thread on the forge")
    before = len(bed.archive())
    updated = api("GET", mrp, "bob-token")["updated_at"]
    api("PUT", mrp + "/discussions/%s?resolved=true" % dd["id"],
        "alice-token")
    check(api("GET", mrp, "bob-token")["updated_at"] == updated,
          "resolving a thread touched the MR")
    bed.run("run", "--once")
    bed.wait_mail(before + 1)
    bed.settle()
    res = [m for m in forge_mails(bed) if "was resolved by" in text(m)]
    check(len(res) == 1, "%d resolution mails" % len(res))
    res = res[0]
    want = ("This thread (docs/readme.txt:1) was resolved by Alice "
            "Developer on the forge.")
    check(want in text(res), "resolution mail: %r" % text(res))
    check(res["In-Reply-To"].strip() == mailed["docs"]["Message-ID"].strip(),
          "resolution not in its thread: In-Reply-To %s, want %s" %
          (res["In-Reply-To"], mailed["docs"]["Message-ID"]))
    check(res["Subject"].startswith("Re: [PATCH 3/3]"),
          "resolution subject: %s" % res["Subject"])
    say("the list got: %s" % want)
    bed.run("run", "--once")
    bed.settle()
    check(len(bed.archive()) == before + 1, "the resolution mailed again")

    say("push v2: its cover letter carries the open threads")
    sim("POST", "/_sim/projects/1/merge_requests/1/push",
        {"commits": [ob.commit("docs: more on counting",
                               {"docs/more.txt": "more\n"})]})
    before = len(bed.archive())
    bed.run("run", "--once")
    bed.wait_mail(before + 5)
    bed.settle()
    v2 = ob.series_of(bed.archive(), 1, 2)
    check(sorted(v2) == [0, 1, 2, 3, 4], "v2 series: %s" % sorted(v2))
    body = text(v2[0])
    url = api("GET", mrp, "bob-token")["web_url"]
    block = ("Open from v1:\n"
             "- src/a/x.c:3 (Rob Reviewer): Why + 1?\n"
             "  %s#note_%d\n"
             "- src/b/y.c:3 (Rob Reviewer): Why + 2?\n"
             "  %s#note_%d\n"
             "\n"
             "Resolved since v1:\n"
             "- docs/readme.txt:1 (Rob Reviewer), resolved by Alice "
             "Developer\n" % (url, dx["notes"][0]["id"],
                              url, dy["notes"][0]["id"]))
    check(block in body, "v2 cover letter without the threads:\n%s" % body)
    say("v2 cover letter:\n    " + "\n    ".join(block.splitlines()))
    owners = ("Reviewers of the subsystems touched:\n"
              "- sub-a: optional Anna Alpha\n"
              "- sub-b: optional Bert Beta\n")
    check(owners in body, "v2 cover letter without its reviewers:\n%s"
          % body)
    base, head = ob.version_shas(1)
    ob.check_git_am(bed, v2, 4, base, head)


def scenario_listthread(bed):
    start_list(bed)
    ob.create_mr("topic", "Teach x and y to count")
    bed.run("run", "--once")
    bed.wait_mail(4)
    bed.settle()
    p1 = ob.series_of(bed.archive(), 1, 1)[1]
    body = text(p1)
    lines = body[body.index("diff --git"):].splitlines()
    cut = next(i for i, l in enumerate(lines) if l == "+\treturn n + 1;")
    say("dave comments inline on patch 1 from the list")
    before = len(bed.archive())
    raw, rid = reply(p1, DAVE, quote("\n".join(lines[:cut + 1])) +
                     "\nLIST-INLINE: why n + 1 and not n?\n")
    bed.send(raw, "dave@reader.example")
    bed.wait_mail(before + 1)
    bed.settle()
    bed.run("run", "--once")
    found = discussion_with(the_mr(), "LIST-INLINE")
    check(len(found) == 1 and found[0]["notes"][0]["type"] == "DiffNote",
          "the inline comment is no diff thread: %s" % found)
    say("alice resolves dave's thread on the forge")
    api("PUT", "/projects/1/merge_requests/1/discussions/%s?resolved=true"
        % found[0]["id"], "alice-token")
    before = len(bed.archive())
    bed.run("run", "--once")
    bed.wait_mail(before + 1)
    bed.settle()
    res = [m for m in forge_mails(bed) if "was resolved by" in text(m)]
    check(len(res) == 1, "%d resolution mails" % len(res))
    want = ("This thread (src/a/x.c:3) was resolved by Alice Developer on "
            "the forge.")
    check(want in text(res[0]), "resolution mail: %r" % text(res[0]))
    check(res[0]["In-Reply-To"].strip("<> ") == rid,
          "not a reply to dave's mail: %s, want %s" %
          (res[0]["In-Reply-To"], rid))
    check(res[0]["Subject"].startswith("Re: [PATCH 1/3]"),
          "resolution subject: %s" % res[0]["Subject"])
    say("the list got, under dave's mail: %s" % want)
    bed.run("run", "--once")
    bed.settle()
    check(len(bed.archive()) == before + 1, "the resolution mailed again")


# src/a/ needs bob's approval; src/b/ only tells anna.
REVIEW_OWNERS = """\
users:
  - &anna
    name: Anna Alpha
    email: anna@alpha.example
  - &bob
    name: Bob Maintainer
    email: bob@corp.example
    gluser: bob
subsystems:
  - subsystem: Subsystem A
    labels:
      name: sub-a
    requiredApproval: true
    maintainers:
      - *bob
    paths:
      includes:
        - src/a/
  - subsystem: Subsystem B
    labels:
      name: sub-b
    maintainers:
      - *anna
    paths:
      includes:
        - src/b/
"""


def scenario_reviews(bed):
    bed.start_postfix()
    bed.config(owners=REVIEW_OWNERS)
    ob.create_mr("topic", "Teach x and y to count")
    bed.run("run", "--once")
    bed.wait_mail(4)
    bed.settle()
    cover = ob.series_of(bed.archive(), 1, 1)[0]
    body = text(cover)
    want = ("Reviewers of the subsystems touched:\n"
            "- sub-a: required Bob Maintainer\n"
            "- sub-b: optional Anna Alpha\n")
    check(want in body, "v1 cover letter without its reviewers:\n%s" % body)
    say("v1 cover letter:\n    " + "\n    ".join(want.splitlines()))

    def told(what):
        return [m for m in forge_mails(bed) if what in text(m)]

    say("bob approves on the forge")
    before = len(bed.archive())
    api("POST", "/projects/1/merge_requests/1/approve", "bob-token", {})
    bed.run("run", "--once")
    bed.wait_mail(before + 2)  # the approval's trailer, and this
    bed.settle()
    got = told("All required reviews are in")
    check(len(got) == 1, "%d 'all in' mails" % len(got))
    check("All required reviews are in: sub-a (Bob Maintainer)." in
          text(got[0]), "all in: %r" % text(got[0]))
    check(got[0]["In-Reply-To"].strip() == cover["Message-ID"].strip(),
          "not a reply to the cover letter: %s" % got[0]["In-Reply-To"])
    say("the list got: All required reviews are in: sub-a (Bob Maintainer).")
    bed.run("run", "--once")
    bed.settle()
    check(len(told("All required reviews are in")) == 1,
          "'all in' mailed again")

    say("bob withdraws the approval")
    before = len(bed.archive())
    api("POST", "/projects/1/merge_requests/1/unapprove", "bob-token")
    bed.run("run", "--once")
    bed.wait_mail(before + 2)  # the withdrawal, and this
    bed.settle()
    got = told("no longer all in")
    check(len(got) == 1, "%d 'no longer' mails" % len(got))
    check("The required reviews are no longer all in: waiting for sub-a."
          in text(got[0]), "taken back: %r" % text(got[0]))
    say("the list got: The required reviews are no longer all in: "
        "waiting for sub-a.")


# --- pipelines ------------------------------------------------------------

# A runner's log: colours, a section marker, a progress line written over,
# a terminal title; the last line the failure.
CI_LOG = ("\x1b[0KRunning with gitlab-runner 17.0\n"
          "section_start:1700000000:step_script\r\x1b[0K"
          "\x1b[36;1m$ make check\x1b[0;m\n" +
          "".join("ok %d - case %d\n" % (i, i) for i in range(1, 40)) +
          "\x1b]0;pwned\x07Downloading 10%\rDownloading 100%\n"
          "\x1b[31;1mFAIL: test_parse (expected 3, got 4)\x1b[0m\n")


def pipeline(iid, jobs=None, sha=None):
    body = {"jobs": jobs or [{"name": "build", "stage": "build"},
                             {"name": "unit", "stage": "test"},
                             {"name": "lint", "stage": "test",
                              "allow_failure": True}]}
    if sha:
        body["sha"] = sha
    return sim("POST", "/_sim/projects/1/merge_requests/%d/pipelines" %
               iid, body)


def finish(pl, **body):
    return sim("POST", "/_sim/projects/1/pipelines/%d/finish" % pl["id"],
               body)


def ci_mails(bed):
    return [m for m in forge_mails(bed) if m["From"].startswith("CI via")]


def project_set(bed, lines):
    """More lines in the project's section (the last one), on every host
    of a pair."""
    with open(bed.cfg, encoding="utf-8") as f:
        cfg = f.read()
    bed.write("patchbridge.conf", cfg + lines)


def push_v2():
    sim("POST", "/_sim/projects/1/merge_requests/1/push", {
        "commits": [ob.commit("docs: say more", {
            "docs/readme.txt": "x and y count now, by one and two.\n"})]})


def scenario_pipelines(bed):
    v1 = mail_v1(bed)
    ob.check_threading(v1, 3)

    say("v1's pipeline: unit fails, lint fails as it may")
    p1 = pipeline(1)
    bed.run("run", "--once")
    finish(p1, results={"unit": "failed", "lint": "failed"},
           traces={"unit": CI_LOG, "lint": "lint: 3 warnings\n"})
    bed.run("run", "--once")
    bed.wait_mail(5)
    bed.settle()
    [m] = ci_mails(bed)
    body = text(m)
    say("the result:\n    " + "\n    ".join(body.strip().splitlines()))
    check(m["In-Reply-To"].strip("<> ") == msgid(v1[0]),
          "the result does not answer v1's cover: %s" % m["In-Reply-To"])
    check(m["Subject"] == "Re: [PATCH 0/3] Teach x and y to count",
          "subject %r" % m["Subject"])
    check(body.startswith("Pipeline #%d for v1 (%s) failed.\n" %
                          (p1["id"], p1["sha"][:12])), "first line")
    check(re.search(r"\n  unit \(stage test\): http://\S+/group/project/-/"
                    r"jobs/%d\n" % p1["jobs"]["unit"], body), "unit's line")
    check(re.search(r"\n  lint \(stage test, allowed to fail\): http://"
                    r"\S+/-/jobs/%d\n" % p1["jobs"]["lint"], body),
          "lint's line")
    check("build (stage" not in body, "a job that passed is named")
    check("The last lines of the log of unit:" in body, "no log quoted")
    check("  | FAIL: test_parse (expected 3, got 4)\n" in body,
          "the failure is not quoted")
    check("  | Downloading 100%\n" in body and "10%" not in body and
          "pwned" not in body and "\x1b" not in body,
          "the log is not cleaned")
    check("ok 21 - case 21" not in body and "ok 22 - case 22" in body,
          "not the last 20 lines")

    say("v2 pushed and mailed; its pipeline passes, told by a Pipeline Hook")
    push_v2()
    bed.run("run", "--once")
    bed.wait_mail(10)
    bed.settle()
    v2 = ob.series_of(bed.archive(), 1, 2)
    ob.check_threading(v2, 4)
    p2 = pipeline(1)
    d = start_hook_daemon(bed)
    try:
        finish(p2)
        bed.wait_mail(11)
        bed.settle()
    finally:
        stop_daemon(d)
    passed = [m for m in ci_mails(bed) if "passed" in text(m)]
    check(len(passed) == 1, "%d passed mails" % len(passed))
    m = passed[0]
    check(m["In-Reply-To"].strip("<> ") == msgid(v2[0]),
          "v2's result does not answer v2's cover")
    check(m["Subject"] == "Re: [PATCH v2 0/4] Teach x and y to count",
          "subject %r" % m["Subject"])
    check(text(m).startswith("Pipeline #%d for v2 (%s) passed.\n" %
                             (p2["id"], p2["sha"][:12])), "v2's text")

    say("v1's pipeline retried: it passes now, mailed under v1's cover")
    finish(p1)
    bed.run("run", "--once")
    bed.wait_mail(12)
    bed.settle()
    again = [m for m in ci_mails(bed) if "Pipeline #%d for v1" % p1["id"]
             in text(m)]
    check(len(again) == 2 and all(
        x["In-Reply-To"].strip("<> ") == msgid(v1[0]) for x in again),
        "v1's second result")

    say("looked at again, nothing more; mail_pipelines = no: nothing")
    bed.run("run", "--once")
    project_set(bed, "mail_pipelines = no\n")
    finish(p2, results={"unit": "failed"})
    bed.run("run", "--once")
    time.sleep(1)  # a mail that must not come has its chance
    bed.settle()
    check(len(bed.archive()) == 12, "%d mails, want 12" %
          len(bed.archive()))


def start_hook_daemon(bed):
    """`run --foreground` with the webhook receiver, and a Pipeline Hook
    on the simulator pointing at it."""
    port = bedlib.free_port()
    with open(bed.cfg, encoding="utf-8") as f:
        cfg = f.read()
    secret = bed.write("hook-secret", "s3cret\n", 0o600)
    cfg = cfg.replace("[project \"group/project\"]",
                      "[webhook]\nenabled = yes\nlisten = 127.0.0.1:%d\n"
                      "secret_file = %s\n[project \"group/project\"]" %
                      (port, secret), 1)
    bed.write("patchbridge.conf", cfg)
    sim("POST", "/_sim/webhooks", {
        "project": "group/project", "token": "s3cret",
        "url": "http://127.0.0.1:%d/hooks/gitlab" % port,
        "merge_requests_events": False, "note_events": False,
        "pipeline_events": True})
    d = bed.daemon()
    ob.wait_listen(port, d, bed)
    # Its first poll done: what comes later comes from a delivery.
    ob.wait_log(bed, "merge request(s) to look at")
    return d


def stop_daemon(d):
    d.send_signal(signal.SIGTERM)
    d.wait(timeout=bedlib.bound(30))


def scenario_waitci(bed):
    bed.start_postfix()
    bed.config()
    project_set(bed, "wait_for_pipeline = yes\npipeline_wait_max = 20s\n")
    ob.create_mr("topic", "Teach x and y to count")
    p1 = pipeline(1)
    bed.run("run", "--once", ok=(0, 75))
    log = bed.log_text()
    check("not mailed yet: waiting for the pipeline of" in log,
          "v1 was not held")
    out = bed.run("send", "group/project!1", ok=(75,))
    check("not mailed yet: waiting for the pipeline of" in out,
          "send says: %s" % out)
    time.sleep(1)  # a mail that must not come has its chance
    bed.settle()
    check(len(bed.archive()) == 0, "v1 mailed before its pipeline passed")
    say("v1's pipeline passes: v1 is mailed")
    finish(p1)
    bed.run("run", "--once")
    bed.wait_mail(4)
    bed.settle()
    v1 = ob.series_of(bed.archive(), 1, 1)
    ob.check_threading(v1, 3)
    check("Note: mailed" not in text(v1[0]), "a note in v1's cover")

    say("v2's pipeline never finishes: mailed after pipeline_wait_max")
    push_v2()
    p2 = pipeline(1)
    bed.run("run", "--once", ok=(0, 75))
    check(len(ob.series_of(bed.archive(), 1, 2)) == 0,
          "v2 mailed at once")

    def mailed():
        bed.run("run", "--once", ok=(0, 75))
        return len(ob.series_of(bed.archive(), 1, 2)) == 5
    bedlib.wait_for(mailed, 120, "v2 mailed after the longest wait",
                    every=2)
    bed.settle()
    v2 = ob.series_of(bed.archive(), 1, 2)
    cover = text(v2[0])
    check(re.search(r"Note: mailed before its pipeline passed: pipeline "
                    r"#%d had not finished after \d+ s\." % p2["id"],
                    cover), "no note in v2's cover:\n" + cover)
    say("v2's cover: " + re.search(r"Note: [^\n]*", cover).group(0))


SCENARIOS = {"comments": scenario_comments, "merges": scenario_merges,
             "internal": scenario_internal, "quick": scenario_quick,
             "stuck": scenario_stuck, "quicklook": scenario_quicklook,
             "noreply": scenario_noreply,
             "pushed": scenario_pushed, "late": scenario_late,
             "commit": scenario_commit, "suggest": scenario_suggest,
             "unack": scenario_unack, "retargeted": scenario_retargeted,
             "threads": scenario_threads,
             "listthread": scenario_listthread,
             "reviews": scenario_reviews,
             "pipelines": scenario_pipelines, "waitci": scenario_waitci}


def main():
    ob.SEED = SEED
    ob.SCENARIOS = SCENARIOS
    return ob.main()


if __name__ == "__main__":
    sys.exit(main())
