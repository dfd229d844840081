// transient KEY VALUE -- CMD: a key that exists while CMD runs (a
// TransientKeyValue), with the CMD runner of `lock` and `workqueue work`
// (supervise(), hold.h).
//
// Unlike a lock, the key heals: cut off from etcd past --ttl, it is removed
// by etcd and re-created (only where free) once the link returns. Its loss
// therefore does not stop CMD: it is reported on stderr, as is its return.

#include <iostream>
#include <memory>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/transient.h"
#include "hold.h"
#include "simple_format.h"

namespace etcd_cli {
namespace {

constexpr const char* kTransientKeyEnv = "ETCD_RECIPES_TRANSIENT_KEY";

struct TransientArgs {
  std::string key;
  std::string value;
  int ttl = 10;
  std::string kill_after = "3s";
  std::vector<std::string> command;
};

int run_transient(Context& ctx, const TransientArgs& a) {
  const std::string what = "transient " + a.key;
  auto complain = [&](const std::string& text) { std::cerr << kProgram << ": " << what << ": " << text << std::endl; };
  if (auto code = refuse_unrunnable(a.command, complain, "the key was not created")) return *code;
  etcd::recipes::RecipeOptions options;
  options.session_ttl = std::chrono::seconds(a.ttl);
  etcd::recipes::TransientKeyValue transient(ctx.client(), a.key, a.value, std::move(options));
  auto lost =
      transient.on_lost([&](const etcd::Status& why) { complain(cat(explain(why), " (CMD keeps running)")); });
  auto restored = transient.on_restored([&] { complain("the key was re-created"); });

  auto created = transient.create().stop_token(ctx.stop()).timeout(ctx.timeout()).wait();
  if (!created.ok()) {
    if (ctx.stop().stop_requested()) return kExitSignalBase + stop_signal();
    if (created.status().code() == etcd::StatusCode::kAlreadyExists) {
      complain(cat(created.status().message(), a.command.empty() ? "" : "; the command was not run"));
      return kExitFailed;
    }
    throw Failure(what, std::move(created).status());
  }
  // Whatever happens next, the key goes: deleted (if still ours) and its
  // lease revoked. Never with ctx.stop(): after a signal this is exactly the
  // work that must still be done.
  auto remove = [&] {
    auto r = transient.release().timeout(ctx.timeout()).wait();
    if (!r.ok()) complain(cat("removing the key: ", explain(r.status()), " (it expires with its lease)"));
  };

  if (a.command.empty()) {
    if (ctx.json()) {
      print_line(dump_json({{"key", base64(a.key)}, {"create_revision", transient.create_revision()}}));
    } else {
      print_line(simple_field(a.key));
      print_line(std::to_string(transient.create_revision()));
    }
  }
  return run_while_present(ctx, a.command, {cat(kTransientKeyEnv, "=", a.key)}, a.kill_after, complain, remove);
}

}  // namespace

void add_transient_commands(Commands& commands) {
  auto a = std::make_shared<TransientArgs>();
  auto* cmd = commands.root().add_subcommand(
      "transient", "Create KEY with VALUE while CMD runs (only if KEY is absent), remove it when CMD exits");
  cmd->add_option("key", a->key, "The key")->required()->check(name_validator("key"));
  cmd->add_option("value", a->value, "Its value")->required();
  add_presence_options(cmd, a->ttl, a->kill_after, "key");
  cmd->add_option("command", a->command,
                  "Run CMD [ARGS...] while the key exists (put -- before it); without it, print the key and its "
                  "create revision and keep it until SIGINT/SIGTERM");
  cmd->footer(
      cat("KEY is created under a lease of its own (--ttl) only if it is absent: if another owner has it (a lease of "
          "its own or none), nothing is written, CMD is not run, and the exit status is 1. CMD runs with "
          "stdin/stdout/stderr inherited and ",
          kTransientKeyEnv,
          " in its environment, in a process group of its own; SIGINT/SIGTERM/SIGHUP are passed on to that group, "
          "SIGKILL follows after --kill-after. When CMD exits (and what it left in its group is stopped), the key is "
          "deleted at once and its lease revoked.\n\n"
          "The key heals: if this process is cut off from etcd longer than --ttl, etcd removes the key; once the link "
          "returns it is re-created with VALUE where it is free, never overwriting a key someone else created "
          "meanwhile (retried each second until it is free). Both are reported on stderr; CMD keeps running.\n\n"
          "Exit codes:\n"
          "  (CMD's)   with CMD: CMD's exit status (128+N if signal N killed it)\n"
          "  0         without CMD: ended by SIGINT/SIGTERM, the key removed\n"
          "  1         KEY is held by another owner (CMD not run), or an etcd operation failed\n"
          "  126, 127  CMD could not be run, was not found\n"
          "  128+N     interrupted by signal N before CMD started; nothing is left behind"));
  commands.on_run(cmd, [a](Context& ctx) {
    const auto notices = ctx.announce_connection(std::string(kProgram) + ": transient " + a->key);
    return run_transient(ctx, *a);
  });
}

}  // namespace etcd_cli
