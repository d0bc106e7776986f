#!/usr/bin/python3
"""Helpers of milter_bench.sh: the reply set and an SMTP load generator.

    milter_load.py seed-plan CORPUS
        Print one `milter_seed` argument line per thread-map row that makes
        every reply of the corpus (truth.json kind "reply") a reply to a
        bridged series, with its own In-Reply-To/References unchanged:

          threads/NN-name/   one MR per folder (bench/NN-name!NN, one
                             revision): the cover letter as patch 0 and
                             each patch mail as patch k, kept whole as
                             the diff as mailed, under its real Message-ID
          replies/NN-*.eml   one MR per reply (bench/replies!(100+NN)):
                             the Message-ID the reply answers, with the
                             parent patch as the diff when the corpus has
                             it (replies/parents/), else without a diff

        Lines: "revision PROJECT IID SHA TOTAL" and
        "mail MSGID PROJECT IID 1 PATCH TOTAL [DIFF_FILE]".

    milter_load.py seed-plan --foreign CORPUS
        The same MRs, diffs and thread-map rows, but under other
        Message-IDs ("bridged.ID") and with 50 more patches each, so that
        no corpus mail is a reply to a bridged series: neither by its
        threading headers nor by the subject fallback (no open revision
        has its "k/M").  The thread map is as big as for the replies.

    milter_load.py replies CORPUS
        Print the paths of the corpus replies, one a line, sorted.

    milter_load.py list CORPUS
        Print the paths of every corpus mail (cover letters, patches,
        replies), one a line, sorted: list traffic.

    milter_load.py load --port P -n N -c C [--tag T] [--irrelevant PCT]
                        [--irrelevant-file F] [--pad BYTES] FILE...
        Send N messages over N SMTP sessions to 127.0.0.1:P, C at a time,
        cycling through FILE... (each copy with a Message-ID of its own,
        "<T.SEQ.ORIGINAL-ID>", so that no two messages are the same mail),
        and print one line of results:

          sent= ok= tempfail= permfail= errors= seconds= rate=
          p50_ms= p99_ms= cpu_s= ok_irrelevant=

        seconds runs from before the first connection to the last 250
        after DATA (acceptance); rate = ok / seconds; p50/p99 are the
        per-message latencies from connect to the 250 after DATA; cpu_s
        is this generator's own CPU time, so its share of the 2 cores can
        be judged.  With --irrelevant PCT, PCT % of the messages (spread
        evenly) are copies of --irrelevant-file instead: list traffic the
        milter passes untouched.  With --pad BYTES, only the single-part
        files are sent, each grown to BYTES by quoted lines put at the
        start of its text (a reply quoting a big patch).

Why not smtp-source: it sends one fixed message per process (-F), and the
milter's work depends on the message (classification, MIME, quote and
inline parsing, the spool record), so a benchmark on one message measures
one message.  This generator is a plain socket client - no smtplib, one
session per message like smtp-source without -d, no pipelining - and its
cost is the same for the three configurations; cpu_s shows what it is.
Exit status 0 even when messages were refused: the caller decides.
"""
import json
import math
import os
import re
import resource
import socket
import sys
import threading
import time

SENDER = "reviewer@bench.example.org"


def die(msg):
    sys.stderr.write("milter_load: %s\n" % msg)
    sys.exit(2)


def corpus_truth(corpus):
    with open(os.path.join(corpus, "truth.json"), encoding="utf-8") as f:
        return json.load(f)


def header_msgid(path):
    """The Message-ID of a mail file, without <>."""
    with open(path, "rb") as f:
        head = f.read().split(b"\n\n", 1)[0].decode("utf-8", "replace")
    m = re.search(r"^message-id:[ \t]*\r?\n?[ \t]*<([^>]+)>", head,
                  re.I | re.M)
    return m.group(1) if m else None


def fake_sha(*parts):
    """A stable 40-hex string per MR (the seed needs one)."""
    s = "".join("%x" % p for p in parts)
    return (s + "0" * 40)[:40] if len(s) < 40 else s[:40]


def seed_plan(corpus, foreign=False):
    truth = corpus_truth(corpus)
    lines = []
    seen = set()
    # --foreign: ids nobody answers, counters no subject has
    pfx = "bridged." if foreign else ""
    more = 50 if foreign else 0
    # threads/NN-name/: one MR each.
    folders = sorted({k.split("/")[1] for k in truth
                      if k.startswith("threads/")})
    for folder in folders:
        nn = int(folder.split("-", 1)[0])
        project = "bench/" + folder
        mails = sorted(k for k in truth
                       if k.startswith("threads/%s/" % folder)
                       and truth[k]["kind"] in ("cover", "patch"))
        total = max([truth[k]["subject"].get("total") or 1 for k in mails]
                    + [1]) + more
        lines.append("revision %s %d %s %d"
                     % (project, nn, fake_sha(0xbe, nn), total))
        for k in mails:
            path = os.path.join(corpus, k)
            mid = header_msgid(path)
            if not mid or mid in seen:
                continue
            seen.add(mid)
            if truth[k]["kind"] == "cover":
                lines.append("mail %s%s %s %d 1 0 %d" % (pfx, mid, project,
                                                         nn, total))
            else:
                idx = truth[k]["subject"].get("index") or 1
                lines.append("mail %s%s %s %d 1 %d %d %s"
                             % (pfx, mid, project, nn, idx, total, path))
    # replies/NN-*.eml: one MR each, answering the Message-ID it names.
    for k in sorted(truth):
        v = truth[k]
        if not k.startswith("replies/") or v["kind"] != "reply":
            continue
        nn = int(os.path.basename(k).split("-", 1)[0])
        iid = 100 + nn
        subj = v.get("subject") or {}
        total = (subj.get("total") or 1) + more
        idx = subj.get("index")
        idx = idx if idx is not None else 1
        target = v.get("target")
        diff = ""
        if target in truth:
            diff = " " + os.path.join(corpus, target)
            mid = header_msgid(os.path.join(corpus, target))
        else:
            mid = (target or v.get("in_reply_to") or "").strip("<>")
        if not mid or mid in seen:
            continue
        seen.add(mid)
        lines.append("revision bench/replies %d %s %d"
                     % (iid, fake_sha(0xbf, iid), max(total, idx)))
        lines.append("mail %s%s bench/replies %d 1 %d %d%s"
                     % (pfx, mid, iid, idx, max(total, idx), diff))
    print("\n".join(lines))


def list_replies(corpus, every=False):
    truth = corpus_truth(corpus)
    for k in sorted(truth):
        if every or truth[k]["kind"] == "reply":
            print(os.path.join(corpus, k))


class Message:
    """A mail ready for DATA: CRLF, dot-stuffed, split around its id."""

    def __init__(self, path):
        with open(path, "rb") as f:
            raw = f.read()
        raw = raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        if not raw.endswith(b"\r\n"):
            raw += b"\r\n"
        raw = re.sub(rb"(?m)^\.", b"..", raw)
        head, sep, body = raw.partition(b"\r\n\r\n")
        m = re.search(rb"(?im)^message-id:[ \t]*(?:\r\n[ \t]+)?<([^>\r\n]+)>"
                      rb"[^\r\n]*", head)
        if m:
            self.orig = m.group(1)
            self.pre = head[:m.start()] + b"Message-ID: <"
            self.post = b">" + head[m.end():] + sep + body
        else:
            self.orig = b"none@bench.example.org"
            self.pre = b"Message-ID: <"
            self.post = b">\r\n" + head + sep + body

    def data(self, tag):
        return self.pre + tag + b"." + self.orig + self.post + b".\r\n"

    def pad(self, size):
        """Grow to about size bytes with quoted lines at the start of the
        text; False for a multipart mail (its text is not at the start)."""
        head, sep, body = self.post.partition(b"\r\n\r\n")
        if re.search(rb"(?im)^content-type:[ \t]*multipart/", head) or \
                re.search(rb"(?im)^content-transfer-encoding:[ \t]*"
                          rb"(base64|quoted-printable)", head):
            return False
        line = b"> " + b"x" * 70 + b"\r\n"
        have = len(self.pre) + len(self.orig) + len(self.post)
        n = max(0, (size - have) // len(line))
        self.post = head + sep + line * n + body
        return True


class Conn:
    def __init__(self, port, timeout):
        self.s = socket.create_connection(("127.0.0.1", port), timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def reply(self):
        """Read one (multi-line) reply; return its code."""
        while True:
            while b"\r\n" not in self.buf:
                chunk = self.s.recv(4096)
                if not chunk:
                    raise ConnectionError("connection closed")
                self.buf += chunk
            line, self.buf = self.buf.split(b"\r\n", 1)
            if len(line) < 4 or line[3:4] != b"-":
                return int(line[:3])

    def cmd(self, text):
        self.s.sendall(text)
        return self.reply()

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


def one_session(port, rcpt, data, timeout):
    """One SMTP session, one message: (code, seconds to the 250)."""
    t0 = time.monotonic()
    c = Conn(port, timeout)
    try:
        code = c.reply()
        if code == 220:
            code = c.cmd(b"EHLO loadgen.bench.example.org\r\n")
        if code == 250:
            code = c.cmd(b"MAIL FROM:<" + SENDER.encode() + b">\r\n")
        if code == 250:
            code = c.cmd(b"RCPT TO:<" + rcpt + b">\r\n")
        if code == 250:
            code = c.cmd(b"DATA\r\n")
            if code == 354:
                code = c.cmd(data)
        elapsed = time.monotonic() - t0
        try:
            c.s.sendall(b"QUIT\r\n")
            c.reply()
        except OSError:
            pass
        return code, elapsed
    finally:
        c.close()


def percentile(sorted_vals, p):
    """Nearest-rank percentile of a sorted list."""
    if not sorted_vals:
        return 0.0
    k = math.ceil(p / 100.0 * len(sorted_vals)) - 1
    return sorted_vals[max(0, min(len(sorted_vals) - 1, k))]


def load(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="milter_load.py load")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("-n", type=int, required=True)
    ap.add_argument("-c", type=int, default=10)
    ap.add_argument("--to", default="patches@lists.example.test")
    ap.add_argument("--tag", default="b")
    ap.add_argument("--irrelevant", type=float, default=0.0)
    ap.add_argument("--irrelevant-file")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--pad", type=int, default=0)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
    msgs = [Message(p) for p in a.files]
    if a.pad:
        msgs = [m for m in msgs if m.pad(a.pad)]
        if not msgs:
            die("--pad: no single-part mail among the files")
    other = Message(a.irrelevant_file) if a.irrelevant_file else None
    if a.irrelevant > 0 and not other:
        die("--irrelevant needs --irrelevant-file")
    # Spread evenly: message i is irrelevant when floor(i * PCT / 100)
    # steps up at i.
    plan = []
    k = 0
    for i in range(a.n):
        if other and int((i + 1) * a.irrelevant / 100.0) > \
                int(i * a.irrelevant / 100.0):
            plan.append(other)
        else:
            plan.append(msgs[k % len(msgs)])
            k += 1
    tag = a.tag.encode()
    rcpt = a.to.encode()
    lock = threading.Lock()
    nxt = [0]
    codes = {}
    lat = []
    errors = [0]
    ok_other = [0]

    def worker():
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= a.n:
                return
            data = plan[i].data(tag + b"." + str(i).encode())
            try:
                code, secs = one_session(a.port, rcpt, data, a.timeout)
            except (OSError, ValueError, ConnectionError):
                with lock:
                    errors[0] += 1
                continue
            with lock:
                codes[code] = codes.get(code, 0) + 1
                if code == 250:
                    lat.append(secs)
                    if plan[i] is other:
                        ok_other[0] += 1

    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(a.c)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    t1 = time.monotonic()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    ok = codes.get(250, 0)
    temp = sum(v for c, v in codes.items() if 400 <= c < 500)
    perm = sum(v for c, v in codes.items() if c >= 500)
    secs = t1 - t0
    lat.sort()
    print("sent=%d ok=%d tempfail=%d permfail=%d errors=%d seconds=%.3f "
          "rate=%.1f p50_ms=%.2f p99_ms=%.2f cpu_s=%.2f ok_irrelevant=%d"
          % (a.n, ok, temp, perm, errors[0], secs, ok / secs if secs else 0,
             percentile(lat, 50) * 1000, percentile(lat, 99) * 1000, cpu, ok_other[0]))


def main():
    if len(sys.argv) < 2:
        die("usage: milter_load.py seed-plan|replies|list|load ...")
    cmd, rest = sys.argv[1], sys.argv[2:]
    if cmd == "seed-plan" and len(rest) == 1:
        seed_plan(rest[0])
    elif cmd == "seed-plan" and len(rest) == 2 and rest[0] == "--foreign":
        seed_plan(rest[1], foreign=True)
    elif cmd == "replies" and len(rest) == 1:
        list_replies(rest[0])
    elif cmd == "list" and len(rest) == 1:
        list_replies(rest[0], every=True)
    elif cmd == "load":
        load(rest)
    else:
        die("usage: milter_load.py seed-plan|replies|list|load ...")


if __name__ == "__main__":
    main()
