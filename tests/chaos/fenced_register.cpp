#include "fenced_register.h"

#include <algorithm>
#include <chrono>
#include <sstream>

namespace chaos {

using namespace std::chrono_literals;

std::string pad(int64_t v) {
  std::string s = std::to_string(v);
  return std::string(s.size() < 20 ? 20 - s.size() : 0, '0') + s;
}

void FencedRegister::init(etcd::Client& admin) const {
  auto r = admin.put(key_, pad(0)).timeout(10s).wait();
  if (!r.ok()) throw etcd::Error(std::move(r).status());
}

FencedRegister::Write FencedRegister::write(const etcd::recipes::Hold& hold, const std::string& writer,
                                            int64_t seq) const {
  const int64_t token = hold.token();
  const std::string log = key_ + "/log/" + pad(token) + "/" + writer + "/" + pad(seq);
  etcd::Txn inner;
  inner.when(etcd::Compare::value(key_) < pad(token + 1))
      .then({etcd::Op::put(key_, pad(token) + " " + writer + " " + std::to_string(seq)), etcd::Op::put(log, writer)})
      .otherwise(etcd::Op::get(key_));
  auto r = hold.guarded(std::move(inner)).timeout(3s).wait();
  Write w;
  if (!r.ok()) {
    w.error = r.status().to_string();
    w.outcome = r.status().is(etcd::Errc::kHoldLost) ? Outcome::kLost : Outcome::kUnknown;
    return w;
  }
  if (r->succeeded) {
    w.outcome = Outcome::kOk;
    w.revision = r->header.revision;
    return w;
  }
  w.outcome = Outcome::kStale;
  const auto& got = r->responses.at(0).get();
  if (!got.kvs.empty()) w.seen = got.kvs[0].value;
  return w;
}

std::vector<FencedRegister::Accepted> FencedRegister::accepted(etcd::Client& admin) const {
  std::vector<Accepted> out;
  auto r = admin.get(key_ + "/log/", etcd::GetOptions{.prefix = true}).timeout(20s).wait();
  if (!r.ok()) throw etcd::Error(std::move(r).status());
  for (const auto& kv : r->kvs) {
    // KEY/log/<token>/<writer>/<seq>
    const std::string rest = kv.key.substr(key_.size() + 5);
    const auto a = rest.find('/');
    const auto b = rest.rfind('/');
    Accepted e;
    e.revision = kv.create_revision;
    e.token = std::stoll(rest.substr(0, a));
    e.writer = rest.substr(a + 1, b - a - 1);
    e.seq = std::stoll(rest.substr(b + 1));
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const Accepted& x, const Accepted& y) { return x.revision < y.revision; });
  return out;
}

std::vector<Violation> FencedRegister::check_log(const std::string& recipe, const std::vector<Accepted>& log) const {
  std::vector<Violation> v;
  for (size_t i = 1; i < log.size(); ++i) {
    if (log[i].token < log[i - 1].token) {
      std::ostringstream s;
      s << key_ << ": accepted write of token " << log[i].token << " (" << log[i].writer << ") at revision "
        << log[i].revision << " after token " << log[i - 1].token << " (" << log[i - 1].writer << ") at revision "
        << log[i - 1].revision;
      v.push_back({recipe, s.str(), -1});
    }
  }
  return v;
}

const char* FencedRegister::name(Outcome o) {
  switch (o) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kStale:
      return "stale";
    case Outcome::kLost:
      return "lost";
    case Outcome::kUnknown:
      return "unknown";
  }
  return "?";
}

}  // namespace chaos
