#!/usr/bin/env python3
"""Extracts the examples of docs/recipes/*.md so that the test suite compiles
and runs them (docs/recipes/README.md says how to write one).

Every fenced code block whose info string is exactly ``cpp`` or ``python`` is
an example; any other info string (``cpp-fragment``, ``sh``, ...) is shown
only. Python 3 standard library only: it runs at build time.

    extract_examples.py list PAGE.md...                  what would be extracted
    extract_examples.py cpp --root DIR --out FILE PAGE.md...

``cpp`` writes one C++ translation unit holding every C++ example of every
page (one TU: including all the recipe headers costs about 40 s of compile
time, which one file pays once). Each block becomes the body of a function
``void example_<line>(etcd::Client& client)`` in a namespace of its page,
with ``std::chrono_literals`` in scope; a block that uses ``co_await``
becomes an ``etcd::Task<void>`` run under ``etcd::sync_wait``. A block
that waits for calls (``EXPR.wait()``) is also compiled and run in the
co_await form, each such wait written as ``(co_await EXPR)``
(``co_await_form``), so that both styles of every example are tested. ``#include``
lines are moved to the top of the file. ``#line`` directives point compiler
errors and failed ``assert``s at the Markdown line. The harness
(tests/docs/doc_examples_main.cpp) runs them against a private etcd.

The pytest module (tests/docs/test_doc_examples.py) imports this file for
``blocks()`` and runs the ``python`` blocks itself.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from typing import List

# The info strings that make a block an example; nothing else is extracted.
LANGUAGES = ("cpp", "python")

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_INCLUDE = re.compile(r"^\s*#\s*include\b")
_COROUTINE = re.compile(r"\bco_(await|return|yield)\b")


class PageError(Exception):
    """A page whose blocks cannot be read (an unclosed fence)."""


@dataclass
class Block:
    page: str  # the Markdown file's path, as given
    lang: str  # "cpp" or "python"
    line: int  # 1-based line of the block's first code line
    code: List[str]  # the block's lines, without the fences and their indentation


def blocks(path: str) -> List[Block]:
    """The example blocks of one Markdown file, in order.

    Fences follow CommonMark: up to three spaces of indentation (a block
    inside a list item is written that way), a closing fence of the same
    character at least as long, and the opening fence's indentation removed
    from the code lines. An unclosed fence is an error: it would swallow the
    rest of the page silently."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out: List[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m or (m.group("fence")[0] == "`" and "`" in m.group("info")):
            i += 1
            continue
        fence, indent, info = m.group("fence"), len(m.group("indent")), m.group("info").strip()
        start = i
        code: List[str] = []
        i += 1
        while i < len(lines):
            close = _FENCE.match(lines[i])
            if close and close.group("fence")[0] == fence[0] and len(close.group("fence")) >= len(fence) \
                    and not close.group("info").strip():
                break
            line = lines[i]
            # Remove at most the opening fence's indentation (CommonMark).
            strip = min(indent, len(line) - len(line.lstrip(" ")))
            code.append(line[strip:])
            i += 1
        else:
            raise PageError(f"{path}:{start + 1}: a code block is never closed")
        i += 1
        if info in LANGUAGES:
            out.append(Block(page=path, lang=info, line=start + 2, code=code))
    return out


_WAIT = re.compile(r"\s*\.\s*wait\s*\(\s*\)")
_LAMBDA = re.compile(r"\]\s*(\((?:[^()]|\([^()]*\))*\))?\s*(mutable\s*)?(->\s*[\w:<>, ]+?\s*)?\{")
_OPEN = {")": "(", "]": "[", "}": "{", ">": "<"}


def _literal_spans(text: str) -> List[range]:
    """Where the string and character literals are (their quotes included),
    so that brackets inside them are not counted."""
    spans: List[range] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            spans.append(range(i, end))
            i = end
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):  # 1'000 is a digit separator
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            spans.append(range(i, j + 1))
            i = j + 1
        else:
            i += 1
    return spans


def _without_comments(code: List[str]) -> str:
    """The code with its // comments blanked (a comment may say co_await)."""
    text = "\n".join(code)
    for span in reversed(_literal_spans(text)):
        if text.startswith("//", span.start):
            text = text[:span.start] + text[span.stop:]
    return text


def _matching_open(text: str, close: int, inside: List[bool]) -> int:
    """The index of the bracket that `text[close]` closes, or -1."""
    depth = 0
    for i in range(close, -1, -1):
        if inside[i]:
            continue
        if text[i] in _OPEN:
            depth += 1
        elif text[i] in "([{":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _expression_start(text: str, end: int, inside: List[bool]) -> int:
    """The start of the postfix expression that ends at text[end - 1] (a
    closing parenthesis): calls, member access and qualified names, across
    lines, as in `client.get(k)\n    .timeout(2s)`."""
    i = end - 1
    while True:
        if i >= 0 and text[i] in ")]" and not inside[i]:
            i = _matching_open(text, i, inside) - 1
            if i < -1:
                return -1
            continue
        j = i
        while j >= 0 and (text[j].isalnum() or text[j] == "_"):
            j -= 1
        if j < i:  # a name: it may be qualified or a member
            i = j
        k = i
        while k >= 0 and text[k] in " \t\n":
            k -= 1
        if k >= 1 and text[k - 1:k + 1] in ("::", "->"):
            i = k - 2
        elif k >= 0 and text[k] == "." and not (k >= 1 and text[k - 1].isdigit()):
            i = k - 1
        else:
            return i + 1
        while i >= 0 and text[i] in " \t\n":
            i -= 1


def _lambda_bodies(text: str, inside: List[bool]) -> List[range]:
    """Where the bodies of the lambdas are (their braces included)."""
    lambdas: List[range] = []
    for m in _LAMBDA.finditer(text):
        if inside[m.start()]:
            continue
        open_brace = m.end() - 1
        depth = 0
        for i in range(open_brace, len(text)):
            if inside[i]:
                continue
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                lambdas.append(range(open_brace, i + 1))
                break
    return lambdas


def co_await_form(code: List[str]) -> List[str]:
    """The block with every `EXPR.wait()` on a call's result written as
    `(co_await EXPR)`, line for line (the line count does not change, so
    #line still points at the page). `.wait()` inside a lambda's body, or
    applied to a name rather than a call (`barrier.wait()` is itself a
    call), is left alone. Returns the lines unchanged when there is no
    such wait."""
    text = "\n".join(code)
    inside = [False] * len(text)
    for span in _literal_spans(text):
        for i in span:
            if i < len(text):
                inside[i] = True
    lambdas = _lambda_bodies(text, inside)
    changed = False
    waits = [m for m in _WAIT.finditer(text)
             if not inside[m.start()] and not any(m.start() in r for r in lambdas)]
    for m in reversed(waits):
        before = m.start() - 1
        if before < 0 or text[before] != ")":
            continue
        start = _expression_start(text, m.start(), inside)
        if start < 0:
            continue
        text = text[:start] + "(co_await " + text[start:m.start()] + ")" + text[m.end():]
        changed = True
    if changed:
        # The block is a coroutine now: its own returns (not its lambdas') are co_returns.
        inside = [False] * len(text)
        for span in _literal_spans(text):
            for i in span:
                if i < len(text):
                    inside[i] = True
        lambda_ranges = _lambda_bodies(text, inside)
        for m in reversed(list(re.finditer(r"\breturn\s*;", text))):
            if not inside[m.start()] and not any(m.start() in r for r in lambda_ranges):
                text = text[:m.start()] + "co_return;" + text[m.end():]
    return text.split("\n")


def _page_id(path: str) -> str:
    """A C++ identifier for a page: docs/recipes/work_queue.md -> work_queue."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return re.sub(r"\W", "_", stem)


def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Writer:
    """Collects the output and counts its lines, for #line directives back
    into the generated file itself."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lines: List[str] = []

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def back_to_self(self) -> None:
        # The directive names the line after itself.
        self.lines.append(f"#line {len(self.lines) + 2} {_c_string(self.name)}")


def generate_cpp(pages: List[str], root: str, out_name: str) -> str:
    examples = [(p, [b for b in blocks(p) if b.lang == "cpp"]) for p in pages]
    includes: List[str] = []
    for _, page_blocks in examples:
        for b in page_blocks:
            for line in b.code:
                if _INCLUDE.match(line) and line.strip() not in includes:
                    includes.append(line.strip())

    w = _Writer(out_name)
    w.add("// Generated by tools/docs/extract_examples.py from docs/recipes/*.md: do not edit.",
          "// The examples state what they show with assert(): keep it on whatever the build type.",
          "#undef NDEBUG",
          "// A block's local struct lives in the co_await form's coroutine frame; GCC",
          "// warns about a frame member of a type without linkage, harmless here.",
          "#if defined(__GNUC__) && !defined(__clang__)",
          "#pragma GCC diagnostic ignored \"-Wsubobject-linkage\"",
          "#endif",
          "#include <cassert>",
          "#include <chrono>",
          "",
          '#include "doc_examples.h"',
          '#include "etcd/client.h"',
          '#include "etcd/task.h"',
          "// The examples' own includes, in the order they first appear.")
    w.add(*includes)
    w.add("")

    registry: List[str] = []
    for page, page_blocks in examples:
        if not page_blocks:
            continue
        rel = os.path.relpath(page, root) if root else page
        ns = "doc_" + _page_id(page)
        w.add(f"namespace {ns} {{", "using namespace std::chrono_literals;", "")
        for b in page_blocks:
            body = ["" if _INCLUDE.match(line) else line for line in b.code]
            forms = [("example", body, "")]
            twin = co_await_form(body)
            if twin != body:
                forms.append(("co_await", twin, "co_await"))
            for kind, code, form in forms:
                name = f"{kind}_{b.line}"
                coroutine = _COROUTINE.search(_without_comments(code)) is not None
                signature = (f"etcd::Task<void> {name}_task([[maybe_unused]] etcd::Client& client) {{" if coroutine
                             else f"void {name}([[maybe_unused]] etcd::Client& client) {{")
                w.add(signature, f"#line {b.line} {_c_string(rel)}")
                w.add(*code)
                w.back_to_self()
                w.add("}")
                if coroutine:
                    w.add(f"void {name}(etcd::Client& client) {{ etcd::sync_wait({name}_task(client)); }}")
                w.add("")
                registry.append(f"    {{{_c_string(rel)}, {b.line}, {_c_string(form)}, &{ns}::{name}}},")
        w.add(f"}}  // namespace {ns}", "")

    w.add("namespace doc_examples {",
          "",
          "std::span<const Example> all() {",
          "  static const Example examples[] = {")
    w.add(*registry)
    if not registry:
        # A zero-length array is not C++; the harness fails on an empty list.
        w.add('    {"(none)", 0, "", nullptr},')
    w.add("  };",
          f"  return std::span<const Example>(examples, {len(registry)});",
          "}",
          "",
          "}  // namespace doc_examples",
          "")
    return "\n".join(w.lines)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("list", help="print each example's page, line and language")
    listing.add_argument("pages", nargs="+")
    cpp = sub.add_parser("cpp", help="write the C++ examples as one translation unit")
    cpp.add_argument("--root", default="", help="paths in #line are relative to this directory")
    cpp.add_argument("--out", required=True)
    cpp.add_argument("pages", nargs="+")
    args = parser.parse_args(argv)

    pages = sorted(args.pages)
    try:
        if args.command == "list":
            for page in pages:
                for b in blocks(page):
                    print(f"{page}:{b.line}: {b.lang}, {len(b.code)} lines")
            return 0
        text = generate_cpp(pages, args.root, os.path.abspath(args.out))
    except PageError as e:
        print(f"extract_examples.py: {e}", file=sys.stderr)
        return 1
    # Written only when it changed, so that an edit to a page's prose does
    # not recompile the examples.
    try:
        with open(args.out, encoding="utf-8") as f:
            if f.read() == text:
                return 0
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
