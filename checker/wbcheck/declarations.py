"""The checks a lab declares: WB_CHECK(Group, Name, .field = value, ...) in its check sources.

Each check is declared once, beside its body, in checker/labs/NN-name/*.cpp (and *.h) with the
macro of checker/support/wb_check_spec.h:

    WB_CHECK(Correctness, SaxpySmallSizes, .weight = 2,
             .hint = "Compute i = blockIdx.x * blockDim.x + threadIdx.x ...") {

This module reads those declarations from the source text (the runner never asks a program that
runs the lab's code what its checks are worth). Fields are literals: numbers, string literals
(adjacent ones are joined, as C++ does), braced lists of integers for `ranks` and of
{"name", number} pairs for `limits`. A text several checks share (`passes`, `hint`) may be a
constant of the same file, `constexpr char kName[] = "...";`, named in each declaration. A
function-like macro whose body holds a WB_CHECK declares a family of checks; each use of the macro in the same
file is expanded here as the preprocessor would expand it (parameters replaced by the arguments;
no # or ## in such a body). Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

FIELDS = ("weight", "backends", "timeout_s", "ranks", "limits", "passes", "hint")  # the order of wb::check::Spec
BACKENDS = ("sim", "cuda")


class DeclarationError(Exception):
    """A WB_CHECK the runner cannot read: names the file and line and what to write instead."""


@dataclass
class Declaration:
    name: str                     # "Correctness.SaxpySmallSizes"
    file: Path
    line: int
    weight: float | None = None   # None: the group's default
    backends: tuple[str, ...] = ()
    timeout_s: float | None = None
    ranks: list[int] = field(default_factory=list)
    limits: dict[str, float] = field(default_factory=dict)   # name -> value, in declaration order
    passes: str = ""              # with {name} / {name:format} placeholders
    hint: str = ""

    def passes_text(self) -> str:
        """What passes, with each limit written in: "{max_loads}" as the source writes the number
        ("9" for 9.0, "0.8" for 0.80, "1e-9"), "{max_loads:.2f}" in that Python format ("9.00")."""
        def one(m: re.Match) -> str:
            value = self.limits[m.group(1)]
            if m.group(2) is not None:
                return format(value, m.group(2))
            if value.is_integer() and abs(value) < 1e15:
                return str(int(value))
            return re.sub(r"e([+-])0*(\d)", lambda e: "e" + e.group(1).replace("+", "") + e.group(2), repr(value))
        return PLACEHOLDER.sub(one, self.passes)


# A limit's place in a `passes` text: {identifier} or {identifier:format}; other braces are text.
PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)(?::([^{}]*))?\}")

_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "0": "\0", "?": "?"}


def _literal_end(text: str, i: int) -> int:
    """Index just past the string or character literal that starts at text[i]."""
    quote, j, n = text[i], i + 1, len(text)
    while j < n and text[j] != quote:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _strip_comments(text: str) -> str:
    """The text with comments blanked out (newlines kept, so line numbers stay) and string and
    character literals intact."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = _literal_end(text, i)
            out.append(text[i:j])
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            # A // comment ends at the line's end, even inside a macro (a backslash ending the
            # comment would continue it, but no check file writes that).
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _balanced(text: str, start: int) -> int:
    """Index just past the ')' that closes the '(' at text[start]; string literals and nested
    brackets are skipped. -1 when unbalanced."""
    depth, i, n = 0, start, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            i = _literal_end(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def _split_args(text: str) -> list[str]:
    """Top-level comma-separated pieces of a macro's argument text."""
    parts, depth, cur, i, n = [], 0, [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = _literal_end(text, i)
            cur.append(text[i:j])
            i = j
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur).strip())
    return parts if parts != [""] else []


def _string_literal(text: str) -> str | None:
    """The value of one or more adjacent C++ string literals, or None when @p text is not that."""
    pieces = re.findall(r'\s*"((?:[^"\\\n]|\\.)*)"', text)
    if not pieces or re.sub(r'\s*"((?:[^"\\\n]|\\.)*)"', "", text).strip():
        return None
    value = []
    for piece in pieces:
        i = 0
        while i < len(piece):
            if piece[i] == "\\" and i + 1 < len(piece):
                esc = piece[i + 1]
                if esc not in _ESCAPES:
                    return None
                value.append(_ESCAPES[esc])
                i += 2
            else:
                value.append(piece[i])
                i += 1
    return "".join(value)


def _macros(text: str) -> dict:
    """{name: (params, body)} of the function-like macros whose body declares a check."""
    macros = {}
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)", text, re.M):
        body = m.group(3).replace("\\\n", " ")
        if "WB_CHECK" in body:
            macros[m.group(1)] = ([p.strip() for p in m.group(2).split(",") if p.strip()], body)
    return macros


def _expand(text: str, macros: dict) -> list[tuple[str, int]]:
    """(text, line) of every WB_CHECK( ... ) found in @p text outside #define lines, with the
    uses of @p macros expanded."""
    found = []
    defines = [(m.start(), m.end()) for m in re.finditer(r"^[ \t]*#(?:\\\n|[^\n])*", text, re.M)]

    def in_define(pos: int) -> bool:
        return any(a <= pos < b for a, b in defines)

    for m in re.finditer(r"\bWB_CHECK\s*\(", text):
        if not in_define(m.start()):
            found.append((text[m.start():], text.count("\n", 0, m.start()) + 1))
    for name, (params, body) in macros.items():
        for m in re.finditer(r"\b" + re.escape(name) + r"\s*\(", text):
            if in_define(m.start()):
                continue
            end = _balanced(text, m.end() - 1)
            args = _split_args(text[m.end():end - 1]) if end > 0 else []
            line = text.count("\n", 0, m.start()) + 1
            if len(args) != len(params):
                raise DeclarationError(f"line {line}: {name}(...) has {len(args)} arguments, its #define "
                                       f"{len(params)}")
            expanded = body
            for p, a in zip(params, args):
                expanded = re.sub(r"\b" + re.escape(p) + r"\b", lambda _m, a=a: a, expanded)
            i = expanded.find("WB_CHECK")
            found.append((expanded[i:], line))
    return found


def _string_constants(text: str) -> dict[str, str]:
    """{name: value} of the `constexpr char kName[] = "..." "...";` constants in @p text."""
    found = {}
    for m in re.finditer(r'\bconstexpr\s+(?:const\s+)?char\s+(\w+)\s*\[\s*\]\s*=\s*((?:"(?:[^"\\\n]|\\.)*"\s*)+);',
                         text):
        value = _string_literal(m.group(2))
        if value is not None:
            found[m.group(1)] = value
    return found


def _parse(decl: str, path: Path, line: int, constants: dict[str, str] | None = None) -> Declaration:
    where = f"{path}:{line}"
    open_paren = decl.index("(")
    end = _balanced(decl, open_paren)
    if end < 0:
        raise DeclarationError(f"{where}: WB_CHECK( is not closed")
    args = _split_args(decl[open_paren + 1:end - 1])
    if len(args) < 2 or not all(re.fullmatch(r"\w+", a) for a in args[:2]):
        raise DeclarationError(f"{where}: WB_CHECK needs the group and the name first: "
                               f"WB_CHECK(Correctness, SomeName, .weight = 1, ...)")
    d = Declaration(name=f"{args[0]}.{args[1]}", file=path, line=line)
    seen = []
    for arg in args[2:]:
        m = re.fullmatch(r"\.(\w+)\s*=\s*(.*)", arg, re.S)
        if not m or m.group(1) not in FIELDS:
            raise DeclarationError(f"{where}: {d.name}: '{arg[:60]}' is not a field of wb::check::Spec "
                                   f"(write .field = value with a field among {', '.join(FIELDS)})")
        key, value = m.group(1), m.group(2).strip()
        seen.append(key)
        if key in ("weight", "timeout_s"):
            try:
                number = float(value)
            except ValueError:
                raise DeclarationError(f"{where}: {d.name}: .{key} = {value}: write a number literal "
                                       f"(the runner reads it from the source)") from None
            setattr(d, key, number)
        elif key == "ranks":
            rm = re.fullmatch(r"\{\s*(\d+(?:\s*,\s*\d+)*)\s*,?\s*\}", value)
            if not rm:
                raise DeclarationError(f"{where}: {d.name}: .ranks = {value}: write a braced list of rank "
                                       f"counts such as {{2, 4}}")
            d.ranks = [int(r) for r in re.split(r"\s*,\s*", rm.group(1))]
        elif key == "limits":
            d.limits = _limits(value, f"{where}: {d.name}")
        else:
            s = _string_literal(value)
            if s is None and key != "backends" and re.fullmatch(r"[A-Za-z_]\w*", value):
                s = (constants or {}).get(value)
            if s is None:
                raise DeclarationError(f"{where}: {d.name}: .{key} = {value[:60]}: write a string literal "
                                       f"(adjacent literals are joined; the runner reads it from the source), "
                                       f"or name a constexpr char {value if value.isidentifier() else 'kName'}[] "
                                       f"= \"...\"; of this file")
            if key == "backends":
                if s not in BACKENDS:
                    raise DeclarationError(f"{where}: {d.name}: .backends = \"{s}\": a check of one backend "
                                           f"names \"sim\" or \"cuda\"; leave the field out for both")
                d.backends = (s,)
            else:
                setattr(d, key, s)
    if seen != sorted(seen, key=FIELDS.index) or len(set(seen)) != len(seen):
        raise DeclarationError(f"{where}: {d.name}: write each field once, in the order {', '.join(FIELDS)} "
                               f"(C++ designated initializers follow the declaration order)")
    named = {m.group(1) for m in PLACEHOLDER.finditer(d.passes)}
    unknown, unused = sorted(named - set(d.limits)), [n for n in d.limits if n not in named]
    if unknown or unused:
        raise DeclarationError(f"{where}: {d.name}: " + "; ".join(
            ([f".passes names {', '.join('{' + n + '}' for n in unknown)}, not among its .limits"] if unknown else [])
            + ([f"limit {', '.join(unused)} does not appear in .passes (write {{{unused[0]}}} where the text "
                f"states it)"] if unused else [])))
    try:
        d.passes_text()
    except ValueError as e:
        raise DeclarationError(f"{where}: {d.name}: .passes: {e} (a format such as {{name:.2f}})") from None
    return d


def _limits(value: str, where: str) -> dict[str, float]:
    """{name: number} of a `.limits = {{"name", number}, ...}` value."""
    inner = re.fullmatch(r"\{(.*)\}", value.strip(), re.S)
    pairs = _split_args(inner.group(1)) if inner else None
    out: dict[str, float] = {}
    for pair in pairs or [None]:
        pm = re.fullmatch(r'\{\s*"([A-Za-z_]\w*)"\s*,\s*([-+0-9.eE]+)\s*\}', pair or "")
        if not pm:
            raise DeclarationError(f"{where}: .limits = {value[:60]}: write {{{{\"name\", number}}, ...}} with "
                                   f"identifier names and number literals")
        try:
            number = float(pm.group(2))
        except ValueError:
            raise DeclarationError(f"{where}: .limits: {pm.group(2)} is not a number literal") from None
        if pm.group(1) in out:
            raise DeclarationError(f"{where}: .limits names {pm.group(1)} twice")
        out[pm.group(1)] = number
    if len(out) > 6:
        raise DeclarationError(f"{where}: .limits holds {len(out)} limits; wb::check::Spec has room for 6")
    return out


def read_declarations(directory: Path) -> list[Declaration]:
    """Every check declared in @p directory's *.cpp and *.h files, in file and line order."""
    found: list[Declaration] = []
    for path in sorted(list(directory.glob("*.cpp")) + list(directory.glob("*.h"))):
        text = _strip_comments(path.read_text(encoding="utf-8"))
        if "WB_CHECK" not in text:
            continue
        try:
            uses = _expand(text, _macros(text))
        except DeclarationError as e:
            raise DeclarationError(f"{path}: {e}") from None
        constants = _string_constants(text)
        for decl, line in sorted(uses, key=lambda u: u[1]):
            found.append(_parse(decl, path, line, constants))
    names = {}
    for d in found:
        if d.name in names:
            raise DeclarationError(f"{d.file}:{d.line}: {d.name} is declared twice "
                                   f"(also at {names[d.name].file}:{names[d.name].line})")
        names[d.name] = d
    return found
