#!/usr/bin/env python3
"""Fails when a public header declares a function with a defaulted parameter
of class type (`Options o = {}`, `std::string s = "x"`, a chrono duration).

GCC 12 destroys such a default argument twice when the call is part of a
co_await expression (e.g. `co_await client.txn(Txn().then(Op::del(k)))`
crashed with free(): invalid pointer). Overloads avoid it; see
docs/client.md. Arithmetic, enum and pointer defaults are fine.

usage: check_default_args.py DIR_OR_HEADER...
"""
import pathlib
import re
import sys

SCALARS = {
    "bool", "char", "short", "int", "long", "unsigned", "signed", "float", "double", "size_t", "std::size_t",
    "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "pid_t",
}
KEYWORDS = {"if", "while", "for", "return", "switch", "static_assert", "decltype", "sizeof", "noexcept", "alignas",
            "requires", "catch"}


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def split_top(params):
    parts, depth, cur = [], 0, ""
    for ch in params:
        if ch in "(<{[":
            depth += 1
        elif ch in ")>}]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def main(paths):
    headers = []
    for p in map(pathlib.Path, paths):
        headers += sorted(p.glob("*.h")) if p.is_dir() else [p]
    texts = {h: strip_comments(h.read_text()) for h in headers}
    enums = set()
    for t in texts.values():
        enums.update(re.findall(r"\benum\s+(?:class\s+|struct\s+)?(\w+)", t))
    bad = []
    call = re.compile(r"\b([A-Za-z_~][\w:]*)\s*\(((?:[^()]|\((?:[^()]|\([^()]*\))*\))*)\)")
    for h, t in texts.items():
        for m in call.finditer(t):
            name, params = m.group(1), m.group(2)
            if name in KEYWORDS or "=" not in params:
                continue
            for p in split_top(params):
                if ";" in p or "](" in p:
                    continue  # a lambda passed as an argument, not a declaration
                d = re.match(r"^(.*?[^=!<>])=([^=].*)$", " ".join(p.split()), flags=re.S)
                if not d:
                    continue
                decl = d.group(1).strip()
                # The parameter's type: the declaration without its name.
                words = re.sub(r"\b(const|volatile)\b", "", decl).replace("&", " ").strip().split()
                if len(words) < 2:
                    continue  # not a declaration with a default (e.g. an expression)
                type_text = " ".join(words[:-1]).replace(" *", "*")
                base = type_text.split("::")[-1]
                if "*" in type_text or type_text in SCALARS or base in SCALARS or base in enums:
                    continue
                line = t[: m.start()].count("\n") + 1
                bad.append(f"{h}:~{line}: {name}(... {decl} = {d.group(2).strip()} ...)")
    for b in bad:
        print(b)
    print(f"{len(bad)} defaulted class-type parameter(s) in {len(headers)} header(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
