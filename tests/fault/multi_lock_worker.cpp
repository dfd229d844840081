// multi_lock_worker: one process of the multi-lock checker
// (tests/fault/multi_lock_exclusion_test.cpp).
//
//   multi_lock_worker --endpoints H:P --names A,B,C,D,E --pick 3 --rounds 200
//                     --registers PREFIX --seed S --out FILE [--worker ID]
//
// Each round: pick `pick` of the names at random, in a random order, take
// them as one MultiLock (a new object per round, all on the process's one
// session), then write every picked name's fenced register in one guarded
// Txn: PREFIX/<i> (i: the name's index) moves to this hold's token for that
// name only if it holds a smaller one (tokens as 20-digit text, so that
// etcd's byte comparison orders them), and PREFIX-log/<i>/<token> records
// the write. Then release.
//
// --out gets one line per round, flushed at once:
//   <round> <start_ns> <end_ns> <status> <i>:<token> ...
// where status is "ok", "stale" (the hold was intact but a register held a
// token >= ours: another holder wrote meanwhile), "lost" or "error:<code>".
// Exit 0 after the rounds; 1 if an acquisition failed (logged to stderr).
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "etcd/client.h"
#include "etcd/recipes/multi_lock.h"
#include "etcd/session.h"

namespace {

using namespace std::chrono_literals;

int64_t multi_worker_mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::vector<std::string> multi_worker_split(const std::string& s) {
  std::vector<std::string> out;
  std::string::size_type start = 0;
  while (start <= s.size()) {
    const auto end = s.find(',', start);
    auto piece = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!piece.empty()) out.push_back(std::move(piece));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::string multi_worker_padded(int64_t token) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020lld", static_cast<long long>(token));
  return buf;
}

[[noreturn]] void multi_worker_usage(const std::string& why) {
  std::fprintf(stderr,
               "multi_lock_worker: %s\nusage: multi_lock_worker --endpoints H:P --names A,B,... --pick K --rounds N "
               "--registers PREFIX --seed S --out FILE [--worker ID]\n",
               why.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> endpoints, names;
  std::string registers, out_path, worker;
  int pick = 3, rounds = 200;
  unsigned seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--endpoints") {
      endpoints = multi_worker_split(value);
    } else if (flag == "--names") {
      names = multi_worker_split(value);
    } else if (flag == "--pick") {
      pick = std::atoi(value.c_str());
    } else if (flag == "--rounds") {
      rounds = std::atoi(value.c_str());
    } else if (flag == "--registers") {
      registers = value;
    } else if (flag == "--seed") {
      seed = static_cast<unsigned>(std::strtoul(value.c_str(), nullptr, 10));
    } else if (flag == "--out") {
      out_path = value;
    } else if (flag == "--worker") {
      worker = value;
    } else {
      multi_worker_usage("unknown flag " + flag);
    }
  }
  if (endpoints.empty() || names.empty() || registers.empty() || out_path.empty()) multi_worker_usage("missing flags");
  if (pick < 1 || pick > static_cast<int>(names.size())) multi_worker_usage("bad --pick");
  if (worker.empty()) worker = "pid" + std::to_string(::getpid());
  std::FILE* out = std::fopen(out_path.c_str(), "a");
  if (out == nullptr) multi_worker_usage("cannot open " + out_path);

  etcd::ClientOptions client_options;
  client_options.endpoints = endpoints;
  etcd::Client client(client_options);
  auto session = etcd::Session::create(client, {.ttl = std::chrono::seconds(10)});
  if (auto st = session->start().timeout(10s).wait(); !st.ok()) {
    std::fprintf(stderr, "[%s] session: %s\n", worker.c_str(), st.status().to_string().c_str());
    return 1;
  }
  etcd::recipes::RecipeOptions options;
  options.session = session;
  options.client_id = worker;

  std::mt19937 rng(seed);
  std::vector<int> indices(names.size());
  for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int>(i);

  for (int round = 0; round < rounds; ++round) {
    std::shuffle(indices.begin(), indices.end(), rng);
    std::vector<int> picked(indices.begin(), indices.begin() + pick);  // random subset, random order
    std::vector<std::string> picked_names;
    for (int i : picked) picked_names.push_back(names[static_cast<std::size_t>(i)]);

    etcd::recipes::MultiLock lock(client, picked_names, options);
    auto acquired = lock.acquire().timeout(30s).wait();
    if (!acquired.ok()) {
      std::fprintf(stderr, "[%s] round %d: %s\n", worker.c_str(), round, acquired.status().to_string().c_str());
      return 1;
    }
    const int64_t start_ns = multi_worker_mono_ns();
    const etcd::recipes::MultiHold& hold = *acquired;

    etcd::Txn fenced;
    std::string tokens;
    for (int i : picked) {
      const std::string reg = registers + "/" + std::to_string(i);
      const std::string token = multi_worker_padded(hold.token(names[static_cast<std::size_t>(i)]));
      fenced.when(etcd::Compare::value(reg) < token);
      fenced.then(etcd::Op::put(reg, token), etcd::Op::put(registers + "-log/" + std::to_string(i) + "/" + token, worker));
      tokens += " " + std::to_string(i) + ":" + std::to_string(hold.token(names[static_cast<std::size_t>(i)]));
    }
    auto wrote = hold.guarded(std::move(fenced)).timeout(10s).wait();
    std::string status;
    if (wrote.ok()) {
      status = wrote->succeeded ? "ok" : "stale";
    } else if (wrote.status().is(etcd::Errc::kHoldLost)) {
      status = "lost";
    } else {
      status = "error:" + std::to_string(static_cast<int>(wrote.status().code()));
    }
    const int64_t end_ns = multi_worker_mono_ns();
    const bool released = lock.release().timeout(10s).wait().value_or(false);
    if (!released && status == "ok") status = "lost-at-release";
    std::fprintf(out, "%d %lld %lld %s%s\n", round, static_cast<long long>(start_ns),
                 static_cast<long long>(end_ns), status.c_str(), tokens.c_str());
    std::fflush(out);
  }
  std::fclose(out);
  return 0;
}
