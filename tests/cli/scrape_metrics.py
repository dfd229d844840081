#!/usr/bin/env python3
"""Scrapes for tests/cli/exporter_test.sh, as Prometheus would: fetches a
URL and parses the text with prometheus_client's own parser.

Reads requests from standard input, one per line, and answers each with one
line on standard output (so one process serves a whole test):

    URL OUTFILE [cacert=FILE] [auth=HEADER VALUE...] [raw=FILE]

answered with `RC WORDS`: 0 when the answer was 200 and, for /metrics, the
text parsed and kept the format's rules (each family's HELP and TYPE once,
before all of its samples; the 0.0.4 Content-Type); the samples are then in
OUTFILE, one per line as `NAME{K="V",...} VALUE` with the labels sorted by
name (values as the parser read them, unescaped). Any other answer writes
the body to OUTFILE: 3 for another HTTP status (`3 HTTP 401`), 4 if the text
did not parse or broke a rule, 5 if nothing answered. raw=FILE keeps the
body of a 200 as it came.
"""
import collections
import shlex
import ssl
import sys
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def check_format(text):
    """The rules the parser does not enforce: HELP and TYPE once per family,
    all of a family's samples together after them."""
    helps, types = collections.Counter(), collections.Counter()
    done, current = set(), None
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            name = line.split(" ")[2]
            (helps if line[2] == "H" else types)[name] += 1
            if name != current:
                if current is not None:
                    done.add(current)
                if name in done:
                    raise ValueError(f"family {name} announced twice")
                current = name
        elif line and not line.startswith("#"):
            name = line.split("{")[0].split(" ")[0]
            if name != current:
                raise ValueError(f"sample {line!r} outside its family's block ({current})")
    for name in set(helps) | set(types):
        if helps[name] != 1 or types[name] != 1:
            raise ValueError(f"{name}: {helps[name]} HELP and {types[name]} TYPE lines")


def value_text(v):
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def scrape(url, out, options):
    request = urllib.request.Request(url)
    if "auth" in options:
        request.add_header("Authorization", options["auth"])
    context = ssl.create_default_context(cafile=options["cacert"]) if "cacert" in options else None
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as answer:
            body = answer.read().decode("utf-8")
            content_type = answer.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        with open(out, "w") as f:
            f.write(e.read().decode("utf-8", "replace"))
        return f"3 HTTP {e.code}"
    except Exception as e:  # refused, reset, TLS handshake, timeout: nothing answered
        return f"5 no answer: {type(e).__name__}: {e}".replace("\n", " ")
    if "raw" in options:
        with open(options["raw"], "w") as f:
            f.write(body)
    if not url.endswith("/metrics"):
        with open(out, "w") as f:
            f.write(body)
        return "0 ok"
    try:
        if not content_type.startswith("text/plain; version=0.0.4"):
            raise ValueError(f"Content-Type {content_type!r}")
        check_format(body)
        lines = []
        for family in text_string_to_metric_families(body):
            for s in family.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                lines.append(f"{s.name}{{{labels}}} {value_text(s.value)}")
    except Exception as e:
        with open(out, "w") as f:
            f.write(body)
        return f"4 not the text format: {e}".replace("\n", " ")
    with open(out, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    return "0 ok"


def main():
    for request in sys.stdin:
        words = shlex.split(request)
        if len(words) < 2:
            print("2 usage: URL OUTFILE [cacert=F] [auth=...] [raw=F]", flush=True)
            continue
        options = dict(w.split("=", 1) for w in words[2:])
        print(scrape(words[0], words[1], options), flush=True)


if __name__ == "__main__":
    main()
