#!/usr/bin/env python3
"""Fails, naming each offending line, when the user-facing text speaks of
how the project was built instead of what it is: internal issue numbers
("issue 8", "#12"), stage and phase names, "before the fix", "earlier
results", "the seed's version". Reads every line of the pages, sources and
scripts (comments, strings and prose alike) of each PATH under ROOT, a file
or a directory.

    check_no_history.py ROOT PATH...

References to other projects' trackers (owner/repo#123) and PKCS#8 style
names are fine: the patterns look for a bare "#N".
"""
import pathlib
import re
import sys

PATTERNS = [
    (re.compile(r"(?<![\w/.#-])#\d+\b"), "an issue or pull request number"),
    (re.compile(r"\bissues? \d+", re.I), "an issue number"),
    (re.compile(r"\b(the|this|that|an earlier) issue('s)?\b(?! (a|an|the|one|each|every|its|their|our|your) )", re.I),
     "the issue that asked for it"),
    (re.compile(r"\bPR \d+|\bpull request \d+", re.I), "a pull request number"),
    (re.compile(r"\b(stage|phase|milestone|iteration|sprint|round) [0-9]+ (of the (work|project)|results|numbers)\b", re.I),
     "a stage of the work"),
    (re.compile(r"\b(stage|phase|milestone|sprint) [0-9IVX]+\b"), "a stage of the work"),
    (re.compile(r"\b(before|after) (the|this|that) (fix|change|rewrite|refactor(ing)?)\b", re.I), "a change's history"),
    (re.compile(r"\b(earlier|previous|older) (results|runs of this bench|numbers|tables|sessions|versions of this)\b",
                re.I), "earlier results"),
    (re.compile(r"\b(earlier|previous|this|another) session (found|measured|fixed|added)\b", re.I),
     "a working session"),
    (re.compile(r"\bthe seed'?s (version|code|implementation)\b", re.I), "the code it replaced"),
    (re.compile(r"\bfiled by\b", re.I), "who filed a report"),
    (re.compile(r"\(coming\)|\bnot yet (built|written|implemented)\b", re.I), "a plan, not a fact"),
]

TEXT_SUFFIXES = {".md", ".h", ".hpp", ".cpp", ".cc", ".c", ".py", ".pyi", ".sh", ".txt", ".cmake", ".go", ".kt",
                 ".toml", ".cfg", ".in"}


def files(root, paths):
    for top in paths:
        top = root / top
        if top.is_file():
            yield top
            continue
        for p in sorted(top.rglob("*")):
            if p.is_file() and (p.suffix in TEXT_SUFFIXES or p.name == "CMakeLists.txt"):
                yield p


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    root = pathlib.Path(sys.argv[1]).resolve()
    bad = 0
    for path in files(root, sys.argv[2:]):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        for n, line in enumerate(lines, 1):
            for pattern, what in PATTERNS:
                m = pattern.search(line)
                if m:
                    bad += 1
                    print(f"{path.relative_to(root)}:{n}: {what} ({m.group(0)!r}): {line.strip()}")
                    break
    if bad:
        print(f"\n{bad} line(s) speak of the project's history; say what is instead "
              "(history, if wanted, belongs in CHANGELOG.md by version).")
        return 1
    print("no history in " + ", ".join(sys.argv[2:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
