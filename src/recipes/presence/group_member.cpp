// GroupMember (include/etcd/recipes/group_member.h): composed from a
// transient key (this member's GROUP/ID: joining, payload updates, loss and
// re-join are all the transient key's) and a PrefixView over GROUP/ (the
// member list, gap-free). The group's core owns both: its start starts
// them, its close closes them, and the transient key's errors and states
// are the group's.
#include "etcd/recipes/group_member.h"

#include <utility>

#include "../core/calls.h"
#include "../core/prefix_view.h"
#include "../core/recipe_core.h"
#include "client/listener_set.h"
#include "etcd/recipes/transient.h"

namespace etcd::recipes::detail {

namespace {

Status check_group_member_id(const std::string& id) {
  if (id.empty()) return InvalidArgument("GroupMember: the member id must not be empty");
  if (id.find('/') != std::string::npos) {
    return InvalidArgument("GroupMember: the member id '" + id + "' must not contain '/' (one path segment)");
  }
  if (id.find('\0') != std::string::npos) return InvalidArgument("GroupMember: the member id must not contain NUL");
  return Status();
}

GroupEvent::Type group_event_type(ViewEvent::Type t) {
  switch (t) {
    case ViewEvent::Type::kAdded:
      return GroupEvent::Type::kJoined;
    case ViewEvent::Type::kUpdated:
      return GroupEvent::Type::kUpdated;
    case ViewEvent::Type::kRemoved:
      break;
  }
  return GroupEvent::Type::kLeft;
}

}  // namespace

class GroupMemberState : public std::enable_shared_from_this<GroupMemberState> {
 public:
  GroupMemberState(Client client, std::string group, std::string member_id, std::string payload, RecipeOptions options)
      : core(std::make_shared<RecipeCore>(client, "GroupMember", group, options, check_group_member_id(member_id))),
        id(std::move(member_id)),
        key(group + "/" + id),
        member(std::move(client), key, std::move(payload), options),
        prefix_(group + "/"),
        labels_{{"group", std::move(group)}} {}

  void attach() {
    PrefixView::Options o;
    const size_t n = prefix_.size();
    o.accept = [n](std::string_view k) { return k.size() > n && k.find('/', n) == std::string_view::npos; };
    o.initial_events = true;
    std::weak_ptr<GroupMemberState> weak = shared_from_this();
    view = PrefixView::create(core, prefix_, std::move(o), [weak](const ViewBatch& batch) {
      if (auto self = weak.lock()) self->on_batch(batch);
    });
    // The member key's failures and states are the group's.
    std::weak_ptr<RecipeCore> weak_core = core;
    error_sub_ = member.on_error([weak_core](const Status& why) {
      if (auto c = weak_core.lock()) c->record_error(why);
    });
    state_sub_ = member.on_state_change([weak_core](ConnectionState s) {
      if (auto c = weak_core.lock()) c->set_state(s);
    });
    core->set_start_action([weak] {
      if (auto self = weak.lock()) self->start();
    });
    core->set_close_action([weak] {
      if (auto self = weak.lock()) self->stop();
    });
  }

  const std::shared_ptr<RecipeCore> core;
  const std::string id;
  const std::string key;
  TransientKeyValue member;
  std::shared_ptr<PrefixView> view;  // set by attach()
  ListenerSet<const GroupEvent&> listeners;

  const std::string& prefix() const { return prefix_; }

 private:
  void start() {
    {
      std::lock_guard lock(mu_);
      if (started_) return;
      started_ = true;
    }
    try {
      member.start();
    } catch (const Error& e) {
      core->record_error(e.status());
    }
    view->start();
  }

  void stop() {
    Subscription errors;
    Subscription states;
    {
      std::lock_guard lock(mu_);
      errors = std::move(error_sub_);
      states = std::move(state_sub_);
    }
    member.close();
    listeners.clear();  // they may own what owns this object
  }

  // On the strand: the first read, one revision's changes, or a resync.
  void on_batch(const ViewBatch& batch) {
    const bool initial = batch.kind == ViewBatch::Kind::kInitialized;
    const bool resync = batch.kind == ViewBatch::Kind::kResynced;
    if (resync) core->metrics().add("etcd_recipes_group_resyncs_total", labels_, 1);
    const ThrowSink sink = core->throw_sink();
    for (const ViewEvent& ev : batch.events) {
      GroupEvent e;
      e.type = group_event_type(ev.type);
      e.id = ev.key.substr(prefix_.size());
      e.payload = ev.entry.value;
      if (ev.previous) e.previous_payload = ev.previous->value;
      e.revision = batch.revision;
      e.initial = initial;
      e.resync = resync;
      listeners.call(sink, e);
    }
    if (!initial && !batch.events.empty()) {
      core->metrics().add("etcd_recipes_group_changes_total", labels_, static_cast<double>(batch.events.size()));
    }
    core->metrics().set("etcd_recipes_group_members", labels_, static_cast<double>(batch.state->size()));
  }

  const std::string prefix_;
  const Labels labels_;

  std::mutex mu_;
  bool started_ = false;
  Subscription error_sub_;
  Subscription state_sub_;
};

}  // namespace etcd::recipes::detail

namespace etcd::recipes {

using detail::CallAccess;

GroupMember::GroupMember(Client client, std::string group, std::string id, std::string payload)
    : GroupMember(std::move(client), std::move(group), std::move(id), std::move(payload), RecipeOptions()) {}

GroupMember::GroupMember(Client client, std::string group, std::string id, std::string payload, RecipeOptions options)
    : state_(std::make_shared<detail::GroupMemberState>(std::move(client), std::move(group), std::move(id),
                                                        std::move(payload), std::move(options))) {
  state_->attach();
  bind_recipe(state_->core);
}

const std::string& GroupMember::id() const { return state_->id; }
const std::string& GroupMember::member_key() const { return state_->key; }

Call<void> GroupMember::join() {
  if (Status st = state_->core->usable(); !st.ok()) return state_->core->ready<void>(st);
  return state_->member.create();
}

Call<void> GroupMember::set_payload(std::string payload) {
  if (Status st = state_->core->usable(); !st.ok()) return state_->core->ready<void>(st);
  return state_->member.set_value(std::move(payload));
}

std::string GroupMember::payload() const { return state_->member.value(); }

Call<bool> GroupMember::leave() {
  return state_->core->call<bool>([state = state_](CallOptions, Callback<bool> done) {
    if (Status st = state->core->input(); !st.ok()) return done(st);
    CallAccess::start_inline(state->member.release(), [state, done = std::move(done)](Result<bool> r) mutable {
      state->core->close();
      done(std::move(r));
    });
  });
}

bool GroupMember::is_member() const { return state_->member.is_held(); }
int64_t GroupMember::lease() const { return state_->member.lease(); }

std::map<std::string, std::string> GroupMember::members() const {
  std::map<std::string, std::string> out;
  const size_t n = state_->prefix().size();
  state_->view->read([&](const detail::ViewMap& map, int64_t) {
    for (const auto& [k, e] : map) out.emplace(k.substr(n), e.value);
  });
  return out;
}

int64_t GroupMember::revision() const { return state_->view->revision(); }

Call<void> GroupMember::wait_initialized() {
  if (Status st = state_->core->input(); !st.ok()) return state_->core->ready<void>(st);
  return state_->view->wait_initialized();
}

uint64_t GroupMember::resyncs() const { return state_->view->resyncs(); }

Subscription GroupMember::on_change(std::function<void(const GroupEvent&)> listener) {
  return state_->listeners.add(std::move(listener));
}
Subscription GroupMember::on_lost(std::function<void(const Status&)> listener) {
  return state_->member.on_lost(std::move(listener));
}
Subscription GroupMember::on_restored(std::function<void()> listener) {
  return state_->member.on_restored(std::move(listener));
}

}  // namespace etcd::recipes
