// reap(): the bookkeeping keys under a prefix, recognised by the inspector
// (inspect.h) and removed with guarded deletes. Why each delete is safe:
// include/etcd/recipes/reaper.h.
#include "etcd/recipes/reaper.h"

#include <algorithm>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string_view>
#include <utility>

#include "../core/calls.h"
#include "../core/client_link.h"
#include "../counters/counter_keys.h"
#include "../locks/lock_keys.h"
#include "../queues/queue_keys.h"
#include "etcd/txn.h"

namespace etcd::recipes {

namespace detail {

namespace {

// Keys per page of the scan, and candidates read per Txn.
constexpr int64_t kReapScanPage = 1000;
constexpr size_t kReapReadBatch = 64;

// Whether `key` may be a bookkeeping key (NAME/producers/<p>,
// NAME/receipts/<r>, NAME/permits): the scan reads keys only, and reads
// the values of these alone for the inspector to decide.
bool reap_candidate(std::string_view key) {
  const size_t last = key.rfind('/');
  if (last == std::string_view::npos) return false;
  if (key.substr(last + 1) == semaphore_keys::kPermits) return true;
  const std::string_view dir = key.substr(0, last);
  const size_t mid = dir.rfind('/');
  const std::string_view segment = mid == std::string_view::npos ? dir : dir.substr(mid + 1);
  return segment == QueueKeys::kProducers || segment == counter_keys::kReceipts;
}

class ReapRun : public std::enable_shared_from_this<ReapRun> {
 public:
  ReapRun(std::shared_ptr<ClientLink> link, std::string prefix, ReapOptions options, CallOptions call,
          Callback<ReapReport> done)
      : link_(std::move(link)),
        prefix_(std::move(prefix)),
        end_(prefix_range_end(prefix_)),
        options_(options),
        call_(std::move(call)),
        done_(std::move(done)) {}

  void start() { scan(prefix_); }

 private:
  void fail(Status why) { done_(std::move(why)); }

  void scan(std::string from) {
    const GetOptions page{.range_end = end_, .limit = kReapScanPage, .revision = report_.revision, .keys_only = true};
    CallAccess::start_inherited(link_->client().get(from, page), call_,
                                [self = shared_from_this()](Result<GetResponse> r) {
                                  if (!r.ok()) return self->fail(std::move(r).status());
                                  if (self->report_.revision == 0) self->report_.revision = r->header.revision;
                                  for (auto& kv : r->kvs) {
                                    if (reap_candidate(kv.key)) self->candidates_.push_back(kv.key);
                                  }
                                  if (r->more && !r->kvs.empty()) {
                                    return self->scan(r->kvs.back().key + std::string(1, '\0'));
                                  }
                                  self->read_values(0);
                                });
  }

  void read_values(size_t from) {
    if (from >= candidates_.size()) return classify();
    Txn txn;
    const size_t to = std::min(candidates_.size(), from + kReapReadBatch);
    for (size_t i = from; i < to; ++i) txn.then(Op::get(candidates_[i]));
    CallAccess::start_inherited(link_->client().txn(std::move(txn)), call_,
                                [self = shared_from_this(), to](Result<TxnResponse> r) {
                                  if (!r.ok()) return self->fail(std::move(r).status());
                                  for (const auto& one : r->responses) {
                                    if (const KeyValue* kv = one.get().first()) self->kvs_.push_back(*kv);
                                  }
                                  self->read_values(to);
                                });
  }

  void classify() {
    inspect::Report report = inspect::build_report(std::move(kvs_), report_.revision);
    for (const auto& recipe : report.recipes) {
      for (const auto& e : recipe.entries) {
        if (e.role != inspect::Role::kProducer && e.role != inspect::Role::kReceipt &&
            e.role != inspect::Role::kPermits) {
          continue;
        }
        report_.keys.push_back(ReapedKey{.key = e.kv.key,
                                         .recipe = recipe.name,
                                         .kind = recipe.kind,
                                         .role = e.role,
                                         .mod_revision = e.kv.mod_revision});
      }
    }
    wait_idle();
  }

  void wait_idle() {
    bool needs_wait = false;
    for (const auto& k : report_.keys) needs_wait = needs_wait || k.role != inspect::Role::kPermits;
    if (!needs_wait || options_.idle.count() == 0) return guard(0);
    if (call_.stop.stop_requested()) return fail(Cancelled("reap cancelled"));
    timer_ = std::make_shared<asio::steady_timer>(link_->executor(), options_.idle);
    timer_->async_wait([self = shared_from_this()](const asio::error_code& ec) {
      if (ec || self->call_.stop.stop_requested()) return self->fail(Cancelled("reap cancelled while waiting"));
      self->guard(0);
    });
    // The stop token ends the wait: the timer is cancelled on its executor.
    stop_ = std::make_unique<std::stop_callback<std::function<void()>>>(
        call_.stop, std::function<void()>(
                        [timer = timer_, ex = link_->executor()] { asio::post(ex, [timer] { timer->cancel(); }); }));
  }

  // One guarded Txn per key: its mod revision as first read (unchanged for
  // `idle`), and for a semaphore's permits no holder, slot or waiter.
  void guard(size_t i) {
    if (i >= report_.keys.size()) return done_(std::move(report_));
    const ReapedKey& k = report_.keys[i];
    Txn txn;
    txn.when(Compare::mod_revision(k.key) == k.mod_revision);
    if (k.role == inspect::Role::kPermits) {
      for (std::string_view dir : {semaphore_keys::kHolders, semaphore_keys::kSlots, semaphore_keys::kQueue}) {
        txn.when(Compare::create_revision(dir_under(k.recipe, dir)).with_prefix() == 0);
      }
    }
    if (!options_.dry_run) txn.then(Op::del(k.key));
    txn.otherwise(Op::get(k.key, GetOptions{.keys_only = true}));
    CallAccess::start_inherited(link_->client().txn(std::move(txn)), call_,
                                [self = shared_from_this(), i](Result<TxnResponse> r) {
                                  if (!r.ok()) return self->fail(std::move(r).status());
                                  ReapedKey& key = self->report_.keys[i];
                                  if (r->succeeded) {
                                    key.reaped = true;
                                  } else {
                                    const KeyValue* now = r->responses.at(0).get().first();
                                    if (!now) {
                                      key.kept_because = "removed by someone else meanwhile";
                                    } else if (now->mod_revision != key.mod_revision) {
                                      key.kept_because = "written meanwhile: in use";
                                    } else {
                                      key.kept_because = "the semaphore has holders or waiters";
                                    }
                                  }
                                  self->guard(i + 1);
                                });
  }

  const std::shared_ptr<ClientLink> link_;
  const std::string prefix_;
  const std::string end_;
  const ReapOptions options_;
  const CallOptions call_;
  Callback<ReapReport> done_;
  std::vector<std::string> candidates_;
  std::vector<KeyValue> kvs_;
  ReapReport report_;
  std::shared_ptr<asio::steady_timer> timer_;
  std::unique_ptr<std::stop_callback<std::function<void()>>> stop_;
};

}  // namespace

}  // namespace detail

Call<ReapReport> reap(Client client, std::string prefix, ReapOptions options) {
  auto link = detail::ClientLink::make(std::move(client));
  return detail::link_call<ReapReport>(
      link, [link, prefix = std::move(prefix), options](CallOptions call, Callback<ReapReport> done) {
        if (prefix.empty()) return done(InvalidArgument("reap: the prefix must not be empty"));
        if (options.idle.count() < 0) return done(InvalidArgument("reap: idle must not be negative"));
        if (call.deadline && options.idle.count() > 0 && Clock::now() + options.idle >= *call.deadline) {
          return done(DeadlineExceeded("reap: the call's deadline comes before the idle period (" +
                                       std::to_string(options.idle.count()) + " ms) ends"));
        }
        std::make_shared<detail::ReapRun>(link, prefix, options, std::move(call), std::move(done))->start();
      });
}

}  // namespace etcd::recipes
