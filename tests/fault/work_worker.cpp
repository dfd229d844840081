// work_worker: one consumer of the work-queue crash test
// (tests/fault/workqueue_crash_test.cpp), run as its own process so that it
// can be SIGKILLed like a real worker.
//
//   work_worker --endpoints H:P[,H:P...] --name /wq/crash --visibility 2
//               --max-deliveries 50 --work-ms 5 --log /tmp/wq.log
//
// It receives items until it is killed. For each item it appends to --log,
// shared by every worker (O_APPEND, one write(2) per line, so lines of
// different processes never interleave and a SIGKILL loses nothing already
// written):
//   <id> <attempt> <pid> <start_ns>     when it starts the item
//   <id> acked <pid> <ns>               after ack() returned true
//   <id> stale <pid> <ns>               after ack() returned false (the
//                                       claim had been lost: redelivered)
//   <id> ackerr <pid> <ns>              ack() failed (outcome unknown)
// where the times are CLOCK_MONOTONIC nanoseconds (every worker runs on the
// test's machine). "Work" is a random sleep of 0..--work-ms ms.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "etcd/client.h"
#include "etcd/recipes/work_queue.h"

namespace {

using namespace std::chrono_literals;

int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Args {
  std::vector<std::string> endpoints;
  std::string name;
  std::string log;
  int visibility_s = 2;
  int max_deliveries = 50;
  int work_ms = 5;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "work_worker: %s\nusage: work_worker --endpoints H:P[,H:P...] --name QUEUE --log FILE "
               "[--visibility S] [--max-deliveries N] [--work-ms MS]\n",
               why.c_str());
  std::exit(2);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string::size_type start = 0;
  for (;;) {
    const auto end = s.find(sep, start);
    const auto piece = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!piece.empty()) out.push_back(piece);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

int to_int(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 0 || n > 1'000'000) usage("bad value for " + flag + ": " + v);
  return static_cast<int>(n);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage("missing value for " + flag);
    const std::string value = argv[++i];
    if (flag == "--endpoints") {
      a.endpoints = split(value, ',');
    } else if (flag == "--name") {
      a.name = value;
    } else if (flag == "--log") {
      a.log = value;
    } else if (flag == "--visibility") {
      a.visibility_s = to_int(flag, value);
    } else if (flag == "--max-deliveries") {
      a.max_deliveries = to_int(flag, value);
    } else if (flag == "--work-ms") {
      a.work_ms = to_int(flag, value);
    } else {
      usage("unknown flag " + flag);
    }
  }
  if (a.endpoints.empty() || a.name.empty() || a.log.empty()) usage("--endpoints, --name and --log are required");
  return a;
}

class Log {
 public:
  explicit Log(const std::string& path) : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {
    if (fd_ < 0) {
      std::perror(path.c_str());
      std::exit(2);
    }
  }
  ~Log() { ::close(fd_); }
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  // One write(2) per line: O_APPEND makes each land whole at the end.
  void line(const std::string& text) const {
    const std::string l = text + "\n";
    if (::write(fd_, l.data(), l.size()) != static_cast<ssize_t>(l.size())) {
      std::perror("work_worker: log write");
      std::exit(3);
    }
  }

 private:
  int fd_;
};

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  const Log log(args.log);
  const std::string pid = std::to_string(::getpid());

  etcd::ClientOptions client_options;
  client_options.endpoints = args.endpoints;
  etcd::Client client(client_options);
  etcd::recipes::WorkQueueOptions options;
  options.visibility_timeout = std::chrono::seconds(args.visibility_s);
  options.max_deliveries = args.max_deliveries;
  options.recipe.client_id = "work_worker:" + pid;
  etcd::recipes::DistributedWorkQueue queue(client, args.name, options);

  std::mt19937 rng(static_cast<unsigned>(mono_ns()));
  std::uniform_int_distribution<int> work_us(0, args.work_ms * 1000);
  for (;;) {
    auto received = queue.receive().timeout(30s).wait();
    if (!received.ok()) {
      std::fprintf(stderr, "work_worker %s: receive: %s\n", pid.c_str(), received.status().to_string().c_str());
      std::this_thread::sleep_for(50ms);
      continue;
    }
    const etcd::recipes::WorkItem item = std::move(received).value();
    log.line(item.id() + " " + std::to_string(item.attempt()) + " " + pid + " " + std::to_string(mono_ns()));
    std::this_thread::sleep_for(std::chrono::microseconds(work_us(rng)));
    auto acked = item.ack().timeout(10s).wait();
    const std::string outcome = !acked.ok() ? "ackerr" : *acked ? "acked" : "stale";
    if (!acked.ok()) {
      std::fprintf(stderr, "work_worker %s: ack %s: %s\n", pid.c_str(), item.id().c_str(),
                   acked.status().to_string().c_str());
    }
    log.line(item.id() + " " + outcome + " " + pid + " " + std::to_string(mono_ns()));
  }
}
