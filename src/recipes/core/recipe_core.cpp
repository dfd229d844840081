#include "client/client_access.h"
#include "client/log_dispatch.h"
#include "etcd/recipes/recipe.h"

#include <unistd.h>

#include <exception>
#include <string>

#include <asio/post.hpp>

#include "calls.h"
#include "recipe_core.h"

namespace etcd::recipes {

namespace {
constexpr size_t kMaxRecordedErrors = 64;
}

std::string default_client_id() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host[0] ? host : "localhost") + ":" + std::to_string(getpid());
}

Status validate_name(std::string_view kind, const std::string& name) {
  if (name.empty()) return InvalidArgument(std::string(kind) + ": name must not be empty");
  if (name.find('\0') != std::string::npos) {
    return InvalidArgument(std::string(kind) + ": name must not contain a NUL byte");
  }
  if (name.back() == '/') return InvalidArgument(std::string(kind) + "[" + name + "]: name must not end with '/'");
  return Status();
}

namespace detail {

namespace {

Status check_input(std::string_view kind, const std::string& name, const RecipeOptions& options, Status own) {
  if (Status st = validate_name(kind, name); !st.ok()) return st;
  if (!options.session && !options.session_factory && options.session_ttl < std::chrono::seconds(1)) {
    return InvalidArgument(std::string(kind) + "[" + name + "]: session_ttl must be at least 1 s (got " +
                           std::to_string(options.session_ttl.count()) + " s)");
  }
  if (!own.ok() && own.message().rfind(std::string(kind), 0) != 0) {
    return Status(own.code(), std::string(kind) + "[" + name + "]: " + own.message(), own.reason());
  }
  return own;
}

}  // namespace

RecipeCore::RecipeCore(Client client, std::string kind, std::string name, RecipeOptions options, Status input)
    : kind_(kind),
      name_(std::move(name)),
      identity_(kind + "[" + name_ + "]"),
      options_(std::move(options)),
      metrics_(options_.metrics ? options_.metrics : std::make_shared<NullMetrics>()),
      input_(check_input(kind, name_, options_, std::move(input))),
      shared_session_(options_.session != nullptr),
      link_(ClientLink::make(std::move(client))) {
  weak_link_ = link_;
  if (options_.client_id.empty()) options_.client_id = default_client_id();
}

std::shared_ptr<ClientLink> RecipeCore::link() const {
  if (auto link = open_link()) return link;
  return weak_link_.lock();
}

std::shared_ptr<ClientLink> RecipeCore::open_link() const {
  std::lock_guard lock(mu_);
  return link_;
}

Status RecipeCore::usable() const {
  if (!input_.ok()) return input_;
  if (closed()) return closed_status();
  return Status();
}

Status RecipeCore::usable(const std::shared_ptr<ClientLink>& link) const {
  Status st = usable();
  if (st.ok() && !link) return closed_status();
  return st;
}

Call<std::shared_ptr<Session>> RecipeCore::session(std::shared_ptr<ClientLink> link) {
  auto self = shared_from_this();
  const Executor ex = link->executor();
  return Call<std::shared_ptr<Session>>(
      [self, link](CallOptions options, Callback<std::shared_ptr<Session>> done) {
        std::shared_ptr<Session> session;
        for (;;) {
          // The factory runs outside mu_: it is user code (it may take a lock
          // of its own, or Python's GIL, that another thread holds while
          // waiting for this recipe's lock).
          std::function<std::shared_ptr<Session>()> factory;
          {
            std::unique_lock lock(self->mu_);
            // Closed: the sessions were let go of, and must not come back.
            if (self->closed_) {
              lock.unlock();
              return done(self->closed_status());
            }
            // A session this recipe made (itself or through the factory) that
            // was lost is replaced for the next acquisition (the lost hold
            // itself is never re-created); a fixed shared session stays the
            // user's to replace.
            if (self->session_ && !self->shared_session_ && self->session_->state() == ConnectionState::kLost) {
              self->session_.reset();
            }
            if (!self->session_ && !self->options_.session && self->options_.session_factory) {
              factory = self->options_.session_factory;
            }
          }
          std::shared_ptr<Session> made;
          if (factory) {
            try {
              made = factory();
            } catch (const std::exception& e) {
              return done(self->named(
                  Status(StatusCode::kFailedPrecondition, std::string("the session factory failed: ") + e.what())));
            } catch (...) {
              return done(self->named(Status(StatusCode::kFailedPrecondition, "the session factory failed")));
            }
            factory = nullptr;
            if (!made) {
              return done(self->named(Status(StatusCode::kFailedPrecondition, "the session factory gave no session")));
            }
          }
          {
            std::unique_lock lock(self->mu_);
            if (self->closed_) {
              lock.unlock();
              made.reset();
              return done(self->closed_status());
            }
            // Another call may have installed a session while the factory ran:
            // the first one in is the recipe's (`made`, if unused, is dropped
            // after the lock).
            if (!self->session_ && !self->options_.session && !made && self->options_.session_factory) {
              continue;  // dropped while unlocked: the factory makes the next one
            }
            if (!self->session_) {
              if (self->options_.session) {
                self->session_ = self->options_.session;
              } else if (made) {
                self->session_ = made;
              } else {
                // A borrowed handle: the session must never be what closes the
                // client (the link keeps it open for as long as work needs it).
                self->session_ = Session::create(etcd::detail::ClientAccess::borrow(link->client()),
                                                 SessionOptions{.ttl = self->options_.session_ttl});
              }
              if (!self->session_) {
                lock.unlock();
                return done(
                    self->named(Status(StatusCode::kFailedPrecondition, "the session factory gave no session")));
              }
              // The recipe's connection state follows its session's.
              std::weak_ptr<RecipeCore> weak = self;
              self->session_state_sub_ = self->session_->on_state_change([weak](ConnectionState s) {
                if (auto core = weak.lock()) core->set_state(s);
              });
            }
            session = self->session_;
          }
          made.reset();
          break;
        }
        CallAccess::start_inherited(session->start(), options, [session, done = std::move(done)](Result<void> r) {
          if (!r.ok()) return done(std::move(r).status());
          done(session);
        });
      },
      ex);
}

bool RecipeCore::forget_session(const std::shared_ptr<Session>& s) {
  if (shared_session_) return false;
  std::lock_guard lock(mu_);
  if (session_ == s) session_.reset();
  return true;
}

bool RecipeCore::shared_session_ended() const {
  if (!shared_session_) return false;
  std::shared_ptr<Session> s;
  {
    std::lock_guard lock(mu_);
    s = options_.session;
  }
  return !s || !s->loss().ok();
}

void RecipeCore::record_error(Status status) {
  log(LogLevel::kWarning, "a background failure (recorded in errors())", status);
  Status named_status = named(std::move(status));
  {
    std::lock_guard lock(mu_);
    if (errors_.size() == kMaxRecordedErrors) errors_.erase(errors_.begin());
    errors_.push_back(named_status);
  }
  // An error listener that throws is not recorded again (no loop). Once
  // the client is gone, there is no executor to run them on: recorded only.
  if (auto l = link())
    error_listeners_.notify(
        l->executor(), [](const Status&) {}, named_status);
}

void RecipeCore::log(LogLevel level, std::string message, Status status) {
  if (!etcd::detail::log_wanted(level)) return;
  auto l = link();
  if (!l) return;
  etcd::detail::post_log(l->strand(), level, LogSource{kind_, name_}, std::move(message), std::move(status));
}

ThrowSink RecipeCore::throw_sink() {
  return [weak = weak_from_this()](Status st) {
    if (auto self = weak.lock()) self->record_error(std::move(st));
  };
}

std::vector<Status> RecipeCore::errors() const {
  std::lock_guard lock(mu_);
  return errors_;
}

void RecipeCore::clear_errors() {
  std::lock_guard lock(mu_);
  errors_.clear();
}

Subscription RecipeCore::on_error(std::function<void(const Status&)> listener) {
  return error_listeners_.add(std::move(listener));
}

ConnectionState RecipeCore::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

void RecipeCore::set_state(ConnectionState state) {
  {
    std::lock_guard lock(mu_);
    if (state_ == state) return;
    state_ = state;
  }
  // Called on the executor by the session, in order: run them here, so
  // that the order holds.
  state_listeners_.call(throw_sink(), state);
}

Subscription RecipeCore::on_state_change(std::function<void(ConnectionState)> listener) {
  return state_listeners_.add(std::move(listener));
}

void RecipeCore::start() {
  if (Status st = usable(); !st.ok()) throw Error(std::move(st));
  std::function<void()> action;
  {
    std::lock_guard lock(mu_);
    action = start_action_;
  }
  if (action) action();
}

bool RecipeCore::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

void RecipeCore::close() {
  // What close() starts (deleting the recipe's keys, a released session
  // revoking its lease) is clean-up: a client closed next sends it and waits
  // for it rather than cancel it.
  etcd::detail::CleanupScope cleanup;
  std::vector<std::pair<uint64_t, std::function<void()>>> wakers;
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    wakers.swap(close_wakers_);
  }
  for (auto& [id, w] : wakers) w();
  // The actions may keep the recipe's state alive; they go once closed.
  auto close_action = std::move(close_action_);
  close_action_ = nullptr;
  if (close_action) close_action();
  // What the wakers and the action started holds the link it needs; the
  // recipe itself lets go of the client: its link, its sessions and what
  // could make one (a factory or a shared session may hold a Client).
  std::shared_ptr<ClientLink> link;
  std::shared_ptr<Session> session;
  std::shared_ptr<Session> shared_session;
  std::function<std::shared_ptr<Session>()> factory;
  Subscription session_state_sub;
  std::function<void()> start_action;
  {
    std::lock_guard lock(mu_);
    start_action = std::move(start_action_);
    start_action_ = nullptr;
    session_state_sub = std::move(session_state_sub_);
    session = std::move(session_);
    shared_session = std::move(options_.session);
    factory = std::move(options_.session_factory);
    options_.session_factory = nullptr;
    link = std::move(link_);
  }
  // In this order: the sessions are never the last to hold the client.
  session_state_sub.reset();
  session.reset();
  shared_session.reset();
  factory = nullptr;
  link.reset();
}

Subscription RecipeCore::on_close(std::function<void()> waker) {
  std::unique_lock lock(mu_);
  if (closed_) {
    lock.unlock();
    waker();
    return Subscription();
  }
  const uint64_t id = next_id_++;
  close_wakers_.emplace_back(id, std::move(waker));
  std::weak_ptr<RecipeCore> weak = shared_from_this();
  return Subscription([weak, id] {
    if (auto core = weak.lock()) {
      std::lock_guard l(core->mu_);
      std::erase_if(core->close_wakers_, [id](const auto& p) { return p.first == id; });
    }
  });
}

Status RecipeCore::closed_status() const { return Closed(identity_); }

Status RecipeCore::named(Status status) const {
  if (status.ok() || status.message().rfind(identity_, 0) == 0) return status;
  Status out(status.code(), identity_ + ": " + status.message(), status.reason());
  return std::move(out).with_revision(status.revision());
}

}  // namespace detail

RecipeHandle& RecipeHandle::operator=(RecipeHandle&& other) noexcept {
  if (this != &other) {
    close();
    recipe_core_ = std::move(other.recipe_core_);
  }
  return *this;
}

RecipeHandle::~RecipeHandle() { close(); }

void RecipeHandle::bind_recipe(std::shared_ptr<detail::RecipeCore> core) { recipe_core_ = std::move(core); }

const std::string& RecipeHandle::name() const { return recipe_core_->name(); }
const std::string& RecipeHandle::identity() const { return recipe_core_->identity(); }
void RecipeHandle::start() { recipe_core_->start(); }
void RecipeHandle::close() {
  if (recipe_core_) recipe_core_->close();
}
bool RecipeHandle::closed() const { return recipe_core_->closed(); }
ConnectionState RecipeHandle::state() const { return recipe_core_->state(); }
Subscription RecipeHandle::on_state_change(std::function<void(ConnectionState)> listener) {
  return recipe_core_->on_state_change(std::move(listener));
}
std::vector<Status> RecipeHandle::errors() const { return recipe_core_->errors(); }
void RecipeHandle::clear_errors() { recipe_core_->clear_errors(); }
Subscription RecipeHandle::on_error(std::function<void(const Status&)> listener) {
  return recipe_core_->on_error(std::move(listener));
}

}  // namespace etcd::recipes
