#pragma once

// Throw-away X.509 material for TLS tests of etcd-recipes.
//
// make_test_certs() shells out to the `openssl` command line tool (found on
// PATH) and creates, inside `dir`:
//
//   ca.crt / ca.key          a self-signed test CA
//   server.crt / server.key  signed by the CA; CN=localhost,
//                            subjectAltName IP:127.0.0.1, DNS:localhost,
//                            extendedKeyUsage serverAuth + clientAuth (so etcd
//                            can use it for client URLs *and* peer URLs)
//   client.crt / client.key  signed by the CA; CN=<common_name_client>,
//                            extendedKeyUsage clientAuth (etcd maps the CN to
//                            the user name when client-cert-auth is on)
//   other-ca.crt / .key      an unrelated CA, for "wrong CA" tests
//
// Keys are ECDSA P-256 (fast to generate) in PKCS#8 PEM, certificates are PEM.
// Throws std::runtime_error (with openssl's stderr) on failure.

#include <filesystem>
#include <string>
#include <utility>

namespace etcd::testing {

struct TestCerts {
  std::filesystem::path dir;
  std::filesystem::path ca_cert;
  std::filesystem::path ca_key;
  std::filesystem::path server_cert;
  std::filesystem::path server_key;
  std::filesystem::path client_cert;
  std::filesystem::path client_key;
  std::filesystem::path other_ca_cert;
};

// `dir` is created if missing. Existing files with the names above are
// overwritten.
// The client certificate's CN is "root" unless given.
TestCerts make_test_certs(std::filesystem::path dir, std::string common_name_client);
inline TestCerts make_test_certs(std::filesystem::path dir) { return make_test_certs(std::move(dir), "root"); }

}  // namespace etcd::testing
