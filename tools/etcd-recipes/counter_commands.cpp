// counter get / add / set / cas: a DistributedAtomicLong from the shell.

#include <cstdint>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/atomic_long.h"

namespace etcd_cli {
namespace {

// A whole int64, checked strictly (CLI11 alone saturates out-of-range numbers).
CLI::Validator int64_value() { return int_range(INT64_MIN, INT64_MAX); }

struct CounterArgs {
  std::string name;
  int64_t a = 0;
  int64_t b = 0;
};

void print_value(Context& ctx, int64_t value) {
  print_line(ctx.json() ? dump_json({{"value", value}}) : std::to_string(value));
}

CLI::App* add_counter_command(CLI::App* counter, const std::string& verb, const std::string& help,
                              std::shared_ptr<CounterArgs> a) {
  auto* cmd = counter->add_subcommand(verb, help);
  cmd->add_option("name", a->name, "The counter's key")->required()->check(name_validator("counter"));
  return cmd;
}

}  // namespace

void add_counter_commands(Commands& commands) {
  auto* counter = commands.root().add_subcommand(
      "counter", "A 64-bit counter in one key, stored as decimal text: get, add, set, cas");

  {
    auto a = std::make_shared<CounterArgs>();
    auto* cmd = add_counter_command(counter, "get", "Print the value of the counter NAME (0 if the key is absent)", a);
    cmd->footer("One read. -w json: {\"value\":N}. A value that is not a decimal int64 is an error (exit 1).");
    commands.on_run(cmd, [a](Context& ctx) {
      etcd::recipes::DistributedAtomicLong c(ctx.client(), a->name);
      print_value(ctx, check(c.get().timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), "counter get " + a->name));
      return kExitOk;
    });
  }
  {
    auto a = std::make_shared<CounterArgs>();
    auto* cmd =
        add_counter_command(counter, "add", "Add N to the counter NAME and print the value this add committed", a);
    cmd->add_option("n", a->a, "The amount (negative to subtract)")->required()->check(int64_value());
    cmd->footer(
        "Guarded read-modify-write: no update is lost under contention, and the printed value is the one this "
        "command committed (concurrent adds print distinct values). -w json: {\"value\":N}.\n\n"
        "Exit codes:\n"
        "  0  added\n"
        "  1  an etcd operation failed, the value would overflow int64, the stored value is not a number, or the "
        "outcome is unknown (the message says which; an unknown add applied once or not at all)\n"
        "  2  invalid usage");
    commands.on_run(cmd, [a](Context& ctx) {
      etcd::recipes::DistributedAtomicLong c(ctx.client(), a->name);
      print_value(ctx, check(c.add(a->a).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(),
                             cat("counter add ", a->name, " ", a->a)));
      return kExitOk;
    });
  }
  {
    auto a = std::make_shared<CounterArgs>();
    auto* cmd = add_counter_command(counter, "set", "Store N in the counter NAME, whatever it held", a);
    cmd->add_option("n", a->a, "The value")->required()->check(int64_value());
    cmd->footer("One put (it also replaces a value that is not a number).");
    commands.on_run(cmd, [a](Context& ctx) {
      etcd::recipes::DistributedAtomicLong c(ctx.client(), a->name);
      check(c.set(a->a).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), cat("counter set ", a->name));
      return kExitOk;
    });
  }
  {
    auto a = std::make_shared<CounterArgs>();
    auto* cmd =
        add_counter_command(counter, "cas", "Store NEW in the counter NAME if it holds EXPECTED (absent is 0)", a);
    cmd->add_option("expected", a->a, "The value it must hold")->required()->check(int64_value());
    cmd->add_option("new", a->b, "The value to store")->required()->check(int64_value());
    cmd->footer(
        "One transaction comparing the stored value. -w json: {\"swapped\":true|false,\"value\":N} (N: the value now, "
        "when it was not EXPECTED).\n\n"
        "Exit codes:\n"
        "  0  stored\n"
        "  1  the counter did not hold EXPECTED (nothing written), or an etcd operation failed\n"
        "  2  invalid usage");
    commands.on_run(cmd, [a](Context& ctx) {
      const std::string what = cat("counter cas ", a->name);
      etcd::recipes::DistributedAtomicLong c(ctx.client(), a->name);
      const bool swapped =
          check(c.compare_and_set(a->a, a->b).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
      if (swapped) {
        if (ctx.json()) print_line(dump_json({{"swapped", true}}));
        return kExitOk;
      }
      // What it held instead, for the message (advisory: it may move on).
      auto now = c.get().timeout(ctx.timeout()).stop_token(ctx.stop()).wait();
      const std::string held = now.ok() ? std::to_string(*now) : std::string("unknown");
      if (ctx.json()) {
        nlohmann::json j = {{"swapped", false}};
        if (now.ok()) j["value"] = *now;
        print_line(dump_json(j));
      }
      std::cerr << kProgram << ": " << what << ": the counter holds " << held << ", not " << a->a
                << " (nothing written)" << std::endl;
      return kExitFailed;
    });
  }
}

}  // namespace etcd_cli
