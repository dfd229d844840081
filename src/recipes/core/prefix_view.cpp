#include "prefix_view.h"

#include <algorithm>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/strand.hpp>
#include <exception>
#include <utility>

#include "keys.h"
#include "page_slice.h"
#include "recipe_core.h"
#include "strand_steps.h"
#include "waiters.h"

namespace etcd::recipes::detail {

ViewEntry to_entry(KeyValue kv) {
  ViewEntry e;
  e.value = std::move(kv.value);
  e.create_revision = kv.create_revision;
  e.mod_revision = kv.mod_revision;
  e.version = kv.version;
  e.lease = kv.lease;
  return e;
}

KeyValue to_kv(const std::string& key, const ViewEntry& entry) {
  KeyValue kv;
  kv.key = key;
  kv.value = entry.value;
  kv.create_revision = entry.create_revision;
  kv.mod_revision = entry.mod_revision;
  kv.version = entry.version;
  kv.lease = entry.lease;
  return kv;
}

std::vector<ViewEvent> diff_views(const ViewMap& before, const ViewMap& after) {
  std::vector<ViewEvent> out;
  auto b = before.begin();
  auto a = after.begin();
  // One merge walk over both key-ordered maps.
  while (b != before.end() || a != after.end()) {
    if (a == after.end() || (b != before.end() && b->first < a->first)) {
      out.push_back({ViewEvent::Type::kRemoved, b->first, b->second, std::nullopt});
      ++b;
    } else if (b == before.end() || a->first < b->first) {
      out.push_back({ViewEvent::Type::kAdded, a->first, a->second, std::nullopt});
      ++a;
    } else {
      if (!(a->second == b->second)) out.push_back({ViewEvent::Type::kUpdated, a->first, a->second, b->second});
      ++a;
      ++b;
    }
  }
  return out;
}

std::vector<ViewEvent> apply_events(ViewMap& map, const std::vector<Event>& events, size_t begin, size_t end,
                                    const std::function<bool(std::string_view)>& accept) {
  return apply_events(map, events, begin, end, accept, nullptr);
}

std::vector<ViewEvent> apply_events(ViewMap& map, const std::vector<Event>& events, size_t begin, size_t end,
                                    const std::function<bool(std::string_view)>& accept,
                                    std::vector<std::shared_ptr<const void>>* decoded) {
  std::vector<ViewEvent> out;
  for (size_t i = begin; i < end; ++i) {
    const Event& ev = events[i];
    if (accept && !accept(ev.kv.key)) continue;
    auto it = map.find(ev.kv.key);
    if (ev.type == Event::Type::kDelete) {
      if (it == map.end()) continue;
      out.push_back({ViewEvent::Type::kRemoved, it->first, std::move(it->second), std::nullopt});
      map.erase(it);
      continue;
    }
    ViewEntry entry = to_entry(ev.kv);
    if (decoded) entry.decoded = std::move((*decoded)[i - begin]);
    if (it == map.end()) {
      map.emplace(ev.kv.key, entry);
      out.push_back({ViewEvent::Type::kAdded, ev.kv.key, std::move(entry), std::nullopt});
    } else if (!(it->second == entry)) {
      ViewEntry previous = std::exchange(it->second, entry);
      out.push_back({ViewEvent::Type::kUpdated, ev.kv.key, std::move(entry), std::move(previous)});
    }
  }
  return out;
}

// Everything that runs in the background, kept alive by in-flight work. Its
// steps run on the recipe's strand (that of `link`, while it runs); the view
// itself (map, revision, flags) is guarded by `mu` so that readers on other
// threads see one consistent state.
struct PrefixView::Impl : std::enable_shared_from_this<Impl> {
  Impl(std::shared_ptr<RecipeCore> c, std::string r, Options o, Handler h)
      : core(std::move(c)),
        range(std::move(r)),
        options(std::move(o)),
        end(options.range_end.empty() ? prefix_range_end(range) : options.range_end),
        waiters(std::make_shared<WaiterSet>(core)),
        handler_(std::move(h)) {}

  const std::shared_ptr<RecipeCore> core;
  const std::string range;
  const Options options;
  const std::string end;  // of the range
  const std::shared_ptr<WaiterSet> waiters;

  mutable std::mutex mu;
  // From start() until the view stops: its link to the client.
  std::shared_ptr<ClientLink> link;
  ViewMap map;  // written on the strand only
  // A windowed view: keys at or after bound_ are not held (empty: every
  // key is). Written on the strand, under mu.
  std::string bound_;
  int64_t revision = 0;
  bool started = false;
  bool initialized = false;
  Status failed;  // set once the view stopped for good (Options::start_revision)
  uint64_t pages = 0;
  uint64_t resyncs = 0;

  // The link while the view runs; null before start() and once stopped.
  std::shared_ptr<ClientLink> running() const {
    std::lock_guard lock(mu);
    return link;
  }

  // --- on the strand

  void begin() {
    if (core->closed()) return stop();
    std::weak_ptr<Impl> weak = shared_from_this();
    close_sub_ = core->on_close([weak] {
      auto self = weak.lock();
      if (!self) return;
      if (auto l = self->running()) asio::post(l->strand(), [self] { self->stop(); });
    });
    load(++epoch_, Status());  // a core closed meanwhile makes every step stale
  }

  void stop() {
    stopped_ = true;
    ++epoch_;
    watch_.cancel();
    watch_ = Watcher();
    if (timer_) timer_->cancel();
    timer_.reset();
    close_sub_.reset();
    handler_ = nullptr;  // the owner's handler may keep the owner alive
    ViewMap().swap(loading_);
    // Nothing of the client is left in use (steps still queued find the
    // view stale): let go of it.
    std::shared_ptr<ClientLink> gone;
    std::lock_guard lock(mu);
    gone = std::move(link);
  }

  void request_resync() {
    if (stopped_ || !initialized_here_) return;
    load(++epoch_, Status(StatusCode::kOk, "resync requested"));
  }

  void request_grow() {
    if (stopped_ || !initialized_here_ || !windowed() || bound_.empty() || refilling_) return;
    // Doubles it (by Options::window at least): a head that takes many
    // widenings to reach is reached in a logarithmic number of reads.
    target_ += std::max(target_, static_cast<size_t>(options.window));
    refill(epoch_, /*growing=*/true);
  }

 private:
  bool stale(uint64_t e) const { return e != epoch_ || stopped_ || core->closed(); }

  // --- the window (Options::window)
  bool windowed() const { return options.window > 0 && !options.single_key; }
  // Where the keys read in full end (the first of the window's reads).
  const std::string& full_end() const { return options.full_end.empty() ? options.window_from : options.full_end; }
  // A key past the window's bound: not in the view.
  bool outside(std::string_view key) const { return !bound_.empty() && key >= bound_; }
  bool in_window(std::string_view key) const { return windowed() && key >= options.window_from; }
  bool accepted(std::string_view key) const { return !options.accept || options.accept(key); }

  // The first `n` of `kvs` (read in key order) the owner accepts, decoded,
  // appended to `into` (every insertion at its end).
  void take_read(std::vector<KeyValue>& kvs, size_t n, ViewMap& into) const {
    for (size_t i = 0; i < n; ++i) {
      auto& kv = kvs[i];
      if (!accepted(kv.key)) continue;
      std::string key = std::move(kv.key);
      ViewEntry entry = to_entry(std::move(kv));
      if (options.decode) entry.decoded = options.decode(key, entry.value);
      into.emplace_hint(into.end(), std::move(key), std::move(entry));
    }
  }

  // The decoded values of the puts of events[begin, end) (of keys the view
  // keeps, with `kept_only`), as apply_events takes them; none without
  // Options::decode. Decoded before the lock is taken: readers never wait
  // for a codec.
  std::vector<std::shared_ptr<const void>> decode_puts(const std::vector<Event>& events, size_t begin, size_t end_at,
                                                       bool kept_only) const {
    std::vector<std::shared_ptr<const void>> decoded;
    if (!options.decode) return decoded;
    decoded.resize(end_at - begin);
    for (size_t k = begin; k < end_at; ++k) {
      const Event& ev = events[k];
      if (ev.type == Event::Type::kPut && (!kept_only || keeps(ev.kv.key))) {
        decoded[k - begin] = options.decode(ev.kv.key, ev.kv.value);
      }
    }
    return decoded;
  }

  // How many of a window read's keys (at most `limit` of them) the window
  // takes, and the bound after them (empty: the range ends there). `held`:
  // the bytes the window holds already (its keys and values), which count
  // against Options::window_bytes.
  size_t cut(const std::vector<KeyValue>& kvs, size_t limit, std::string& bound, size_t held = 0) const {
    size_t keep = kvs.size();
    bound.clear();
    if (keep >= limit) {
      keep = limit - 1;
      bound = kvs[keep].key;
    }
    size_t bytes = held;
    for (size_t i = 0; i < keep; ++i) {
      bytes += kvs[i].key.size() + kvs[i].value.size();
      if ((i > 0 || held > 0) && bytes > options.window_bytes) {
        bound = kvs[i].key;
        return i;
      }
    }
    return keep;
  }

  // After each batch: let go of keys past twice the window's size, or read
  // on from the bound when it drained under half.
  void adjust_window(uint64_t e) {
    if (!windowed() || stale(e) || !initialized_here_ || refilling_) return;
    if (in_window_ > 2 * target_) return shrink();
    if (!bound_.empty() && in_window_ < target_ / 2 && held_bytes() < options.window_bytes / 2) refill(e);
  }

  // The bytes of the keys and values the window holds.
  size_t held_bytes() const {
    size_t bytes = 0;
    for (auto it = map.lower_bound(options.window_from); it != map.end(); ++it) {
      bytes += it->first.size() + it->second.value.size();
    }
    return bytes;
  }

  void shrink() {
    auto it = map.lower_bound(options.window_from);
    for (size_t n = 0; n < target_ && it != map.end(); ++n) ++it;
    if (it == map.end()) {
      in_window_ = static_cast<size_t>(std::distance(map.lower_bound(options.window_from), map.end()));
      return;
    }
    ViewBatch batch;
    batch.kind = ViewBatch::Kind::kChanged;
    batch.revision = revision;  // written on the strand only
    {
      std::lock_guard lock(mu);
      bound_ = it->first;
      while (it != map.end()) {
        batch.events.push_back({ViewEvent::Type::kRemoved, it->first, std::move(it->second), std::nullopt});
        it = map.erase(it);
      }
    }
    in_window_ = target_;
    deliver(batch);
  }

  // `growing`: for grow(), whose owner can use nothing the window holds:
  // the keys it brings are not held back by the bytes the window holds.
  void refill(uint64_t e, bool growing = false) {
    if (!running() || bound_.empty()) return;
    refilling_ = true;
    const size_t limit = std::max<size_t>(2, target_ > in_window_ ? target_ - in_window_ + 1 : 2);
    growing_ = growing;
    read_on(e, std::make_shared<std::vector<KeyValue>>(), bound_, limit, 1);
  }

  // One read of a refill: from `from`, to the end of the range or of the
  // slice Options::window_slice gives; with fewer keys than `limit` in a
  // slice, on to the next (twice as wide). `got`: what the earlier reads
  // of this refill brought.
  void read_on(uint64_t e, std::shared_ptr<std::vector<KeyValue>> got, std::string from, size_t limit, uint64_t step) {
    auto l = running();
    if (!l) return;
    std::string slice = options.window_slice ? options.window_slice(from, step, revision) : std::string();
    if (!slice.empty() && (slice >= end || slice <= from)) slice.clear();
    GetOptions page;
    page.range_end = slice.empty() ? end : slice;
    page.limit = static_cast<int64_t>(limit - got->size());
    // At the view's revision: the keys past the bound as they were then;
    // what changed since is in stash_ (kept from now on).
    page.revision = revision;
    run_on_strand(l->strand(), l->client().get(from, page),
                  [self = shared_from_this(), e, got, limit, step, slice = std::move(slice)](Result<GetResponse> r) {
                    if (self->stale(e)) return;
                    if (!r.ok()) return self->refill_failed(e, r.status());
                    self->failures_ = 0;
                    {
                      std::lock_guard lock(self->mu);
                      ++self->pages;
                    }
                    for (auto& kv : r->kvs) got->push_back(std::move(kv));
                    if (got->size() < limit && !slice.empty()) return self->read_on(e, got, slice, limit, step * 2);
                    self->refilled(e, limit, std::move(*got));
                  });
  }

  void refill_failed(uint64_t e, const Status& why) {
    refilling_ = false;
    stash_.clear();
    if (why.is(Errc::kClosed)) return;
    // The view's revision was compacted: read the whole view again.
    if (why.is(Errc::kCompacted)) return load(++epoch_, why);
    if (!transient(why) && !why.is(Errc::kUnreachable))
      core->record_error(Status(why.code(), "reading on in " + range + ": " + why.message(), why.reason()));
    retry_later(e, [self = shared_from_this(), e] { self->adjust_window(e); });
  }

  void refilled(uint64_t e, size_t limit, std::vector<KeyValue> kvs) {
    std::string bound;
    const size_t keep = cut(kvs, limit, bound, growing_ ? 0 : held_bytes());
    ViewMap page;
    take_read(kvs, keep, page);
    // The changes since the read's revision to keys now inside.
    std::vector<Event> later;
    for (auto& ev : stash_) {
      if (bound.empty() || ev.kv.key < bound) later.push_back(std::move(ev));
    }
    stash_.clear();
    // Each of them inside the window now: decoded whatever the old bound.
    auto decoded = decode_puts(later, 0, later.size(), /*kept_only=*/false);
    (void)apply_events(page, later, 0, later.size(), nullptr, options.decode ? &decoded : nullptr);
    ViewBatch batch;
    batch.kind = ViewBatch::Kind::kChanged;
    batch.revision = revision;
    batch.events.reserve(page.size());
    for (const auto& [key, entry] : page) batch.events.push_back({ViewEvent::Type::kAdded, key, entry, std::nullopt});
    {
      std::lock_guard lock(mu);
      map.merge(page);
      bound_ = std::move(bound);
    }
    in_window_ += batch.events.size();
    refilling_ = false;
    deliver(batch);
    // A next key too big for the bytes the window holds waits for the
    // window to drain (the next batch), rather than being read again now.
    if (keep == 0 && !kvs.empty()) return;
    adjust_window(e);
  }

  void retry_later(uint64_t e, std::function<void()> step) {
    auto l = running();
    if (!l) return;
    retry_on_strand(
        l->strand(), failures_, timer_, static_cast<int>(options.max_backoff.count()),
        [self = shared_from_this(), e] { return self->stale(e); }, std::move(step));
  }

  // Reads the whole range at one revision (the first page picks it), page by
  // page, into `loading_`; the view keeps showing its old state meanwhile.
  void load(uint64_t e, Status cause) {
    watch_.cancel();
    watch_ = Watcher();
    ViewMap().swap(loading_);
    // The first read at Options::start_revision (if any), later ones at the newest.
    load_rev_ = initialized_here_ ? 0 : options.start_revision;
    next_key_ = range.empty() ? std::string(1, '\0') : range;
    if (windowed() && next_key_ >= full_end()) next_key_ = std::max(next_key_, options.window_from);
    page_end_.clear();
    page_keys_ = static_cast<size_t>(std::max<int64_t>(1, options.page_size));  // 0 would mean "no limit"
    refilling_ = false;
    stash_.clear();
    target_ = static_cast<size_t>(std::max<int64_t>(options.window, 0));
    loading_bound_.clear();
    cause_ = std::move(cause);
    read_page(e);
  }

  void read_page(uint64_t e) {
    auto l = running();
    if (!l) return;
    GetOptions page;
    // A windowed view reads the keys before window_from in pages, then the
    // window in one Range of target_ + 1 keys.
    const bool window_read = windowed() && next_key_ >= options.window_from;
    // The end of what this read pages through, and of this page (a slice
    // of it: page_slice.h; empty: to the end).
    const std::string& region_end = windowed() && !window_read ? full_end() : end;
    std::string slice = window_read || options.single_key ? std::string() : page_end_;
    if (!slice.empty() && slice >= region_end) slice.clear();
    if (!options.single_key) {
      page.range_end = slice.empty() ? region_end : slice;
      page.limit = window_read ? static_cast<int64_t>(target_ + 1) : static_cast<int64_t>(page_keys_);
    }
    page.revision = load_rev_;
    run_on_strand(l->strand(), l->client().get(next_key_, page), [self = shared_from_this(), e, window_read,
                                                                  slice = std::move(slice)](Result<GetResponse> r) {
      if (self->stale(e)) return;
      if (!r.ok()) return self->page_failed(e, r.status());
      self->failures_ = 0;
      {
        std::lock_guard lock(self->mu);
        ++self->pages;
      }
      if (self->load_rev_ == 0) self->load_rev_ = r->header.revision;
      if (window_read) {
        const size_t keep = self->cut(r->kvs, self->target_ + 1, self->loading_bound_);
        self->take_read(r->kvs, keep, self->loading_);
        return self->finish_load(e);
      }
      const bool more = r->more && !r->kvs.empty() && !self->options.single_key;
      // What this page covered begins at its first key (its start may lie
      // far before it: the range's prefix); the next page begins after its
      // last key, or at the end of its slice.
      const std::string start = r->kvs.empty() ? self->next_key_ : r->kvs.front().key;
      const bool sliced = !more && !slice.empty();
      if (more) self->next_key_ = r->kvs.back().key + '\0';
      if (sliced) self->next_key_ = slice;
      if (more || sliced) self->plan_page(start, r->kvs);
      // Pages arrive in key order.
      self->take_read(r->kvs, r->kvs.size(), self->loading_);
      if (more || sliced) return self->read_page(e);
      if (self->windowed()) {
        // The keys read in full are in: now the window.
        self->next_key_ = self->options.window_from;
        return self->read_page(e);
      }
      self->finish_load(e);
    });
  }

  // After a page [start, next_key_) that held `kvs`: how many keys the
  // next asks for (Options::page_size, fewer if its values would pass
  // kPageBytes) and where it ends (page_slice.h).
  void plan_page(const std::string& start, const std::vector<KeyValue>& kvs) {
    size_t bytes = 0;
    for (const auto& kv : kvs) bytes += kv.key.size() + kv.value.size();
    const size_t most = static_cast<size_t>(std::max<int64_t>(1, options.page_size));
    page_keys_ = most;
    if (!kvs.empty() && bytes > 0) {
      const size_t per_key = std::max<size_t>(1, bytes / kvs.size());
      page_keys_ = std::clamp<size_t>(kPageBytes / per_key, 1, most);
    }
    page_end_ = next_page_end(start, next_key_, kvs.size(), page_keys_);
  }

  void page_failed(uint64_t e, const Status& why) {
    if (why.is(Errc::kClosed)) return;  // the client is closed: nothing more to see
    if (why.is(Errc::kCompacted) && !initialized_here_ && options.start_revision > 0) {
      // The revision the owner asked to start from is gone: no silent
      // fallback to a newer one.
      return fail(Status(why.code(),
                         "reading " + range + " at revision " + std::to_string(options.start_revision) +
                             ": it was compacted (" + why.message() + ")",
                         Errc::kCompacted));
    }
    if (why.is(Errc::kCompacted) && load_rev_ != 0) {
      // The revision of the first page was compacted before the last one:
      // start over at the newest revision.
      return load(e, cause_);
    }
    // Retried either way; etcd out of reach (nothing listens) is a link
    // that is down, not a failure of the view.
    if (!transient(why) && !why.is(Errc::kUnreachable))
      core->record_error(Status(why.code(), "reading " + range + ": " + why.message(), why.reason()));
    retry_later(e, [self = shared_from_this(), e] { self->read_page(e); });
  }

  // The view cannot do what it was asked: it stops for good.
  void fail(Status why) {
    why = core->named(std::move(why));
    {
      std::lock_guard lock(mu);
      failed = why;
    }
    core->record_error(why);
    auto on_failed = options.on_failed;
    stop();
    waiters->fail_all(why);
    if (on_failed) on_failed(why);
  }

  void finish_load(uint64_t e) {
    ViewBatch batch;
    batch.revision = load_rev_;
    const bool first = !initialized_here_;
    if (first) {
      batch.kind = ViewBatch::Kind::kInitialized;
      if (options.initial_events) {
        batch.events.reserve(loading_.size());
        for (const auto& [key, entry] : loading_) batch.events.push_back({ViewEvent::Type::kAdded, key, entry, {}});
      }
    } else {
      batch.kind = ViewBatch::Kind::kResynced;
      batch.events = diff_views(map, loading_);
      batch.cause = cause_;
      core->log(LogLevel::kInfo,
                "view of " + range + " read again at revision " + std::to_string(load_rev_) + ": " +
                    std::to_string(batch.events.size()) + " differences reported",
                cause_);
    }
    {
      std::lock_guard lock(mu);
      map.swap(loading_);
      revision = load_rev_;
      initialized = true;
      if (!first) ++resyncs;
      bound_ = std::move(loading_bound_);
    }
    loading_bound_.clear();
    in_window_ = windowed() ? static_cast<size_t>(std::distance(map.lower_bound(options.window_from), map.end())) : 0;
    ViewMap().swap(loading_);
    applied_ = load_rev_;
    initialized_here_ = true;
    deliver(batch);
    if (first) waiters->set_ready(true);
    if (stale(e)) return;  // the handler closed the owner
    watch(e, load_rev_ + 1);
    adjust_window(e);
  }

  void watch(uint64_t e, int64_t from) {
    auto l = running();
    if (!l) return;
    WatchOptions w;
    w.prefix = !options.single_key && options.range_end.empty();
    if (!options.single_key) w.range_end = options.range_end;
    w.start_revision = from;
    w.executor = Executor(l->strand());
    watch_ = l->client().watch(range, w, [self = shared_from_this(), e](Result<WatchResponse> r) {
      if (self->stale(e)) return;
      if (!r.ok()) return self->gap(r.status());
      self->on_response(e, *r);
    });
  }

  void on_response(uint64_t e, const WatchResponse& r) {
    const auto& events = r.events;
    if (events.empty()) {
      if (r.progress) {
        std::lock_guard lock(mu);
        revision = std::max(revision, r.header.revision);
      }
      return;
    }
    // One batch per revision: a Txn's changes arrive together (etcd never
    // splits a revision across watch responses unless asked to fragment).
    for (size_t i = 0; i < events.size();) {
      const int64_t rev = events[i].kv.mod_revision;
      size_t j = i;
      while (j < events.size() && events[j].kv.mod_revision == rev) ++j;
      // Only a revision the view has applied (read or watched) makes a
      // later event a repeat; a progress notification never does: it may
      // claim a revision whose events are still on their way.
      if (rev > applied_) {
        applied_ = rev;
        ViewBatch batch;
        batch.kind = ViewBatch::Kind::kChanged;
        batch.revision = rev;
        auto decoded = decode_puts(events, i, j, /*kept_only=*/true);
        if (refilling_) {
          // Past the bound while the view reads on from it: kept for the
          // keys that read brings in.
          for (size_t k = i; k < j; ++k) {
            if (outside(events[k].kv.key) && accepted(events[k].kv.key)) stash_.push_back(events[k]);
          }
        }
        {
          std::lock_guard lock(mu);
          batch.events = apply_events(map, events, i, j, keeps_, options.decode ? &decoded : nullptr);
          revision = std::max(revision, rev);
        }
        for (const auto& ev : batch.events) {
          if (!in_window(ev.key)) continue;
          if (ev.type == ViewEvent::Type::kAdded) ++in_window_;
          if (ev.type == ViewEvent::Type::kRemoved) --in_window_;
        }
        if (!batch.events.empty()) {
          deliver(batch);
          if (stale(e)) return;
        }
      }
      i = j;
    }
    adjust_window(e);
  }

  // The keys the view holds: those its owner accepts, within the window.
  bool keeps(std::string_view key) const { return accepted(key) && !outside(key); }

  // The watch ended: it cannot go on without a gap (compaction while cut
  // off) or it failed. Read again and report what changed meanwhile.
  void gap(const Status& why) {
    watch_ = Watcher();
    if (why.is(Errc::kClosed)) return;  // the client is closed
    const bool compacted = why.is(Errc::kResyncNeeded) || why.is(Errc::kCompacted);
    if (!compacted)
      core->record_error(Status(why.code(), "watch of " + range + " ended: " + why.message(), why.reason()));
    const uint64_t next = ++epoch_;
    if (compacted) return load(next, why);
    retry_later(next, [self = shared_from_this(), next, why] { self->load(next, why); });
  }

  void deliver(ViewBatch& batch) {
    if (!handler_) return;
    batch.window_end = bound_;
    batch.state = &map;  // read on the strand, where it is written: no lock needed
    try {
      handler_(batch);
    } catch (const std::exception& ex) {
      core->record_error(Status(StatusCode::kUnknown, std::string("a view handler threw: ") + ex.what()));
    } catch (...) {
      core->record_error(Status(StatusCode::kUnknown, "a view handler threw"));
    }
    batch.state = nullptr;
  }

  Handler handler_;
  bool stopped_ = false;
  bool initialized_here_ = false;
  // The newest revision whose changes the view has applied: by its read or
  // by the watch. Events at or below it are repeats.
  int64_t applied_ = 0;
  uint64_t epoch_ = 0;
  int failures_ = 0;
  std::shared_ptr<asio::steady_timer> timer_;
  Watcher watch_;
  Subscription close_sub_;
  // The read in progress.
  ViewMap loading_;
  int64_t load_rev_ = 0;
  std::string next_key_;
  Status cause_;
  std::string loading_bound_;
  // The next page of a load: how many keys it asks for, and where it ends
  // (empty: the end of what is paged through).
  static constexpr size_t kPageBytes = 4 << 20;
  size_t page_keys_ = 1;
  std::string page_end_;
  // The window (besides bound_): its size now (target_, grown by grow());
  // how many keys it holds; a read on from the bound in flight, and the
  // changes past the bound that came meanwhile.
  size_t target_ = 0;
  size_t in_window_ = 0;
  bool refilling_ = false;
  bool growing_ = false;  // the refill in flight is a grow()
  std::vector<Event> stash_;
  const std::function<bool(std::string_view)> keeps_ = [this](std::string_view key) { return keeps(key); };
};

std::shared_ptr<PrefixView> PrefixView::create(std::shared_ptr<RecipeCore> core, std::string range, Options options,
                                               Handler handler) {
  return std::shared_ptr<PrefixView>(
      new PrefixView(std::move(core), std::move(range), std::move(options), std::move(handler)));
}

PrefixView::PrefixView(std::shared_ptr<RecipeCore> core, std::string range, Options options, Handler handler)
    : range_(range),
      impl_(std::make_shared<Impl>(std::move(core), std::move(range), std::move(options), std::move(handler))) {}

PrefixView::~PrefixView() {
  // Nobody can look at the view any more: stop its background work (if it
  // runs) so it lets go of the client.
  if (auto link = impl_->running()) asio::post(link->strand(), [impl = impl_] { impl->stop(); });
}

void PrefixView::start() {
  auto impl = impl_;
  auto link = impl->core->link();
  if (impl->core->closed() || !link) return;
  {
    std::lock_guard lock(impl->mu);
    if (impl->started) return;
    impl->started = true;
    impl->link = link;
  }
  asio::post(link->strand(), [impl] { impl->begin(); });
}

Call<void> PrefixView::wait_initialized() {
  auto impl = impl_;
  return impl->core->call<void>([impl](CallOptions options, Callback<void> done) {
    if (impl->core->closed()) return done(impl->core->closed_status());
    {
      std::unique_lock lock(impl->mu);
      if (!impl->started) {
        lock.unlock();
        return done(impl->core->named(Status(StatusCode::kFailedPrecondition, "not started (call start() first)")));
      }
    }
    Status failed;
    {
      std::lock_guard lock(impl->mu);
      failed = impl->failed;
    }
    if (!failed.ok()) return done(failed);
    impl->waiters->add(options, std::move(done), "the first read of " + impl->range);
  });
}

bool PrefixView::initialized() const {
  std::lock_guard lock(impl_->mu);
  return impl_->initialized;
}

int64_t PrefixView::revision() const {
  std::lock_guard lock(impl_->mu);
  return impl_->revision;
}

std::optional<ViewEntry> PrefixView::get(std::string_view key) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->map.find(key);
  if (it == impl_->map.end()) return std::nullopt;
  return it->second;
}

size_t PrefixView::size() const {
  std::lock_guard lock(impl_->mu);
  return impl_->map.size();
}

ViewSnapshot PrefixView::snapshot() const {
  std::lock_guard lock(impl_->mu);
  return ViewSnapshot{impl_->map, impl_->initialized ? impl_->revision : 0};
}

void PrefixView::read(const std::function<void(const ViewMap&, int64_t)>& f) const {
  std::lock_guard lock(impl_->mu);
  f(impl_->map, impl_->revision);
}

void PrefixView::resync() {
  auto impl = impl_;
  if (auto link = impl->running()) asio::post(link->strand(), [impl] { impl->request_resync(); });
}

void PrefixView::grow() {
  auto impl = impl_;
  if (auto link = impl->running()) asio::post(link->strand(), [impl] { impl->request_grow(); });
}

uint64_t PrefixView::pages_read() const {
  std::lock_guard lock(impl_->mu);
  return impl_->pages;
}

uint64_t PrefixView::resyncs() const {
  std::lock_guard lock(impl_->mu);
  return impl_->resyncs;
}

}  // namespace etcd::recipes::detail
