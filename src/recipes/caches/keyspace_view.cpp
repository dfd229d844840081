// KeyspaceView (include/etcd/recipes/keyspace_view.h): a thin driver over
// a PrefixView, the one engine of every view of a range (the caches'
// too). The view does the anchored read, the watch and the resync after a
// gap; this file turns its batches into the public events, fans them out to
// listeners and streams, and folds a full stream's buffer into one reset.
#include "etcd/recipes/keyspace_view.h"

#include <algorithm>
#include <asio/system_executor.hpp>
#include <deque>
#include <map>
#include <mutex>
#include <utility>

#include "../core/client_link.h"
#include "../core/prefix_view.h"
#include "../core/recipe_core.h"
#include "../core/view_lifecycle.h"
#include "client/listener_set.h"

namespace etcd::recipes {

std::string_view to_string(KeyspaceEvent::Type type) noexcept {
  switch (type) {
    case KeyspaceEvent::Type::kAdded:
      return "added";
    case KeyspaceEvent::Type::kUpdated:
      return "updated";
    case KeyspaceEvent::Type::kRemoved:
      return "removed";
    case KeyspaceEvent::Type::kInitialized:
      return "initialized";
    case KeyspaceEvent::Type::kReset:
      return "reset";
  }
  return "unknown";
}

namespace detail {

namespace {

Status keyspace_view_input(const std::string& key, const KeyspaceViewOptions& o) {
  if (key.size() >= 2 && key.compare(key.size() - 2, 2, "//") == 0) {
    return InvalidArgument("the key must not end with \"//\" (an empty segment)");
  }
  if (o.page_size < 1) return InvalidArgument("page_size must be at least 1 (got " + std::to_string(o.page_size) + ")");
  if (o.start == KeyspaceViewOptions::Start::kFromRevision && o.start_revision < 1) {
    return InvalidArgument("start kFromRevision needs a start_revision of at least 1 (got " +
                           std::to_string(o.start_revision) + ")");
  }
  if (o.start != KeyspaceViewOptions::Start::kFromRevision && o.start_revision != 0) {
    return InvalidArgument("start_revision is only for start kFromRevision");
  }
  if (!o.range_end.empty() && o.range_end != kFromKey && o.range_end <= key) {
    return InvalidArgument("range_end must sort after the key (an empty range)");
  }
  return Status();
}

// The view's name, as every recipe's, in errors and metrics: the key, with
// a '*' after a trailing '/' ("/config/*": a name never ends with '/').
std::string keyspace_view_name(const std::string& key) { return !key.empty() && key.back() == '/' ? key + "*" : key; }

std::string keyspace_view_end(const std::string& key, const KeyspaceViewOptions& o) {
  return o.range_end.empty() ? prefix_range_end(key) : o.range_end;
}

KeyspaceEvent keyspace_event_of(const ViewEvent& ev, int64_t revision) {
  KeyspaceEvent e;
  e.key = ev.key;
  e.revision = revision;
  switch (ev.type) {
    case ViewEvent::Type::kAdded:
      e.type = KeyspaceEvent::Type::kAdded;
      e.current = to_kv(ev.key, ev.entry);
      break;
    case ViewEvent::Type::kUpdated:
      e.type = KeyspaceEvent::Type::kUpdated;
      e.current = to_kv(ev.key, ev.entry);
      if (ev.previous) e.previous = to_kv(ev.key, *ev.previous);
      break;
    case ViewEvent::Type::kRemoved:
      e.type = KeyspaceEvent::Type::kRemoved;
      e.previous = to_kv(ev.key, ev.entry);
      break;
  }
  return e;
}

// A full stream buffer (plus the newest event at its end) folded into one
// kReset: per key, what the consumer last saw (before the first buffered
// event about it) against what it is after the last; keys that end as they
// began are left out. A kInitialized marker in the buffer follows the reset.
void collapse_keyspace_events(std::deque<KeyspaceEvent>& buffer) {
  std::map<std::string, std::pair<std::optional<KeyValue>, std::optional<KeyValue>>> net;
  bool initialized = false;
  int64_t revision = 0;
  const auto fold = [&net](const KeyspaceEvent& e) {
    auto [it, first] = net.try_emplace(e.key);
    if (first) it->second.first = e.previous;
    it->second.second = e.current;
  };
  for (const auto& e : buffer) {
    revision = std::max(revision, e.revision);
    switch (e.type) {
      case KeyspaceEvent::Type::kAdded:
      case KeyspaceEvent::Type::kUpdated:
      case KeyspaceEvent::Type::kRemoved:
        fold(e);
        break;
      case KeyspaceEvent::Type::kReset:
        for (const auto& c : e.changes) fold(c);
        break;
      case KeyspaceEvent::Type::kInitialized:
        initialized = true;
        break;
    }
  }
  KeyspaceEvent reset;
  reset.type = KeyspaceEvent::Type::kReset;
  reset.revision = revision;
  reset.cause = Status(StatusCode::kResourceExhausted,
                       "the stream's consumer fell behind: its buffered events were folded into their differences");
  for (auto& [key, change] : net) {
    auto& [before, after] = change;
    if (before == after) continue;
    KeyspaceEvent c;
    c.type = !before  ? KeyspaceEvent::Type::kAdded
             : !after ? KeyspaceEvent::Type::kRemoved
                      : KeyspaceEvent::Type::kUpdated;
    c.key = key;
    c.previous = std::move(before);
    c.current = std::move(after);
    c.revision = revision;
    reset.changes.push_back(std::move(c));
  }
  buffer.clear();
  buffer.push_back(std::move(reset));
  if (initialized) {
    KeyspaceEvent marker;
    marker.type = KeyspaceEvent::Type::kInitialized;
    marker.revision = revision;
    buffer.push_back(std::move(marker));
  }
}

}  // namespace

class KeyspaceViewState : public std::enable_shared_from_this<KeyspaceViewState> {
 public:
  using Channel = etcd::detail::StreamChannel<KeyspaceEvent>;

  KeyspaceViewState(Client client, std::string key, KeyspaceViewOptions options)
      : core(std::make_shared<RecipeCore>(client, "KeyspaceView", keyspace_view_name(key), options.recipe,
                                          keyspace_view_input(key, options))),
        options_(std::move(options)),
        key_(key),
        range_(key),
        end_(keyspace_view_end(key, options_)),
        labels_{{"prefix", key}} {}

  void attach() {
    PrefixView::Options o;
    o.range_end = end_;
    o.page_size = options_.page_size;
    o.initial_events = options_.start == KeyspaceViewOptions::Start::kWithSnapshot;
    if (options_.start == KeyspaceViewOptions::Start::kFromRevision) o.start_revision = options_.start_revision;
    std::weak_ptr<KeyspaceViewState> weak = shared_from_this();
    o.on_failed = [weak](const Status& why) {
      if (auto self = weak.lock()) self->end_streams(why);
    };
    view = ViewLifecycle::attach(shared_from_this(), core, range_, std::move(o));
  }

  const std::shared_ptr<RecipeCore> core;
  std::shared_ptr<PrefixView> view;  // set by attach()
  ListenerSet<const KeyspaceEvent&> listeners;

  const std::string& key() const { return key_; }
  const std::string& range_end() const { return end_; }

  Stream<KeyspaceEvent> open_stream(StreamOptions options) {
    std::weak_ptr<KeyspaceViewState> weak = shared_from_this();
    // The client's executor while the view is open (asio's system executor
    // once it is done: such a stream has ended already).
    auto link = core->link();
    auto channel = std::make_shared<Channel>(
        link ? link->executor() : Executor(asio::system_executor()), options, etcd::detail::StreamOverflow::kCollapse,
        [weak](std::deque<KeyspaceEvent>& buffer) {
          collapse_keyspace_events(buffer);
          if (auto self = weak.lock())
            self->core->metrics().add("etcd_recipes_view_stream_overflows_total", self->labels_, 1);
        });
    std::weak_ptr<Channel> wc = channel;
    auto sub = std::make_shared<Subscription>(listeners.add([wc](const KeyspaceEvent& e) {
      if (auto ch = wc.lock()) ch->push(e);
    }));
    Status ended;
    bool over = false;
    {
      std::lock_guard lock(mu_);
      std::erase_if(streams_, [](const std::weak_ptr<Channel>& c) { return c.expired(); });
      if (stopped_) {
        over = true;
        ended = failed_;
      } else {
        streams_.push_back(channel);
      }
    }
    channel->on_end([sub] { sub->reset(); });
    if (over) channel->finish(ended);
    return Stream<KeyspaceEvent>(std::move(channel));
  }

 private:
  friend class ViewLifecycle;  // reaches start(), stop() and on_batch()

  void start() { lifecycle_.start(core, *view); }

  void stop() {
    lifecycle_.stop();
    end_streams(Status());
    // Listeners may own what owns this view.
    listeners.clear();
  }

  // Ends every open stream: after what it buffered, with `why` (OK: the end).
  void end_streams(const Status& why) {
    std::vector<std::weak_ptr<Channel>> streams;
    {
      std::lock_guard lock(mu_);
      if (stopped_) return;
      stopped_ = true;
      failed_ = why;
      streams.swap(streams_);
    }
    for (auto& w : streams) {
      if (auto ch = w.lock()) ch->finish(why);
    }
  }

  // On the strand: the first read, one revision's changes, or a resync.
  void on_batch(const ViewBatch& batch) {
    const ThrowSink sink = core->throw_sink();
    size_t delivered = 0;
    const auto deliver = [&](const KeyspaceEvent& e) {
      ++delivered;
      listeners.call(sink, e);
    };
    switch (batch.kind) {
      case ViewBatch::Kind::kInitialized: {
        for (const auto& ev : batch.events) deliver(keyspace_event_of(ev, batch.revision));
        KeyspaceEvent marker;
        marker.type = KeyspaceEvent::Type::kInitialized;
        marker.revision = batch.revision;
        deliver(marker);
        break;
      }
      case ViewBatch::Kind::kChanged:
        for (const auto& ev : batch.events) deliver(keyspace_event_of(ev, batch.revision));
        break;
      case ViewBatch::Kind::kResynced: {
        core->metrics().add("etcd_recipes_view_resyncs_total", labels_, 1);
        KeyspaceEvent reset;
        reset.type = KeyspaceEvent::Type::kReset;
        reset.revision = batch.revision;
        reset.cause = batch.cause;
        reset.changes.reserve(batch.events.size());
        for (const auto& ev : batch.events) reset.changes.push_back(keyspace_event_of(ev, batch.revision));
        deliver(reset);
        break;
      }
    }
    core->metrics().add("etcd_recipes_view_events_total", labels_, static_cast<double>(delivered));
    core->metrics().set("etcd_recipes_view_keys", labels_, static_cast<double>(batch.state->size()));
  }

  const KeyspaceViewOptions options_;
  const std::string key_;
  const std::string range_;
  const std::string end_;
  const Labels labels_;
  std::mutex mu_;
  bool stopped_ = false;
  Status failed_;
  std::vector<std::weak_ptr<Channel>> streams_;
  ViewLifecycle lifecycle_;
};

}  // namespace detail

KeyspaceView::KeyspaceView(Client client, std::string key)
    : KeyspaceView(std::move(client), std::move(key), KeyspaceViewOptions()) {}

KeyspaceView::KeyspaceView(Client client, std::string key, KeyspaceViewOptions options)
    : state_(std::make_shared<detail::KeyspaceViewState>(std::move(client), std::move(key), std::move(options))) {
  state_->attach();
  bind_recipe(state_->core);
}

const std::string& KeyspaceView::key() const { return state_->key(); }
const std::string& KeyspaceView::range_end() const { return state_->range_end(); }

Call<void> KeyspaceView::wait_initialized() {
  auto s = state_;
  if (!s->core->input().ok()) return s->core->ready<void>(s->core->input());
  return s->view->wait_initialized();
}

bool KeyspaceView::initialized() const { return state_->view->initialized(); }
int64_t KeyspaceView::revision() const { return state_->view->revision(); }
size_t KeyspaceView::size() const { return state_->view->size(); }
uint64_t KeyspaceView::resyncs() const { return state_->view->resyncs(); }
void KeyspaceView::resync() { state_->view->resync(); }

std::optional<KeyValue> KeyspaceView::get(std::string_view key) const {
  std::optional<KeyValue> out;
  state_->view->read([&](const detail::ViewMap& map, int64_t) {
    if (auto it = map.find(key); it != map.end()) out = detail::to_kv(it->first, it->second);
  });
  return out;
}

KeyspaceSnapshot KeyspaceView::snapshot() const {
  KeyspaceSnapshot out;
  const bool initialized = state_->view->initialized();
  state_->view->read([&](const detail::ViewMap& map, int64_t revision) {
    out.kvs.reserve(map.size());
    for (const auto& [key, entry] : map) out.kvs.push_back(detail::to_kv(key, entry));
    out.revision = initialized ? revision : 0;
  });
  return out;
}

Subscription KeyspaceView::on_event(std::function<void(const KeyspaceEvent&)> listener) {
  return state_->listeners.add(std::move(listener));
}

Stream<KeyspaceEvent> KeyspaceView::events(StreamOptions options) { return state_->open_stream(options); }

}  // namespace etcd::recipes
