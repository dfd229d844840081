// lock_worker: one contender of the mutual-exclusion checker
// (tests/fault/mutual_exclusion_test.cpp), run as its own process so that it
// can be paused (SIGSTOP) and killed like a real client.
//
//   lock_worker --endpoints H:P,H:P --name /mx/lock --iterations 25 --ttl 2
//               --hold-ms 60 --out /tmp/w0.log [--worker w0]
//
// Each iteration: lock NAME (a DistributedMutex with its own session of the
// given TTL), note the start time (CLOCK_MONOTONIC ns: every worker runs on
// the same machine) and the fencing token, hold for hold-ms while watching
// hold_token(), write "<NAME>-log/<token>" through mutex.hold().guarded() so that
// writes made under the hold are visible in etcd, note the end time, unlock.
//
// --out gets, flushed line by line (a crash or SIGKILL loses nothing written):
//   acquired <token> <start_ns>                     as soon as the lock is held
//   <token> <start_ns> <end_ns> <unlock_result> <guarded_write_ok> <lost_reported>
//          <write_ns> <write_status>                one record per hold
// where write_status is "ok", "hold_lost" (refused: nothing was written) or
// "unknown:<code>" (the write's outcome is unknown), write_ns is when the
// guarded write completed, and lost_reported is 1 if the hold's loss was
// reported by on_lost / hold_token() before unlock. A failed lock attempt
// is logged to stderr and retried; the process exits 0 after its iterations.
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "etcd/client.h"
#include "etcd/recipes/mutex.h"

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
  std::string worker;
  int iterations = 25;
  int ttl_s = 2;
  int hold_ms = 50;
  std::string out;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "lock_worker: %s\nusage: lock_worker --endpoints H:P[,H:P...] --name LOCK --iterations N --ttl S "
               "--hold-ms MS --out FILE [--worker ID]\n",
               why);
  std::exit(2);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string::size_type start = 0;
  while (start <= s.size()) {
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
  if (v.empty() || *end != '\0' || n < 0 || n > 1'000'000) usage(("bad value for " + flag + ": " + v).c_str());
  return static_cast<int>(n);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    std::string value;
    if (const auto eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      usage(("missing value for " + flag).c_str());
    }
    if (flag == "--endpoints") {
      a.endpoints = split(value, ',');
    } else if (flag == "--name") {
      a.name = value;
    } else if (flag == "--worker") {
      a.worker = value;
    } else if (flag == "--iterations") {
      a.iterations = to_int(flag, value);
    } else if (flag == "--ttl") {
      a.ttl_s = to_int(flag, value);
    } else if (flag == "--hold-ms") {
      a.hold_ms = to_int(flag, value);
    } else if (flag == "--out") {
      a.out = value;
    } else {
      usage(("unknown flag " + flag).c_str());
    }
  }
  if (a.endpoints.empty()) usage("--endpoints is required");
  if (a.name.empty()) usage("--name is required");
  if (a.out.empty()) usage("--out is required");
  if (a.ttl_s < 1) usage("--ttl must be at least 1");
  if (a.worker.empty()) a.worker = "pid" + std::to_string(::getpid());
  return a;
}

void log(const Args& a, const std::string& what) {
  std::fprintf(stderr, "[%s %.3f] %s\n", a.worker.c_str(), static_cast<double>(mono_ns()) / 1e9, what.c_str());
  std::fflush(stderr);
}

class Out {
 public:
  explicit Out(const std::string& path) : f_(std::fopen(path.c_str(), "a")) {
    if (f_ == nullptr) {
      std::perror(path.c_str());
      std::exit(2);
    }
  }
  ~Out() { std::fclose(f_); }
  Out(const Out&) = delete;
  Out& operator=(const Out&) = delete;

  // Each line is flushed at once (one write(2) for these short lines), so a
  // crash or SIGKILL loses nothing that was written.
  void line(const std::string& text) {
    std::fputs((text + "\n").c_str(), f_);
    std::fflush(f_);
  }

 private:
  std::FILE* f_;
};

std::string write_status_of(const etcd::Result<etcd::TxnResponse>& r) {
  if (r.ok()) return "ok";
  if (r.status().is(etcd::Errc::kHoldLost)) return "hold_lost";
  return "unknown:" + std::to_string(static_cast<int>(r.status().code()));
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  Out out(args.out);

  etcd::ClientOptions client_options;
  client_options.endpoints = args.endpoints;
  etcd::Client client(client_options);

  etcd::recipes::RecipeOptions options;
  options.session_ttl = std::chrono::seconds(args.ttl_s);
  options.client_id = args.worker;
  etcd::recipes::DistributedMutex mutex(client, args.name, options);

  // Set by the lost listener; cleared at the start of each hold.
  auto lost = std::make_shared<std::atomic<bool>>(false);
  auto lost_sub = mutex.on_lost([lost, &args](const etcd::Status& why) {
    lost->store(true);
    log(args, "hold lost: " + why.to_string());
  });

  for (int done = 0; done < args.iterations;) {
    lost->store(false);
    auto acquired = mutex.acquire().timeout(30s).wait();
    if (!acquired.ok()) {
      log(args, "lock failed (retrying): " + acquired.status().to_string());
      std::this_thread::sleep_for(100ms);
      continue;
    }
    const int64_t start_ns = mono_ns();
    const int64_t token = mutex.hold().token();
    const std::stop_token hold = mutex.hold().stop_token();
    out.line("acquired " + std::to_string(token) + " " + std::to_string(start_ns));

    // Hold, in small steps, so that a reported loss ends the hold early.
    const int64_t hold_until = start_ns + static_cast<int64_t>(args.hold_ms) * 1'000'000;
    while (mono_ns() < hold_until && !hold.stop_requested()) std::this_thread::sleep_for(2ms);

    // The write is attempted even after a reported loss: it must be refused.
    const std::string log_key = args.name + "-log/" + std::to_string(token);
    auto written = mutex.hold()
                       .guarded(etcd::Txn().then(etcd::Op::put(log_key, args.worker + " " + std::to_string(token))))
                       .timeout(10s)
                       .wait();
    const int64_t write_ns = mono_ns();
    const std::string write_status = write_status_of(written);
    if (!written.ok())
      log(args, "guarded write for token " + std::to_string(token) + ": " + written.status().to_string());
    const int64_t end_ns = mono_ns();

    // Refused because etcd no longer has our key: the lease is gone, and the
    // session must say so (its keep-alive learns it within about a tick).
    if (write_status == "hold_lost") {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2 * args.ttl_s + 1);
      while (!lost->load() && !hold.stop_requested() && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(5ms);
      }
    }
    const bool lost_reported = lost->load() || hold.stop_requested();
    const bool unlocked = mutex.unlock();
    if (!unlocked) log(args, "unlock of token " + std::to_string(token) + " returned false");

    out.line(std::to_string(token) + " " + std::to_string(start_ns) + " " + std::to_string(end_ns) + " " +
             (unlocked ? "1" : "0") + " " + (written.ok() ? "1" : "0") + " " + (lost_reported ? "1" : "0") + " " +
             std::to_string(write_ns) + " " + write_status);
    ++done;
  }
  lost_sub.reset();
  mutex.close();
  client.close();
  return 0;
}
