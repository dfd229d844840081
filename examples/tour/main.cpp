// tour ENDPOINT [SECTION...]: runs every section (or the named ones) against
// the etcd at ENDPOINT, each under its own key prefix, and exits non-zero if
// any failed.
#include <exception>
#include <iostream>
#include <set>

#include "tour.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: tour host:port [section...]\n";
    return 2;
  }
  std::set<std::string> only(argv + 2, argv + argc);
  etcd::ClientOptions options;
  options.endpoints = {argv[1]};
  int failed = 0, passed = 0;
  {
    etcd::Client client(options);
    for (const auto& section : tour::sections()) {
      if (!only.empty() && !only.contains(section.name)) continue;
      try {
        section.run(client, "/tour/" + section.name + "/");
        std::cout << "ok   " << section.name << std::endl;
        ++passed;
      } catch (const std::exception& e) {
        std::cout << "FAIL " << section.name << ": " << e.what() << std::endl;
        ++failed;
      }
    }
    client.close();
  }
  std::cout << passed << " passed, " << failed << " failed" << std::endl;
  return failed == 0 && passed > 0 ? 0 : 1;
}
