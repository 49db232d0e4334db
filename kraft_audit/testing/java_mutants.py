"""Mutation operators on Java source: the small edits a controller bug is made of.

Each operator is a class of bug (make test-controller-mutants scores the auditor per class):

  negated-condition      `if (c)` -> `if (!(c))`, `==` <-> `!=`, `&&` <-> `||`
  short-circuited-check  `if (c)` -> `if (false)` where the branch leaves (throw, return,
                         continue, break): a check the controller skips
  removed-call           an expression statement (`records.add(...);`) removed
  off-by-one             `<` <-> `<=`, `>` <-> `>=`, `+ 1` / `- 1` dropped
  swapped-arguments      `f(a, b)` -> `f(b, a)` for two plain names
  changed-constant       `true` <-> `false`, `0` <-> `1`, `-1` -> `0`
  dropped-filter         `.filter(...)` taken out of a stream

Line by line, on code only: comments, string literals, imports, annotations and logging
are left alone (a mutant there changes nothing the log can show), and so are toString,
equals and hashCode. A mutant that does not compile is stillborn (javac says so), not
scored. Pure text: no Java runs here.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

OPERATORS = ("negated-condition", "short-circuited-check", "removed-call", "off-by-one",
             "swapped-arguments", "changed-constant", "dropped-filter")


@dataclass(frozen=True)
class Mutant:
    file: str  # the source's path in its jar, e.g. org/apache/kafka/controller/X.java
    line: int  # 1-based
    operator: str
    original: str  # the whole line before
    mutated: str  # and after
    method: str  # the enclosing method, as far as a line scan tells

    @property
    def mutant_id(self) -> str:
        """Stable across runs: the class, the line and which edit of it."""
        cls = self.file.rsplit("/", 1)[-1].removesuffix(".java")
        return f"{cls}:{self.line}:{self.operator}:{_edit_digest(self.original, self.mutated)}"

    def apply(self, source: str) -> str:
        lines = source.split("\n")
        if lines[self.line - 1] != self.original:
            raise ValueError(f"{self.file}:{self.line} is not the line this mutant was made from")
        lines[self.line - 1] = self.mutated
        return "\n".join(lines)


def _edit_digest(a: str, b: str) -> str:
    return hashlib.sha1(f"{a}\0{b}".encode()).hexdigest()[:8]


_STRING = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')
_LOGGING = re.compile(r"\b(log|LOG|logger|LOGGER)\.(trace|debug|info|warn|error)\b|isDebugEnabled|isTraceEnabled")
_METHOD = re.compile(r"^\s*(?:(?:public|private|protected|static|final|synchronized|abstract|default)\s+)*"
                     r"(?:<[^>]+>\s+)?[\w.<>\[\], ?]+\s+(\w+)\s*\([^;]*$")
_CONTROL = frozenset({"if", "for", "while", "switch", "catch", "return", "new", "else", "throw", "synchronized"})
_SKIPPED_METHODS = frozenset({"toString", "equals", "hashCode"})
_EXIT = re.compile(r"\b(throw|return|continue|break)\b")


def _mask(line: str) -> str:
    """The line with string and char literals blanked (same length): operators match code only."""
    return _STRING.sub(lambda m: m.group(0)[0] + " " * (len(m.group(0)) - 2) + m.group(0)[-1], line)


def _close_paren(text: str, open_at: int) -> int | None:
    """Index of the parenthesis closing the one at `open_at`, on this line; None if it is not."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return None


def code_lines(source: str) -> list[tuple[int, str, str, str]]:
    """(line number, the line, its code masked of literals and comments, enclosing method)
    for every line that holds code worth mutating."""
    out = []
    in_block = False
    method = ""
    for number, line in enumerate(source.split("\n"), 1):
        code = _mask(line)
        if in_block:
            end = code.find("*/")
            if end < 0:
                continue
            code = " " * (end + 2) + code[end + 2:]
            in_block = False
        start = code.find("/*")
        if start >= 0:
            end = code.find("*/", start + 2)
            if end < 0:
                in_block = True
                code = code[:start]
            else:
                code = code[:start] + " " * (end + 2 - start) + code[end + 2:]
        if "//" in code:
            code = code[:code.index("//")]
        stripped = code.strip()
        if not stripped or stripped.startswith(("import ", "package ", "@")):
            continue
        m = _METHOD.match(code)
        if m and m.group(1) not in _CONTROL and "=" not in code.split("(")[0]:
            method = m.group(1)
            continue  # a signature: nothing to mutate on it
        if method in _SKIPPED_METHODS or _LOGGING.search(code):
            continue
        out.append((number, line, code, method))
    return out


def mutants(path: str, source: str) -> list[Mutant]:
    """Every mutant of one Java source file, in line order."""
    found: list[Mutant] = []
    scanned = code_lines(source)
    for index, (number, line, code, method) in enumerate(scanned):
        following = " ".join(c for _n, _l, c, _m in scanned[index + 1:index + 4])
        # a statement begins on this line (not the tail of one begun above)
        starts = index == 0 or scanned[index - 1][2].rstrip().endswith((";", "{", "}", ":"))
        for operator, mutated in _edits(line, code, following, starts):
            if mutated != line:
                found.append(Mutant(path, number, operator, line, mutated, method))
    return found


def _edits(line: str, code: str, following: str, starts: bool):
    """(operator, mutated line) pairs for one line of code."""
    def at(i: int, old: str, new: str) -> str:
        return line[:i] + new + line[i + len(old):]

    for m in re.finditer(r"\bif\s*\(", code):
        open_at = m.end() - 1
        close = _close_paren(code, open_at)
        if close is None:
            continue
        cond = line[open_at + 1:close]
        yield "negated-condition", line[:open_at + 1] + f"!({cond})" + line[close:]
        rest = code[close + 1:] + " " + following
        if _EXIT.search(rest.split("}")[0] if "{" in code[close + 1:] else rest[:200]):
            yield "short-circuited-check", line[:open_at + 1] + "false" + line[close:]
    for old, new in (("==", "!="), ("!=", "=="), ("&&", "||"), ("||", "&&")):
        for m in re.finditer(re.escape(f" {old} "), code):
            yield "negated-condition", at(m.start(), f" {old} ", f" {new} ")
    for old, new in ((" < ", " <= "), (" <= ", " < "), (" > ", " >= "), (" >= ", " > ")):
        for m in re.finditer(re.escape(old), code):
            yield "off-by-one", at(m.start(), old, new)
    for m in re.finditer(r" ([+-]) 1\b(?!\.)", code):
        yield "off-by-one", line[:m.start()] + line[m.end():]
    stripped = code.strip()
    if starts and (re.match(r"^[\w.]+(\.\w+)*\s*\(.*\)\s*;$", stripped) or re.match(r"^[\w.()\s]+\.\w+\(.*\);$", stripped)) \
            and not re.match(r"^(return|throw|super|this|new)\b", stripped) \
            and _close_paren(stripped, stripped.index("(")) is not None:
        indent = line[:len(line) - len(line.lstrip())]
        yield "removed-call", f"{indent};"
    for m in re.finditer(r"\b(\w+)\(\s*([a-z]\w*)\s*,\s*([a-z]\w*)\s*\)", code):
        name, a, b = m.groups()
        if a != b and name not in _CONTROL:
            yield "swapped-arguments", line[:m.start()] + f"{name}({b}, {a})" + line[m.end():]
    for m in re.finditer(r"\b(true|false)\b", code):
        yield "changed-constant", at(m.start(), m.group(1), "false" if m.group(1) == "true" else "true")
    for m in re.finditer(r"(?<![\w.])(-1|0|1)(?![\w.])", code):
        new = {"-1": "0", "0": "1", "1": "0"}[m.group(1)]
        if m.group(1) == "1" and line[max(0, m.start() - 1)] == "-":
            continue
        yield "changed-constant", at(m.start(), m.group(1), new)
    for m in re.finditer(r"\.filter\(", code):
        close = _close_paren(code, m.end() - 1)
        if close is not None:
            yield "dropped-filter", line[:m.start()] + line[close + 1:]
