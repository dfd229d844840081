// Runs the C++ examples of docs/recipes/*.md (extracted into one generated
// file by tools/docs/extract_examples.py) against a private etcd.
//
//   doc_examples [PAGE...]     PAGE: a page's file name (locks.md) to run only its examples
//
// Each example gets a client of its own whose keys live under a namespace
// of their own (ClientOptions::namespace_prefix), so examples may use the
// same names ("/locks/orders") without seeing each other's keys. An example
// fails by throwing (a .value() on an error, an etcd::Error from a blocking
// helper) or by a failed assert() (which aborts, naming the Markdown line).
// Exit 0 when every example ran, 1 when one failed or there were none, 77
// (ctest's skip) when there is no etcd binary to start.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <set>
#include <string>

#include "doc_examples.h"
#include "etcd/client.h"
#include "etcd/testing/etcd_cluster.h"

namespace {

// The places EtcdCluster looks for a bare "etcd" (etcd_cluster.h).
bool etcd_installed() {
  std::string dirs = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  dirs += ":/usr/bin:/usr/local/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    if (!dir.empty() && ::access((std::filesystem::path(dir) / "etcd").c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

std::string file_name(const char* page) { return std::filesystem::path(page).filename().string(); }

}  // namespace

int main(int argc, char** argv) {
  const std::set<std::string> only(argv + 1, argv + argc);
  if (!etcd_installed()) {
    std::cout << "etcd is not installed (etcd-server): skipping the documentation's examples\n";
    return 77;
  }
  auto cluster = etcd::testing::EtcdCluster::start_single();
  int passed = 0, failed = 0;
  for (const auto& example : doc_examples::all()) {
    const std::string page = file_name(example.page);
    if (!only.empty() && !only.contains(page)) continue;
    std::string where = std::string(example.page) + ":" + std::to_string(example.line);
    if (*example.form != '\0') where += std::string(" (") + example.form + ")";
    // Printed before the run: if an example hangs, ctest's timeout output
    // ends with the one that did.
    std::cout << "run  " << where << std::endl;
    const auto started = std::chrono::steady_clock::now();
    try {
      etcd::ClientOptions options;
      options.endpoints = cluster->endpoints();
      options.namespace_prefix = "docs/" + page + "/" + std::to_string(example.line) + "/" + example.form;
      etcd::Client client(options);
      example.run(client);
      client.close();
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
      std::cout << "ok   " << where << " (" << ms << " ms)" << std::endl;
      ++passed;
    } catch (const std::exception& e) {
      std::cout << "FAIL " << where << ": " << e.what() << std::endl;
      ++failed;
    }
  }
  std::cout << passed << " passed, " << failed << " failed" << std::endl;
  return failed == 0 && passed > 0 ? 0 : 1;
}
