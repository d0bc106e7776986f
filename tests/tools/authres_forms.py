"""The forged Authentication-Results values of
tests/data/authres/forged.txt, for the Python tests (tests/cli,
tests/e2e); tests/unit/test_authres.c reads the same file."""

import os

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "..", "data", "authres", "forged.txt")
ESCAPES = {"r": "\r", "n": "\n", "t": "\t"}


def unescape(line):
    out, i = [], 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line):
            i += 1
            c = ESCAPES.get(line[i], line[i])
        out.append(c)
        i += 1
    return "".join(out)


def forms():
    """[(number, comment, value)] in file order; value is the field's
    value as written after "Authentication-Results: ", folding as LF
    plus blank (CR LF in the file become LF)."""
    out, comment = [], ""
    with open(PATH, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#"):
                comment = line.lstrip("# ")
                continue
            if not line:
                continue
            out.append((len(out) + 1, comment,
                        unescape(line).replace("\r\n", "\n")))
    return out
