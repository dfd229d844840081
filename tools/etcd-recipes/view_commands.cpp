// view PREFIX: a KeyspaceView from the shell; node watch KEY: a NodeCache.
// Both pull their events from the recipe's Stream (etcd/stream.h) on the
// main thread, until SIGINT/SIGTERM.
//
// stdout carries exactly one line per key event, so that
// `etcd-recipes view P | while read -r op key value; do ...` sees nothing
// else; where the first read ends and where a resync after a gap happened
// is said on stderr (with -w json, as objects of their own in the stream,
// which a JSON reader dispatches on "type").

#include <cctype>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/keyspace_view.h"
#include "etcd/recipes/node_cache.h"
#include "etcd/stream.h"
#include "simple_format.h"

namespace etcd_cli {
namespace {

using etcd::recipes::KeyspaceEvent;

nlohmann::json view_kv_json(const etcd::KeyValue& kv) {
  nlohmann::json j{{"key", base64(kv.key)},
                   {"value", base64(kv.value)},
                   {"create_revision", kv.create_revision},
                   {"mod_revision", kv.mod_revision},
                   {"version", kv.version}};
  if (kv.lease != 0) j["lease"] = lease_hex(kv.lease);
  return j;
}

// "ADDED", "UPDATED", ...: the upper-case form of to_string(t).
std::string view_type_name(KeyspaceEvent::Type t) {
  std::string s(to_string(t));
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// One key event (kAdded, kUpdated, kRemoved), as a line.
std::string view_key_line(const KeyspaceEvent& e, bool json, bool in_reset) {
  if (json) {
    nlohmann::json j = e.current ? view_kv_json(*e.current) : nlohmann::json{{"key", base64(e.key)}};
    j["type"] = view_type_name(e.type);
    j["revision"] = e.revision;
    if (in_reset) j["resync"] = true;
    return dump_json(j);
  }
  if (e.type == KeyspaceEvent::Type::kRemoved) return simple_line("REMOVED", {e.key});
  return simple_line(view_type_name(e.type), {e.key, e.current->value});
}

struct ViewArgs {
  std::string key;
  std::string range_end;
  bool snapshot = false;
  int64_t from_revision = 0;
  bool json = false;
};

// Pulls `stream` until it ends or a stop is requested; `print` each event.
template <class E, class Print>
int view_pull_until_stopped(Context& ctx, etcd::Stream<E>& stream, const std::string& what, Print&& print) {
  while (true) {
    auto next = stream.next().wait(ctx.stop());
    if (ctx.stop().stop_requested()) return kExitOk;
    if (!next.ok()) check(etcd::Result<void>(next.status()), what);
    if (!*next) return kExitOk;
    print(**next);
  }
}

int run_view(Context& ctx, const ViewArgs& a) {
  const std::string what = "view " + a.key;
  const bool json = ctx.json(a.json);
  // A first read names the cause (e.g. connection refused) when no member
  // answers; the view itself retries its read quietly.
  {
    etcd::GetOptions options;
    options.prefix = a.range_end.empty();
    options.range_end = a.range_end;
    options.count_only = true;
    check(ctx.client().get(a.key, options).stop_token(ctx.stop()).wait(), what);
  }
  etcd::recipes::KeyspaceViewOptions options;
  options.range_end = a.range_end;
  if (a.from_revision > 0) {
    options.start = etcd::recipes::KeyspaceViewOptions::Start::kFromRevision;
    options.start_revision = a.from_revision;
  } else if (a.snapshot) {
    options.start = etcd::recipes::KeyspaceViewOptions::Start::kWithSnapshot;
  }
  etcd::recipes::KeyspaceView view(ctx.client(), a.key, options);
  auto note = [what](const std::string& text) { std::cerr << kProgram << ": " << what << ": " << text << std::endl; };
  auto errors = view.on_error([note](const etcd::Status& s) { note(explain(s)); });
  auto stream = view.events();
  view.start();
  return view_pull_until_stopped(ctx, stream, what, [&](const KeyspaceEvent& e) {
    switch (e.type) {
      case KeyspaceEvent::Type::kAdded:
      case KeyspaceEvent::Type::kUpdated:
      case KeyspaceEvent::Type::kRemoved:
        return print_line(view_key_line(e, json, false));
      case KeyspaceEvent::Type::kInitialized:
        if (json)
          return print_line(dump_json({{"type", "INITIALIZED"}, {"revision", e.revision}, {"keys", view.size()}}));
        return note(cat(view.size(), " keys at revision ", e.revision, "; watching for changes"));
      case KeyspaceEvent::Type::kReset:
        for (const auto& c : e.changes) print_line(view_key_line(c, json, true));
        if (json) {
          return print_line(dump_json({{"type", "RESET"},
                                       {"revision", e.revision},
                                       {"changes", e.changes.size()},
                                       {"cause", e.cause.to_string()}}));
        }
        return note(cat("reset at revision ", e.revision, " (", e.cause.to_string(), "): the ", e.changes.size(),
                        " lines just before are the differences found"));
    }
  });
}

struct NodeWatchArgs {
  std::string key;
  bool json = false;
};

using NodeWatchEvent = etcd::recipes::NodeEvent<std::string>;

std::string node_watch_line(const std::string& key, const NodeWatchEvent& e, bool json) {
  const char* type = "";
  switch (e.type) {
    case NodeWatchEvent::Type::kInitialized:
      type = e.current ? "VALUE" : "ABSENT";
      break;
    case NodeWatchEvent::Type::kCreated:
      type = "CREATED";
      break;
    case NodeWatchEvent::Type::kUpdated:
      type = "UPDATED";
      break;
    case NodeWatchEvent::Type::kDeleted:
      type = "DELETED";
      break;
  }
  if (json) {
    nlohmann::json j{{"type", type}, {"revision", e.revision}};
    if (e.current) {
      j["key"] = base64(e.current->key);
      j["value"] = base64(*e.current->value);
      j["create_revision"] = e.current->create_revision;
      j["mod_revision"] = e.current->mod_revision;
      j["version"] = e.current->version;
      if (e.current->lease != 0) j["lease"] = lease_hex(e.current->lease);
    } else {
      j["key"] = base64(key);
    }
    if (e.resync) j["resync"] = true;
    return dump_json(j);
  }
  if (e.current) return simple_line(type, {e.current->key, *e.current->value});
  return simple_line(type, {key});
}

int run_node_watch(Context& ctx, const NodeWatchArgs& a) {
  const std::string what = "node watch " + a.key;
  const bool json = ctx.json(a.json);
  check(ctx.client().get(a.key, {.count_only = true}).stop_token(ctx.stop()).wait(), what);
  etcd::recipes::NodeCache<std::string> node(ctx.client(), a.key);
  auto note = [what](const std::string& text) { std::cerr << kProgram << ": " << what << ": " << text << std::endl; };
  auto errors = node.on_error([note](const etcd::Status& s) { note(explain(s)); });
  auto stream = node.events();
  node.start();
  return view_pull_until_stopped(ctx, stream, what, [&](const NodeWatchEvent& e) {
    print_line(node_watch_line(a.key, e, json));
    if (e.resync && !json) note(cat("resynced at revision ", e.revision, " after a gap in the watch"));
  });
}

// A key or prefix: not empty, no NUL byte (a trailing '/' is part of a prefix).
CLI::Validator view_key_validator() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        if (s.empty()) return "must not be empty";
        if (s.find('\0') != std::string::npos) return "must not contain a NUL byte";
        return std::string();
      },
      "KEY");
}

}  // namespace

void add_view_commands(Commands& commands) {
  {
    auto a = std::make_shared<ViewArgs>();
    auto* cmd = commands.root().add_subcommand(
        "view",
        "Follow every key under PREFIX (or in [PREFIX, --range-end)): one line per change (`ADDED key value`, "
        "`UPDATED key value`, `REMOVED key`), gap-free, until SIGINT/SIGTERM");
    cmd->add_option("prefix", a->key, "The prefix whose keys to follow (taken as it is: \"cfg/\" is not \"cfg\")")
        ->required()
        ->transform(view_key_validator());
    cmd->add_option("--range-end", a->range_end, "Follow the range [PREFIX, END) instead of a prefix");
    cmd->add_flag("--snapshot", a->snapshot, "Print the keys found by the first read first, as ADDED lines");
    cmd->add_option("--from-revision", a->from_revision,
                    "Start from this revision: print every change since (fails if it was compacted)")
        ->check(int_range(1, INT64_MAX));
    cmd->add_flag("--json", a->json, "Same as -w json")->group("");
    cmd->footer(
        "A KeyspaceView (docs/recipes/keyspace_view.md): the keys are read at one revision, page by page, and "
        "watched from the next, so no change is lost or repeated. stderr says when the first read is done. After a "
        "reconnect the watch resumes where it stopped; if it cannot (the revision it needs was compacted meanwhile), "
        "the keys are read again and exactly the differences are printed (keys removed, updated, added meanwhile), "
        "and stderr says so. Keys and values are printed as they are stored.\n\n"
        "With -w json, one JSON object per line: type (ADDED, UPDATED, REMOVED; INITIALIZED once the first read is "
        "done, with keys: their number; RESET after the differences of a resync, with changes: their number, and "
        "cause), key, value (base64), create_revision, mod_revision, version, lease (hex, absent without one), "
        "revision (at which the view is exact after the line), resync (true on the differences of a reset).\n\n"
        "Exit codes:\n"
        "  0  ended by SIGINT/SIGTERM\n"
        "  1  an etcd operation failed (no member answered the first read; --from-revision was compacted)\n"
        "  2  invalid usage");
    commands.on_run(cmd, [a](Context& ctx) {
      const auto notices = ctx.announce_connection(std::string(kProgram) + ": view " + a->key);
      return run_view(ctx, *a);
    });
  }
  {
    auto* group = commands.root().add_subcommand("node", "Follow one key");
    group->require_subcommand(1);
    auto a = std::make_shared<NodeWatchArgs>();
    auto* cmd = group->add_subcommand(
        "watch",
        "Print KEY's value now (`VALUE key value`, or `ABSENT key`), then one line per change (`CREATED key value`, "
        "`UPDATED key value`, `DELETED key`), until SIGINT/SIGTERM");
    cmd->add_option("key", a->key, "The key")->required()->transform(view_key_validator());
    cmd->add_flag("--json", a->json, "Same as -w json")->group("");
    cmd->footer(
        "A NodeCache (docs/recipes/caches.md): the key is read at one revision and watched from the next, so no "
        "change is lost or repeated; after a gap it cannot resume (a compaction while cut off) it is read again and "
        "the difference is printed as one line (stderr says so).\n\n"
        "With -w json, one JSON object per line: type (VALUE, ABSENT, CREATED, UPDATED, DELETED), key, value "
        "(base64), create_revision, mod_revision, version, lease (hex, absent without one), revision, resync (true "
        "on the difference found after a gap).\n\n"
        "Exit codes:\n"
        "  0  ended by SIGINT/SIGTERM\n"
        "  1  an etcd operation failed (no member answered the first read)\n"
        "  2  invalid usage");
    commands.on_run(cmd, [a](Context& ctx) {
      const auto notices = ctx.announce_connection(std::string(kProgram) + ": node watch " + a->key);
      return run_node_watch(ctx, *a);
    });
  }
}

}  // namespace etcd_cli
