#include "consumer.h"

#include <algorithm>
#include <asio/post.hpp>

#include "../core/keys.h"
#include "../core/strand_steps.h"
#include "item_key.h"

namespace etcd::recipes::detail {

QueueConsumer::QueueConsumer(std::shared_ptr<RecipeCore> core, std::string items, std::string range, std::string metric,
                             Labels labels, TakeCheck check, std::shared_ptr<TakeDriver> driver, CreateOrder::Rank rank)
    : core_(std::move(core)),
      items_(std::move(items)),
      range_(std::move(range)),
      metric_(std::move(metric)),
      labels_(std::move(labels)),
      check_(std::move(check)),
      driver_(std::move(driver)),
      rank_(std::move(rank)),
      order_(rank_),
      rng_(std::random_device{}()) {}

void QueueConsumer::attach() {
  std::weak_ptr<QueueConsumer> weak = shared_from_this();
  PrefixView::Options options;
  // Every key arrives as an event, so the driver sees them all the same way.
  options.initial_events = true;
  options.range_end = driver_->view_range_end();
  options.window = kWindow;
  options.window_from = items_;
  options.full_end = driver_->full_end();
  options.window_slice = [items = items_](std::string_view from, uint64_t step, int64_t revision) {
    return window_slice(items, from, step, revision);
  };
  options.accept = [driver = driver_](std::string_view key) { return driver->keeps(key); };
  view_ = PrefixView::create(core_, range_, options, [weak](const ViewBatch& batch) {
    if (auto self = weak.lock()) self->on_batch(batch);
  });
}

void QueueConsumer::take(bool try_only, const CallOptions& options, Callback<std::optional<TakenItem>> done) {
  auto link = core_->link();
  if (Status st = core_->usable(link); !st.ok()) return done(st);
  if (options.stop.stop_requested()) return done(core_->named(Cancelled("dequeue cancelled")));
  auto t = std::make_shared<Taker>();
  t->try_only = try_only;
  t->done = std::move(done);
  t->link = link;
  t->since = Clock::now();
  CallOptions o = options;
  // A try does not wait for items, but it may wait for the first read of
  // the view: bounded like any call.
  if (try_only && !o.deadline) o.deadline = Clock::now() + link->client().options().default_timeout;
  asio::post(link->strand(), [self = shared_from_this(), t, o] { self->admit(t, o); });
}

void QueueConsumer::stop() {
  auto link = core_->link();
  if (!link) return;
  asio::post(link->strand(), [self = shared_from_this()] {
    if (self->retry_timer_) self->retry_timer_->cancel();
    self->retry_timer_.reset();
    if (self->jitter_timer_) self->jitter_timer_->cancel();
    self->jitter_timer_.reset();
    if (self->delay_timer_) self->delay_timer_->cancel();
    self->delay_timer_.reset();
    self->at_revision_.clear();
  });
  // Listeners may hold what holds this recipe.
  poison_listeners_.clear();
}

// --- takers (on the strand) ----------------------------------------------------

void QueueConsumer::admit(const std::shared_ptr<Taker>& t, const CallOptions& o) {
  if (core_->closed()) return finish(t, core_->closed_status());
  auto self = shared_from_this();
  std::weak_ptr<Taker> weak = t;
  const auto strand = t->link->strand();
  if (o.deadline) {
    t->timer = std::make_shared<asio::steady_timer>(strand, *o.deadline);
    t->timer->async_wait([self, weak](const asio::error_code& ec) {
      if (ec) return;
      if (auto tp = weak.lock()) self->expire(tp, DeadlineExceeded("timed out waiting for an item"));
    });
  }
  if (o.stop.stop_possible()) {
    // Stored only once registered: the callback may run inside the registration.
    auto cb = std::make_shared<std::optional<std::stop_callback<std::function<void()>>>>();
    cb->emplace(o.stop, std::function<void()>([self, weak, strand] {
                  asio::post(strand, [self, weak] {
                    if (auto tp = weak.lock()) self->expire(tp, Cancelled("dequeue cancelled"));
                  });
                }));
    t->stop_cb = cb;
  }
  t->close_sub = core_->on_close([self, weak, strand] {
    asio::post(strand, [self, weak] {
      if (auto tp = weak.lock()) self->expire(tp, self->core_->closed_status());
    });
  });
  if (t->finished) return;  // cancelled inside the registration
  if (!view_started_) {
    view_started_ = true;
    view_->start();
  }
  parked_.push_back(t);
  pump();
}

void QueueConsumer::expire(const std::shared_ptr<Taker>& t, Status why) {
  if (t->finished) return;
  if (t->claiming) {
    if (!t->end) t->end = std::move(why);
    return;
  }
  finish(t, core_->named(std::move(why)));
}

void QueueConsumer::finish(const std::shared_ptr<Taker>& t, Result<std::optional<TakenItem>> result) {
  if (t->finished) return;
  t->finished = true;
  std::erase(parked_, t);
  std::erase_if(at_revision_, [&](const auto& p) { return p.second == t; });
  if (t->timer) t->timer->cancel();
  t->timer.reset();
  t->close_sub.reset();
  auto stop_cb = std::move(t->stop_cb);
  auto link = std::move(t->link);
  if (result.ok() && *result) {
    core_->metrics().observe(metric("_wait_seconds"), labels_, seconds_since(t->since));
  }
  auto done = std::move(t->done);
  done(std::move(result));
  // A stop callback is never destroyed on the thread that may be running it.
  if (stop_cb && link) asio::post(link->executor(), [stop_cb] { stop_cb->reset(); });
}

// --- the view (on the strand) -----------------------------------------------------

void QueueConsumer::on_batch(const ViewBatch& batch) {
  for (const auto& ev : batch.events) {
    // Whatever we knew of an item that changed is out of date.
    const std::string item = driver_->note(ev, batch.revision);
    stale_.erase(item);
    if (auto busy = busy_.find(item); busy != busy_.end()) busy->second = true;
    if (ev.type != ViewEvent::Type::kAdded && item == ev.key) poison_.erase(item);
  }
  order_.apply(batch, [this](std::string_view key) { return driver_->is_item(key); });
  window_end_ = batch.window_end;
  if (batch.kind == ViewBatch::Kind::kInitialized) initialized_ = true;
  core_->metrics().set(metric("_depth"), labels_, static_cast<double>(order_.size()));
  // Try-only takers waiting for the view to see what their read saw.
  std::erase_if(at_revision_, [&](const auto& p) {
    if (p.first > batch.revision) return false;
    p.second->emptiness = 3;
    return true;
  });
  pump();
}

void QueueConsumer::pump() {
  if (!initialized_) return;
  // Nothing is decided while a random wait runs (a try would otherwise
  // find the queue empty beside an item).
  if (jitter()) return;
  // Parked takers get distinct items, in the order they called.
  while (!parked_.empty()) {
    auto pick = next_item();
    if (!pick) break;
    auto t = parked_.front();
    parked_.pop_front();
    claim(t, std::move(*pick));
  }
  // Nothing in the window for the takers left: widen it, once what is in
  // flight (our takes, the view's word on items our takes missed) has
  // settled — each of those pumps again.
  if (!parked_.empty() && !window_end_.empty()) {
    if (busy_.empty() && stale_.empty()) view_->grow();
    return wake_for_delays();
  }
  // Tries with nothing to take: find out whether the queue is empty (the
  // window holds every item).
  std::vector<std::shared_ptr<Taker>> tries;
  for (const auto& t : parked_) {
    if (t->try_only) tries.push_back(t);
  }
  for (const auto& t : tries) {
    if (t->emptiness == 0) {
      check_empty(t);
    } else if (t->emptiness == 3) {
      finish(t, std::optional<TakenItem>());
    }
  }
  wake_for_delays();
}

void QueueConsumer::wake_for_delays() {
  const auto at = parked_.empty() ? std::nullopt : driver_->next_ready_time();
  if (at == delay_timer_at_ && (delay_timer_ || !at)) return;
  if (delay_timer_) delay_timer_->cancel();
  delay_timer_.reset();
  delay_timer_at_ = at;
  auto link = core_->link();
  if (!at || !link) return;
  // The delay is on the system clock (the producer's time); the timer waits
  // on the steady one for the difference from now.
  const auto wait = std::max(std::chrono::system_clock::duration::zero(), *at - std::chrono::system_clock::now());
  auto timer = std::make_shared<asio::steady_timer>(
      link->strand(),
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(wait) + std::chrono::milliseconds(1));
  delay_timer_ = timer;
  timer->async_wait([self = shared_from_this(), timer](const asio::error_code& ec) {
    if (self->delay_timer_ != timer) return;
    self->delay_timer_.reset();
    self->delay_timer_at_.reset();
    if (!ec) self->pump();
  });
}

bool QueueConsumer::eligible(const CreateOrder::Position& pos) const {
  if (window_end_.empty() || !window_end_.starts_with(items_)) return true;
  const std::string& key = pos.second;
  if (rank_) {
    const uint32_t mine = rank_(key);
    const uint32_t bound = rank_(window_end_);
    if (mine != bound) return mine < bound;
  }
  // Keys past the bound sort by a revision R at least the bound's and
  // commit after it: at R + 1 at the earliest, and then only the bound's
  // own Txn, whose keys past the window sort (and commit) after ours.
  const auto r = item_revision(std::string_view(window_end_).substr(items_.size()));
  return !r || pos.first <= *r + 1;
}

bool QueueConsumer::takeable(const CreateOrder::Position& pos, std::chrono::system_clock::time_point now) const {
  const std::string& key = pos.second;
  return !busy_.count(key) && !stale_.count(key) && !poison_.count(key) && driver_->ready(key, now) && eligible(pos);
}

size_t QueueConsumer::available(size_t cap) const {
  size_t n = 0;
  const auto now = std::chrono::system_clock::now();
  for (const auto& pos : order_) {
    if (!takeable(pos, now)) continue;
    if (++n >= cap) break;
  }
  return n;
}

bool QueueConsumer::jitter() {
  if (jitter_timer_) return true;
  if (jitter_passed_ || contended_ == 0 || parked_.empty()) return false;
  const size_t n = available(kSpread);
  if (n == 0 || n >= kSpread) return false;
  auto link = core_->link();
  if (!link) return false;
  std::uniform_real_distribution<double> wait_ms(0, kJitterRtts * rtt_ms_);
  auto timer = std::make_shared<asio::steady_timer>(
      link->strand(), std::chrono::microseconds(static_cast<int64_t>(wait_ms(rng_) * 1000)));
  jitter_timer_ = timer;
  timer->async_wait([self = shared_from_this(), timer](const asio::error_code& ec) {
    if (self->jitter_timer_ != timer) return;
    self->jitter_timer_.reset();
    if (ec) return;
    self->jitter_passed_ = true;
    self->pump();
    self->jitter_passed_ = false;
  });
  return true;
}

std::optional<QueueConsumer::Pick> QueueConsumer::next_item() {
  // The head; after a conflict, the first item of this object's lane (a
  // hash of the key picks the lane, the object drew its lane at the
  // conflict) among the first kSpread * kLaneReach items, else any of the
  // first kSpread: objects in different lanes never go for the same item,
  // however far apart their views are, and a conflict draws a new lane. A
  // head that has waited kHeadPatience is taken whatever its lane.
  const bool contended = contended_ > 0;
  const size_t want = contended ? kSpread * kLaneReach : 1;
  std::vector<const CreateOrder::Position*> candidates;
  const CreateOrder::Position* in_lane = nullptr;
  const auto now = std::chrono::system_clock::now();
  bool first = true;
  for (const auto& pos : order_) {
    const std::string& key = pos.second;
    if (!takeable(pos, now)) continue;
    if (first) {
      first = false;
      const auto at = std::chrono::steady_clock::now();
      if (key != head_) {
        head_ = key;
        head_since_ = at;
      } else if (contended && at - head_since_ >= kHeadPatience) {
        in_lane = &pos;  // the head has waited long enough: ours whatever its lane
        break;
      }
    }
    if (contended && std::hash<std::string>()(key) % kSpread == lane_) {
      in_lane = &pos;
      break;
    }
    candidates.push_back(&pos);
    if (candidates.size() >= want) break;
  }
  if (!in_lane && candidates.empty()) return std::nullopt;
  if (candidates.size() > kSpread) candidates.resize(kSpread);
  const auto* chosen = in_lane                  ? in_lane
                       : candidates.size() == 1 ? candidates[0]
                                                : candidates[rng_() % candidates.size()];
  // The index follows the view on this strand: the view has every key of it.
  auto entry = view_->get(chosen->second);
  if (!entry) return std::nullopt;
  return Pick{*chosen, std::move(*entry)};
}

void QueueConsumer::claim(const std::shared_ptr<Taker>& t, Pick pick) {
  const std::string& key = pick.position.second;
  std::shared_ptr<void> decoded;
  if (check_) {
    // Decoded before the take: a value that does not decode stays in the
    // queue (never deleted and then found unusable).
    auto r = check_(key, pick.entry.value);
    if (!r.ok()) {
      Status st = r.status();
      if (st.is(Errc::kDecodeFailed)) {
        poison_.insert(key);
        core_->metrics().add(metric("_poison_total"), labels_, 1);
        core_->record_error(st);
        poison_listeners_.notify(t->link->strand(), core_->throw_sink(), key, st);
      }
      return finish(t, core_->named(std::move(st)));
    }
    decoded = std::move(*r);
  }
  busy_[key] = false;
  t->claiming = true;
  const auto sent = Clock::now();
  const std::string item_key = key;  // `pick` moves into the continuation
  const ViewEntry entry = pick.entry;
  driver_->take(t->link, item_key, entry, std::move(decoded),
                [self = shared_from_this(), t, pick = std::move(pick), sent](TakeDriver::Outcome outcome) mutable {
                  self->observe_rtt(sent);
                  self->on_take(t, pick, std::move(outcome));
                });
}

void QueueConsumer::on_take(const std::shared_ptr<Taker>& t, const Pick& pick, TakeDriver::Outcome outcome) {
  const std::string& key = pick.position.second;
  bool changed = false;
  if (auto busy = busy_.find(key); busy != busy_.end()) {
    changed = busy->second;
    busy_.erase(busy);
  }
  t->claiming = false;
  using Kind = TakeDriver::Outcome::Kind;
  switch (outcome.kind) {
    case Kind::kTaken:
      failures_ = 0;
      if (outcome.removed) order_.erase(pick.position.first, key);
      if (contended_ > 0) --contended_;
      finish(t, std::optional<TakenItem>(std::move(outcome.item)));
      return pump();
    case Kind::kDiverted:
      // Gone from the queue without a delivery: the taker waits on.
      failures_ = 0;
      order_.erase(pick.position.first, key);
      return repark(t);
    case Kind::kConflict:
      // Another consumer took it (or it changed) first: skip it until the
      // view says what became of it, unless it said so while the take was
      // in flight (then what it shows now is already newer than the pick).
      if (!changed && order_.contains(pick.position.first, key)) stale_.insert(key);
      core_->metrics().add(metric("_take_conflicts_total"), labels_, 1);
      lane_ = rng_() % kSpread;
      contended_ = kContendedTakes;
      return repark(t);
    case Kind::kFailed:
      break;
  }
  const Status& st = outcome.status;
  // A waiting receive goes on waiting while etcd is out of reach (its
  // deadline, if any, still ends it); a first use that finds nothing
  // listening has failed at once already (the consumer's lease).
  if (transient(st) || st.is(Errc::kUnreachable)) {
    ++failures_;
    if (t->end) return repark(t);
    parked_.push_front(t);
    return pump_later();
  }
  finish(t, core_->named(st));
  pump();
}

void QueueConsumer::repark(const std::shared_ptr<Taker>& t) {
  if (t->end) {
    Status why = std::move(*t->end);
    t->end.reset();
    finish(t, core_->named(std::move(why)));
  } else {
    parked_.push_front(t);
  }
  pump();
}

void QueueConsumer::pump_later() {
  if (retry_timer_) return;  // one pending already
  auto link = core_->link();
  if (!link) return;
  auto timer = std::make_shared<asio::steady_timer>(link->strand(), kStepBackoff.delay(failures_));
  retry_timer_ = timer;
  timer->async_wait([self = shared_from_this(), timer](const asio::error_code& ec) {
    if (self->retry_timer_ == timer) self->retry_timer_.reset();
    if (!ec) self->pump();
  });
}

void QueueConsumer::check_empty(const std::shared_ptr<Taker>& t) {
  t->emptiness = 1;
  // The newest item's create revision (and, by the count, whether there is
  // any): if the view has seen that revision, it knows every item there is.
  const GetOptions newest{.prefix = true,
                          .limit = 1,
                          .sort_order = SortOrder::kDescend,
                          .sort_target = SortTarget::kCreate,
                          .keys_only = true};
  auto link = t->link;
  run_on_strand(link->strand(), link->client().get(items_, newest),
                [self = shared_from_this(), t](Result<GetResponse> r) {
                  if (t->finished) return;
                  if (!r.ok()) {
                    if (t->claiming) {
                      t->emptiness = 0;
                      return;
                    }
                    return self->finish(t, self->core_->named(std::move(r).status()));
                  }
                  if (r->kvs.empty() || self->view_->revision() >= r->kvs.front().create_revision) {
                    t->emptiness = 3;
                  } else {
                    t->emptiness = 2;
                    self->at_revision_.emplace_back(r->kvs.front().create_revision, t);
                  }
                  if (!t->claiming) self->pump();
                });
}

}  // namespace etcd::recipes::detail
