#include "common.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <mutex>
#include <system_error>
#include <thread>

#include "etcd/recipes/recipe.h"

namespace etcd_cli {

Failure::Failure(std::string what, etcd::Status status)
    : std::runtime_error(what + ": " + status.to_string()), context_(std::move(what)), status_(std::move(status)) {}

std::string Failure::explained() const { return context_ + ": " + explain(status_); }

namespace {

struct ConnectionText {
  std::mutex mu;
  std::string endpoints, timeout, tls_files;
};
ConnectionText& connection_text() {
  static ConnectionText text;
  return text;
}

// The member gRPC names in "ipv4:127.0.0.1:2379: ..." (empty if none).
std::string grpc_address(const std::string& text) {
  for (const char* scheme : {"ipv4:", "ipv6:", "unix:"}) {
    const auto at = text.find(scheme);
    if (at == std::string::npos) continue;
    const auto begin = at + std::strlen(scheme);
    const auto end = text.find(": ", begin);
    return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  }
  return {};
}

}  // namespace

void set_connection_text(std::string endpoints, std::string timeout, std::string tls_files) {
  auto& c = connection_text();
  std::lock_guard lock(c.mu);
  c.endpoints = std::move(endpoints);
  c.timeout = std::move(timeout);
  c.tls_files = std::move(tls_files);
}

std::string explain(const etcd::Status& status) {
  const std::string text = status.to_string();
  // Already in the client's own words, naming the endpoint.
  if (status.is(etcd::Errc::kUnreachable)) return status.message();
  std::string endpoints, timeout, files;
  {
    auto& c = connection_text();
    std::lock_guard lock(c.mu);
    endpoints = c.endpoints;
    timeout = c.timeout;
    files = c.tls_files;
  }
  // The member gRPC named, else the endpoints in use.
  auto at = [&] {
    std::string address = grpc_address(text);
    if (address.empty()) address = endpoints;
    return address.empty() ? std::string() : " at " + address;
  };
  if (text.find("certificate verify failed") != std::string::npos) {
    return "certificate not trusted: the server's certificate is not signed by a CA in --cacert (or has expired, or "
           "is not for this address)";
  }
  if (text.find("empty address list") != std::string::npos) {
    return "the TLS files cannot be used" + (files.empty() ? std::string() : " (" + files + ")") +
           ": a certificate file that holds no valid certificate, or a key that is not valid or does not belong to "
           "the certificate";
  }
  if (text.find("andshake failed") != std::string::npos || text.find("SSL_ERROR") != std::string::npos ||
      text.find("WRONG_VERSION_NUMBER") != std::string::npos) {
    return "TLS handshake with etcd" + at() +
           " failed: TLS to a plain-text port, or the server refused the client certificate";
  }
  if (text.find("SETTINGS frame") != std::string::npos || text.find("Socket closed") != std::string::npos ||
      text.find("Connection reset") != std::string::npos) {
    return "etcd" + at() +
           " took the connection but never answered it: not an etcd client port, plain text to a TLS port, or a "
           "stopped process";
  }
  if (text.find("failed to connect to all addresses") != std::string::npos) {
    return "cannot connect to etcd" + at() + " (" + std::string(etcd::to_string(status.code())) + ")";
  }
  // gRPC's own words for a deadline that passed with no answer at all.
  if (status.code() == etcd::StatusCode::kDeadlineExceeded &&
      (status.message() == "Deadline Exceeded" || status.message().ends_with(": Deadline Exceeded"))) {
    return "no answer from etcd" + at() + " within " + (timeout.empty() ? "the call's timeout" : timeout) +
           " (the per-call --timeout): it is stopped, overloaded, or not etcd";
  }
  return text;
}

void check(etcd::Result<void>&& result, std::string_view what) {
  if (!result.ok()) throw Failure(std::string(what), std::move(result).status());
}

// --- parsing ------------------------------------------------------------------

CLI::Validator duration_validator() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        return parse_duration(s) ? std::string() : "not a positive duration (e.g. 500ms, 5s, 1m30s): " + s;
      },
      "DURATION");
}

CLI::Validator bounded_duration_validator() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        if (!parse_duration(s)) return "not a positive duration (e.g. 500ms, 5s, 1m30s): " + s;
        if (past_max_duration(s)) return cat("longer than the maximum, ", kMaxDurationText, ": ", s);
        return {};
      },
      "DURATION");
}

std::optional<etcd::Deadline> wait_deadline(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const auto d = parse_duration(text);
  if (!d || *d >= kMaxDuration) return std::nullopt;
  return etcd::Clock::now() + *d;
}

CLI::Validator lease_id_validator() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        return parse_lease_id(s) ? std::string()
                                 : "not a lease id: " + s +
                                       " (lease ids are hex, up to 16 digits, as printed: 694d7d5b2bad7c0b or "
                                       "0x694d7d5b2bad7c0b)";
      },
      "LEASE_ID");
}

CLI::Validator int_range(int64_t lo, int64_t hi) {
  std::string range =
      hi == INT64_MAX ? cat("a whole number, at least ", lo) : cat("a whole number from ", lo, " to ", hi);
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        int64_t v = 0;
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec == std::errc() && end == s.data() + s.size() && v >= lo && v <= hi) return {};
        return "must be " + range + ": " + s;
      },
      hi == INT64_MAX ? cat(lo, "..") : cat(lo, "..", hi));
}

CLI::Validator name_validator(std::string kind) {
  return CLI::Validator(
      [kind](std::string& s) -> std::string {
        auto status = etcd::recipes::validate_name(kind, s);
        return status.ok() ? std::string() : status.message();
      },
      "NAME");
}

namespace {
std::vector<std::string>& raw_command_line() {
  static std::vector<std::string> words;
  return words;
}
}  // namespace

void set_command_line(int argc, char** argv) { raw_command_line().assign(argv, argv + argc); }

bool command_line_has_dashes() {
  const auto& w = raw_command_line();
  return std::find(w.begin(), w.end(), "--") != w.end();
}

std::size_t words_after_dashes() {
  const auto& w = raw_command_line();
  const auto at = std::find(w.begin(), w.end(), "--");
  return at == w.end() ? 0 : static_cast<std::size_t>(w.end() - at - 1);
}

std::string read_value(const std::optional<std::string>& arg, const std::string& file, std::string_view what) {
  if (!file.empty() && arg) throw UsageError(cat(what, ": give the value or --file, not both"));
  auto slurp = [&](int fd, const std::string& name) {
    std::string out;
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw UsageError(cat(what, ": cannot read ", name, ": ", std::strerror(errno)));
      if (n == 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  };
  if (!file.empty()) {
    int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw UsageError(cat(what, ": cannot open ", file, ": ", std::strerror(errno)));
    std::string out;
    try {
      out = slurp(fd, file);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    return out;
  }
  if (!arg) throw UsageError(cat(what, ": give a value, - for standard input, or --file F"));
  if (*arg == "-") return slurp(STDIN_FILENO, "standard input");
  return *arg;
}

std::vector<std::string> split_endpoints(std::string_view csv) {
  std::vector<std::string> out;
  while (!csv.empty()) {
    auto comma = csv.find(',');
    auto item = csv.substr(0, comma);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.remove_prefix(1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    csv.remove_prefix(comma + 1);
  }
  return out;
}

// --- formatting -----------------------------------------------------------------

std::string member_hex(uint64_t id) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(id));
  return buf;
}

std::string human_bytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "kB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (v >= 1000 && u + 1 < std::size(kUnits)) {
    v /= 1000;
    ++u;
  }
  std::ostringstream os;
  if (u == 0) {
    os << bytes << " B";
  } else {
    os << std::fixed << std::setprecision(v < 10 ? 1 : 0) << v << ' ' << kUnits[u];
  }
  return os.str();
}

std::string dump_json(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {
std::mutex& output_mutex() {
  static std::mutex m;
  return m;
}
}  // namespace

void print_line(std::string_view line) {
  std::lock_guard lock(output_mutex());
  std::cout << line << '\n' << std::flush;
}

void print_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::lock_guard lock(output_mutex());
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(width[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << line << '\n';
  }
  std::cout << std::flush;
}

// --- signals --------------------------------------------------------------------------

namespace {

struct SignalState {
  std::stop_source source;
  int pipe_read = -1;
  int pipe_write = -1;
  std::atomic<int> signal{0};
  std::atomic<bool> from_terminal{false};
  std::atomic<int64_t> first_at_ns{0};
  // The process group that a forced exit kills first (CMD of a hold).
  std::atomic<pid_t> group{0};
};

// Only a signal this long after the first one forces an exit: tools such
// as timeout(1) deliver the same signal twice at once (to the process and
// to its group), which must not skip the cleanup.
constexpr int64_t kForceAfterNs = 1'000'000'000;

int64_t monotonic_ns() noexcept {  // async-signal-safe
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Never destroyed: a signal may arrive while static destructors run.
SignalState* g_signals = nullptr;

extern "C" void on_stop_signal(int sig, siginfo_t* info, void*) {
  int saved_errno = errno;
  // The first signal's time doubles as the "a stop was requested" marker,
  // so handlers running at once on two threads agree on which was first.
  const int64_t now = monotonic_ns();
  int64_t first = 0;
  if (g_signals->first_at_ns.compare_exchange_strong(first, now)) {
    g_signals->signal.store(sig);
    // The terminal driver sends SIGINT/SIGQUIT/SIGHUP as the kernel
    // (SI_KERNEL); kill(), timeout(1) and systemd send SI_USER / SI_QUEUE.
    g_signals->from_terminal.store(info != nullptr && info->si_code == SI_KERNEL);
    char byte = 1;
    [[maybe_unused]] auto n = ::write(g_signals->pipe_write, &byte, 1);
  } else if (now - first >= kForceAfterNs) {
    // Whatever runs under a hold dies before we do: it must never outlive
    // the hold, and nobody would be left to stop it.
    const pid_t group = g_signals->group.load();
    if (group > 0) ::kill(-group, SIGKILL);
    static constexpr char kMsg[] = "etcd-recipes: second signal, exiting without cleanup\n";
    static constexpr char kKilled[] =
        "etcd-recipes: second signal: command killed (SIGKILL), exiting without cleanup\n";
    [[maybe_unused]] auto n =
        group > 0 ? ::write(STDERR_FILENO, kKilled, sizeof kKilled - 1) : ::write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  }
  errno = saved_errno;
}

}  // namespace

std::stop_token install_stop_signals() {
  if (g_signals != nullptr) return g_signals->source.get_token();
  g_signals = new SignalState;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  g_signals->pipe_read = fds[0];
  g_signals->pipe_write = fds[1];
  // The handler must never block.
  ::fcntl(fds[1], F_SETFL, ::fcntl(fds[1], F_GETFL) | O_NONBLOCK);
  // Request the stop from an ordinary thread: stop callbacks (waits,
  // cancellations) are not async-signal-safe.
  std::thread([] {
    char byte;
    while (::read(g_signals->pipe_read, &byte, 1) < 0 && errno == EINTR) {
    }
    g_signals->source.request_stop();
  }).detach();

  struct sigaction action {};
  action.sa_sigaction = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART | SA_SIGINFO;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    ::sigaction(sig, nullptr, &old);
    // Keep ignoring what the parent chose to ignore (nohup, background jobs).
    if (sig != SIGTERM && old.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &action, nullptr);
  }
  return g_signals->source.get_token();
}

int stop_signal() noexcept { return g_signals == nullptr ? 0 : g_signals->signal.load(); }

bool stop_signal_from_terminal() noexcept { return g_signals != nullptr && g_signals->from_terminal.load(); }

void set_forced_exit_group(pid_t group) noexcept {
  if (g_signals != nullptr) g_signals->group.store(group);
}

bool sleep_for(std::chrono::milliseconds d, std::stop_token stop) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait_for(lock, stop, d, [] { return false; });
  return !stop.stop_requested();
}

// --- commands -----------------------------------------------------------------------------

std::chrono::milliseconds Context::timeout() const {
  auto d = parse_duration(global_.timeout);
  if (!d) throw UsageError(global_.source("--timeout") + ": not a positive duration: " + global_.timeout);
  return *d;
}

// --- the environment -------------------------------------------------------------

namespace {

struct EnvOption {
  const char* flag;
  std::string GlobalOptions::*field;
  std::vector<const char*> names;  // in order of precedence
};

const std::vector<EnvOption>& env_options() {
  static const std::vector<EnvOption> kOptions = {
      {"--endpoints", &GlobalOptions::endpoints, {"ETCD_ENDPOINTS", "ETCDCTL_ENDPOINTS"}},
      {"--timeout", &GlobalOptions::timeout, {"ETCDCTL_COMMAND_TIMEOUT"}},
      {"--dial-timeout", &GlobalOptions::dial_timeout, {"ETCDCTL_DIAL_TIMEOUT"}},
      {"--cacert", &GlobalOptions::cacert, {"ETCDCTL_CACERT"}},
      {"--cert", &GlobalOptions::cert, {"ETCDCTL_CERT"}},
      {"--key", &GlobalOptions::key, {"ETCDCTL_KEY"}},
      {"--user", &GlobalOptions::user, {"ETCDCTL_USER"}},
      {"password", &GlobalOptions::password, {"ETCD_PASSWORD", "ETCDCTL_PASSWORD"}},
  };
  return kOptions;
}

}  // namespace

std::string GlobalOptions::source(const std::string& flag) const {
  auto it = from_env.find(flag);
  return it == from_env.end() ? flag : it->second;
}

void read_environment(GlobalOptions& g) {
  for (const auto& o : env_options()) {
    for (const char* name : o.names) {
      const char* value = std::getenv(name);
      if (value == nullptr || *value == '\0') continue;
      g.*o.field = value;
      g.from_env[o.flag] = name;
      break;
    }
  }
}

std::string default_source(const GlobalOptions& g, const std::string& flag) {
  for (const auto& o : env_options()) {
    if (flag != o.flag) continue;
    std::string names;
    for (const char* name : o.names) names += (names.empty() ? "" : ", then ") + std::string(name);
    auto it = g.from_env.find(flag);
    if (it != g.from_env.end()) return " (default now from " + it->second + "; read in order: " + names + ")";
    return " (default: " + names + " if set)";
  }
  return {};
}

namespace {

// host:port with a port gRPC would not silently wrap (it takes the port
// modulo 65536).
void check_endpoint(const std::string& source, const std::string& ep) {
  const auto colon = ep.rfind(':');
  const auto bracket = ep.rfind(']');
  if (colon == std::string::npos || (bracket != std::string::npos && colon < bracket) || colon == 0) {
    throw UsageError(source + ": " + ep + ": expected HOST:PORT (or http(s)://HOST:PORT)");
  }
  const std::string port = ep.substr(colon + 1);
  int value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535) {
    throw UsageError(source + ": " + ep + ": the port must be a number from 1 to 65535");
  }
}

// A certificate or key file gRPC could use; gRPC itself would only log
// its complaint and then fail with "empty address list".
void check_pem(const std::string& flag, const std::string& file, const std::string& label) {
  if (file.empty()) return;
  std::ifstream in(file, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) throw UsageError(flag + " " + file + ": cannot be read");
  const auto begin = text.find("-----BEGIN ");
  if (begin == std::string::npos || text.find(label + "-----", begin) == std::string::npos) {
    throw UsageError(flag + " " + file + ": not a PEM file with a " + label + " (-----BEGIN " + label + "-----)");
  }
}

}  // namespace

etcd::ClientOptions Context::client_options(std::vector<std::string> endpoints) const {
  etcd::ClientOptions options;
  bool https = false;
  const std::string source = endpoints.empty() ? global_.source("--endpoints") : "--endpoints";
  if (endpoints.empty()) endpoints = split_endpoints(global_.endpoints);
  for (auto& ep : endpoints) {
    // Accept etcdctl-style URLs; the client wants host:port.
    if (ep.starts_with("https://")) {
      https = true;
      ep.erase(0, 8);
    } else if (ep.starts_with("http://")) {
      ep.erase(0, 7);
    }
    while (!ep.empty() && ep.back() == '/') ep.pop_back();
    check_endpoint(source, ep);
  }
  if (endpoints.empty()) throw UsageError(source + ": no endpoint given");
  options.endpoints = std::move(endpoints);
  options.default_timeout = timeout();
  const auto dial = parse_duration(global_.dial_timeout);
  if (!dial) {
    throw UsageError(global_.source("--dial-timeout") + ": not a positive duration: " + global_.dial_timeout);
  }
  options.retry.refused_window = *dial;

  if (global_.cert.empty() != global_.key.empty()) {
    throw UsageError(global_.source("--cert") + " and " + global_.source("--key") + " must be given together");
  }
  check_pem(global_.source("--cacert"), global_.cacert, "CERTIFICATE");
  check_pem(global_.source("--cert"), global_.cert, "CERTIFICATE");
  check_pem(global_.source("--key"), global_.key, "PRIVATE KEY");
  std::string tls_files;
  if (https || !global_.cacert.empty() || !global_.cert.empty()) {
    std::string files;
    for (const auto& [flag, file] : {std::pair{"--cacert", global_.cacert}, std::pair{"--cert", global_.cert},
                                     std::pair{"--key", global_.key}}) {
      if (!file.empty()) files += (files.empty() ? "" : ", ") + global_.source(flag) + " " + file;
    }
    tls_files = files;
    etcd::TlsOptions tls;
    tls.ca_file = global_.cacert;
    tls.cert_file = global_.cert;
    tls.key_file = global_.key;
    options.tls = std::move(tls);
  }

  if (!global_.user.empty()) {
    auto colon = global_.user.find(':');
    if (colon != std::string::npos) {
      options.user = global_.user.substr(0, colon);
      options.password = global_.user.substr(colon + 1);
    } else if (!global_.password.empty()) {
      options.user = global_.user;
      options.password = global_.password;
    } else {
      throw UsageError(global_.source("--user") + ": give user:password, or set ETCD_PASSWORD (or ETCDCTL_PASSWORD)");
    }
  }
  options.namespace_prefix = global_.namespace_prefix;
  std::string eps;
  for (const auto& ep : options.endpoints) eps += (eps.empty() ? "" : ",") + ep;
  set_connection_text(eps, global_.timeout, tls_files);
  return options;
}

etcd::Client Context::make_client(std::vector<std::string> endpoints) const {
  try {
    return etcd::Client(client_options(std::move(endpoints)));
  } catch (const etcd::Error& e) {
    throw UsageError(e.status().message());
  }
}

etcd::Client& Context::client() {
  if (!client_) client_.emplace(make_client());
  return *client_;
}

etcd::Subscription Context::announce_connection(std::string what) {
  struct Episode {
    std::mutex mu;
    std::optional<std::chrono::steady_clock::time_point> since;
  };
  auto episode = std::make_shared<Episode>();
  // Listeners run on the client's executor, in order; stderr lines are whole.
  return client().on_state_change([what = std::move(what), episode](etcd::ConnectionState state) {
    std::lock_guard lock(episode->mu);
    const auto now = std::chrono::steady_clock::now();
    if (state == etcd::ConnectionState::kSuspended && !episode->since) {
      episode->since = now;
      std::fprintf(stderr, "%s: etcd is not answering; waiting for it\n",
                   what.c_str());
    } else if (state == etcd::ConnectionState::kReconnected && episode->since) {
      const double secs = std::chrono::duration<double>(now - *episode->since).count();
      episode->since.reset();
      std::fprintf(stderr, "%s: etcd answers again (after %.1f s)\n", what.c_str(), secs);
    }
  });
}

void Commands::on_run(CLI::App* command, Action action) {
  command->callback([this, action = std::move(action)] { selected_ = action; });
}

std::vector<std::string> push_values(const std::vector<std::string>& args, const std::string& file,
                                     std::string_view what) {
  const std::string w(what);
  std::vector<std::string> values;
  if (!file.empty()) {
    if (!args.empty()) throw UsageError(w + ": give VALUE... or --file, not both");
    values.push_back(read_value(std::nullopt, file, what));
  } else {
    int stdin_values = 0;
    for (const auto& v : args) {
      if (v == "-" && ++stdin_values > 1) throw UsageError(w + ": at most one value can be - (standard input)");
      values.push_back(v == "-" ? read_value(v, "", what) : v);
    }
  }
  if (values.empty()) throw UsageError(w + ": no value given (VALUE..., - or --file)");
  return values;
}

}  // namespace etcd_cli
