// The HTTP side of the commands that serve (`exporter`, and the live
// dashboard): their --listen, TLS and authentication options, checked once
// here, and a server that answers until the tool's stop signal.
//
//   HttpOptions http;                                  // add_http_options(cmd, http, 9464)
//   HttpServer server(http, "exporter", ctx.global().verbose);   // usage errors here, before any I/O
//   server.get("/metrics", [](const httplib::Request&, httplib::Response& res) { ... });
//   server.serve(ctx.stop());                          // until SIGINT/SIGTERM
//
// Built on cpp-httplib (Debian's libcpp-httplib-dev, with OpenSSL for TLS)
// rather than Boost.Beast: Beast would bring Boost.Asio beside the
// standalone Asio the client core uses, while httplib's server is small,
// runs each request on a thread of its pool (our handlers do blocking,
// bounded etcd reads, which that fits) and streams responses through
// chunked content providers, which Server-Sent Events need.
//
// The rules, for every command that serves:
//   - --listen HOST:PORT, default 127.0.0.1 and the command's port; PORT 0
//     picks a free port. The address served is said on stderr at start.
//   - An address other than loopback (localhost, 127.0.0.0/8, ::1) needs
//     TLS (--tls-cert F --tls-key F) or an explicit --insecure: otherwise a
//     usage error (exit 2) before anything is bound or read. (Not --cert
//     and --key: those are the etcd client's, and may follow the command.)
//   - --bearer-token-file F (the token: the file's first line) or
//     --basic-auth-file F (a USER:PASSWORD line) makes every request, of
//     every path, show those credentials (`Authorization: Bearer TOKEN`,
//     `Authorization: Basic ...`), compared in constant time; 401 otherwise.
//   - SIGINT/SIGTERM (the Context's stop token) closes the listening socket
//     and serve() returns once the requests in progress have been answered.
//   - -v logs one line per request on stderr: method, path, status, client,
//     time taken.
#pragma once

#include <httplib.h>

#include <memory>
#include <stop_token>
#include <string>

#include "common.h"

namespace etcd_cli {

struct HttpOptions {
  std::string listen;  // HOST:PORT
  std::string cert;    // TLS: the server's certificate (chain), PEM
  std::string key;     // and its private key
  bool insecure = false;
  std::string bearer_token_file;
  std::string basic_auth_file;
};

// Adds --listen (default 127.0.0.1:`default_port`), --tls-cert,
// --tls-key, --insecure, --bearer-token-file and --basic-auth-file (one
// or the other) to `cmd`, under a group of their own in --help.
void add_http_options(CLI::App* cmd, HttpOptions& options, int default_port);

class HttpServer {
 public:
  // Checks `options` (UsageError: a bad --listen, a non-loopback address
  // without TLS or --insecure, --tls-cert without --tls-key), then reads
  // the credentials file and loads the certificate (UsageError if
  // unusable). Binds nothing. `what` names the
  // command in log lines; `verbose` > 0 logs each request.
  HttpServer(const HttpOptions& options, std::string what, int verbose);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Answers GET (and HEAD) of `path`, exactly, with `handler`, on one of
  // the server's threads; concurrent requests run it concurrently.
  void get(const std::string& path, httplib::Server::Handler handler);
  // Answers POST of `path`, exactly, likewise.
  void post(const std::string& path, httplib::Server::Handler handler);

  // Requests answered at once (default 8); a streamed response (the
  // dashboard's events) holds one for as long as it streams. Before serve().
  void set_threads(size_t threads);

  // Binds the address (std::runtime_error if it cannot), says on stderr
  // where it serves, and serves until a stop is requested on `stop`;
  // returns after the requests in progress have been answered.
  void serve(std::stop_token stop);

 private:
  struct Credentials;

  std::string what_;
  HostPort address_;
  bool tls_ = false;
  int verbose_ = 0;
  std::unique_ptr<Credentials> credentials_;
  std::unique_ptr<httplib::Server> server_;
};

}  // namespace etcd_cli
