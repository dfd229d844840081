// NodeCache and PathChildrenCache (include/etcd/recipes/node_cache.h,
// path_children_cache.h): a thin driver over a PrefixView. The view does
// the anchored read, the watch, and the resync after a gap, and keeps the
// one copy of the data (the typed layer's decoded values ride in its
// entries); this file turns its batches into the caches' events and
// reports values that do not decode.
#include <asio/post.hpp>
#include <asio/system_executor.hpp>

#include "../core/client_link.h"
#include "../core/prefix_view.h"
#include "../core/recipe_core.h"
#include "../core/view_lifecycle.h"
#include "client/listener_set.h"
#include "etcd/recipes/cached_node.h"

namespace etcd::recipes::detail {

namespace {

RawNode raw_node(const std::string& key, size_t prefix_size, const ViewEntry& e) {
  RawNode n;
  n.key = key;
  n.name = prefix_size ? std::string_view(key).substr(prefix_size) : std::string_view(key);
  n.bytes = e.value;
  n.decoded = e.decoded ? &e.decoded : nullptr;
  n.create_revision = e.create_revision;
  n.mod_revision = e.mod_revision;
  n.version = e.version;
  n.lease = e.lease;
  return n;
}

// PathChildrenCacheOptions::StartMode, as CacheConfig carries it.
constexpr int kBuildInitialCache = 1;
constexpr int kPostInitializedEvent = 2;

}  // namespace

class CacheState : public std::enable_shared_from_this<CacheState> {
 public:
  CacheState(Client client, std::string path, CacheConfig config, CacheCodec codec, RecipeOptions options, Status input)
      : core(std::make_shared<RecipeCore>(std::move(client), config.kind, path, std::move(options), std::move(input))),
        config_(config),
        codec_(std::move(codec)),
        range_(config.single_key ? path : path + "/"),
        labels_{{"path", path}} {}

  // Called once, right after construction: the view's handler refers back
  // to this state weakly (the view lives inside it).
  void attach() {
    PrefixView::Options o;
    o.single_key = config_.single_key;
    o.page_size = config_.page_size;
    o.decode = codec_.decode;
    if (!config_.single_key && !config_.subtree) {
      const size_t n = range_.size();
      o.accept = [n](std::string_view key) { return key.find('/', n) == std::string_view::npos; };
    }
    o.initial_events = !config_.single_key && config_.start_mode != kBuildInitialCache;
    view = ViewLifecycle::attach(shared_from_this(), core, range_, std::move(o));
  }

  const std::shared_ptr<RecipeCore> core;
  std::shared_ptr<PrefixView> view;  // set by attach()
  ListenerSet<const RawEvent&> listeners;

  const std::string& range() const { return range_; }
  size_t name_offset() const { return config_.single_key ? 0 : range_.size(); }

 private:
  friend class ViewLifecycle;  // reaches start(), stop() and on_batch()

  void start() { lifecycle_.start(core, *view); }

  // After the close gate (which wakes wait_initialized() and stops the view).
  void stop() {
    lifecycle_.stop();
    // Listeners may own what owns this cache.
    listeners.clear();
  }

  // On the strand: one revision's changes, the first read, or a resync.
  // Listeners run here and now (ListenerSet::call), so that each sees the
  // cache as it is after its event's revision, and events keep their order.
  void on_batch(const ViewBatch& batch) {
    const ThrowSink sink = core->throw_sink();
    const size_t offset = name_offset();
    const bool resync = batch.kind == ViewBatch::Kind::kResynced;
    if (resync) core->metrics().add("etcd_recipes_cache_resyncs_total", labels_, 1);

    if (batch.kind == ViewBatch::Kind::kInitialized) {
      if (batch.events.empty()) {
        // No per-key events (node cache, or kBuildInitialCache): the
        // first read's undecodable values are reported from the state.
        for (const auto& kv : *batch.state) report_undecodable(kv.second);
      }
      if (config_.single_key) {
        RawEvent e;
        e.type = RawEvent::Type::kInitialized;
        e.key = range_;
        e.name = range_;
        e.revision = batch.revision;
        std::optional<RawNode> current;
        if (auto it = batch.state->find(range_); it != batch.state->end()) {
          current = raw_node(it->first, 0, it->second);
          e.current = &*current;
        }
        listeners.call(sink, e);
        publish_size(batch);
        return;
      }
    }

    for (const ViewEvent& ev : batch.events) {
      RawEvent e;
      e.key = ev.key;
      e.name = std::string_view(ev.key).substr(offset);
      e.revision = batch.revision;
      e.resync = resync;
      RawNode entry = raw_node(ev.key, offset, ev.entry);
      std::optional<RawNode> previous;
      switch (ev.type) {
        case ViewEvent::Type::kAdded:
          e.type = RawEvent::Type::kAdded;
          e.current = &entry;
          break;
        case ViewEvent::Type::kUpdated:
          e.type = RawEvent::Type::kUpdated;
          e.current = &entry;
          if (ev.previous) {
            previous = raw_node(ev.key, offset, *ev.previous);
            e.previous = &*previous;
          }
          break;
        case ViewEvent::Type::kRemoved:
          e.type = RawEvent::Type::kRemoved;
          e.previous = &entry;
          break;
      }
      if (ev.type != ViewEvent::Type::kRemoved) report_undecodable(ev.entry);
      listeners.call(sink, e);
    }
    if (!batch.events.empty()) {
      core->metrics().add("etcd_recipes_cache_events_total", labels_, static_cast<double>(batch.events.size()));
    }

    if (!config_.single_key) {
      const bool post_initialized =
          batch.kind == ViewBatch::Kind::kInitialized && config_.start_mode == kPostInitializedEvent;
      if (post_initialized || resync) {
        RawEvent e;
        e.type = resync ? RawEvent::Type::kReset : RawEvent::Type::kInitialized;
        e.revision = batch.revision;
        e.resync = resync;
        if (resync) e.cause = &batch.cause;
        listeners.call(sink, e);
      }
    }
    publish_size(batch);
  }

  void publish_size(const ViewBatch& batch) {
    core->metrics().set("etcd_recipes_cache_keys", labels_, static_cast<double>(batch.state->size()));
  }

  void report_undecodable(const ViewEntry& entry) {
    if (!entry.decoded || !codec_.error_of) return;
    if (const Status* why = codec_.error_of(entry.decoded.get())) {
      core->metrics().add("etcd_recipes_cache_decode_failures_total", labels_, 1);
      core->record_error(*why);
    }
  }

  const CacheConfig config_;
  const CacheCodec codec_;
  const std::string range_;
  const Labels labels_;
  ViewLifecycle lifecycle_;
};

// --- CacheBase ------------------------------------------------------------------------

CacheBase::CacheBase(Client client, std::string path, CacheConfig config, CacheCodec codec, RecipeOptions options,
                     Status input)
    : state_(std::make_shared<CacheState>(std::move(client), std::move(path), config, std::move(codec),
                                          std::move(options), std::move(input))) {
  state_->attach();
  bind_recipe(state_->core);
}

Call<void> CacheBase::wait_initialized() {
  auto s = state_;
  if (!s->core->input().ok()) return s->core->ready<void>(s->core->input());
  return s->view->wait_initialized();
}

bool CacheBase::initialized() const { return state_->view->initialized(); }
int64_t CacheBase::revision() const { return state_->view->revision(); }
size_t CacheBase::size() const { return state_->view->size(); }
uint64_t CacheBase::resyncs() const { return state_->view->resyncs(); }

Subscription CacheBase::add_listener(std::function<void(const RawEvent&)> listener) {
  return state_->listeners.add(std::move(listener));
}

void CacheBase::read_all(const std::function<void(const RawNode&)>& f) const {
  const size_t offset = state_->name_offset();
  state_->view->read([&](const ViewMap& map, int64_t) {
    for (const auto& [key, entry] : map) f(raw_node(key, offset, entry));
  });
}

bool CacheBase::read_one(std::string_view key, const std::function<void(const RawNode&)>& f) const {
  const size_t offset = state_->name_offset();
  bool found = false;
  state_->view->read([&](const ViewMap& map, int64_t) {
    auto it = map.find(key);
    if (it == map.end()) return;
    // A name lookup in direct-children scope never finds a deeper key:
    // the view does not store one.
    found = true;
    f(raw_node(it->first, offset, it->second));
  });
  return found;
}

const std::string& CacheBase::range() const { return state_->range(); }

Executor CacheBase::stream_executor() const {
  auto link = state_->core->link();
  return link ? link->executor() : Executor(asio::system_executor());
}

Subscription CacheBase::on_closed(std::function<void()> fn) const { return state_->core->on_close(std::move(fn)); }

}  // namespace etcd::recipes::detail
