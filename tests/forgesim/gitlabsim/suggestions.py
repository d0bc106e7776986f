"""Suggestions in diff notes, parsed and stored the way GitLab does.

Suggestions::CreateService (app/services/suggestions/create_service.rb)
runs when a note is saved that supports_suggestion? (DiffNote: a text
position whose line is not a removed one, app/models/diff_note.rb).
Gitlab::Diff::SuggestionsParser (lib/gitlab/diff/suggestions_parser.rb)
finds every fenced code block of the language "suggestion", with the
optional range "-X+Y" after a colon (SUGGESTION_CONTEXT; anything else
reads as no range).  Gitlab::Diff::Suggestion (lib/gitlab/diff/
suggestion.rb) and Suggestible (app/models/concerns/suggestible.rb) make
each one:

* from_line = max(new_line - min(X, 100), 1), to_line = new_line +
  min(Y, 100);
* from_content = the new file's lines from_line..to_line at the
  position's head (new_blob_lines_between), line breaks kept;
* to_content = the block's text, plus the line break of the last line of
  from_content; "" for an empty block (the lines are removed).

The API shows them on the note (lib/api/entities/note.rb, "suggestions"
of a MergeRequest DiffNote; lib/api/entities/suggestion.rb).
"""

import re

MAX_LINES_CONTEXT = 100
_RANGE = re.compile(r"^(-(?P<above>\d+))?(\+(?P<below>\d+))?$")
_OPEN = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([^`\s]*)[^`]*$")


def fenced_blocks(body):
    """[(info word, text)] of each fenced code block (CommonMark: the
    closing fence is of the same character, at least as long)."""
    out, lines, i = [], body.replace("\r\n", "\n").split("\n"), 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        i += 1
        if not m:
            continue
        indent, fence, info = len(m.group(1)), m.group(2), m.group(3)
        text = []
        while i < len(lines):
            close = lines[i].strip()
            if len(lines[i]) - len(lines[i].lstrip(" ")) <= 3 and close and \
                    set(close) == {fence[0]} and len(close) >= len(fence):
                i += 1
                break
            line = lines[i]
            for _ in range(indent):
                if line.startswith(" "):
                    line = line[1:]
            text.append(line)
            i += 1
        out.append((info, "\n".join(text)))
    return out


def parse(body, new_line, blob_lines):
    """The suggestions of a note on new line new_line; blob_lines is the
    new file's lines, line breaks kept.  [] for a note on a removed line
    (new_line None)."""
    if not new_line:
        return []
    out = []
    for info, text in fenced_blocks(body):
        lang, _, params = info.partition(":")
        if lang != "suggestion":
            continue
        m = _RANGE.match(params)
        above = int(m.group("above") or 0) if m else 0
        below = int(m.group("below") or 0) if m else 0
        from_line = max(new_line - min(above, MAX_LINES_CONTEXT), 1)
        to_line = new_line + min(below, MAX_LINES_CONTEXT)
        from_content = "".join(blob_lines[from_line - 1:to_line])
        last = from_content.splitlines(keepends=True)[-1:] or [""]
        brk = re.search(r"\r\n|\r|\n", last[0])
        to_content = text + (brk.group(0) if brk else "") if text.strip() \
            else ""
        out.append({"from_line": from_line, "to_line": to_line,
                    "from_content": from_content, "to_content": to_content,
                    "applied": False})
    return out
