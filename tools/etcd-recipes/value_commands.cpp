// value get / set / cas / watch: a SharedValue (one key's versioned value)
// from the shell.
//
// Every line a command prints about the value is `MOD_REVISION VALUE`
// (`0` alone for an absent key), so `read -r rev value` takes it apart and
// `value cas KEY "$rev" NEW` writes only if nobody wrote since.

#include <cstdint>
#include <iostream>
#include <memory>
#include <mutex>
#include <vector>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/shared_value.h"
#include "simple_format.h"

namespace etcd_cli {
namespace {

using SharedBytes = etcd::recipes::SharedValue<std::string>;
using Versioned = etcd::recipes::VersionedValue<std::string>;

struct ValueArgs {
  std::string key;
  std::string value;
  int64_t expected = 0;
  bool json = false;
};

nlohmann::json versioned_json(const Versioned& v) {
  nlohmann::json j{{"exists", v.exists}, {"mod_revision", v.mod_revision}, {"revision", v.revision}};
  if (v.exists) {
    j["value"] = base64(*v.value);
    j["version"] = v.version;
    j["create_revision"] = v.create_revision;
  }
  return j;
}

std::string versioned_line(const Versioned& v) {
  if (!v.exists) return "0";
  return simple_line(std::to_string(v.mod_revision), {*v.value});
}

void print_versioned(bool json, const Versioned& v, bool resync = false) {
  if (!json) return print_line(versioned_line(v));
  auto j = versioned_json(v);
  if (resync) j["resync"] = true;
  print_line(dump_json(j));
}

CLI::App* add_value_command(CLI::App* value, const std::string& verb, const std::string& help,
                            const std::shared_ptr<ValueArgs>& a) {
  auto* cmd = value->add_subcommand(verb, help);
  cmd->add_option("key", a->key, "The key")->required()->check(name_validator("key"));
  return cmd;
}

int run_value_watch(Context& ctx, const ValueArgs& a) {
  const std::string what = "value watch " + a.key;
  const bool json = ctx.json(a.json);
  // A first read names the cause (e.g. connection refused) when no member
  // answers; the view itself retries its read quietly.
  check(ctx.client().get(a.key).stop_token(ctx.stop()).wait(), what);
  SharedBytes value(ctx.client(), a.key);
  auto note = [what](const std::string& text) { std::cerr << kProgram << ": " << what << ": " << text << std::endl; };
  // The state first, then each change after it. Changes run on the value's
  // strand, one at a time, in revision order; those that come before the
  // state is printed wait for it, and those it already shows are dropped.
  struct Printer {
    std::mutex mu;
    bool ready = false;
    int64_t base = 0;
    std::vector<etcd::recipes::SharedValueEvent<std::string>> early;
  };
  auto printer = std::make_shared<Printer>();
  auto show = [json, note](const etcd::recipes::SharedValueEvent<std::string>& e) {
    print_versioned(json, e.current, e.resync);
    if (e.resync && !json) note(cat("resynced at revision ", e.current.revision, " after a gap in the watch"));
  };
  auto changes = value.on_change([printer, show](const etcd::recipes::SharedValueEvent<std::string>& e) {
    std::lock_guard lock(printer->mu);
    if (!printer->ready) return printer->early.push_back(e);
    show(e);
  });
  auto errors = value.on_error([note](const etcd::Status& s) { note(explain(s)); });
  value.start();
  auto ready = value.wait_initialized().stop_token(ctx.stop()).wait();
  if (ctx.stop().stop_requested()) return kExitOk;
  check(std::move(ready), what);
  {
    std::lock_guard lock(printer->mu);
    const Versioned now = value.get();
    print_versioned(json, now);
    printer->base = now.revision;
    printer->ready = true;
    for (const auto& e : printer->early) {
      if (e.current.revision > printer->base) show(e);
    }
    printer->early.clear();
  }
  while (sleep_for(std::chrono::hours(1), ctx.stop())) {
  }
  return kExitOk;
}

}  // namespace

void add_value_commands(Commands& commands) {
  auto* value = commands.root().add_subcommand(
      "value", "One key's versioned value (a SharedValue): get, set, cas (against a version), watch");
  const std::string line_format =
      "Output: `MOD_REVISION VALUE` (`0` alone when the key is absent); the value as in -w simple. The mod "
      "revision is the version `value cas` compares. -w json: {\"exists\", \"value\" (base64), \"mod_revision\", "
      "\"version\", \"create_revision\", \"revision\"}.";
  {
    auto a = std::make_shared<ValueArgs>();
    auto* cmd = add_value_command(value, "get", "Print the value of KEY and its version", a);
    cmd->footer(cat("One linearizable read. ", line_format));
    commands.on_run(cmd, [a](Context& ctx) {
      auto r =
          check(ctx.client().get(a->key).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), "value get " + a->key);
      Versioned v;
      v.revision = r.header.revision;
      if (const auto* kv = r.first()) {
        v.exists = true;
        v.value = std::make_shared<const std::string>(kv->value);
        v.mod_revision = kv->mod_revision;
        v.version = kv->version;
        v.create_revision = kv->create_revision;
      }
      print_versioned(ctx.json(), v);
      return kExitOk;
    });
  }
  {
    auto a = std::make_shared<ValueArgs>();
    auto* cmd = add_value_command(value, "set", "Store VALUE in KEY, whatever it held, and print the new version", a);
    cmd->add_option("value", a->value, "The value")->required();
    cmd->footer(cat("One transaction (a put and a read). ", line_format));
    commands.on_run(cmd, [a](Context& ctx) {
      SharedBytes v(ctx.client(), a->key);
      check(v.set(a->value).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), "value set " + a->key);
      print_versioned(ctx.json(), v.get());
      return kExitOk;
    });
  }
  {
    auto a = std::make_shared<ValueArgs>();
    auto* cmd = add_value_command(
        value, "cas", "Store VALUE in KEY if its version (mod revision) is still EXPECTED (0: if KEY is absent)", a);
    cmd->add_option("expected", a->expected, "The version it must have (from `value get`)")
        ->required()
        ->check(int_range(0, INT64_MAX));
    cmd->add_option("value", a->value, "The value to store")->required();
    cmd->footer(
        cat("One transaction comparing the key's mod revision. Prints the value the key has afterwards: "
            "this one with its new version, or the one that was there instead. ",
            line_format,
            " With -w json also \"swapped\".\n\n"
            "Exit codes:\n"
            "  0  stored\n"
            "  1  KEY's version was not EXPECTED (nothing written), or an etcd operation failed\n"
            "  2  invalid usage"));
    commands.on_run(cmd, [a](Context& ctx) {
      const std::string what = "value cas " + a->key;
      SharedBytes v(ctx.client(), a->key);
      const bool swapped =
          check(v.compare_and_set(a->expected, a->value).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
      const Versioned now = v.get();
      if (ctx.json()) {
        auto j = versioned_json(now);
        j["swapped"] = swapped;
        print_line(dump_json(j));
      } else {
        print_line(versioned_line(now));
      }
      if (swapped) return kExitOk;
      std::cerr << kProgram << ": " << what << ": the version is " << now.mod_revision << ", not " << a->expected
                << " (nothing written)" << std::endl;
      return kExitFailed;
    });
  }
  {
    auto a = std::make_shared<ValueArgs>();
    auto* cmd =
        add_value_command(value, "watch", "Print the value of KEY, then one line per change, until SIGINT/SIGTERM", a);
    cmd->add_flag("--json", a->json, "Same as -w json")->group("");
    cmd->footer(
        cat("The key is read at one revision and watched from the next, so no change is lost; after a gap "
            "(the revision the watch needs was compacted while cut off) it is read again and the difference "
            "is printed as one line (stderr says so; -w json: \"resync\": true). ",
            line_format,
            "\n\nExit codes:\n"
            "  0  ended by SIGINT/SIGTERM\n"
            "  1  an etcd operation failed (no member answered the first read)\n"
            "  2  invalid usage"));
    commands.on_run(cmd, [a](Context& ctx) {
      const auto notices = ctx.announce_connection(std::string(kProgram) + ": value watch " + a->key);
      return run_value_watch(ctx, *a);
    });
  }
}

}  // namespace etcd_cli
