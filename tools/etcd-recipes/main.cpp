// etcd-recipes: coordination recipes on etcd v3 from the shell.

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
    add_kv_commands,   add_lease_commands,    add_status_commands,
    add_lock_commands, add_election_commands, add_demo_command,
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

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
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
    std::cerr << kProgram << ": " << f.context() << ": " << f.status().to_string() << std::endl;
  } catch (const UsageError& e) {
    std::cerr << kProgram << ": " << e.what() << "\nRun with --help for more information." << std::endl;
    return kExitUsage;
  } catch (const etcd::Error& e) {
    std::cerr << kProgram << ": " << e.status().to_string() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << kProgram << ": " << e.what() << std::endl;
  }
  return kExitFailed;
}

}  // namespace
}  // namespace etcd_cli

int main(int argc, char** argv) { return etcd_cli::run(argc, argv); }
