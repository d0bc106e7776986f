#!/usr/bin/python3
"""headers_decode.py HDRTOOL: mailhdr's RFC 2047 output, decoded by Python.

Feeds hostile strings (non-ASCII, long, literal "=?...?=", CR/LF, control
and bidi characters, specials, invalid UTF-8) through hdrtool and checks
that Python's email package (the modern policy and the legacy
email.header.decode_header) gives back the sanitized text: CR/LF/TAB runs
and spaces collapsed to one space, other controls dropped, invalid bytes
as U+FFFD; that header lines stay within 78 columns (76 with
encoded-words) and that the From display name and address survive.
"""
import email
import email.header
import email.policy
import random
import subprocess
import sys

WS = '\r\n\t\v\f \u2028\u2029'


def sanitize(raw):
    # Input is valid UTF-8 except for lone 0xff bytes (one U+FFFD each).
    text = raw.decode('utf-8', errors='replace')
    out = []
    space = False
    for ch in text:
        cp = ord(ch)
        if ch in WS:
            space = bool(out)
            continue
        if cp < 0x20 or cp == 0x7f or 0x80 <= cp <= 0x9f \
                or 0x202a <= cp <= 0x202e or 0x2066 <= cp <= 0x2069:
            continue
        if space:
            out.append(' ')
            space = False
        out.append(ch)
    return ''.join(out)


PIECES = ['a', 'fix', 'Zoë', 'Çelik', '€', '😀', '漢字', 'e\u0301',
          '=?', '?=', '=?UTF-8?q?x?=', '=?utf-8?b?SGk=?=', '_', '"',
          ',', '<', '>', '@', '(', ')', ';', ':', '\\', '.', '[PATCH]',
          ' ', '  ', '\t', '\r\n', '\n', '\r', '\x00', '\x01', '\x1b',
          '\x7f', '\u202e', '\u2028', '\x85', 'x' * 90,
          'ä' * 40, 'word ' * 20]


def cases():
    rnd = random.Random(20231114)
    yield 'plain title'.encode()
    yield 'Jöhn Döe-Müller'.encode()
    yield 'Name, Jr.'.encode()
    yield 'evil\r\nBcc: victim@example.org'.encode()
    yield '=?UTF-8?q?not=20encoded?= literal'.encode()
    yield b'bad \xff byte'
    yield ('x' * 1500).encode()
    yield ('ü' * 300).encode()
    for _ in range(400):
        n = rnd.randint(1, 12)
        s = ''.join(rnd.choice(PIECES) for _ in range(n))
        b = s.replace('\x00', '').encode()
        if rnd.random() < 0.1:
            b += b'\xff'
        if sanitize(b):
            yield b


def check_lines(block, n):
    fields = []
    for line in block.split('\n'):
        if line.startswith((' ', '\t')):
            fields[-1].append(line)
        else:
            fields.append([line])
    for f in fields:
        width = 76 if any('=?' in l for l in f) else 78
        for i, l in enumerate(f):
            rest = l.split(':', 1)[1] if i == 0 else l
            # One word longer than a line cannot be folded; mailhdr
            # leaves such plain words alone up to MAILHDR_WORD_MAX (a
            # URL in a title), as git does, within RFC 5322's 998.
            one_word = ' ' not in rest.strip() and '\t' not in rest.strip()
            if len(l) > 998 or (len(l) > width and not one_word):
                sys.exit('case %d: line of %d > %d: %r' % (n, len(l), width, l))
            if any(ord(c) > 126 or ord(c) < 32 for c in l):
                sys.exit('case %d: not printable ASCII: %r' % (n, l))


def legacy_decode(value):
    unfolded = value.replace('\n', '')
    return str(email.header.make_header(email.header.decode_header(unfolded)))


def main():
    inputs = list(cases())
    feed = ''.join(b.hex() + '\n' for b in inputs).encode()
    res = subprocess.run([sys.argv[1]], input=feed, capture_output=True,
                         check=True)
    blocks, cur = [], []
    for line in res.stdout.decode('ascii').split('\n'):
        if line == '.':
            blocks.append('\n'.join(cur) + '\n')
            cur = []
        else:
            cur.append(line)
    if len(blocks) != len(inputs):
        sys.exit('expected %d outputs, got %d' % (len(inputs), len(blocks)))
    for n, (raw, block) in enumerate(zip(inputs, blocks)):
        check_lines(block.rstrip('\n'), n)
        want = sanitize(raw)
        msg = email.message_from_string(block + '\n',
                                        policy=email.policy.default)
        got = str(msg['Subject'])
        if got != '[PATCH v2 3/7] ' + want:
            sys.exit('case %d: subject %r != %r\n%s' % (n, got, want, block))
        subj = block.split('\nFrom:')[0][len('Subject:'):].strip()
        if legacy_decode(subj) != '[PATCH v2 3/7] ' + want:
            sys.exit('case %d: legacy decode %r != %r'
                     % (n, legacy_decode(subj), want))
        addr = msg['From'].addresses[0]
        if addr.addr_spec != 'a@example.org':
            sys.exit('case %d: From address %r' % (n, addr.addr_spec))
        value = block.split('\nFrom:')[1].strip()
        if '?= =?' in value.replace('\n', ''):
            # A name longer than one encoded-word: Python's address
            # parser keeps the space between adjacent encoded-words,
            # which RFC 2047 section 6.2 says to drop; the legacy
            # decoder follows the RFC.
            got = legacy_decode(value)
            if got != want + ' <a@example.org>':
                sys.exit('case %d: From %r, want %r' % (n, got, want))
        elif addr.display_name != want:
            sys.exit('case %d: From %r, want %r\n%s'
                     % (n, addr.display_name, want, block))
    print('headers_decode: %d strings encoded and decoded back' % len(inputs))


if __name__ == '__main__':
    main()
