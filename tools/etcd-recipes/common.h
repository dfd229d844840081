// Shared plumbing of the etcd-recipes command-line tool: global options and
// client construction, the command registry, error reporting, signal
// handling and output helpers. Every command file builds on this header.
#pragma once

#include <sys/types.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "etcd/client.h"
#include "etcd/status.h"
#include "parse.h"
#include "simple_format.h"

namespace etcd_cli {

inline constexpr std::string_view kProgram = "etcd-recipes";

// Process exit codes; the --help footer documents them.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
// Interrupted long-running work that cannot finish (demo) exits with
// 128 + the signal number, as shells report a death by that signal.
inline constexpr int kExitSignalBase = 128;

struct GlobalOptions {
  std::string endpoints = "127.0.0.1:2379";
  std::string timeout = "5s";
  std::string dial_timeout = "1s";
  std::string cacert;
  std::string cert;
  std::string key;
  std::string user;
  std::string password;  // from the environment, for --user NAME
  std::string namespace_prefix;
  std::string write_out = "simple";  // -w simple|json
  int verbose = 0;                   // -v: the library's log records (etcd/log.h) on stderr
  // Options whose value came from the environment: flag -> variable name.
  std::map<std::string, std::string> from_env;

  // How messages name the source of an option's value: the flag, or the
  // environment variable it came from.
  std::string source(const std::string& flag) const;
};

// The environment variables the global options read, in order of
// precedence (a flag on the command line beats them all): our own ETCD_*
// names, then etcdctl's ETCDCTL_* ones. Fills `g` and g.from_env.
void read_environment(GlobalOptions& g);
// What --help says of a global option's default: where it came from.
std::string default_source(const GlobalOptions& g, const std::string& flag);

// A failed etcd operation. main() prints "etcd-recipes: <what>: <status>"
// and exits 1, so commands can stay linear instead of threading errors.
class Failure : public std::runtime_error {
 public:
  Failure(std::string what, etcd::Status status);
  const std::string& context() const noexcept { return context_; }
  const etcd::Status& status() const noexcept { return status_; }
  // "CONTEXT: why", why in the tool's words (explain()): what the tool says.
  std::string explained() const;

 private:
  std::string context_;
  etcd::Status status_;
};

// Invalid usage found after CLI11 accepted the command line (exit 2).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A status as the tool reports it: to_string(), with causes that gRPC words
// for its own developers (a TLS verification failure) said plainly first.
std::string explain(const etcd::Status& status);
// What explain() names in its messages: the endpoints in use and the
// call timeout ("127.0.0.1:2379", "5s"), and the TLS files ("--cert F,
// --key K"; empty without TLS).
void set_connection_text(std::string endpoints, std::string timeout, std::string tls_files);

template <class T>
T check(etcd::Result<T>&& result, std::string_view what) {
  if (!result.ok()) throw Failure(std::string(what), std::move(result).status());
  return std::move(result).value();
}
void check(etcd::Result<void>&& result, std::string_view what);

// --- parsing --------------------------------------------------------------

// parse_duration (parse.h) as a CLI11 validator, for durations where
// "forever" makes sense (a wait): past kMaxDuration saturates.
CLI::Validator duration_validator();
// The same for durations where it does not (a delay, a TTL): past
// kMaxDuration is a usage error naming the maximum.
CLI::Validator bounded_duration_validator();
// The deadline of a wait of `text` (a valid duration) from now; none if
// `text` is empty or saturated (kMaxDuration and past): no limit.
std::optional<etcd::Deadline> wait_deadline(const std::string& text);

// parse_lease_id (parse.h) as a CLI11 validator.
CLI::Validator lease_id_validator();

// A whole number from `lo` to `hi`, with a message a person can read
// ("must be a whole number from 1 to 2147483647: 0").
CLI::Validator int_range(int64_t lo, int64_t hi);
// A recipe name (lock, election, ...) the library accepts, checked before
// anything is written; an invalid one is a usage error.
CLI::Validator name_validator(std::string kind);

// The words after the first "--" of the command line (what a command taking
// several names before -- CMD needs to tell names from CMD); set by main().
void set_command_line(int argc, char** argv);
std::size_t words_after_dashes();
bool command_line_has_dashes();

// A value argument: "-" reads standard input to its end; with `file` (from
// --file) non-empty, that file is read instead and `arg` must be absent.
// Values are arbitrary bytes (NUL included).
std::string read_value(const std::optional<std::string>& arg, const std::string& file, std::string_view what);
// The values of a push (queue, workqueue): VALUE... (at most one of them
// `-`, standard input) or the contents of --file; a usage error names
// `what` when none or both are given.
std::vector<std::string> push_values(const std::vector<std::string>& args, const std::string& file,
                                     std::string_view what);

std::vector<std::string> split_endpoints(std::string_view csv);

// --- formatting -------------------------------------------------------------

std::string member_hex(uint64_t id);  // unpadded, as etcdctl prints member ids
std::string human_bytes(int64_t bytes);
// lease_hex() and base64() (JSON output's keys and values) are in
// simple_format.h.
// Every string in JSON output is made of the tool's own text, hex ids and
// base64, so it is valid UTF-8.
std::string dump_json(const nlohmann::json& j, int indent = -1);

template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// Writes one line to stdout and flushes it, so output piped into another
// process arrives line by line. Serialized across threads.
void print_line(std::string_view line);
// Prints rows as aligned columns; the first row is the header.
void print_table(const std::vector<std::vector<std::string>>& rows);

// --- signals -------------------------------------------------------------------

// Installs SIGINT/SIGTERM/SIGHUP handlers. The first signal requests a stop
// on the returned token, so every wait in the tool can unwind and clean up;
// a later one (a second Ctrl-C, at least 1 s after the first) SIGKILLs the
// registered process group (set_forced_exit_group) and then gets the
// default action, immediate death, for when the cleanup itself hangs.
std::stop_token install_stop_signals();
// The signal that requested the stop, 0 if none arrived.
int stop_signal() noexcept;
// Whether that signal came from the terminal driver (Ctrl-C, Ctrl-\, a
// hangup), i.e. was sent to the terminal's whole foreground process group,
// rather than by kill() to this process.
bool stop_signal_from_terminal() noexcept;
// A forced exit (a second signal) first SIGKILLs this process group (0:
// none); the hold runner registers CMD's group while it may exist.
void set_forced_exit_group(pid_t group) noexcept;
// Sleeps for `d` unless a stop is requested first; false if stopped.
bool sleep_for(std::chrono::milliseconds d, std::stop_token stop);

// --- commands ---------------------------------------------------------------------

// What a command gets to work with.
class Context {
 public:
  Context(const GlobalOptions& global, std::stop_token stop) : global_(global), stop_(std::move(stop)) {}
  // Closes the client explicitly: work the library still unwinds on its own
  // threads may hold handles of it, and the implicit close of the last one
  // would then run there, not waited for by a process that is exiting —
  // losing what the recipes' close() started (a receipt's, a producer key's
  // delete), which the client's close() sends and waits for.
  ~Context() {
    if (client_) client_->close();
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const GlobalOptions& global() const noexcept { return global_; }
  // -w json (or a command's hidden --json alias, `alias`).
  bool json(bool alias = false) const noexcept { return alias || global_.write_out == "json"; }
  std::stop_token stop() const noexcept { return stop_; }
  std::chrono::milliseconds timeout() const;
  // Built on first use, so commands that need no server (demo) never
  // require valid endpoints. Throws UsageError on unusable options.
  etcd::Client& client();
  // A separate client for the given endpoints (default: --endpoints).
  etcd::Client make_client(std::vector<std::string> endpoints = {}) const;
  // The global options as client options, with `endpoints` overriding
  // the --endpoints flag when non-empty.
  etcd::ClientOptions client_options(std::vector<std::string> endpoints = {}) const;
  // For commands that keep running (workers, holders, watchers): says on
  // stderr, once each, when the client finds etcd unresponsive and waits
  // for it, and when etcd answers again ("WHAT: ..."), for as long as the
  // subscription lives.
  etcd::Subscription announce_connection(std::string what);

 private:
  const GlobalOptions& global_;
  std::stop_token stop_;
  std::optional<etcd::Client> client_;
};

// A command's body; returns the exit code.
using Action = std::function<int(Context&)>;

// Command files register their subcommands here. CLI11 only records which
// leaf command was chosen; its action runs after parsing has succeeded, so
// usage errors never leave half-done work behind.
class Commands {
 public:
  explicit Commands(CLI::App& root) : root_(root) {}
  CLI::App& root() noexcept { return root_; }
  void on_run(CLI::App* command, Action action);
  const Action& selected() const noexcept { return selected_; }

 private:
  CLI::App& root_;
  Action selected_;
};

}  // namespace etcd_cli
