// The C API's errors, version, client, key/value and lease functions.
#include <cstdlib>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "c_api_internal.h"
#include "etcd/lease.h"
#include "etcd/txn.h"

using etcdr_impl::fail;
using etcdr_impl::guarded;
using etcdr_impl::invalid;
using etcdr_impl::ok;
using etcdr_impl::with_timeout;

// The C values are promised to be the C++ ones (and gRPC's).
static_assert(ETCDR_CANCELLED == static_cast<int>(etcd::StatusCode::kCancelled));
static_assert(ETCDR_INVALID_ARGUMENT == static_cast<int>(etcd::StatusCode::kInvalidArgument));
static_assert(ETCDR_DEADLINE_EXCEEDED == static_cast<int>(etcd::StatusCode::kDeadlineExceeded));
static_assert(ETCDR_FAILED_PRECONDITION == static_cast<int>(etcd::StatusCode::kFailedPrecondition));
static_assert(ETCDR_ABORTED == static_cast<int>(etcd::StatusCode::kAborted));
static_assert(ETCDR_UNAVAILABLE == static_cast<int>(etcd::StatusCode::kUnavailable));
static_assert(ETCDR_UNAUTHENTICATED == static_cast<int>(etcd::StatusCode::kUnauthenticated));
static_assert(ETCDR_REASON_COMPACTED == static_cast<int>(etcd::Errc::kCompacted));
static_assert(ETCDR_REASON_OUTCOME_UNKNOWN == static_cast<int>(etcd::Errc::kOutcomeUnknown));
static_assert(ETCDR_REASON_CLOSED == static_cast<int>(etcd::Errc::kClosed));
static_assert(ETCDR_REASON_BAD_ARGUMENT == static_cast<int>(etcd::Errc::kBadArgument));
static_assert(ETCDR_REASON_HOLD_LOST == static_cast<int>(etcd::Errc::kHoldLost));
static_assert(ETCDR_REASON_DECODE_FAILED == static_cast<int>(etcd::Errc::kDecodeFailed));
static_assert(ETCDR_REASON_UNREACHABLE == static_cast<int>(etcd::Errc::kUnreachable));
// The header's version is the project's (CMake passes it in).
static_assert(ETCDR_VERSION_MAJOR == ETCD_RECIPES_VERSION_MAJOR && ETCDR_VERSION_MINOR == ETCD_RECIPES_VERSION_MINOR &&
                  ETCDR_VERSION_PATCH == ETCD_RECIPES_VERSION_PATCH,
              "include/etcd_recipes.h's version differs from project(VERSION) in CMakeLists.txt");

namespace etcdr_impl {

void set_error(etcdr_error* err, const etcd::Status& status) noexcept {
  if (err == nullptr) return;
  std::free(err->message);
  err->message = nullptr;
  err->code = static_cast<etcdr_code>(status.code());
  err->reason = static_cast<etcdr_reason>(status.reason());
  if (!status.ok()) {
    const std::string& m = status.message();
    if (auto* copy = static_cast<char*>(std::malloc(m.size() + 1))) {
      std::memcpy(copy, m.data(), m.size());
      copy[m.size()] = '\0';
      err->message = copy;
    }
  }
}

char* copy_out(const std::string& bytes) {
  auto* copy = static_cast<char*>(std::malloc(bytes.size() + 1));
  if (copy == nullptr) throw std::bad_alloc();
  std::memcpy(copy, bytes.data(), bytes.size());
  copy[bytes.size()] = '\0';
  return copy;
}

etcd::Status to_recipe_options(const etcdr_recipe_options* in, etcd::recipes::RecipeOptions& out) {
  etcdr_recipe_options o;
  if (auto s = read_options(in, o); !s.ok()) return s;
  if (o.session_ttl_s < 0) return etcd::InvalidArgument("session_ttl_s must not be negative");
  if (o.client_id != nullptr) out.client_id = o.client_id;
  if (o.session_ttl_s > 0) out.session_ttl = std::chrono::seconds(o.session_ttl_s);
  switch (o.contender_layout) {
    case ETCDR_LAYOUT_GO:
      out.contender_layout = etcd::recipes::ContenderLayout::kGoConcurrency;
      break;
    case ETCDR_LAYOUT_ORDERED:
      out.contender_layout = etcd::recipes::ContenderLayout::kOrdered;
      break;
    default:
      return etcd::InvalidArgument("contender_layout must be ETCDR_LAYOUT_GO or ETCDR_LAYOUT_ORDERED, got " +
                                   std::to_string(o.contender_layout));
  }
  return etcd::Status();
}

}  // namespace etcdr_impl

extern "C" {

int etcdr_version(void) { return ETCDR_VERSION; }

const char* etcdr_version_string(void) {
#define ETCDR_STR2(x) #x
#define ETCDR_STR(x) ETCDR_STR2(x)
  return ETCDR_STR(ETCDR_VERSION_MAJOR) "." ETCDR_STR(ETCDR_VERSION_MINOR) "." ETCDR_STR(ETCDR_VERSION_PATCH);
#undef ETCDR_STR
#undef ETCDR_STR2
}

void etcdr_error_clear(etcdr_error* err) { etcdr_impl::set_error(err, etcd::Status()); }

const char* etcdr_code_name(etcdr_code code) {
  if (code < ETCDR_OK || code > ETCDR_UNAUTHENTICATED) return "?";
  // to_string gives views of static, NUL-terminated literals.
  return etcd::to_string(static_cast<etcd::StatusCode>(code)).data();
}

const char* etcdr_reason_name(etcdr_reason reason) {
  if (reason < ETCDR_REASON_NONE || reason > ETCDR_REASON_UNREACHABLE) return "?";
  return etcd::to_string(static_cast<etcd::Errc>(reason)).data();
}

void etcdr_free(void* buffer) { std::free(buffer); }

void etcdr_client_options_init(etcdr_client_options* options, size_t size) { etcdr_impl::init_options(options, size); }

etcdr_code etcdr_client_create(const etcdr_client_options* options, etcdr_client** out, etcdr_error* err) {
  return guarded(err, [&] {
    if (options == nullptr || out == nullptr) return invalid(err, "etcdr_client_create: options and out are required");
    *out = nullptr;
    etcdr_client_options o;
    if (auto s = etcdr_impl::read_options(options, o); !s.ok()) return fail(err, s);
    if (o.endpoints == nullptr) return invalid(err, "etcdr_client_create: no endpoints");
    if (o.default_timeout_ms < 0 || o.callback_threads < 0) {
      return invalid(err, "etcdr_client_create: default_timeout_ms and callback_threads must not be negative");
    }
    if ((o.user == nullptr) != (o.password == nullptr)) {
      return invalid(err, "etcdr_client_create: give both user and password, or neither");
    }
    etcd::ClientOptions co;
    std::string_view rest = o.endpoints;
    while (!rest.empty()) {
      auto comma = rest.find(',');
      std::string_view one = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
      while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
      if (!one.empty()) co.endpoints.emplace_back(one);
    }
    if (co.endpoints.empty()) return invalid(err, "etcdr_client_create: no endpoints");
    if (o.user != nullptr) {
      co.user = o.user;
      co.password = o.password;
    }
    if (o.ca_file != nullptr || o.cert_file != nullptr || o.key_file != nullptr || o.server_name != nullptr) {
      etcd::TlsOptions tls;
      if (o.ca_file != nullptr) tls.ca_file = o.ca_file;
      if (o.cert_file != nullptr) tls.cert_file = o.cert_file;
      if (o.key_file != nullptr) tls.key_file = o.key_file;
      if (o.server_name != nullptr) tls.server_name = o.server_name;
      co.tls = std::move(tls);
    }
    if (o.namespace_prefix != nullptr) co.namespace_prefix = o.namespace_prefix;
    if (o.default_timeout_ms > 0) co.default_timeout = std::chrono::milliseconds(o.default_timeout_ms);
    if (o.callback_threads > 0) co.callback_threads = o.callback_threads;
    *out = new etcdr_client{etcd::Client(std::move(co))};
    return ok(err);
  });
}

etcdr_code etcdr_client_ping(etcdr_client* client, int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (client == nullptr) return invalid(err, "etcdr_client_ping: client is NULL");
    auto r = with_timeout(client->client.ping(), timeout_ms).wait();
    return r.ok() ? ok(err) : fail(err, r.status());
  });
}

void etcdr_client_close(etcdr_client* client) {
  if (client != nullptr) client->client.close();
}

void etcdr_client_destroy(etcdr_client* client) {
  if (client == nullptr) return;
  std::shared_ptr<etcdr_impl::CallbackSlot<etcdr_state_cb>> slot;
  {
    std::lock_guard lock(client->state_mu);
    slot = client->state;
  }
  // Not under state_mu: a callback running now may call the setter.
  if (slot != nullptr) slot->set(nullptr, nullptr);
  client->state_sub.reset();
  delete client;
}

etcdr_code etcdr_get(etcdr_client* client, const char* key, size_t key_len, int64_t timeout_ms, char** value,
                     size_t* value_len, int64_t* mod_revision, etcdr_error* err) {
  return guarded(err, [&] {
    if (client == nullptr || key == nullptr || value == nullptr) {
      return invalid(err, "etcdr_get: client, key and value are required");
    }
    *value = nullptr;
    auto r = with_timeout(client->client.get(std::string(key, key_len)), timeout_ms).wait();
    if (!r.ok()) return fail(err, r.status());
    const etcd::KeyValue* kv = r->first();
    if (kv == nullptr) {
      return fail(err, etcd::Status(etcd::StatusCode::kNotFound, "no key " + std::string(key, key_len),
                                    etcd::Errc::kKeyNotFound));
    }
    *value = etcdr_impl::copy_out(kv->value);
    if (value_len != nullptr) *value_len = kv->value.size();
    if (mod_revision != nullptr) *mod_revision = kv->mod_revision;
    return ok(err);
  });
}

etcdr_code etcdr_put(etcdr_client* client, const char* key, size_t key_len, const char* value, size_t value_len,
                     int64_t lease, int64_t timeout_ms, int64_t* revision, etcdr_error* err) {
  return guarded(err, [&] {
    if (client == nullptr || key == nullptr || (value == nullptr && value_len != 0)) {
      return invalid(err, "etcdr_put: client and key are required (value may be NULL only when empty)");
    }
    etcd::PutOptions po;
    po.lease = lease;
    auto r = with_timeout(client->client.put(std::string(key, key_len),
                                             value_len == 0 ? std::string() : std::string(value, value_len), po),
                          timeout_ms)
                 .wait();
    if (!r.ok()) return fail(err, r.status());
    if (revision != nullptr) *revision = r->header.revision;
    return ok(err);
  });
}

etcdr_code etcdr_delete(etcdr_client* client, const char* key, size_t key_len, int prefix, int64_t timeout_ms,
                        int64_t* deleted, etcdr_error* err) {
  return guarded(err, [&] {
    if (client == nullptr || key == nullptr) return invalid(err, "etcdr_delete: client and key are required");
    etcd::DeleteOptions d;
    d.prefix = prefix != 0;
    auto r = with_timeout(client->client.del(std::string(key, key_len), d), timeout_ms).wait();
    if (!r.ok()) return fail(err, r.status());
    if (deleted != nullptr) *deleted = r->deleted;
    return ok(err);
  });
}

etcdr_code etcdr_compare_and_put(etcdr_client* client, const char* key, size_t key_len, const char* value,
                                 size_t value_len, int64_t expected_mod_revision, int64_t lease, int64_t timeout_ms,
                                 int* succeeded, etcdr_error* err) {
  return guarded(err, [&] {
    if (client == nullptr || key == nullptr || succeeded == nullptr || (value == nullptr && value_len != 0)) {
      return invalid(err, "etcdr_compare_and_put: client, key and succeeded are required");
    }
    if (expected_mod_revision < 0) return invalid(err, "etcdr_compare_and_put: expected_mod_revision is negative");
    std::string k(key, key_len);
    etcd::PutOptions po;
    po.lease = lease;
    // etcd compares an absent key as mod revision 0, so 0 means "absent".
    auto txn = etcd::Txn()
                   .when(etcd::Compare::mod_revision(k) == expected_mod_revision)
                   .then(etcd::Op::put(k, value_len == 0 ? std::string() : std::string(value, value_len), po));
    auto r = with_timeout(client->client.txn(txn), timeout_ms).wait();
    if (!r.ok()) return fail(err, r.status());
    *succeeded = r->succeeded ? 1 : 0;
    return ok(err);
  });
}

etcdr_code etcdr_lease_grant(etcdr_client* client, int64_t ttl_s, int64_t timeout_ms, int64_t* lease_id,
                             etcdr_error* err) {
  return guarded(err, [&] {
    if (client == nullptr || lease_id == nullptr)
      return invalid(err, "etcdr_lease_grant: client and lease_id are required");
    if (ttl_s < 1) return invalid(err, "etcdr_lease_grant: ttl_s must be at least 1");
    auto r = with_timeout(client->client.lease_grant(std::chrono::seconds(ttl_s)), timeout_ms).wait();
    if (!r.ok()) return fail(err, r.status());
    *lease_id = r->id;
    return ok(err);
  });
}

etcdr_code etcdr_lease_revoke(etcdr_client* client, int64_t lease_id, int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (client == nullptr || lease_id == 0) return invalid(err, "etcdr_lease_revoke: client and lease_id are required");
    auto r = with_timeout(client->client.lease_revoke(lease_id), timeout_ms).wait();
    return r.ok() ? ok(err) : fail(err, r.status());
  });
}

}  // extern "C"

struct etcdr_lease {
  etcd::Lease lease;
  std::shared_ptr<etcdr_impl::CallbackSlot<etcdr_lost_cb>> lost =
      std::make_shared<etcdr_impl::CallbackSlot<etcdr_lost_cb>>();
  etcd::Subscription lost_sub;
};

extern "C" {

etcdr_code etcdr_lease_keep_alive(etcdr_client* client, int64_t lease_id, int64_t ttl_s, etcdr_lease** out,
                                  etcdr_error* err) {
  return guarded(err, [&] {
    if (client == nullptr || out == nullptr || lease_id == 0) {
      return invalid(err, "etcdr_lease_keep_alive: client, lease_id and out are required");
    }
    *out = nullptr;
    if (ttl_s < 1) return invalid(err, "etcdr_lease_keep_alive: ttl_s must be at least 1");
    auto handle = std::make_unique<etcdr_lease>();
    handle->lease = client->client.keep_alive(lease_id, std::chrono::seconds(ttl_s));
    handle->lost_sub = handle->lease.on_lost([slot = handle->lost](const etcd::Status& why) {
      slot->run([&](etcdr_lost_cb cb, void* user) { etcdr_impl::invoke_with_status(cb, user, why); });
    });
    *out = handle.release();
    return ok(err);
  });
}

int etcdr_lease_alive(const etcdr_lease* lease) { return lease != nullptr && lease->lease.alive() ? 1 : 0; }

etcdr_code etcdr_lease_on_lost(etcdr_lease* lease, etcdr_lost_cb on_lost, void* user) {
  if (lease == nullptr) return invalid(nullptr, "etcdr_lease_on_lost: lease is NULL");
  lease->lost->set(on_lost, user);
  return ETCDR_OK;
}

void etcdr_lease_destroy(etcdr_lease* lease) {
  if (lease == nullptr) return;
  lease->lost->set(nullptr, nullptr);
  delete lease;
}

}  // extern "C"
