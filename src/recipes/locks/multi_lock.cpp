// MultiLock: one DistributedMutex per name (mutex.h), taken in one global
// order over one shared session, and a multi-hold that ends with the first
// of its names lost. Layout, order and costs: multi_lock.h.
#include "etcd/recipes/multi_lock.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "../core/calls.h"
#include "../core/hold_state.h"
#include "../core/once_signal.h"
#include "../core/recipe_core.h"
#include "client/client_access.h"
#include "etcd/recipes/mutex.h"

namespace etcd::recipes {

namespace detail {

namespace {

// The names in the one global order: byte order, duplicates once.
std::vector<std::string> multi_lock_order(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Status check_multi_lock_names(const std::vector<std::string>& ordered) {
  if (ordered.empty()) return InvalidArgument("at least one name is required");
  for (const auto& n : ordered) {
    if (Status st = validate_name("MultiLock", n); !st.ok()) {
      return InvalidArgument("invalid name \"" + n + "\": " + st.message());
    }
  }
  // In byte order a path prefix "a" comes right before its extensions
  // ("a/b"), though other names ("a-b") may sort between them: compare each
  // name with every later one sharing its first byte run.
  for (std::size_t i = 0; i < ordered.size(); ++i) {
    const std::string dir = ordered[i] + "/";
    for (std::size_t j = i + 1; j < ordered.size() && ordered[j].compare(0, ordered[i].size(), ordered[i]) == 0; ++j) {
      if (ordered[j].compare(0, dir.size(), dir) == 0) {
        return InvalidArgument("name \"" + ordered[i] + "\" is a path prefix of \"" + ordered[j] +
                               "\" (its keys would queue with the other's)");
      }
    }
  }
  return Status();
}

// The recipe's name: the names joined by ',' (what identity() shows), or a
// placeholder where that would itself be an invalid name (the names' own
// check then says what is wrong).
std::string multi_lock_joined(const std::vector<std::string>& ordered) {
  if (ordered.empty()) return "<no names>";
  std::string joined;
  for (const auto& n : ordered) joined += (joined.empty() ? "" : ",") + n;
  if (!validate_name("MultiLock", joined).ok()) return "<invalid names>";
  return joined;
}

}  // namespace

// The one session every name's key is bound to: the user's (fixed or from
// the factory), or one made on the MultiLock's client (through its link:
// none once it is closed), replaced once lost.
class MultiLockSessions {
 public:
  MultiLockSessions(std::weak_ptr<RecipeCore> core, RecipeOptions options)
      : core_(std::move(core)), options_(std::move(options)) {}

  std::shared_ptr<Session> get() {
    if (options_.session) return options_.session;
    if (options_.session_factory) {
      {
        std::lock_guard lock(mu_);
        if (current_ && current_->state() != ConnectionState::kLost) return current_;
      }
      // The user's factory runs outside mu_ (it may need a lock, or Python's
      // GIL, that a thread waiting for mu_ holds); the first session in wins.
      auto made = options_.session_factory();
      std::lock_guard lock(mu_);
      if (!current_ || current_->state() == ConnectionState::kLost) current_ = std::move(made);
      return current_;
    }
    std::lock_guard lock(mu_);
    if (!current_ || current_->state() == ConnectionState::kLost) {
      auto core = core_.lock();
      auto link = core ? core->link() : nullptr;
      if (!link || core->closed()) return nullptr;
      // A borrowed handle: a session must never be what closes the client.
      current_ = Session::create(etcd::detail::ClientAccess::borrow(link->client()),
                                 SessionOptions{.ttl = options_.session_ttl});
    }
    return current_;
  }

  void drop() {
    std::shared_ptr<Session> s;
    std::lock_guard lock(mu_);
    s = std::move(current_);
  }

 private:
  const std::weak_ptr<RecipeCore> core_;
  const RecipeOptions options_;
  std::mutex mu_;
  std::shared_ptr<Session> current_;
};

class MultiHoldState : public std::enable_shared_from_this<MultiHoldState> {
 public:
  MultiHoldState(std::shared_ptr<RecipeCore> core_in, std::vector<std::string> names_in, std::vector<Hold> holds_in)
      : core(std::move(core_in)), names(std::move(names_in)), holds(std::move(holds_in)) {}

  const std::shared_ptr<RecipeCore> core;
  const std::vector<std::string> names;
  const std::vector<Hold> holds;
  // Runs once a loss has been told to this hold's listeners (the
  // MultiLock's own listeners), and once every name has been let go.
  std::function<void(const Status&)> on_lost_hook;
  std::function<void()> on_over_hook;
  // Runs at the first release request, once its own listeners are posted.
  std::function<void()> on_release_requested_hook;

  void arm() {
    std::weak_ptr<MultiHoldState> weak = shared_from_this();
    std::vector<Subscription> subs;
    for (std::size_t i = 0; i < holds.size(); ++i) {
      subs.push_back(holds[i].on_lost([weak, name = names[i]](const Status& why) {
        if (auto self = weak.lock()) self->lose(name, why);
      }));
      subs.push_back(holds[i].on_release_requested([weak] {
        if (auto self = weak.lock()) self->saw_release_request();
      }));
    }
    std::lock_guard lock(mu_);
    subs_ = std::move(subs);
  }

  bool is_held() const {
    {
      std::lock_guard lock(mu_);
      if (ended_) return false;
    }
    return std::all_of(holds.begin(), holds.end(), [](const Hold& h) { return h.is_held(); });
  }
  std::stop_token stop_token() const { return stop_.get_token(); }
  std::stop_token release_requested() const { return release_request_.token(); }

  Subscription on_release_requested(std::function<void()> listener) {
    return release_request_.subscribe(std::move(listener), executor_or_system(core->link()), core->throw_sink());
  }

  Subscription on_lost(std::function<void(const Status&)> listener) {
    {
      std::lock_guard lock(mu_);
      if (!ended_) return listeners_.add(std::move(listener));
      if (!lost_) return Subscription();  // released: never lost
    }
    return LostListeners::notify_one(
        executor_or_system(core->link()), core->throw_sink(), std::move(listener),
        hold_lost_status(*core, "lock", "lost before this listener"));
  }

  Call<TxnResponse> guarded(Txn txn) {
    auto link = core->link();
    if (!link || !is_held()) {
      return ready_call<TxnResponse>(
          std::move(link),
          Status(StatusCode::kFailedPrecondition, core->identity() + ": the locks are not held", Errc::kHoldLost));
    }
    Txn outer;
    for (const auto& h : holds) outer.when(Compare::create_revision(h.key()) == h.token());
    outer.then(Op::txn(std::move(txn)));
    auto call = link->client().txn(std::move(outer));
    return then_call<TxnResponse>(std::move(call), std::move(link),
                                  [core = core](Result<TxnResponse> r) -> Result<TxnResponse> {
                                    if (!r.ok()) return std::move(r).status();
                                    if (!r->succeeded) {
                                      return Status(StatusCode::kFailedPrecondition,
                                                    core->identity() +
                                                        ": the locks are no longer all held; nothing was written",
                                                    Errc::kHoldLost);
                                    }
                                    return TxnResponse(r->responses.at(0).txn());
                                  });
  }

  // Releases every name: true if all were intact. After a loss: false, once
  // the names still held have been let go.
  void release(Callback<bool> done) {
    {
      std::lock_guard lock(mu_);
      if (ended_) {
        if (!over_) {
          after_over_.push_back([done = std::move(done)] { done(false); });
          return;
        }
      } else {
        ended_ = true;
      }
    }
    if (!stop_.stop_requested()) {
      stop_.request_stop();
      return let_go(std::move(done));
    }
    done(false);
  }

 private:
  // Someone asked the holder of one of the names to release: the whole
  // multi-hold is asked, once. Runs on the executor (a Hold's listener).
  void saw_release_request() {
    {
      std::lock_guard lock(mu_);
      if (ended_) return;
    }
    if (!release_request_.raise(executor_or_system(core->link()), core->throw_sink())) return;  // told once
    if (on_release_requested_hook) on_release_requested_hook();
  }

  // Any name lost: the multi-hold is lost. Runs on the executor (a Hold's
  // on_lost listener).
  void lose(const std::string& name, const Status& why) {
    {
      std::lock_guard lock(mu_);
      if (ended_) return;
      ended_ = true;
      lost_ = true;
    }
    stop_.request_stop();
    const Status status = hold_lost_status(*core, "lock", "\"" + name + "\" was lost: " + why.message());
    listeners_.call(core->throw_sink(), status);
    if (on_lost_hook) on_lost_hook(status);
    let_go([](Result<bool>) {});
  }

  // Releases every name at once; `done` gets whether all were intact.
  void let_go(Callback<bool> done) {
    struct Pending {
      std::atomic<std::size_t> left;
      std::atomic<bool> intact{true};
      Callback<bool> done;
    };
    auto pending = std::make_shared<Pending>();
    pending->left = holds.size();
    pending->done = std::move(done);
    auto self = shared_from_this();
    for (const auto& h : holds) {
      CallAccess::start_inline(h.release(), [self, pending](Result<bool> r) {
        if (!r.ok() || !*r) pending->intact = false;
        if (pending->left.fetch_sub(1) != 1) return;
        self->finish(pending->intact.load() && !self->was_lost(), std::move(pending->done));
      });
    }
  }

  bool was_lost() const {
    std::lock_guard lock(mu_);
    return lost_;
  }

  void finish(bool intact, Callback<bool> done) {
    std::vector<std::function<void()>> after;
    std::vector<Subscription> subs;
    {
      std::lock_guard lock(mu_);
      over_ = true;
      after.swap(after_over_);
      subs.swap(subs_);
    }
    subs.clear();
    if (on_over_hook) on_over_hook();
    done(intact);
    for (auto& f : after) f();
  }

  mutable std::mutex mu_;
  bool ended_ = false;
  bool lost_ = false;
  bool over_ = false;
  std::stop_source stop_;
  OnceSignal release_request_;
  std::vector<Subscription> subs_;
  std::vector<std::function<void()>> after_over_;
  LostListeners listeners_;
};

class MultiLockDriver : public std::enable_shared_from_this<MultiLockDriver> {
 public:
  MultiLockDriver(const std::shared_ptr<RecipeCore>& core_in, const Client& client, std::vector<std::string> ordered,
                  const RecipeOptions& options)
      : core(core_in), names(std::move(ordered)), sessions(std::make_shared<MultiLockSessions>(core_in, options)) {
    RecipeOptions per_name = options;
    per_name.client_id = core->client_id();
    if (!options.session) {
      per_name.session_factory = [weak = std::weak_ptr<MultiLockSessions>(sessions)]() -> std::shared_ptr<Session> {
        auto s = weak.lock();
        return s ? s->get() : nullptr;
      };
    }
    if (!core->input().ok()) return;  // no mutexes: every operation reports the input
    for (const auto& n : names) mutexes.emplace_back(client, n, per_name);
  }

  const std::shared_ptr<RecipeCore> core;
  const std::vector<std::string> names;
  const std::shared_ptr<MultiLockSessions> sessions;
  std::vector<DistributedMutex> mutexes;
  LostListeners lost_listeners;
  etcd::detail::ListenerSet<> release_request_listeners;

  // Forwards the names' background failures to the MultiLock's errors().
  void bind_errors() {
    std::weak_ptr<RecipeCore> weak = core;
    for (auto& m : mutexes) {
      error_subs_.push_back(m.on_error([weak](const Status& s) {
        if (auto c = weak.lock()) c->record_error(s);
      }));
    }
  }

  void close() {
    for (auto& m : mutexes) m.close();
    sessions->drop();
  }

  // The multi-hold; an empty one for a declined try.
  Call<MultiHold> contend(bool wait) {
    auto self = shared_from_this();
    return core->call<MultiHold>(
        [self, wait](CallOptions options, Callback<MultiHold> done) {
          if (Status st = self->core->usable(); !st.ok()) return done(st);
          {
            std::lock_guard lock(self->mu_);
            if (self->acquiring_ || self->current_) {
              return done(self->core->named(Status(StatusCode::kFailedPrecondition,
                                                   self->acquiring_ ? "already acquiring (a MultiLock is not recursive)"
                                                                    : "already holds (a MultiLock is not recursive)")));
            }
            self->acquiring_ = true;
          }
          auto taken = std::make_shared<std::vector<Hold>>();
          self->step(0, std::move(taken), std::move(options), wait, std::move(done));
        });
  }

  Call<bool> release() {
    auto self = shared_from_this();
    return core->call<bool>([self](CallOptions, Callback<bool> done) {
      std::shared_ptr<MultiHoldState> state;
      {
        std::lock_guard lock(self->mu_);
        state = self->current_;
      }
      if (!state) return done(false);
      state->release(std::move(done));
    });
  }

  MultiHold current() const {
    std::lock_guard lock(mu_);
    return MultiHold(current_);
  }

 private:
  // Takes names[i..] after `taken` (names[0..i)).
  void step(std::size_t i, std::shared_ptr<std::vector<Hold>> taken, CallOptions options, bool wait,
            Callback<MultiHold> done) {
    if (i == names.size()) return held(std::move(*taken), std::move(done));
    auto self = shared_from_this();
    auto next = [self, i, taken, options, wait, done = std::move(done)](Result<std::optional<Hold>> r) mutable {
      if (r.ok() && r->has_value()) {
        taken->push_back(**r);
        return self->step(i + 1, std::move(taken), std::move(options), wait, std::move(done));
      }
      // Declined (a try): OK with nothing; otherwise the failure.
      Status failure = r.ok() ? Status() : self->core->named(std::move(r).status());
      self->unwind(i, [failure = std::move(failure), done = std::move(done)]() mutable {
        if (!failure.ok()) return done(std::move(failure));
        done(MultiHold());
      });
    };
    if (wait) {
      CallAccess::start_inherited(mutexes[i].acquire(), options, [next = std::move(next)](Result<Hold> r) mutable {
        if (!r.ok()) return next(std::move(r).status());
        next(std::optional<Hold>(std::move(r).value()));
      });
    } else {
      CallAccess::start_inherited(mutexes[i].try_acquire(), options, std::move(next));
    }
  }

  // An acquisition that ends without every name: the first `count` names
  // are released (all at once) before the caller hears back.
  void unwind(std::size_t count, std::function<void()> then) {
    auto finish = [self = shared_from_this(), then = std::move(then)] {
      {
        std::lock_guard lock(self->mu_);
        self->acquiring_ = false;
      }
      then();
    };
    if (count == 0) return finish();
    auto left = std::make_shared<std::atomic<std::size_t>>(count);
    auto shared_finish = std::make_shared<std::function<void()>>(std::move(finish));
    for (std::size_t j = 0; j < count; ++j) {
      CallAccess::start_inline(mutexes[j].release(), [left, shared_finish](Result<bool>) {
        if (left->fetch_sub(1) == 1) (*shared_finish)();
      });
    }
  }

  void held(std::vector<Hold> holds, Callback<MultiHold> done) {
    auto state = std::make_shared<MultiHoldState>(core, names, std::move(holds));
    std::weak_ptr<MultiLockDriver> weak = shared_from_this();
    std::weak_ptr<MultiHoldState> weak_state = state;
    state->on_lost_hook = [weak](const Status& s) {
      if (auto d = weak.lock()) d->lost_listeners.call(d->core->throw_sink(), s);
    };
    state->on_release_requested_hook = [weak] {
      if (auto d = weak.lock()) d->release_request_listeners.call(d->core->throw_sink());
    };
    state->on_over_hook = [weak, weak_state] {
      auto d = weak.lock();
      if (!d) return;
      std::lock_guard lock(d->mu_);
      if (d->current_ == weak_state.lock()) d->current_ = nullptr;
    };
    {
      std::lock_guard lock(mu_);
      acquiring_ = false;
      current_ = state;
    }
    state->arm();
    done(MultiHold(state));
  }

  mutable std::mutex mu_;
  bool acquiring_ = false;
  std::shared_ptr<MultiHoldState> current_;
  std::vector<Subscription> error_subs_;
};

}  // namespace detail

// --- MultiHold ---------------------------------------------------------------

namespace {
const std::vector<std::string> kMultiHoldNoNames;
const std::vector<Hold> kMultiHoldNoHolds;
}  // namespace

const std::vector<std::string>& MultiHold::names() const { return state_ ? state_->names : kMultiHoldNoNames; }
const std::vector<Hold>& MultiHold::holds() const { return state_ ? state_->holds : kMultiHoldNoHolds; }

Hold MultiHold::hold(std::string_view name) const {
  if (!state_) return Hold();
  auto it = std::lower_bound(state_->names.begin(), state_->names.end(), name);
  if (it == state_->names.end() || *it != name) return Hold();
  return state_->holds[static_cast<std::size_t>(it - state_->names.begin())];
}

std::map<std::string, int64_t> MultiHold::tokens() const {
  std::map<std::string, int64_t> out;
  if (!state_) return out;
  for (std::size_t i = 0; i < state_->names.size(); ++i) out.emplace(state_->names[i], state_->holds[i].token());
  return out;
}

int64_t MultiHold::token(std::string_view name) const {
  Hold h = hold(name);
  return h ? h.token() : 0;
}

bool MultiHold::is_held() const { return state_ && state_->is_held(); }

std::stop_token MultiHold::stop_token() const {
  if (state_) return state_->stop_token();
  std::stop_source ended;
  ended.request_stop();
  return ended.get_token();
}

Subscription MultiHold::on_lost(std::function<void(const Status&)> listener) const {
  if (!state_) return Subscription();
  return state_->on_lost(std::move(listener));
}

std::stop_token MultiHold::release_requested() const { return state_ ? state_->release_requested() : std::stop_token(); }

Subscription MultiHold::on_release_requested(std::function<void()> listener) const {
  if (!state_) return Subscription();
  return state_->on_release_requested(std::move(listener));
}

Call<TxnResponse> MultiHold::guarded(Txn txn) const {
  if (!state_) {
    return Call<TxnResponse>(
        [](CallOptions, Callback<TxnResponse> done) {
          done(Status(StatusCode::kFailedPrecondition, "an empty MultiHold guards nothing", Errc::kHoldLost));
        },
        asio::system_executor());
  }
  return state_->guarded(std::move(txn));
}

Call<bool> MultiHold::release() const {
  if (!state_) return Call<bool>([](CallOptions, Callback<bool> done) { done(false); }, asio::system_executor());
  auto state = state_;
  return state->core->call<bool>(
      [state](CallOptions, Callback<bool> done) { state->release(std::move(done)); });
}

// --- MultiLock ---------------------------------------------------------------

MultiLock::MultiLock(Client client, std::vector<std::string> names)
    : MultiLock(std::move(client), std::move(names), RecipeOptions()) {}

MultiLock::MultiLock(Client client, std::vector<std::string> names, RecipeOptions options) {
  auto ordered = detail::multi_lock_order(std::move(names));
  Status input = detail::check_multi_lock_names(ordered);
  auto core = std::make_shared<detail::RecipeCore>(client, "MultiLock", detail::multi_lock_joined(ordered), options,
                                                   std::move(input));
  driver_ = std::make_shared<detail::MultiLockDriver>(core, client, std::move(ordered), core->options());
  driver_->bind_errors();
  std::weak_ptr<detail::MultiLockDriver> weak = driver_;
  core->set_close_action([weak] {
    if (auto d = weak.lock()) d->close();
  });
  bind_recipe(core);
}

Call<MultiHold> MultiLock::acquire() { return driver_->contend(true); }

Call<std::optional<MultiHold>> MultiLock::try_acquire() {
  auto call = driver_->contend(false);
  auto link = driver_->core->link();
  return detail::then_call<std::optional<MultiHold>>(
      std::move(call), std::move(link), [](Result<MultiHold> r) -> Result<std::optional<MultiHold>> {
        if (!r.ok()) return std::move(r).status();
        std::optional<MultiHold> held;
        if (r->valid()) held = std::move(r).value();
        return held;
      });
}

Call<bool> MultiLock::release() { return driver_->release(); }

MultiHold MultiLock::hold() const { return driver_->current(); }

bool MultiLock::is_held() const { return driver_->current().is_held(); }

Subscription MultiLock::on_lost(std::function<void(const Status&)> listener) {
  return driver_->lost_listeners.add(std::move(listener));
}

Subscription MultiLock::on_release_requested(std::function<void()> listener) {
  return driver_->release_request_listeners.add(std::move(listener));
}

const std::vector<std::string>& MultiLock::names() const { return driver_->names; }

}  // namespace etcd::recipes
