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

std::string explain(const etcd::Status& status) {
  const std::string text = status.to_string();
  if (text.find("certificate verify failed") != std::string::npos) {
    return "certificate not trusted: the server's certificate is not signed by a CA in --cacert (or has expired, or "
           "is not for this address) (" +
           text + ")";
  }
  if (text.find("andshake failed") != std::string::npos) return "TLS handshake failed (" + text + ")";
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

std::string lease_hex(int64_t id) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

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

std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                 static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                 static_cast<unsigned char>(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += kAlphabet[(n >> shift) & 63];
  }
  if (size_t rest = bytes.size() - i; rest > 0) {
    uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (rest == 2) n |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += rest == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
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
  if (!d) throw UsageError("--timeout: not a positive duration: " + global_.timeout);
  return *d;
}

namespace {

// host:port with a port gRPC would not silently wrap (it takes the port
// modulo 65536).
void check_endpoint(const std::string& ep) {
  const auto colon = ep.rfind(':');
  const auto bracket = ep.rfind(']');
  if (colon == std::string::npos || (bracket != std::string::npos && colon < bracket) || colon == 0) {
    throw UsageError("--endpoints: " + ep + ": expected HOST:PORT (or http(s)://HOST:PORT)");
  }
  const std::string port = ep.substr(colon + 1);
  int value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535) {
    throw UsageError("--endpoints: " + ep + ": the port must be a number from 1 to 65535");
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
    check_endpoint(ep);
  }
  if (endpoints.empty()) throw UsageError("--endpoints: no endpoint given");
  options.endpoints = std::move(endpoints);
  options.default_timeout = timeout();

  if (global_.cert.empty() != global_.key.empty()) throw UsageError("--cert and --key must be given together");
  check_pem("--cacert", global_.cacert, "CERTIFICATE");
  check_pem("--cert", global_.cert, "CERTIFICATE");
  check_pem("--key", global_.key, "PRIVATE KEY");
  if (https || !global_.cacert.empty() || !global_.cert.empty()) {
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
    } else if (const char* pw = std::getenv("ETCD_PASSWORD")) {
      options.user = global_.user;
      options.password = pw;
    } else {
      throw UsageError("--user: give user:password, or set ETCD_PASSWORD");
    }
  }
  options.namespace_prefix = global_.namespace_prefix;
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
