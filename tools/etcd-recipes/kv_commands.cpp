// kv put | get | del | watch | compact

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "commands.h"
#include "common.h"
#include "simple_format.h"

namespace etcd_cli {
namespace {

// One key, or every key under a prefix: `KEY --prefix` (etcdctl's form),
// `--prefix PREFIX`, or `--prefix` alone / `--prefix ""` for every key.
struct KeySelection {
  std::string key;
  std::string prefix;
  CLI::Option* key_option = nullptr;
  CLI::Option* prefix_option = nullptr;

  void add_to(CLI::App* cmd, const std::string& verb) {
    key_option = cmd->add_option("key", key, "The key to " + verb + " (with --prefix: the prefix)");
    prefix_option = cmd->add_option("--prefix", prefix,
                                    "Every key starting with KEY, as in etcdctl (`KEY --prefix`); also "
                                    "`--prefix PREFIX`; no KEY or \"\" means every key")
                        ->expected(0, 1);
  }
  bool is_prefix() const { return prefix_option->count() > 0; }
  // Resolves the two spellings; call before using the selection.
  void require_one() {
    if (key_option->count() == 0 && !is_prefix()) throw UsageError("give a KEY or --prefix PREFIX");
    if (!is_prefix() && key.empty()) throw UsageError("the key must not be empty (every key: --prefix \"\")");
    if (is_prefix() && key_option->count() > 0) {
      if (!prefix.empty() && prefix != key) throw UsageError("give the prefix once: KEY --prefix, or --prefix PREFIX");
      prefix = key;
    }
  }
  // The key and range end to send. An empty prefix means "every key";
  // etcd refuses an empty key, so that is key "\0" with range end "\0"
  // (etcd's "to the end").
  std::string range_key() const { return is_prefix() ? (prefix.empty() ? etcd::kFromKey : prefix) : key; }
  std::string range_end() const {
    if (!is_prefix()) return {};
    return prefix.empty() ? etcd::kFromKey : etcd::prefix_range_end(prefix);
  }
  std::string describe() const { return is_prefix() ? "prefix \"" + prefix + "\"" : "\"" + key + "\""; }
};

// As etcdctl -w json: key and value base64, revisions as numbers; the
// lease as its hex id (the form every command prints and takes), absent
// for a key without one.
nlohmann::json kv_json(const etcd::KeyValue& kv) {
  nlohmann::json j = {{"key", base64(kv.key)},
                      {"value", base64(kv.value)},
                      {"create_revision", kv.create_revision},
                      {"mod_revision", kv.mod_revision},
                      {"version", kv.version}};
  if (kv.lease != 0) j["lease"] = lease_hex(kv.lease);
  return j;
}

// Fails with the cause (e.g. connection refused) when no member answers a
// read: a watch would otherwise only report that it was not confirmed.
void probe(Context& ctx, const std::string& key, const std::string& what) {
  etcd::GetOptions options;
  options.count_only = true;
  options.limit = 1;
  check(ctx.client().get(key, options).stop_token(ctx.stop()).wait(), what);
}

// The server refuses a request over its --max-request-bytes (1.5 MiB by
// default) with a bare "request is too large"; say which limit that is.
[[noreturn]] void fail_put(const std::string& what, etcd::Status status, size_t bytes) {
  if (status.message().find("too large") != std::string::npos || status.is(etcd::Errc::kRequestTooLarge)) {
    throw Failure(what, etcd::Status(status.code(),
                                     cat("the request (a value of ", bytes,
                                         " bytes) exceeds the server's request size limit (etcd --max-request-bytes, "
                                         "1.5 MiB by default): ",
                                         status.message()),
                                     status.reason()));
  }
  throw Failure(what, std::move(status));
}

void add_put(Commands& commands, CLI::App* group) {
  struct Args {
    std::string key;
    std::optional<std::string> value;
    std::string file;
    std::string lease;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = group->add_subcommand("put", "Write KEY=VALUE; prints the new store revision");
  cmd->add_option("key", a->key, "Key")->required();
  cmd->add_option("value", a->value,
                  "Value; - reads it from standard input (any bytes, any size up to the server's limit); use -- "
                  "before a value that starts with '-'");
  cmd->add_option("--file", a->file, "Read the value from this file instead (any bytes)");
  cmd->add_option("--lease", a->lease, "Attach the key to this lease (the key goes when the lease does)")
      ->check(lease_id_validator());
  commands.on_run(cmd, [a](Context& ctx) {
    if (a->key.empty()) throw UsageError("kv put: the key must not be empty");
    const std::string value = read_value(a->value, a->file, "kv put");
    etcd::PutOptions options;
    if (!a->lease.empty()) options.lease = *parse_lease_id(a->lease);
    auto r = ctx.client().put(a->key, value, options).stop_token(ctx.stop()).wait();
    if (!r.ok()) fail_put("kv put", std::move(r).status(), value.size());
    if (ctx.json()) {
      print_line(dump_json({{"revision", r->header.revision}}));
    } else {
      print_line(std::to_string(r->header.revision));
    }
    return kExitOk;
  });
}

void add_get(Commands& commands, CLI::App* group) {
  struct Args {
    KeySelection keys;
    bool keys_only = false;
    bool json = false;
    int64_t revision = 0;
    int64_t limit = 0;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = group->add_subcommand(
      "get",
      "Print the value of KEY as stored, or KEY=VALUE lines for every key under --prefix, escaped as docs/cli.md "
      "says (exit 1 if KEY is absent)");
  a->keys.add_to(cmd, "read");
  cmd->add_flag("--keys-only", a->keys_only, "Print keys, not values");
  cmd->add_flag("--json", a->json, "Same as -w json")->group("");
  cmd->add_option("--rev", a->revision, "Read at this store revision (default: latest)")
      ->check(int_range(0, INT64_MAX));
  cmd->add_option("--limit", a->limit, "At most this many keys (with --prefix)")->check(int_range(0, INT64_MAX));
  cmd->footer(
      "With -w json: a JSON array of {key, value, create_revision, mod_revision, version, lease}; key and value "
      "are base64 (they are arbitrary bytes), lease is the hex lease id and absent without a lease.");
  commands.on_run(cmd, [a](Context& ctx) {
    a->keys.require_one();
    const std::string range_end = a->keys.range_end();
    etcd::GetOptions options;
    options.range_end = range_end;
    options.limit = a->limit;
    options.revision = a->revision;
    options.keys_only = a->keys_only;
    auto r = check(ctx.client().get(a->keys.range_key(), options).stop_token(ctx.stop()).wait(), "kv get");
    if (!a->keys.is_prefix() && r.kvs.empty()) {
      throw Failure("kv get", etcd::Status(etcd::StatusCode::kNotFound, "key \"" + a->keys.key + "\" not found",
                                           etcd::Errc::kKeyNotFound));
    }
    if (ctx.json(a->json)) {
      auto array = nlohmann::json::array();
      for (const auto& kv : r.kvs) array.push_back(kv_json(kv));
      print_line(dump_json(array));
    } else if (a->keys_only) {
      for (const auto& kv : r.kvs) print_line(simple_field(kv.key));
    } else if (!a->keys.is_prefix()) {
      print_line(r.kvs.front().value);  // the whole output is the value: as stored
    } else {
      for (const auto& kv : r.kvs) print_line(simple_field(kv.key) + "=" + simple_field(kv.value));
    }
    return kExitOk;
  });
}

void add_del(Commands& commands, CLI::App* group) {
  auto keys = std::make_shared<KeySelection>();
  auto* cmd = group->add_subcommand("del", "Delete KEY, or every key under --prefix; prints how many were deleted");
  keys->add_to(cmd, "delete");
  commands.on_run(cmd, [keys](Context& ctx) {
    keys->require_one();
    const std::string range_end = keys->range_end();
    etcd::DeleteOptions options;
    options.range_end = range_end;
    auto r = check(ctx.client().del(keys->range_key(), options).stop_token(ctx.stop()).wait(), "kv del");
    print_line(ctx.json() ? dump_json({{"deleted", r.deleted}, {"revision", r.header.revision}})
                          : std::to_string(r.deleted));
    return kExitOk;
  });
}

std::string event_line(const etcd::Event& ev, bool prev_kv) {
  std::string line = ev.type == etcd::Event::Type::kPut ? simple_line("PUT", {ev.kv.key, ev.kv.value})
                                                        : simple_line("DELETE", {ev.kv.key});
  if (prev_kv && ev.prev_kv) line += " (was: " + simple_field(ev.prev_kv->value) + ")";
  return line;
}

nlohmann::json event_json(const etcd::Event& ev) {
  auto j = kv_json(ev.kv);
  j["type"] = ev.type == etcd::Event::Type::kPut ? "PUT" : "DELETE";
  if (ev.prev_kv) j["prev_kv"] = kv_json(*ev.prev_kv);
  return j;
}

void add_watch(Commands& commands, CLI::App* group) {
  struct Args {
    KeySelection keys;
    int64_t revision = 0;
    bool prev_kv = false;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = group->add_subcommand("watch",
                                    "Print one line per change of KEY or of keys under --prefix: `PUT key value` or "
                                    "`DELETE key`, until SIGINT/SIGTERM");
  a->keys.add_to(cmd, "watch");
  cmd->add_option("--rev", a->revision, "Start at this store revision (replays history; default: from now)")
      ->check(int_range(1, INT64_MAX));
  cmd->add_flag("--prev-kv", a->prev_kv, "Also show the previous value: `PUT key value (was: old)`");
  cmd->add_flag("--json", a->json, "Same as -w json")->group("");
  cmd->footer(
      "With -w json: one JSON object per line: type (PUT or DELETE), key, value (base64), create_revision, "
      "mod_revision, version, lease (hex, absent without one), prev_kv (with --prev-kv).");
  commands.on_run(cmd, [a](Context& ctx) {
    a->keys.require_one();
    const bool json = ctx.json(a->json);
    probe(ctx, a->keys.range_key(), "kv watch " + a->keys.describe());
    const auto notices = ctx.announce_connection(std::string(kProgram) + ": kv watch " + a->keys.describe());
    struct State {
      std::mutex mutex;
      std::condition_variable_any changed;
      std::optional<etcd::Status> error;
    };
    auto state = std::make_shared<State>();
    etcd::WatchOptions options;
    options.range_end = a->keys.range_end();
    options.start_revision = a->revision;
    options.prev_kv = a->prev_kv;
    auto watcher = ctx.client().watch(a->keys.range_key(), options,
                                      [state, prev_kv = a->prev_kv, json](etcd::Result<etcd::WatchResponse> r) {
                                        if (!r.ok()) {
                                          std::lock_guard lock(state->mutex);
                                          state->error = std::move(r).status();
                                          state->changed.notify_all();
                                          return;
                                        }
                                        for (const auto& ev : r->events) {
                                          print_line(json ? dump_json(event_json(ev)) : event_line(ev, prev_kv));
                                        }
                                      });
    auto failed = [&]() -> std::optional<etcd::Status> {
      std::lock_guard lock(state->mutex);
      return state->error;
    };
    // A watch that the server never confirms (no reachable member) must not
    // look like a quiet key: fail after --timeout. Waited in slices so a
    // Ctrl-C is not held up by it.
    const auto created_by = etcd::Clock::now() + ctx.timeout();
    while (!watcher.wait_created(std::min(created_by, etcd::Clock::now() + std::chrono::milliseconds(100)))) {
      if (ctx.stop().stop_requested()) return kExitOk;
      if (auto error = failed()) throw Failure("kv watch " + a->keys.describe(), *error);
      if (etcd::Clock::now() >= created_by) {
        throw Failure("kv watch " + a->keys.describe(),
                      etcd::DeadlineExceeded("the server did not confirm the watch within --timeout"));
      }
    }
    std::unique_lock lock(state->mutex);
    state->changed.wait(lock, ctx.stop(), [&] { return state->error.has_value(); });
    if (state->error) throw Failure("kv watch " + a->keys.describe(), *state->error);
    return kExitOk;
  });
}

void add_compact(Commands& commands, CLI::App* group) {
  struct Args {
    int64_t revision = 0;
    bool physical = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = group->add_subcommand("compact", "Discard the key history before REV (watches and reads below it fail)");
  cmd->add_option("rev", a->revision, "Revision")->required()->check(int_range(1, INT64_MAX));
  cmd->add_flag("--physical", a->physical, "Wait until the space is reclaimed");
  commands.on_run(cmd, [a](Context& ctx) {
    check(ctx.client().compact(a->revision, a->physical).stop_token(ctx.stop()).wait(), "kv compact");
    print_line(std::to_string(a->revision));
    return kExitOk;
  });
}

}  // namespace

void add_kv_commands(Commands& commands) {
  auto* kv = commands.root().add_subcommand("kv", "Read, write, delete and watch keys");
  kv->require_subcommand(1);
  add_put(commands, kv);
  add_get(commands, kv);
  add_del(commands, kv);
  add_watch(commands, kv);
  add_compact(commands, kv);
}

}  // namespace etcd_cli
