// cache PREFIX: a PathChildrenCache from the shell. Prints what is under
// PREFIX/ now, then each change, until SIGINT/SIGTERM.
//
// stdout carries exactly one line per key event (ADDED, UPDATED, REMOVED),
// so that `etcd-recipes cache P | while read -r op key value; do ...` sees
// nothing else; where the initial snapshot ends and where a resync after a
// gap happened is said on stderr (with -w json, as objects of their own in
// the stream, which a JSON reader dispatches on "type").

#include <iostream>
#include <memory>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/path_children_cache.h"
#include "simple_format.h"

namespace etcd_cli {
namespace {

using Cache = etcd::recipes::PathChildrenCache;
using Event = etcd::recipes::ChildEvent<std::string>;

struct CacheArgs {
  std::string prefix;
  bool children = false;
  bool json = false;
};

nlohmann::json node_json(const etcd::recipes::CachedNode<std::string>& n) {
  nlohmann::json j{{"key", base64(n.key)},
                   {"value", base64(*n.value)},
                   {"create_revision", n.create_revision},
                   {"mod_revision", n.mod_revision},
                   {"version", n.version}};
  if (n.lease != 0) j["lease"] = lease_hex(n.lease);
  return j;
}

nlohmann::json event_json(const Event& e) {
  nlohmann::json j;
  switch (e.type) {
    case Event::Type::kAdded:
    case Event::Type::kUpdated:
      j = node_json(*e.current);
      j["type"] = e.type == Event::Type::kAdded ? "ADDED" : "UPDATED";
      break;
    case Event::Type::kRemoved:
      j = {{"type", "REMOVED"}, {"key", base64(e.key)}};
      break;
    case Event::Type::kInitialized:
      j = {{"type", "INITIALIZED"}};
      break;
    case Event::Type::kReset:
      j = {{"type", "RESYNCED"}, {"cause", e.cause.to_string()}};
      break;
  }
  j["revision"] = e.revision;
  if (e.resync) j["resync"] = true;
  return j;
}

int run_cache(Context& ctx, const CacheArgs& a) {
  const std::string what = "cache " + a.prefix;
  const bool json = ctx.json(a.json);
  // A first read names the cause (e.g. connection refused) when no member
  // answers; the cache itself retries its read quietly.
  {
    etcd::GetOptions options;
    options.prefix = true;
    options.count_only = true;
    check(ctx.client().get(a.prefix + "/", options).stop_token(ctx.stop()).wait(), what);
  }
  etcd::recipes::PathChildrenCacheOptions options;
  options.start_mode = etcd::recipes::PathChildrenCacheOptions::StartMode::kPostInitializedEvent;
  options.scope = a.children ? etcd::recipes::PathChildrenCacheOptions::Scope::kDirectChildren
                             : etcd::recipes::PathChildrenCacheOptions::Scope::kSubtree;
  Cache cache(ctx.client(), a.prefix, options);
  auto note = [what](const std::string& text) { std::cerr << kProgram << ": " << what << ": " << text << std::endl; };
  // Runs on the cache's strand, one event at a time, in revision order.
  auto initial = std::make_shared<size_t>(0);
  auto events = cache.on_event([json, note, initial](const Event& e) {
    if (e.type == Event::Type::kAdded && !e.resync) ++*initial;
    if (json) {
      auto j = event_json(e);
      if (e.type == Event::Type::kInitialized) j["keys"] = *initial;
      return print_line(dump_json(j));
    }
    switch (e.type) {
      case Event::Type::kAdded:
        return print_line(simple_line("ADDED", {e.key, *e.current->value}));
      case Event::Type::kUpdated:
        return print_line(simple_line("UPDATED", {e.key, *e.current->value}));
      case Event::Type::kRemoved:
        return print_line(simple_line("REMOVED", {e.key}));
      case Event::Type::kInitialized:
        return note(cat(*initial, " keys at revision ", e.revision, "; watching for changes"));
      case Event::Type::kReset:
        return note(cat("resynced at revision ", e.revision, " after a gap in the watch (", e.cause.to_string(),
                        "): the lines just before are the differences found"));
    }
  });
  auto errors = cache.on_error([note](const etcd::Status& s) { note(explain(s)); });
  cache.start();
  auto ready = cache.wait_initialized().stop_token(ctx.stop()).wait();
  if (ctx.stop().stop_requested()) return kExitOk;
  check(std::move(ready), what);
  while (sleep_for(std::chrono::hours(1), ctx.stop())) {
  }
  return kExitOk;
}

// A prefix as a path: trailing '/' dropped ("cfg/" and "cfg" both mean the
// keys under "cfg/"), then checked as every recipe name.
CLI::Validator prefix_validator() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        while (s.size() > 1 && s.back() == '/') s.pop_back();
        auto status = etcd::recipes::validate_name("cache", s);
        return status.ok() ? std::string() : status.message();
      },
      "PREFIX");
}

}  // namespace

void add_cache_commands(Commands& commands) {
  auto a = std::make_shared<CacheArgs>();
  auto* cmd = commands.root().add_subcommand(
      "cache",
      "Print the keys under PREFIX/ (`ADDED key value`), then one line per change (`ADDED key value`, `UPDATED key "
      "value`, `REMOVED key`), until SIGINT/SIGTERM");
  cmd->add_option("prefix", a->prefix,
                  "The path whose keys to follow: every key under PREFIX/ (a trailing / is "
                  "optional)")
      ->required()
      ->transform(prefix_validator());
  cmd->add_flag("--children", a->children, "Only direct children: PREFIX/a, not PREFIX/a/b");
  cmd->add_flag("--json", a->json, "Same as -w json")->group("");
  cmd->footer(
      "A PathChildrenCache (docs/recipes/caches.md): the keys are read at one revision, page by page, and watched from the "
      "next, so no change is lost or repeated. The initial keys are printed first, in key order, as ADDED lines; "
      "stderr says when they are all there. After a reconnect the watch resumes where it stopped; if it cannot (the "
      "revision it needs was compacted meanwhile), the keys are read again and exactly the differences are printed "
      "(keys removed, updated, added meanwhile), and stderr says so. Keys and values are printed as they are "
      "stored.\n\n"
      "With -w json, one JSON object per line: type (ADDED, UPDATED, REMOVED, INITIALIZED once the initial keys are "
      "printed, with keys: their number; RESYNCED after the differences of a resync, with cause), key, value (base64), "
      "create_revision, mod_revision, "
      "version, lease (hex, absent without one), revision (at which the cache is exact after the line), resync "
      "(true on the differences of a resync).\n\n"
      "Exit codes:\n"
      "  0  ended by SIGINT/SIGTERM\n"
      "  1  an etcd operation failed (no member answered the first read)\n"
      "  2  invalid usage");
  commands.on_run(cmd, [a](Context& ctx) {
    const auto notices = ctx.announce_connection(std::string(kProgram) + ": cache " + a->prefix);
    return run_cache(ctx, *a);
  });
}

}  // namespace etcd_cli
