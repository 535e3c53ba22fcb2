"""The text prefilter of the Python rules: can a file match any rule at all, judged from its text?

A file that no rule can match is never parsed, which is most of the scan's speed (issue 4: 10,000 files
in 10 s on 2 cores). The tests here are conservative: they may let a file through that matches nothing,
never the other way round (see `PythonMatcher.needs_ast`).
"""

from __future__ import annotations

import re

__all__ = ["FROM_TORCH", "GAP", "HEADER", "TO_SPACE", "logical_line_end", "name_words", "word_tokens"]

# Between a `.` and the attribute name Python allows spaces, line continuations and (inside brackets)
# comments; the patterns below allow the same, so `x.\n    item()` is not missed.
GAP = r"(?:\s|\\|#[^\n]*+)*+"
# The names bound by `from torch import ...`, parenthesised or not (comments may hold a closing bracket).
FROM_TORCH = re.compile(
    r"from[\s\\]+torch[\s\\]+import[\s\\]*(\((?:[^)#]|#[^\n]*+)*+\)|(?:[^\n\\#;]|\\\r?\n)*+)"
)
# A line that may open an `if`, `elif` or `while` statement (compound statements start a logical line).
HEADER = re.compile(r"^[ \t\f]*(?:if|elif|while)\b[^\n]*", re.MULTILINE)
# Bytes that cannot be part of an identifier or a word become spaces, so a file splits into its words.
_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
TO_SPACE = bytes(b if b in _WORD_BYTES or b >= 128 else 32 for b in range(256))
_SIMPLE_STRING = re.compile(r"\"[^\"\\\n]*\"|'[^'\\\n]*'")
_F_STRING = re.compile(r"(?<![\w])(?:[fF][rR]?|[rR][fF])[\"']")  # may nest quotes (Python 3.12)
_STRING_OR_COMMENT = re.compile(r"[\"'#]")
_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")


def name_words(names: set[str]) -> dict[bytes, list[frozenset[bytes]]] | None:
    """For each dotted name, the words a file that uses it must contain: all of its parts (every part of a
    name a file uses is written in the file, in the import or in the attribute chain), keyed by the longest
    part so a file is checked only against the names whose key word it holds. None when a part cannot be
    looked for."""
    out: dict[bytes, list[frozenset[bytes]]] = {}
    for name in names:
        parts = [p for p in name.split(".") if p != "torch"] or ["torch"]
        tokens = word_tokens(set(parts))
        if tokens is None:
            return None
        key = max(tokens, key=len)
        out.setdefault(key, []).append(tokens)
    return out


def word_tokens(words: set[str]) -> frozenset[bytes] | None:
    """The words as they come out of `TO_SPACE` ("max-autotune" needs "autotune": any part will do);
    None when a word has no part that can be looked for, so every file must be parsed."""
    out: set[bytes] = set()
    for w in words:
        parts = w.encode().translate(TO_SPACE).split()
        if not parts:
            return None
        out.add(max(parts, key=len))
    return frozenset(out)


def logical_line_end(text: str, start: int) -> int | None:
    """Where the logical line that starts at `start` ends (an offset in `text`), following open brackets and
    backslashes over physical lines; None when the text does not tell for sure (a string that may span
    lines, an f-string that may nest quotes, unbalanced brackets)."""
    depth = 0
    pos = start
    size = len(text)
    while True:
        end = text.find("\n", pos)
        if end < 0:
            end = size
        line = text[pos:end]
        if _F_STRING.search(line):
            return None
        code = _SIMPLE_STRING.sub("", line)  # left to right, as the tokenizer reads them
        first = _STRING_OR_COMMENT.search(code)
        if first is not None:
            if first.group(0) != "#":  # triple quotes or escapes: cannot tell where the string ends
                return None
            code = code[: first.start()]  # a comment: no string is open before it
        for ch in code:
            if ch in _OPEN:
                depth += 1
            elif ch in _CLOSE:
                depth -= 1
                if depth < 0:
                    return None
        if depth == 0 and not code.rstrip().endswith("\\"):
            return end
        if end == size:
            return None
        pos = end + 1
