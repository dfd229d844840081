// etcd-recipes: coordination recipes on etcd v3 from the shell.

#include <grpc/support/log.h>

#include <exception>
#include <iostream>

#include "commands.h"
#include "common.h"

#ifndef ETCD_RECIPES_VERSION
#define ETCD_RECIPES_VERSION "unknown"
#endif

namespace etcd_cli {
namespace {

constexpr void (*kCommandSets[])(Commands&) = {
    add_kv_commands,    add_lease_commands,     add_status_commands,    add_lock_commands,    add_election_commands,
    add_queue_commands, add_workqueue_commands, add_transient_commands, add_counter_commands, add_barrier_commands,
    add_cache_commands, add_discovery_commands, add_demo_command,
    add_inspect_commands,
};

constexpr const char* kFooter = R"(Environment:
  ETCD_ENDPOINTS  default for --endpoints
  ETCD_PASSWORD   password for --user NAME given without one

Exit codes:
  0      success (watch, keep-alive: also when ended by SIGINT or SIGTERM)
  1      an etcd operation failed, or the key or lease does not exist
  2      invalid usage
  128+N  interrupted by signal N before the work could finish (demo))";

void add_global_options(CLI::App& app, GlobalOptions& g) {
  app.add_option("--endpoints", g.endpoints, "Comma-separated etcd endpoints (host:port or http(s)://host:port)")
      ->envname("ETCD_ENDPOINTS")
      ->capture_default_str();
  app.add_option("--timeout", g.timeout, "Deadline of each etcd call, e.g. 500ms, 5s")
      ->check(duration_validator())
      ->capture_default_str();
  app.add_option("--cacert", g.cacert, "Verify the server with this CA bundle (enables TLS)")->check(CLI::ExistingFile);
  app.add_option("--cert", g.cert, "Client certificate for mutual TLS")->check(CLI::ExistingFile);
  app.add_option("--key", g.key, "Private key of --cert")->check(CLI::ExistingFile);
  app.add_option("--user", g.user, "etcd user: NAME:PASSWORD, or NAME with ETCD_PASSWORD set");
  app.add_option("--namespace", g.namespace_prefix, "Prefix of every key read or written (invisible in output)");
  app.add_option("-w,--write-out", g.write_out,
                 "Output format: simple (text) or json (one JSON document per result; keys and values base64)")
      ->check(CLI::IsMember({"simple", "json"}))
      ->capture_default_str();
}

// The leaf subcommand the command line chose, for hints on usage errors.
CLI::App* chosen(CLI::App& app) {
  CLI::App* at = &app;
  for (;;) {
    auto parsed = at->get_subcommands();
    if (parsed.empty()) return at;
    at = parsed.front();
  }
}

// gRPC's own log lines (handshake failures, bad PEM files) are not for the
// tool's users: every failure reaches them as a status, in our words. Not
// through GRPC_VERBOSITY: CMD of a hold would inherit it.
void silence_grpc_log() {
  gpr_set_log_verbosity(GPR_LOG_SEVERITY_ERROR);
  gpr_set_log_function([](gpr_log_func_args*) {});
}

int run(int argc, char** argv) {
  CLI::App app{"Coordination recipes on etcd v3: keys, leases, watches and more from the shell.",
               std::string(kProgram)};
  app.set_version_flag("--version", ETCD_RECIPES_VERSION);
  app.require_subcommand(1);
  // Global flags may also follow the subcommand: `etcd-recipes kv get k --endpoints ...`.
  app.fallthrough();
  app.footer(kFooter);

  GlobalOptions global;
  add_global_options(app, global);
  Commands commands(app);
  for (auto add : kCommandSets) add(commands);

  silence_grpc_log();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    // `lock NAME sh -c ...`: CLI11 takes -c for an option of ours.
    if (code != 0 && chosen(app)->get_option_no_throw("command") != nullptr &&
        (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr || e.get_name() == "ExtrasError")) {
      std::cerr << "hint: put -- before the command: " << kProgram << " " << chosen(app)->get_name()
                << " NAME ... -- CMD [ARGS...]" << std::endl;
    }
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (!commands.selected()) {
    // A command group without its subcommand: CLI11 accepted it, we do not.
    std::cerr << app.help() << std::flush;
    return kExitUsage;
  }

  Context ctx(global, install_stop_signals());
  try {
    return commands.selected()(ctx);
  } catch (const Failure& f) {
    std::cerr << kProgram << ": " << f.context() << ": " << explain(f.status()) << std::endl;
  } catch (const UsageError& e) {
    std::cerr << kProgram << ": " << e.what() << "\nRun with --help for more information." << std::endl;
    return kExitUsage;
  } catch (const etcd::Error& e) {
    std::cerr << kProgram << ": " << explain(e.status()) << std::endl;
  } catch (const std::exception& e) {
    std::cerr << kProgram << ": " << e.what() << std::endl;
  }
  return kExitFailed;
}

}  // namespace
}  // namespace etcd_cli

int main(int argc, char** argv) { return etcd_cli::run(argc, argv); }
