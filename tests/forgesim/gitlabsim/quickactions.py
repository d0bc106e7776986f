"""Extracting quick actions from a note body.

Follows lib/gitlab/quick_actions/extractor.rb closely enough for the bridge:
- a command is a line that starts with "/" followed by a *known* command
  name (case-insensitive) and optional arguments; unknown "/words" stay in
  the text;
- lines inside fenced code blocks, and inside ">>>" multi-line blockquotes,
  are never commands; an indented or ">"-quoted "/approve" is not at the
  start of the line and so is plain text.  That is exactly what the bridge
  relies on to neutralise relayed mail.
Extracted command lines are removed from the body.
"""

import re

# name -> canonical command (GitLab's aliases included).
COMMANDS = {
    "approve": "approve", "unapprove": "unapprove",
    "label": "label", "labels": "label",
    "unlabel": "unlabel", "remove_label": "unlabel",
    "merge": "merge", "close": "close", "reopen": "reopen",
}

_LINE = re.compile(r"^/([A-Za-z_]+)(?:[ \t]+(.*))?$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_QUOTE_FENCE = re.compile(r"^>>>\s*$")
_LABEL_REF = re.compile(r'~"([^"]+)"|~([^\s~"]+)|([^\s~",]+)')


def extract(body):
    """Split a body into ([(command, argument)], remaining text)."""
    commands = []
    kept = []
    in_fence = in_quote = False
    for line in body.split("\n"):
        if _FENCE.match(line) and not in_quote:
            in_fence = not in_fence
            kept.append(line)
            continue
        if _QUOTE_FENCE.match(line) and not in_fence:
            in_quote = not in_quote
            kept.append(line)
            continue
        if not in_fence and not in_quote:
            m = _LINE.match(line.rstrip("\r"))
            if m and m.group(1).lower() in COMMANDS:
                commands.append((COMMANDS[m.group(1).lower()],
                                 (m.group(2) or "").strip()))
                continue
        kept.append(line)
    return commands, "\n".join(kept).strip()


def label_names(argument):
    """Label names from `~a ~"b c" d` (quoted names may contain spaces)."""
    names = []
    for quoted, ref, bare in _LABEL_REF.findall(argument):
        name = quoted or ref or bare
        if name and name not in names:
            names.append(name)
    return names


def label_reference(name):
    """Label#to_reference(format: :name): ~name, or ~"name" when needed."""
    if re.fullmatch(r"[A-Za-z0-9_\-?.&]+", name):
        return "~" + name
    return '~"%s"' % name
