"""GitLab's model of a diff: lines, line numbers, line codes, positions.

Mirrors gitlab-org/gitlab lib/gitlab/diff/parser.rb and line.rb:
- the old counter moves only on context and '-' lines, the new counter only
  on context and '+' lines, so an added line carries the *next* old number;
- a line's old_line is nil for added lines and its new_line nil for removed
  lines; context lines have both;
- a position matches a line only when (old_line, new_line) are equal to the
  line's pair exactly, which is what makes "added -> new_line only, removed
  -> old_line only, context -> both" the rule;
- line_code = "<sha1(file path)>_<old counter>_<new counter>"
  (lib/gitlab/git.rb diff_line_code);
- an unchanged line outside the hunks can still be commented on: GitLab
  "unfolds" it (lib/gitlab/diff/lines_unfolder.rb) when the old line exists
  in the old blob and new_line equals old_line shifted by the hunks above.
"""

import dataclasses
import hashlib
import re

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclasses.dataclass
class DiffFile:
    old_path: str
    new_path: str
    a_mode: str
    b_mode: str
    new_file: bool
    deleted_file: bool
    renamed_file: bool
    binary: bool
    diff: str

    @property
    def file_path(self):
        return self.new_path or self.old_path

    def lines(self):
        return parse_lines(self.diff)


@dataclasses.dataclass
class DiffLine:
    type: str          # "new", "old", "context", "match" or "nonewline"
    old_pos: int
    new_pos: int

    @property
    def old_line(self):
        return None if self.type in ("new", "match", "nonewline") \
            else self.old_pos

    @property
    def new_line(self):
        return None if self.type in ("old", "match", "nonewline") \
            else self.new_pos


def parse_lines(diff_text):
    lines = []
    old = new = 0
    for text in diff_text.splitlines():
        m = _HUNK.match(text)
        if m:
            old, new = int(m.group(1)), int(m.group(3))
            lines.append(DiffLine("match", old, new))
            continue
        if text.startswith("\\"):
            lines.append(DiffLine("nonewline", old, new))
            continue
        kind = {"+": "new", "-": "old"}.get(text[:1], "context")
        lines.append(DiffLine(kind, old, new))
        if kind == "new":
            new += 1
        elif kind == "old":
            old += 1
        else:
            old += 1
            new += 1
    return lines


def line_code(path, old_pos, new_pos):
    digest = hashlib.sha1(path.encode("utf-8", "surrogateescape")).hexdigest()
    return "%s_%d_%d" % (digest, old_pos, new_pos)


def hunk_ranges(lines):
    """[(old_start, old_end_exclusive, offset_after)] for each hunk."""
    ranges = []
    start = None
    for ln in lines:
        if ln.type == "match":
            if start is not None:
                ranges.append(start)
            start = [ln.old_pos, ln.old_pos, 0]
        elif start is not None and ln.type in ("old", "context", "new"):
            if ln.type != "new":
                start[1] = ln.old_pos + 1
            start[2] = (ln.new_pos + (1 if ln.type != "old" else 0)) - \
                (ln.old_pos + (1 if ln.type != "new" else 0))
    if start is not None:
        ranges.append(start)
    return [tuple(r) for r in ranges]


def find_line(diff_file, old_line, new_line, old_blob_lines):
    """The line code a text position resolves to, or None.

    old_blob_lines is a callable returning the old file's line count; it is
    only called when the position may be an unfolded unchanged line.
    """
    if diff_file.binary:
        return None
    lines = diff_file.lines()
    for ln in lines:
        if ln.type in ("match", "nonewline"):
            continue
        if ln.old_line == old_line and ln.new_line == new_line:
            return line_code(diff_file.file_path, ln.old_pos, ln.new_pos)
    # Unfolding applies to unchanged lines of modified files only.
    if old_line is None or new_line is None or not lines or \
            diff_file.new_file or diff_file.deleted_file:
        return None
    if old_line < 1 or old_line > old_blob_lines():
        return None
    offset = 0
    for old_start, old_end, offset_after in hunk_ranges(lines):
        if old_line < old_start:
            break
        if old_line < old_end:
            return None    # inside a hunk, but matched no line above
        offset = offset_after
    if new_line != old_line + offset:
        return None
    return line_code(diff_file.file_path, old_line, new_line)
