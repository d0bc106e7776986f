#!/usr/bin/env python3
"""The Python of the test beds and the demo, checked without running it:
every file compiles, and no module defines one name twice at its top
level (the second definition silently replaces the first, and its
callers break only when they run).

    pycheck.py TOP   check TOP/tests and TOP/scripts
"""
import ast
import os
import sys


def problems(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        tree = ast.parse(text, path)
    except SyntaxError as e:
        return ["%s:%s: %s" % (path, e.lineno, e.msg)]
    seen, out = {}, []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef)):
            if node.name in seen:
                out.append("%s:%d: %s is defined again (first at line %d)"
                           % (path, node.lineno, node.name, seen[node.name]))
            else:
                seen[node.name] = node.lineno
    return out


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else "."
    files, bad = 0, []
    for sub in ("tests", "scripts"):
        for root, dirs, names in os.walk(os.path.join(top, sub)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for n in sorted(names):
                if n.endswith(".py"):
                    files += 1
                    bad += problems(os.path.join(root, n))
    for line in bad:
        print(line)
    print("pycheck: %d files, %d problem(s)" % (files, len(bad)))
    return 1 if bad or files == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
