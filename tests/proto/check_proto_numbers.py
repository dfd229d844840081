#!/usr/bin/env python3
"""Cross-check our etcd v3 .proto subset against etcd's upstream .proto files.

For every message and enum defined in our files, each field must exist in the
upstream definition with the same tag number, type, label (repeated or not)
and oneof membership; each enum must have exactly the same value set. Every
service/rpc we declare must exist upstream with the same request/response
types and streaming flags.

Exit codes: 0 all checks passed, 1 mismatches (or unparsable input),
77 upstream reference files not available (CTest SKIP_RETURN_CODE).

Standard library only.
"""

import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))

DEFAULT_OUR_KV = os.path.join(REPO, "proto", "etcd", "mvccpb", "kv.proto")
DEFAULT_OUR_RPC = os.path.join(REPO, "proto", "etcd", "etcdserverpb", "rpc.proto")
GOCODE_ETCD = "/usr/share/gocode/src/go.etcd.io/etcd"
DEBIAN_REF = (  # etcd 3.4, Debian's golang-etcd-server-dev
    "debian",
    os.path.join(GOCODE_ETCD, "mvcc", "mvccpb", "kv.proto"),
    os.path.join(GOCODE_ETCD, "etcdserver", "etcdserverpb", "rpc.proto"),
)


def module_refs():
    """etcd's own .proto files of every go.etcd.io/etcd/api/v3 release in the
    Go module cache (./dev.sh etcd VERSION puts each supported one there)."""
    cache = os.environ.get("GOMODCACHE") or os.path.join(
        os.environ.get("GOPATH") or os.path.join(os.path.expanduser("~"), "go"), "pkg", "mod")
    base = os.path.join(cache, "go.etcd.io", "etcd", "api")
    refs = []
    if os.path.isdir(base):
        for name in sorted(os.listdir(base)):
            if not name.startswith("v3@v"):
                continue
            root = os.path.join(base, name)
            refs.append((name.split("@", 1)[1], os.path.join(root, "mvccpb", "kv.proto"),
                         os.path.join(root, "etcdserverpb", "rpc.proto")))
    return refs

SKIP_CODE = 77

SCALARS = {
    "double", "float", "int32", "int64", "uint32", "uint64", "sint32",
    "sint64", "fixed32", "fixed64", "sfixed32", "sfixed64", "bool",
    "string", "bytes",
}


class ParseError(Exception):
    pass


# --------------------------------------------------------------------------
# Lexer
# --------------------------------------------------------------------------

_TOKEN_RE = re.compile(
    r"""
      (?P<ws>\s+)
    | (?P<lcomment>//[^\n]*)
    | (?P<bcomment>/\*.*?\*/)
    | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<ident>\.?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
    | (?P<number>[-+]?(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?))
    | (?P<sym>[{}()\[\]<>;=,:.\-+])
    """,
    re.VERBOSE | re.DOTALL,
)


def tokenize(text, path):
    tokens = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if not m:
            line = text.count("\n", 0, pos) + 1
            raise ParseError("%s:%d: unexpected character %r" % (path, line, text[pos]))
        kind = m.lastgroup
        if kind not in ("ws", "lcomment", "bcomment"):
            tokens.append(m.group(kind))
        pos = m.end()
    return tokens


# --------------------------------------------------------------------------
# Parser (just enough of proto2/proto3 for schema comparison)
# --------------------------------------------------------------------------

class Field(object):
    def __init__(self, name, number, type_, repeated, oneof):
        self.name = name
        self.number = number
        self.type = type_          # as written; resolved later
        self.repeated = repeated
        self.oneof = oneof


class Message(object):
    def __init__(self, fqname):
        self.fqname = fqname
        self.fields = {}           # name -> Field


class Enum(object):
    def __init__(self, fqname):
        self.fqname = fqname
        self.values = {}           # name -> int


class Rpc(object):
    def __init__(self, name, req, req_stream, resp, resp_stream):
        self.name = name
        self.req = req
        self.req_stream = req_stream
        self.resp = resp
        self.resp_stream = resp_stream


class Schema(object):
    def __init__(self):
        self.messages = {}         # fqname -> Message
        self.enums = {}            # fqname -> Enum
        self.services = {}         # fqname -> {rpc name -> Rpc}
        # (scope fqname, type as written, owning object) for later resolution
        self._pending = []


class _Parser(object):
    def __init__(self, tokens, path, schema):
        self.t = tokens
        self.i = 0
        self.path = path
        self.schema = schema
        self.package = ""

    # -- token helpers -----------------------------------------------------
    def peek(self, k=0):
        j = self.i + k
        return self.t[j] if j < len(self.t) else None

    def next(self):
        tok = self.peek()
        if tok is None:
            raise ParseError("%s: unexpected end of file" % self.path)
        self.i += 1
        return tok

    def expect(self, want):
        tok = self.next()
        if tok != want:
            raise ParseError("%s: expected %r, got %r (token %d)" % (self.path, want, tok, self.i))
        return tok

    def skip_statement(self):
        """Skip up to and including the terminating ';' or a balanced {...}."""
        depth = 0
        while True:
            tok = self.next()
            if tok == "{":
                depth += 1
            elif tok == "}":
                depth -= 1
                if depth == 0:
                    if self.peek() == ";":
                        self.i += 1
                    return
            elif tok == ";" and depth == 0:
                return

    def skip_brackets(self):
        """Skip a '[ ... ]' field-option list if present."""
        if self.peek() != "[":
            return
        depth = 0
        while True:
            tok = self.next()
            if tok == "[":
                depth += 1
            elif tok == "]":
                depth -= 1
                if depth == 0:
                    return

    def qualify(self, scope, name):
        return "%s.%s" % (scope, name) if scope else name

    # -- grammar -----------------------------------------------------------
    def parse_file(self):
        while self.peek() is not None:
            tok = self.peek()
            if tok == "package":
                self.next()
                self.package = self.next()
                self.expect(";")
            elif tok == "message":
                self.parse_message(self.package)
            elif tok == "enum":
                self.parse_enum(self.package)
            elif tok == "service":
                self.parse_service()
            elif tok == ";":
                self.next()
            else:  # syntax, import, option, extend, ...
                self.skip_statement()

    def parse_message(self, scope):
        self.expect("message")
        msg = Message(self.qualify(scope, self.next()))
        if msg.fqname in self.schema.messages:
            raise ParseError("%s: duplicate message %s" % (self.path, msg.fqname))
        self.schema.messages[msg.fqname] = msg
        self.expect("{")
        self.parse_message_body(msg, None)
        if self.peek() == ";":
            self.next()

    def parse_message_body(self, msg, oneof):
        while True:
            tok = self.peek()
            if tok is None:
                raise ParseError("%s: unterminated message %s" % (self.path, msg.fqname))
            if tok == "}":
                self.next()
                return
            if tok == ";":
                self.next()
            elif tok == "message" and oneof is None:
                self.parse_message(msg.fqname)
            elif tok == "enum" and oneof is None:
                self.parse_enum(msg.fqname)
            elif tok == "oneof" and oneof is None:
                self.next()
                name = self.next()
                self.expect("{")
                self.parse_message_body(msg, name)
            elif tok in ("option", "reserved", "extensions", "extend"):
                self.skip_statement()
            elif tok == "map":
                raise ParseError("%s: map fields are not supported (in %s)" % (self.path, msg.fqname))
            else:
                self.parse_field(msg, oneof)

    def parse_field(self, msg, oneof):
        repeated = False
        if self.peek() in ("repeated", "optional", "required"):
            repeated = self.next() == "repeated"
        type_ = self.next()
        name = self.next()
        self.expect("=")
        num_tok = self.next()
        try:
            number = int(num_tok, 0)
        except ValueError:
            raise ParseError("%s: bad field number %r for %s.%s" % (self.path, num_tok, msg.fqname, name))
        self.skip_brackets()
        self.expect(";")
        if name in msg.fields:
            raise ParseError("%s: duplicate field %s.%s" % (self.path, msg.fqname, name))
        field = Field(name, number, type_, repeated, oneof)
        msg.fields[name] = field
        self.schema._pending.append((msg.fqname, field, "type"))

    def parse_enum(self, scope):
        self.expect("enum")
        enum = Enum(self.qualify(scope, self.next()))
        if enum.fqname in self.schema.enums:
            raise ParseError("%s: duplicate enum %s" % (self.path, enum.fqname))
        self.schema.enums[enum.fqname] = enum
        self.expect("{")
        while True:
            tok = self.peek()
            if tok is None:
                raise ParseError("%s: unterminated enum %s" % (self.path, enum.fqname))
            if tok == "}":
                self.next()
                break
            if tok == ";":
                self.next()
            elif tok in ("option", "reserved"):
                self.skip_statement()
            else:
                name = self.next()
                self.expect("=")
                num_tok = self.next()
                if num_tok == "-":
                    num_tok = "-" + self.next()
                try:
                    enum.values[name] = int(num_tok, 0)
                except ValueError:
                    raise ParseError("%s: bad enum value %r for %s.%s" % (self.path, num_tok, enum.fqname, name))
                self.skip_brackets()
                self.expect(";")
        if self.peek() == ";":
            self.next()

    def parse_service(self):
        self.expect("service")
        fq = self.qualify(self.package, self.next())
        rpcs = self.schema.services.setdefault(fq, {})
        self.expect("{")
        while True:
            tok = self.peek()
            if tok is None:
                raise ParseError("%s: unterminated service %s" % (self.path, fq))
            if tok == "}":
                self.next()
                break
            if tok == ";":
                self.next()
            elif tok == "rpc":
                self.next()
                name = self.next()
                req_stream, req = self.parse_rpc_arg()
                self.expect("returns")
                resp_stream, resp = self.parse_rpc_arg()
                if self.peek() == "{":
                    self.skip_statement()  # rpc options block
                else:
                    self.expect(";")
                rpc = Rpc(name, req, req_stream, resp, resp_stream)
                rpcs[name] = rpc
                self.schema._pending.append((self.package, rpc, "req"))
                self.schema._pending.append((self.package, rpc, "resp"))
            else:
                self.skip_statement()

    def parse_rpc_arg(self):
        self.expect("(")
        stream = False
        if self.peek() == "stream" and self.peek(1) != ")":
            self.next()
            stream = True
        type_ = self.next()
        self.expect(")")
        return stream, type_


def resolve(schema):
    """Turn type references into fully-qualified names using proto scoping."""
    known = set(schema.messages) | set(schema.enums)
    for scope, obj, attr in schema._pending:
        written = getattr(obj, attr)
        if written in SCALARS:
            continue
        if written.startswith("."):
            setattr(obj, attr, written[1:])
            continue
        parts = scope.split(".") if scope else []
        resolved = None
        while True:
            cand = ".".join(parts + [written])
            if cand in known:
                resolved = cand
                break
            if not parts:
                break
            parts.pop()
        # Unknown (e.g. types from files we do not load): keep as written.
        setattr(obj, attr, resolved if resolved else written)
    schema._pending = []


def load(paths):
    schema = Schema()
    for path in paths:
        with open(path, "r") as f:
            text = f.read()
        _Parser(tokenize(text, path), path, schema).parse_file()
    resolve(schema)
    return schema


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------

def compare(ours, ref):
    passed = 0
    failures = []

    def check(ok, what):
        if ok:
            return 1
        failures.append(what)
        return 0

    for fq in sorted(ours.messages):
        mine = ours.messages[fq]
        theirs = ref.messages.get(fq)
        if theirs is None:
            failures.append("message %s: not defined in reference" % fq)
            continue
        passed += 1
        for name in sorted(mine.fields, key=lambda n: mine.fields[n].number):
            f = mine.fields[name]
            where = "%s.%s" % (fq, name)
            r = theirs.fields.get(name)
            if r is None:
                failures.append("field %s: not present in reference" % where)
                continue
            problems = []
            if f.number != r.number:
                problems.append("number %d != reference %d" % (f.number, r.number))
            if f.type != r.type:
                problems.append("type %s != reference %s" % (f.type, r.type))
            if f.repeated != r.repeated:
                problems.append("repeated=%s != reference repeated=%s" % (f.repeated, r.repeated))
            if f.oneof != r.oneof:
                problems.append("oneof %s != reference oneof %s" % (f.oneof, r.oneof))
            if problems:
                failures.append("field %s: %s" % (where, "; ".join(problems)))
            else:
                passed += 1

    for fq in sorted(ours.enums):
        mine = ours.enums[fq]
        theirs = ref.enums.get(fq)
        if theirs is None:
            failures.append("enum %s: not defined in reference" % fq)
            continue
        passed += 1
        for name in sorted(set(mine.values) | set(theirs.values)):
            where = "%s.%s" % (fq, name)
            if name not in theirs.values:
                failures.append("enum value %s: not present in reference" % where)
            elif name not in mine.values:
                failures.append("enum value %s = %d: missing from our enum" % (where, theirs.values[name]))
            elif mine.values[name] != theirs.values[name]:
                failures.append("enum value %s: %d != reference %d"
                                % (where, mine.values[name], theirs.values[name]))
            else:
                passed += 1

    for svc in sorted(ours.services):
        theirs = ref.services.get(svc)
        if theirs is None:
            failures.append("service %s: not defined in reference" % svc)
            continue
        passed += 1
        for name in sorted(ours.services[svc]):
            mine = ours.services[svc][name]
            where = "rpc %s.%s" % (svc, name)
            r = theirs.get(name)
            if r is None:
                failures.append("%s: not present in reference" % where)
                continue
            sig = lambda x: "(%s%s) returns (%s%s)" % (
                "stream " if x.req_stream else "", x.req,
                "stream " if x.resp_stream else "", x.resp)
            if sig(mine) != sig(r):
                failures.append("%s: %s != reference %s" % (where, sig(mine), sig(r)))
            else:
                passed += 1

    return passed, failures


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--our-kv", default=DEFAULT_OUR_KV)
    ap.add_argument("--our-rpc", default=DEFAULT_OUR_RPC)
    ap.add_argument("--ref-kv", help="one reference kv.proto (default: every release found)")
    ap.add_argument("--ref-rpc", help="one reference rpc.proto (with --ref-kv)")
    args = ap.parse_args(argv)

    if args.ref_kv or args.ref_rpc:
        refs = [("given", args.ref_kv, args.ref_rpc)]
    else:
        refs = [DEBIAN_REF] + module_refs()
    refs = [r for r in refs if r[1] and r[2] and os.path.isfile(r[1]) and os.path.isfile(r[2])]
    if not refs:
        print("SKIP: no etcd reference proto found (Debian's golang-etcd-server-dev, or go.etcd.io/etcd/api/v3 "
              "in the Go module cache: ./dev.sh etcd 3.6)")
        return SKIP_CODE

    missing_ours = [p for p in (args.our_kv, args.our_rpc) if not os.path.isfile(p)]
    if missing_ours:
        print("FAIL: our proto not found: %s" % ", ".join(missing_ours))
        return 1

    try:
        ours = load([args.our_kv, args.our_rpc])
    except (ParseError, IOError, OSError) as e:
        print("FAIL: %s" % e)
        return 1
    total_passed = 0
    total_failed = 0
    for release, kv, rpc in refs:
        try:
            ref = load([kv, rpc])
        except (ParseError, IOError, OSError) as e:
            print("FAIL: etcd %s: %s" % (release, e))
            total_failed += 1
            continue
        passed, failures = compare(ours, ref)
        for f in failures:
            print("MISMATCH (etcd %s): %s" % (release, f))
        print("etcd %s: %d checks passed, %d failed" % (release, passed, len(failures)))
        total_passed += passed
        total_failed += len(failures)
    print("%d passed, %d failed" % (total_passed, total_failed))
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main())
