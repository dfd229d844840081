#include "etcd/recipes/recipe.h"
#include "client/client_access.h"

#include <unistd.h>

#include <asio/post.hpp>

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

RecipeCore::RecipeCore(Client client, std::string kind, std::string name, RecipeOptions options)
    : client_(std::move(client)),
      name_(std::move(name)),
      identity_(kind + "[" + name_ + "]"),
      options_(std::move(options)),
      metrics_(options_.metrics ? options_.metrics : std::make_shared<NullMetrics>()) {
  if (options_.client_id.empty()) options_.client_id = default_client_id();
}

Call<std::shared_ptr<Session>> RecipeCore::session() {
  auto self = shared_from_this();
  return Call<std::shared_ptr<Session>>(
      [self](CallOptions options, Callback<std::shared_ptr<Session>> done) {
        std::shared_ptr<Session> session;
        {
          std::lock_guard lock(self->mu_);
          // A session of our own that was lost is replaced for the next
          // acquisition (the lost hold itself is never re-created); a
          // session the user shares stays theirs to replace.
          if (self->session_ && !self->options_.session && self->session_->state() == ConnectionState::kLost) {
            self->session_.reset();
          }
          if (!self->session_) {
            self->session_ = self->options_.session
                                 ? self->options_.session
                                 : Session::create(self->client_, SessionOptions{.ttl = self->options_.session_ttl});
            // The recipe's connection state follows its session's.
            std::weak_ptr<RecipeCore> weak = self;
            self->session_state_sub_ = self->session_->on_state_change([weak](ConnectionState s) {
              if (auto core = weak.lock()) core->set_state(s);
            });
          }
          session = self->session_;
        }
        auto start = session->start();
        if (options.deadline) start.deadline(*options.deadline);
        start.stop_token(options.stop);
        etcd::detail::CallAccess::start_inline(std::move(start), [session, done = std::move(done)](Result<void> r) {
          if (!r.ok()) {
            done(std::move(r).status());
          } else {
            done(session);
          }
        });
      },
      client_.executor());
}

void RecipeCore::record_error(Status status) {
  Status named_status = named(std::move(status));
  std::vector<std::shared_ptr<std::function<void(const Status&)>>> listeners;
  {
    std::lock_guard lock(mu_);
    if (errors_.size() == kMaxRecordedErrors) errors_.erase(errors_.begin());
    errors_.push_back(named_status);
    for (auto& [id, l] : error_listeners_) listeners.push_back(l);
  }
  for (auto& l : listeners) asio::post(client_.executor(), [l, named_status] { (*l)(named_status); });
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
  std::lock_guard lock(mu_);
  const uint64_t id = next_id_++;
  error_listeners_.emplace_back(id, std::make_shared<std::function<void(const Status&)>>(std::move(listener)));
  std::weak_ptr<RecipeCore> weak = shared_from_this();
  return Subscription([weak, id] {
    if (auto core = weak.lock()) {
      std::lock_guard l(core->mu_);
      std::erase_if(core->error_listeners_, [id](const auto& p) { return p.first == id; });
    }
  });
}

ConnectionState RecipeCore::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

void RecipeCore::set_state(ConnectionState state) {
  std::vector<std::shared_ptr<std::function<void(ConnectionState)>>> listeners;
  {
    std::lock_guard lock(mu_);
    if (state_ == state) return;
    state_ = state;
    for (auto& [id, l] : state_listeners_) listeners.push_back(l);
  }
  // Listeners run on the executor; the session delivers its changes in order.
  for (auto& l : listeners) (*l)(state);
}

Subscription RecipeCore::on_state_change(std::function<void(ConnectionState)> listener) {
  std::lock_guard lock(mu_);
  const uint64_t id = next_id_++;
  state_listeners_.emplace_back(id, std::make_shared<std::function<void(ConnectionState)>>(std::move(listener)));
  std::weak_ptr<RecipeCore> weak = shared_from_this();
  return Subscription([weak, id] {
    if (auto core = weak.lock()) {
      std::lock_guard l(core->mu_);
      std::erase_if(core->state_listeners_, [id](const auto& p) { return p.first == id; });
    }
  });
}

bool RecipeCore::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

void RecipeCore::close() {
  std::vector<std::pair<uint64_t, std::function<void()>>> wakers;
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
    wakers.swap(close_wakers_);
  }
  for (auto& [id, w] : wakers) w();
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
const std::string& RecipeHandle::name() const { return recipe_core_->name(); }
const std::string& RecipeHandle::identity() const { return recipe_core_->identity(); }
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
