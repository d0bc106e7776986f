#!/usr/bin/python3
"""mboxtool.py - look inside the mboxes of the outbound tests.

  mboxtool.py patches MBOX
      Print, for every patch mail, the decoded body part git am applies:
      from the "---" line to the "-- " signature.  Used to compare our
      patches byte for byte with git format-patch's.
  mboxtool.py check MBOX
      Check the RFC rules our mail must follow: header lines <= 78 (76
      where encoded-words are), body lines <= 998 octets, only ASCII in
      headers, every encoded header decodes, Message-IDs valid and
      unique, patches threaded to the first mail.  Prints the decoded
      Subject of each mail.
  mboxtool.py subjects MBOX
      Print each mail's decoded Subject.
  mboxtool.py strip-cover MBOX
      Print the mbox without its cover letter (git am, like for git
      format-patch --cover-letter output, stops at a mail with no patch).

Messages are split at git format-patch's "From <sha> Mon Sep 17 00:00:00
2001" lines only: git's own output is not safe for a generic mbox reader
when a commit message has a line starting with "From ".
"""
import email
import email.policy
import re
import sys

SEP = re.compile(rb'^From [0-9a-f]{40} Mon Sep 17 00:00:00 2001$', re.M)
ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
DOT_ATOM = ATEXT + r'(?:\.' + ATEXT + r')*'
MSGID = re.compile(r'^<' + DOT_ATOM + '@' + DOT_ATOM + '>$')


def split(data):
    starts = [m.start() for m in SEP.finditer(data)]
    out = []
    for i, s in enumerate(starts):
        e = starts[i + 1] if i + 1 < len(starts) else len(data)
        chunk = data[s:e]
        chunk = chunk[chunk.index(b'\n') + 1:]
        if chunk.endswith(b'\n\n'):
            chunk = chunk[:-1]  # the mbox's separating blank line
        out.append(chunk)
    return out


def messages(path):
    with open(path, 'rb') as f:
        data = f.read()
    return [(raw, email.message_from_bytes(raw, policy=email.policy.default))
            for raw in split(data)]


def body_bytes(msg):
    return msg.get_payload(decode=True)


def cmd_patches(path):
    out = sys.stdout.buffer
    for raw, msg in messages(path):
        body = body_bytes(msg)
        lines = body.split(b'\n')
        try:
            a = lines.index(b'---')
        except ValueError:
            continue  # a cover letter
        b = len(lines) - 1 - lines[::-1].index(b'-- ')
        out.write(b'=== ' + str(msg['Subject']).encode() + b'\n')
        out.write(b'\n'.join(lines[a:b]) + b'\n')


def cmd_subjects(path):
    for raw, msg in messages(path):
        print(str(msg['Subject']))


def cmd_strip_cover(path):
    with open(path, 'rb') as f:
        data = f.read()
    starts = [m.start() for m in SEP.finditer(data)] + [len(data)]
    out = sys.stdout.buffer
    for i in range(len(starts) - 1):
        chunk = data[starts[i]:starts[i + 1]]
        head = chunk.partition(b'\n\n')[0]
        if re.search(rb'^Subject: \[[^]]* 0+/[0-9]+\]', head, re.M):
            continue
        out.write(chunk)


def fail(why):
    print('mboxtool: ' + why, file=sys.stderr)
    sys.exit(1)


def cmd_check(path):
    ids = set()
    first = None
    for n, (raw, msg) in enumerate(messages(path)):
        head, _, body = raw.partition(b'\n\n')
        for line in head.split(b'\n'):
            if any(c >= 0x80 or (c < 0x20 and c != 9) for c in line):
                fail('mail %d: non-ASCII or control byte in header: %r'
                     % (n, line))
        fields = re.split(rb'\n(?=[^ \t])', head)
        for f in fields:
            width = 76 if b'=?' in f else 78
            for line in f.split(b'\n'):
                if len(line) > width:
                    fail('mail %d: header line of %d > %d: %r'
                         % (n, len(line), width, line))
        for line in body.split(b'\n'):
            if len(line) > 998:
                fail('mail %d: body line of %d octets' % (n, len(line)))
        mid = str(msg['Message-ID'])
        if not MSGID.match(mid):
            fail('mail %d: invalid Message-ID %s' % (n, mid))
        if mid in ids:
            fail('mail %d: duplicate Message-ID %s' % (n, mid))
        ids.add(mid)
        if first is None:
            first = mid
        elif str(msg['In-Reply-To']) != first:
            fail('mail %d: In-Reply-To %s, not the first mail'
                 % (n, msg['In-Reply-To']))
        elif first not in str(msg['References']).split():
            fail('mail %d: References lack the first mail' % n)
        for name in ('From', 'To', 'Cc', 'Subject'):
            if msg[name] is not None:
                str(msg[name])  # raises on undecodable headers
        print(str(msg['Subject']))


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    {'patches': cmd_patches, 'check': cmd_check,
     'subjects': cmd_subjects, 'strip-cover': cmd_strip_cover}[sys.argv[1]](sys.argv[2])


if __name__ == '__main__':
    main()
