// etcd-recipes-chaos: a nemesis campaign against a 3-member cluster while
// clients run every recipe family, each with a checker of its guarantee
// over the recorded history.
//
//   etcd-recipes-chaos [--minutes N | --seconds N] [--seed S] [--report FILE]
//                      [--history FILE] [--workloads mutex,counter,...] [--inject-defect NAME]
//                      [--expect-violation RECIPE] [--quiet-seconds N] [--no-faults]
//
// Exit status: 0 when no checker found a violation (with --expect-violation
// RECIPE[,RECIPE...]: when each one's checker found its guarantee broken),
// 1 otherwise, 77 when the machine cannot partition members
// (not root, no network namespaces or nftables), 2 on bad usage.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "etcd/testing/etcd_cluster.h"
#include "etcd/testing/fault_proxy.h"
#include "etcd/testing/private_network.h"
#include "history.h"
#include "nemesis.h"
#include "recipes/core/injected_defects.h"
#include "workload.h"

namespace {

using namespace std::chrono_literals;

struct Args {
  double seconds = 120;
  uint64_t seed = 0;
  bool seed_given = false;
  std::string report = "chaos-report.txt";
  std::string history_file;  // the whole history, if asked
  std::vector<std::string> workloads;
  std::string defect;
  std::string expect_violation;  // recipes (a,b,...) whose checkers must each report one
  bool faults = true;
  double quiet_seconds = 10;  // after the faults, before the clients stop
};

const std::map<std::string, std::function<std::unique_ptr<chaos::Workload>()>>& factories() {
  static const std::map<std::string, std::function<std::unique_ptr<chaos::Workload>()>> f = {
      {"mutex", chaos::make_mutex_workload},         {"rwlock", chaos::make_rwlock_workload},
      {"semaphore", chaos::make_semaphore_workload}, {"election", chaos::make_election_workload},
      {"counter", chaos::make_counter_workload},     {"queue", chaos::make_queue_workload},
      {"workqueue", chaos::make_work_queue_workload}, {"barrier", chaos::make_barrier_workload},
      {"cache", chaos::make_cache_workload},         {"discovery", chaos::make_discovery_workload},
  };
  return f;
}

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "etcd-recipes-chaos: " << why
            << "\nusage: etcd-recipes-chaos [--minutes N | --seconds N] [--seed S] [--report FILE]"
               " [--history FILE] [--workloads a,b,...] [--inject-defect contender-skips-recheck] [--expect-violation RECIPE,...]"
               " [--quiet-seconds N] [--no-faults]\n";
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(k + " needs a value");
      return argv[++i];
    };
    try {
      if (k == "--minutes") {
        a.seconds = std::stod(value()) * 60;
      } else if (k == "--seconds") {
        a.seconds = std::stod(value());
      } else if (k == "--seed") {
        a.seed = std::stoull(value());
        a.seed_given = true;
      } else if (k == "--history") {
        a.history_file = value();
      } else if (k == "--report") {
        a.report = value();
      } else if (k == "--workloads") {
        std::stringstream ss(value());
        std::string w;
        while (std::getline(ss, w, ',')) {
          if (!factories().count(w)) usage("no workload " + w);
          a.workloads.push_back(w);
        }
      } else if (k == "--inject-defect") {
        a.defect = value();
        if (a.defect != "contender-skips-recheck") usage("no defect " + a.defect);
      } else if (k == "--expect-violation") {
        a.expect_violation = value();
      } else if (k == "--quiet-seconds") {
        a.quiet_seconds = std::stod(value());
      } else if (k == "--no-faults") {
        a.faults = false;
      } else {
        usage("unknown argument " + k);
      }
    } catch (const std::invalid_argument&) {
      usage("bad value for " + k);
    }
  }
  if (a.workloads.empty()) {
    for (const auto& [name, f] : factories()) a.workloads.push_back(name);
  }
  if (!a.seed_given) a.seed = static_cast<uint64_t>(std::time(nullptr));
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  // First, while the process has one thread.
  const auto net = etcd::testing::enter_private_network();
  const Args args = parse(argc, argv);
  if (!net.partitions) {
    std::cerr << "etcd-recipes-chaos: skipped: partitions between members are unavailable: " << net.reason << "\n";
    return 77;
  }
  if (args.defect == "contender-skips-recheck") {
    etcd::recipes::detail::injected_defects().contender_skips_recheck = true;
  }

  const auto started = chaos::Clock::now();
  chaos::History history(started);
  std::ostringstream report;
  report << "etcd-recipes chaos campaign\n"
         << "seed " << args.seed << ", faults for " << args.seconds << " s, workloads:";
  for (const auto& w : args.workloads) report << " " << w;
  if (!args.defect.empty()) report << ", injected defect: " << args.defect;
  report << "\n";

  etcd::testing::EtcdClusterOptions options;
  options.members = 3;
  auto cluster = etcd::testing::EtcdCluster::start(options);
  cluster->wait_for_leader(20s);
  report << "etcd " << cluster->version().text << " (" << cluster->binary() << ")\n";
  std::cerr << "chaos: seed " << args.seed << ", etcd " << cluster->version().text << ", " << args.seconds
            << " s of faults\n";

  std::vector<std::unique_ptr<etcd::testing::FaultProxy>> proxies;
  std::vector<etcd::testing::FaultProxy*> proxy_ptrs;
  for (int i = 0; i < cluster->size(); ++i) {
    proxies.push_back(etcd::testing::FaultProxy::start(cluster->endpoint(i)));
    proxy_ptrs.push_back(proxies.back().get());
  }
  chaos::Context ctx;
  ctx.cluster = cluster.get();
  ctx.history = &history;
  ctx.seed = args.seed;
  for (size_t c = 0; c < proxies.size(); ++c) {
    etcd::ClientOptions o;
    for (size_t j = 0; j < proxies.size(); ++j) o.endpoints.push_back(proxies[(c + j) % proxies.size()]->endpoint());
    ctx.clients.emplace_back(o);
  }
  etcd::Client admin(etcd::ClientOptions{.endpoints = cluster->endpoints(), .default_timeout = 10s});
  ctx.admin = &admin;

  std::vector<std::unique_ptr<chaos::Workload>> workloads;
  for (const auto& w : args.workloads) workloads.push_back(factories().at(w)());
  for (auto& w : workloads) w->setup(ctx);
  for (auto& w : workloads) w->start(ctx);

  chaos::Nemesis nemesis(*cluster, proxy_ptrs, admin, history, args.seed);
  {
    std::stop_source never;
    const auto until = started + std::chrono::milliseconds(static_cast<int64_t>(args.seconds * 1000));
    if (args.faults) {
      nemesis.run(until, never.get_token());
    } else {
      std::this_thread::sleep_until(until);
    }
  }
  nemesis.heal_all();
  for (auto& w : workloads) w->healed(history.now());
  std::cerr << "chaos: faults over after " << history.now() << " s; " << args.quiet_seconds
            << " s without faults, then the clients stop\n";
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(args.quiet_seconds * 1000)));
  for (auto& w : workloads) w->stop();
  for (auto& w : workloads) w->settle(ctx);

  std::vector<chaos::Violation> violations;
  report << "\n== schedule (" << nemesis.schedule().size() << " faults)\n";
  for (const auto& f : nemesis.schedule()) {
    char line[64];
    std::snprintf(line, sizeof line, "  %7.2f - %7.2f  ", f.start, f.end);
    report << line << f.kind << " " << f.detail << "\n";
  }
  report << "\n== operations\n";
  for (auto& w : workloads) {
    std::vector<chaos::Violation> v;
    try {
      v = w->check(ctx);
    } catch (const std::exception& e) {
      v.push_back({w->name(), std::string("the checker could not run: ") + e.what(), -1, false});
    }
    report << "  " << w->name() << ":";
    for (const auto& [k, n] : w->counts()) report << " " << k << "=" << n;
    report << (v.empty() ? "  OK" : "  VIOLATIONS: " + std::to_string(v.size())) << "\n";
    violations.insert(violations.end(), v.begin(), v.end());
  }
  report << "\n== violations (" << violations.size() << ")\n";
  for (const auto& v : violations) {
    report << "* [" << v.recipe << "] " << v.what << "\n";
    if (v.at >= 0) {
      report << "  history around #" << v.at << ":\n";
      for (const auto& e : history.around(v.at, v.recipe, 12)) {
        char t[32];
        std::snprintf(t, sizeof t, "%8.3f", e.t);
        report << (e.index == v.at ? "  >> " : "     ") << "#" << e.index << " " << t << " " << e.process << " "
               << e.type << " " << e.op << " " << e.detail << "\n";
      }
    }
  }
  {
    std::ofstream out(args.report);
    out << report.str();
  }
  if (!args.history_file.empty()) {
    std::ofstream out(args.history_file);
    for (const auto& e : history.events()) {
      char t[32];
      std::snprintf(t, sizeof t, "%8.3f", e.t);
      out << "#" << e.index << " " << t << " " << e.process << " " << e.type << " " << e.op << " " << e.detail << "\n";
    }
  }
  // The summary: everything but the histories.
  const std::string text = report.str();
  const auto cut = text.find("\n== violations");
  std::cout << text.substr(0, cut) << "\n== violations: " << violations.size() << " (report: " << args.report
            << ")\n";
  for (size_t i = 0; i < violations.size() && i < 10; ++i) {
    std::cout << "* [" << violations[i].recipe << "] " << violations[i].what << "\n";
  }
  for (auto& w : workloads) w.reset();
  if (!args.expect_violation.empty()) {
    // Each recipe named must have had its guarantee reported broken.
    std::stringstream names(args.expect_violation);
    std::string name;
    int missing = 0;
    while (std::getline(names, name, ',')) {
      bool found = false;
      for (const auto& v : violations) found = found || (v.recipe == name && v.guarantee);
      if (!found) {
        std::cout << "expected a violation of the " << name << " guarantee; none was found\n";
        ++missing;
      }
    }
    return missing == 0 ? 0 : 1;
  }
  return violations.empty() ? 0 : 1;
}
