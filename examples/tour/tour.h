// A guided tour of the library, one section per file. Each section shows
// the documented forms of some calls and checks what they return, so the
// tour doubles as the consumer test (tests/consumer): built against the
// installed package with GCC 12 and ASan, every section must run clean.
//
// Adding a section: a new .cpp file in this folder with
//   ETCD_TOUR_SECTION(my_section) { ... use client and prefix ... }
// or, for co_await forms,
//   ETCD_TOUR_TASK(my_section) { ... co_await ...; co_return; }
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "etcd/client.h"
#include "etcd/task.h"

namespace tour {

using SectionFn = std::function<void(etcd::Client& client, const std::string& prefix)>;

struct Section {
  std::string name;
  SectionFn run;
};

inline std::vector<Section>& sections() {
  static std::vector<Section> all;
  return all;
}

struct Register {
  Register(std::string name, SectionFn fn) { sections().push_back({std::move(name), std::move(fn)}); }
};

// Throws (ending the tour with a failure) when a documented promise breaks.
inline void expect(bool condition, const std::string& what) {
  if (!condition) throw std::runtime_error("expectation failed: " + what);
}

}  // namespace tour

#define ETCD_TOUR_SECTION(name)                                                     \
  static void tour_section_##name(etcd::Client& client, const std::string& prefix); \
  static const tour::Register tour_register_##name(#name, &tour_section_##name);    \
  static void tour_section_##name([[maybe_unused]] etcd::Client& client, [[maybe_unused]] const std::string& prefix)

// A section written as a coroutine; it runs under etcd::sync_wait.
#define ETCD_TOUR_TASK(name)                                                                          \
  static etcd::Task<void> tour_task_##name(etcd::Client client, std::string prefix);                  \
  static const tour::Register tour_register_##name(                                                   \
      #name, [](etcd::Client& c, const std::string& p) { etcd::sync_wait(tour_task_##name(c, p)); }); \
  static etcd::Task<void> tour_task_##name([[maybe_unused]] etcd::Client client, [[maybe_unused]] std::string prefix)
