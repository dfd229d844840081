#include "http_server.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <fstream>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

namespace etcd_cli {
namespace {

using Digest = std::array<unsigned char, 32>;

Digest sha256(std::string_view bytes) {
  Digest d{};
  unsigned int size = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), d.data(), &size, EVP_sha256(), nullptr) != 1 || size != d.size()) {
    throw std::runtime_error("SHA-256 is not available from OpenSSL");
  }
  return d;
}

// The first line of `path`, without its line end and trailing blanks.
std::string first_line(const std::string& path, const std::string& flag) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) throw UsageError(flag + " " + path + ": cannot read a line from it");
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  if (line.empty()) throw UsageError(flag + " " + path + ": its first line is empty");
  return line;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Seconds an idle kept-alive connection stays open: shutdown waits for
// them, and scrapes come seconds apart anyway.
constexpr time_t kKeepAliveSeconds = 2;

// When the request the calling server thread works on arrived (for -v).
thread_local std::chrono::steady_clock::time_point request_start;

}  // namespace

// What every request must show: `Authorization: <scheme> <secret>`.
struct HttpServer::Credentials {
  std::string scheme;  // lower case: "bearer" or "basic"
  Digest secret;       // SHA-256 of the expected secret, compared in constant time
  std::string challenge;

  bool accept(const std::string& header) const {
    const size_t space = header.find(' ');
    if (space == std::string::npos) return false;
    const Digest given = sha256(std::string_view(header).substr(space + 1));
    const bool same = CRYPTO_memcmp(given.data(), secret.data(), secret.size()) == 0;
    return same && lower(std::string_view(header).substr(0, space)) == scheme;
  }
};

void add_http_options(CLI::App* cmd, HttpOptions& options, int default_port) {
  const std::string group = "Serving";
  options.listen = "127.0.0.1:" + std::to_string(default_port);
  cmd->add_option("--listen", options.listen,
                  "HOST:PORT to serve on ([::1]:PORT for IPv6; PORT 0 picks a free one). An address other than "
                  "loopback needs --tls-cert and --tls-key, or --insecure")
      ->capture_default_str()
      ->group(group);
  // Not --cert/--key: those are the etcd client's, and global options may
  // follow the command.
  cmd->add_option("--tls-cert", options.cert, "Serve HTTPS with this certificate (PEM, chain first)")
      ->check(CLI::ExistingFile)
      ->group(group);
  cmd->add_option("--tls-key", options.key, "The private key of --tls-cert (PEM)")
      ->check(CLI::ExistingFile)
      ->group(group);
  cmd->add_flag("--insecure", options.insecure,
                "Serve plain HTTP on an address other than loopback: anyone who reaches it reads what is served")
      ->group(group);
  auto* bearer =
      cmd->add_option("--bearer-token-file", options.bearer_token_file,
                      "Require `Authorization: Bearer TOKEN` on every request, TOKEN being this file's first line")
          ->check(CLI::ExistingFile)
          ->group(group);
  cmd->add_option("--basic-auth-file", options.basic_auth_file,
                  "Require HTTP basic authentication on every request, with the USER:PASSWORD of this file's first "
                  "line")
      ->check(CLI::ExistingFile)
      ->excludes(bearer)
      ->group(group);
}

HttpServer::HttpServer(const HttpOptions& options, std::string what, int verbose)
    : what_(std::move(what)), verbose_(verbose) {
  // Usage first, before any file is read.
  const auto address = parse_host_port(options.listen);
  if (!address) {
    throw UsageError("--listen " + options.listen + ": not HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464, 0.0.0.0:9464)");
  }
  address_ = *address;
  if (options.cert.empty() != options.key.empty()) throw UsageError("--tls-cert and --tls-key go together");
  tls_ = !options.cert.empty();
  if (!tls_ && !options.insecure && !is_loopback_host(address_.host)) {
    throw UsageError("--listen " + options.listen +
                     ": other hosts may reach this address; serve it over TLS (--tls-cert F --tls-key F), or say "
                     "--insecure "
                     "to serve plain HTTP to them");
  }
  if (!options.bearer_token_file.empty()) {
    const std::string token = first_line(options.bearer_token_file, "--bearer-token-file");
    credentials_ = std::make_unique<Credentials>("bearer", sha256(token), "Bearer realm=\"etcd-recipes\"");
  } else if (!options.basic_auth_file.empty()) {
    const std::string pair = first_line(options.basic_auth_file, "--basic-auth-file");
    if (pair.find(':') == std::string::npos) {
      throw UsageError("--basic-auth-file " + options.basic_auth_file + ": its first line is not USER:PASSWORD");
    }
    credentials_ =
        std::make_unique<Credentials>("basic", sha256(base64(pair)), "Basic realm=\"etcd-recipes\", charset=\"UTF-8\"");
  }
  if (tls_) {
    ERR_clear_error();
    auto server = std::make_unique<httplib::SSLServer>(options.cert.c_str(), options.key.c_str());
    if (!server->is_valid()) {
      char reason[256] = "not a certificate and its key";
      if (const unsigned long e = ERR_peek_last_error(); e != 0) ERR_error_string_n(e, reason, sizeof reason);
      throw UsageError("--tls-cert " + options.cert + " --tls-key " + options.key +
                       ": cannot serve TLS with them: " + reason);
    }
    server_ = std::move(server);
  } else {
    server_ = std::make_unique<httplib::Server>();
  }
  server_->set_keep_alive_timeout(kKeepAliveSeconds);
  server_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    request_start = std::chrono::steady_clock::now();
    if (!credentials_ || credentials_->accept(req.get_header_value("Authorization"))) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.status = 401;
    res.set_header("WWW-Authenticate", credentials_->challenge);
    res.set_content("401 unauthorized: this server wants credentials (docs/exporter.md)\n", "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
  server_->set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string why = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      why = e.what();
    } catch (...) {
    }
    std::cerr << cat(kProgram, " ", what_, ": ", req.method, " ", req.path, ": ", why, "\n") << std::flush;
    res.status = 500;
    res.set_content("500 internal error: " + why + "\n", "text/plain");
  });
  if (verbose_ > 0) {
    server_->set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - request_start)
              .count();
      std::cerr << cat(kProgram, " ", what_, ": ", req.method, " ", req.path, " ", res.status, " from ",
                       req.remote_addr, ":", req.remote_port, " in ", ms, " ms\n")
                << std::flush;
    });
  }
}

HttpServer::~HttpServer() = default;

namespace {

// Patterns are regular expressions: match `path` literally.
std::string literal_pattern(const std::string& path) {
  static const std::string kSpecial = R"(\^$.|?*+()[]{})";
  std::string pattern;
  for (char c : path) {
    if (kSpecial.find(c) != std::string::npos) pattern += '\\';
    pattern += c;
  }
  return pattern;
}

}  // namespace

void HttpServer::get(const std::string& path, httplib::Server::Handler handler) {
  server_->Get(literal_pattern(path), std::move(handler));
}

void HttpServer::post(const std::string& path, httplib::Server::Handler handler) {
  server_->Post(literal_pattern(path), std::move(handler));
}

void HttpServer::set_threads(size_t threads) {
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
}

void HttpServer::serve(std::stop_token stop) {
  httplib::Server& server = *server_;
  const std::string host = address_.host;
  const std::string shown = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  int port = address_.port;
  const bool bound = port == 0 ? (port = server.bind_to_any_port(host)) > 0 : server.bind_to_port(host, port);
  if (!bound) {
    throw std::runtime_error(
        cat(what_, ": cannot listen on ", shown, ":", address_.port, " (in use, or not an address of this host)"));
  }
  std::cerr << cat(kProgram, " ", what_, ": serving ", tls_ ? "https" : "http", "://", shown, ":", port, "\n")
            << std::flush;

  std::mutex mu;
  std::condition_variable_any cv;
  bool done = false;
  std::thread listener([&] {
    server.listen_after_bind();
    std::lock_guard lock(mu);
    done = true;
    cv.notify_all();
  });
  std::unique_lock lock(mu);
  cv.wait(lock, stop, [&] { return done; });
  // The loop ended on its own (an error) or a stop was requested. stop()
  // acts only once the loop runs (it closes the listening socket, which
  // ends the loop), so wait for that first; called once.
  while (!done && !server.is_running()) cv.wait_for(lock, std::chrono::milliseconds(5), [&] { return done; });
  if (!done) server.stop();
  cv.wait(lock, [&] { return done; });
  lock.unlock();
  listener.join();
  if (!stop.stop_requested()) throw std::runtime_error(what_ + ": the server stopped accepting connections");
}

}  // namespace etcd_cli
