// etcd-recipes: coordination recipes on etcd v3 from the shell.

#include <grpc/support/log.h>

#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"
#include "etcd/log.h"
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
    add_inspect_commands, add_exporter_commands, add_dashboard_commands, add_view_commands, add_reap_commands,
    add_value_commands, add_group_commands,
};

constexpr const char* kFooter = R"(Environment (a flag beats them; ETCD_* names beat etcdctl's ETCDCTL_* ones):
  ETCD_ENDPOINTS, ETCDCTL_ENDPOINTS  default for --endpoints
  ETCDCTL_COMMAND_TIMEOUT            default for --timeout
  ETCDCTL_DIAL_TIMEOUT               default for --dial-timeout
  ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY
                                     defaults for --cacert, --cert, --key
  ETCDCTL_USER                       default for --user
  ETCD_PASSWORD, ETCDCTL_PASSWORD    password for --user NAME given without one

Exit codes:
  0      success (watch, keep-alive: also when ended by SIGINT or SIGTERM)
  1      an etcd operation failed, or the key or lease does not exist
  2      invalid usage
  128+N  interrupted by signal N before the work could finish (demo))";

// The global options, their defaults read from the environment first.
void add_global_options(CLI::App& app, GlobalOptions& g) {
  read_environment(g);
  auto from = [&g](const std::string& flag) { return default_source(g, flag); };
  app.add_option("--endpoints", g.endpoints,
                 "Comma-separated etcd endpoints (host:port or http(s)://host:port)" + from("--endpoints"))
      ->capture_default_str();
  app.add_option("--timeout", g.timeout, "Deadline of each etcd call, e.g. 500ms, 5s" + from("--timeout"))
      ->check(duration_validator())
      ->capture_default_str();
  app.add_option("--dial-timeout", g.dial_timeout,
                 "How long a refused connection (nothing listening) is retried before a call fails" +
                     from("--dial-timeout"))
      ->check(duration_validator())
      ->capture_default_str();
  app.add_option("--cacert", g.cacert, "Verify the server with this CA bundle (enables TLS)" + from("--cacert"))
      ->check(CLI::ExistingFile)
      ->capture_default_str();
  app.add_option("--cert", g.cert, "Client certificate for mutual TLS" + from("--cert"))
      ->check(CLI::ExistingFile)
      ->capture_default_str();
  app.add_option("--key", g.key, "Private key of --cert" + from("--key"))
      ->check(CLI::ExistingFile)
      ->capture_default_str();
  app.add_option("--user", g.user,
                 "etcd user: NAME:PASSWORD, or NAME with ETCD_PASSWORD (or ETCDCTL_PASSWORD) set" + from("--user"));
  app.add_option("--namespace", g.namespace_prefix, "Prefix of every key read or written (invisible in output)");
  app.add_option("-w,--write-out", g.write_out,
                 "Output format: simple (text) or json (one JSON document per result; keys and values base64)")
      ->check(CLI::IsMember({"simple", "json"}))
      ->capture_default_str();
  app.add_flag("-v,--verbose", g.verbose,
               "Print what the library does in the background on stderr, one line per event: calls retried, holds "
               "lost, keys healed, views read again, dead letters (-vv: debug records too)");
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

// A global or command option named `arg` ("--endpoints", "-w"), looked up
// from `at` outwards (global options may follow a command).
const CLI::Option* find_option(const CLI::App* at, const std::string& arg) {
  for (; at != nullptr; at = at->get_parent()) {
    if (const CLI::Option* opt = at->get_option_no_throw(arg)) return opt;
  }
  return nullptr;
}

// A word of the command line where a command was expected that names
// none: the command so far ("kv"), the word, and the nearest command's
// name (empty if none is close).
struct Mistyped {
  std::string path;
  std::string word;
  std::string nearest;
};

std::optional<Mistyped> mistyped(CLI::App& app, int argc, char** argv) {
  CLI::App* at = &app;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") return std::nullopt;
    if (arg.size() > 1 && arg.front() == '-') {
      const auto eq = arg.find('=');
      const CLI::Option* opt = find_option(at, arg.substr(0, eq));
      if (eq == std::string::npos && opt != nullptr && opt->get_type_size() != 0) ++i;  // its value
      continue;
    }
    const auto subs = at->get_subcommands([](CLI::App*) { return true; });
    if (subs.empty()) return std::nullopt;  // a command's own arguments
    std::vector<std::string> names;
    CLI::App* next = nullptr;
    for (CLI::App* s : subs) {
      if (s->check_name(arg)) next = s;
      names.push_back(s->get_name());
    }
    if (next == nullptr) return Mistyped{path, arg, nearest_word(arg, names)};
    path += (path.empty() ? "" : " ") + next->get_name();
    at = next;
  }
  return std::nullopt;
}

// gRPC's own log lines (handshake failures, bad PEM files) are not for the
// tool's users: every failure reaches them as a status, in our words. Not
// through GRPC_VERBOSITY: CMD of a hold would inherit it.
void silence_grpc_log() {
  gpr_set_log_verbosity(GPR_LOG_SEVERITY_ERROR);
  gpr_set_log_function([](gpr_log_func_args*) {});
}

int run(int argc, char** argv) {
  set_command_line(argc, argv);
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
    if (const auto typo = e.get_exit_code() != 0 ? mistyped(app, argc, argv) : std::nullopt) {
      const std::string where = typo->path.empty() ? std::string(kProgram) : cat(kProgram, " ", typo->path);
      std::cerr << where << ": no such command: " << typo->word;
      if (!typo->nearest.empty()) std::cerr << "; did you mean: " << where << " " << typo->nearest << "?";
      std::cerr << "\nRun " << where << " --help for the commands." << std::endl;
      return kExitUsage;
    }
    const int code = app.exit(e);
    // `lock NAME sh -c ...`: CLI11 takes -c for an option of ours.
    if (code != 0 && chosen(app)->get_option_no_throw("command") != nullptr &&
        (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr || e.get_name() == "ExtrasError")) {
      std::cerr << "hint: put -- before the command: " << kProgram << " " << chosen(app)->get_name()
                << " NAME ... -- CMD [ARGS...]" << std::endl;
    }
    return code == 0 ? kExitOk : kExitUsage;
  }
  // A flag given on the command line beats the environment: messages name it.
  std::erase_if(global.from_env, [&app](const auto& entry) {
    return entry.first.starts_with("--") && app.get_option(entry.first)->count() > 0;
  });
  if (!commands.selected()) {
    // A command group without its subcommand: CLI11 accepted it, we do not.
    std::cerr << app.help() << std::flush;
    return kExitUsage;
  }

  // CMD always after --: without it a word meant for CMD could be read as
  // an option of ours, and what a script runs would depend on CMD's words.
  if (const CLI::Option* cmd = chosen(app)->get_option_no_throw("command"); cmd != nullptr && cmd->count() > 0) {
    bool dashes = false;
    for (int i = 1; i < argc && !dashes; ++i) dashes = std::string_view(argv[i]) == "--";
    if (!dashes) {
      std::string path;
      for (const CLI::App* at = chosen(app); at != nullptr && at->get_parent() != nullptr; at = at->get_parent()) {
        path = at->get_name() + (path.empty() ? "" : " ") + path;
      }
      std::cerr << kProgram << ": " << path << ": put -- before the command: " << kProgram << " " << path
                << " NAME ... -- CMD [ARGS...]\nRun with --help for more information." << std::endl;
      return kExitUsage;
    }
  }

  if (global.verbose > 0) {
    etcd::set_log_sink(etcd::stderr_log_sink(), global.verbose > 1 ? etcd::LogLevel::kDebug : etcd::LogLevel::kInfo);
  }
  Context ctx(global, install_stop_signals());
  try {
    return commands.selected()(ctx);
  } catch (const Failure& f) {
    std::cerr << kProgram << ": " << f.explained() << std::endl;
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
