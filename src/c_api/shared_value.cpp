// The C API's shared value and group membership (SharedValue<std::string>,
// GroupMember). Handles own their recipe as locks.cpp's do; each handle's
// one change callback lives in a CallbackSlot, so it never runs after the
// handle's destroy or its replacement returned.
#include <map>
#include <memory>
#include <string>

#include "c_api_internal.h"
#include "etcd/recipes/group_member.h"
#include "etcd/recipes/shared_value.h"

using etcdr_impl::CallbackSlot;
using etcdr_impl::fail;
using etcdr_impl::guarded;
using etcdr_impl::invalid;
using etcdr_impl::ok;
using etcdr_impl::with_timeout;
namespace r = etcd::recipes;

struct etcdr_shared_value {
  std::shared_ptr<r::SharedValue<std::string>> value;
  std::shared_ptr<CallbackSlot<etcdr_shared_value_cb>> changed =
      std::make_shared<CallbackSlot<etcdr_shared_value_cb>>();
  etcd::Subscription changed_sub;
};

struct etcdr_group_member {
  std::shared_ptr<r::GroupMember> member;
  std::shared_ptr<CallbackSlot<etcdr_group_cb>> changed = std::make_shared<CallbackSlot<etcdr_group_cb>>();
  etcd::Subscription changed_sub;
};

namespace {

std::string shared_value_bytes(const char* p, size_t n) { return n == 0 ? std::string() : std::string(p, n); }

// A recipe's close() for a destroy, which has no one to report to.
template <class R>
void close_shared_value_recipe(R& recipe) noexcept {
  try {
    recipe.close();
  } catch (...) {
    // Nothing a destroy could act on.
  }
}

int group_event_code(r::GroupEvent::Type t) {
  switch (t) {
    case r::GroupEvent::Type::kJoined:
      return ETCDR_GROUP_JOINED;
    case r::GroupEvent::Type::kUpdated:
      return ETCDR_GROUP_UPDATED;
    case r::GroupEvent::Type::kLeft:
      break;
  }
  return ETCDR_GROUP_LEFT;
}

}  // namespace

extern "C" {

// --- Shared value

etcdr_code etcdr_shared_value_create(etcdr_client* client, const char* key, const etcdr_recipe_options* options,
                                     etcdr_shared_value** out, etcdr_error* err) {
  return guarded(err, [&] {
    if (out != nullptr) *out = nullptr;
    if (client == nullptr || out == nullptr) {
      return invalid(err, "etcdr_shared_value_create: client and out are required");
    }
    if (etcdr_impl::bad_name(key)) return invalid(err, "etcdr_shared_value_create: the key is empty");
    r::RecipeOptions ro;
    if (auto s = etcdr_impl::to_recipe_options(options, ro); !s.ok()) return fail(err, s);
    auto handle = std::make_unique<etcdr_shared_value>();
    handle->value = std::make_shared<r::SharedValue<std::string>>(client->client, key, std::move(ro));
    handle->changed_sub = handle->value->on_change([slot = handle->changed](const r::SharedValueEvent<std::string>& e) {
      slot->run([&](etcdr_shared_value_cb cb, void* user) {
        const std::string* v = e.current.value.get();
        cb(user, v ? v->data() : nullptr, v ? v->size() : 0, e.current.exists ? 1 : 0, e.current.mod_revision);
      });
    });
    handle->value->start();  // a bad key throws here (kBadArgument)
    *out = handle.release();
    return ok(err);
  });
}

etcdr_code etcdr_shared_value_get(etcdr_shared_value* value, int64_t timeout_ms, char** bytes, size_t* len,
                                  int64_t* mod_revision, etcdr_error* err) {
  return guarded(err, [&] {
    if (bytes != nullptr) *bytes = nullptr;
    if (len != nullptr) *len = 0;
    if (mod_revision != nullptr) *mod_revision = 0;
    if (value == nullptr || bytes == nullptr || len == nullptr) {
      return invalid(err, "etcdr_shared_value_get: value, bytes and len are required");
    }
    auto ready = with_timeout(value->value->wait_initialized(), timeout_ms).wait();
    if (!ready.ok()) return fail(err, ready.status());
    const auto now = value->value->get();
    if (!now.exists) {
      return fail(
          err, etcd::Status(etcd::StatusCode::kNotFound, value->value->key() + " is absent", etcd::Errc::kKeyNotFound));
    }
    *bytes = etcdr_impl::copy_out(*now.value);
    *len = now.value->size();
    if (mod_revision != nullptr) *mod_revision = now.mod_revision;
    return ok(err);
  });
}

etcdr_code etcdr_shared_value_set(etcdr_shared_value* value, const char* bytes, size_t len, int64_t timeout_ms,
                                  int64_t* mod_revision, etcdr_error* err) {
  return guarded(err, [&] {
    if (value == nullptr || (bytes == nullptr && len != 0)) {
      return invalid(err, "etcdr_shared_value_set: value is NULL, or bytes is NULL with a length");
    }
    auto r = with_timeout(value->value->set(shared_value_bytes(bytes, len)), timeout_ms).wait();
    if (!r.ok()) return fail(err, r.status());
    if (mod_revision != nullptr) *mod_revision = *r;
    return ok(err);
  });
}

etcdr_code etcdr_shared_value_compare_and_set(etcdr_shared_value* value, int64_t expected_revision, const char* bytes,
                                              size_t len, int64_t timeout_ms, int* swapped, etcdr_error* err) {
  return guarded(err, [&] {
    if (value == nullptr || swapped == nullptr || (bytes == nullptr && len != 0)) {
      return invalid(err, "etcdr_shared_value_compare_and_set: value and swapped are required");
    }
    auto r = with_timeout(value->value->compare_and_set(expected_revision, shared_value_bytes(bytes, len)), timeout_ms)
                 .wait();
    if (!r.ok()) return fail(err, r.status());
    *swapped = *r ? 1 : 0;
    return ok(err);
  });
}

etcdr_code etcdr_shared_value_on_change(etcdr_shared_value* value, etcdr_shared_value_cb on_change, void* user) {
  if (value == nullptr) return ETCDR_INVALID_ARGUMENT;
  value->changed->set(on_change, user);
  return ETCDR_OK;
}

void etcdr_shared_value_destroy(etcdr_shared_value* value) {
  if (value == nullptr) return;
  value->changed->set(nullptr, nullptr);
  close_shared_value_recipe(*value->value);
  delete value;
}

// --- Group membership

etcdr_code etcdr_group_member_create(etcdr_client* client, const char* group, const char* id, const char* payload,
                                     size_t payload_len, const etcdr_recipe_options* options, etcdr_group_member** out,
                                     etcdr_error* err) {
  return guarded(err, [&] {
    if (out != nullptr) *out = nullptr;
    if (client == nullptr || out == nullptr || id == nullptr || (payload == nullptr && payload_len != 0)) {
      return invalid(err, "etcdr_group_member_create: client, id and out are required");
    }
    if (etcdr_impl::bad_name(group)) return invalid(err, "etcdr_group_member_create: the group is empty");
    r::RecipeOptions ro;
    if (auto s = etcdr_impl::to_recipe_options(options, ro); !s.ok()) return fail(err, s);
    auto handle = std::make_unique<etcdr_group_member>();
    handle->member = std::make_shared<r::GroupMember>(client->client, group, id,
                                                      shared_value_bytes(payload, payload_len), std::move(ro));
    handle->changed_sub = handle->member->on_change([slot = handle->changed](const r::GroupEvent& e) {
      slot->run([&](etcdr_group_cb cb, void* user) {
        cb(user, group_event_code(e.type), e.id.c_str(), e.payload.data(), e.payload.size());
      });
    });
    handle->member->start();  // joins in the background; bad input throws here
    *out = handle.release();
    return ok(err);
  });
}

etcdr_code etcdr_group_member_join(etcdr_group_member* member, int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (member == nullptr) return invalid(err, "etcdr_group_member_join: member is NULL");
    auto r = with_timeout(member->member->join(), timeout_ms).wait();
    return r.ok() ? ok(err) : fail(err, r.status());
  });
}

etcdr_code etcdr_group_member_set_payload(etcdr_group_member* member, const char* payload, size_t len,
                                          int64_t timeout_ms, etcdr_error* err) {
  return guarded(err, [&] {
    if (member == nullptr || (payload == nullptr && len != 0)) {
      return invalid(err, "etcdr_group_member_set_payload: member is NULL, or payload is NULL with a length");
    }
    auto r = with_timeout(member->member->set_payload(shared_value_bytes(payload, len)), timeout_ms).wait();
    return r.ok() ? ok(err) : fail(err, r.status());
  });
}

etcdr_code etcdr_group_member_leave(etcdr_group_member* member, int64_t timeout_ms, int* was_member, etcdr_error* err) {
  return guarded(err, [&] {
    if (member == nullptr) return invalid(err, "etcdr_group_member_leave: member is NULL");
    auto r = with_timeout(member->member->leave(), timeout_ms).wait();
    if (!r.ok()) return fail(err, r.status());
    if (was_member != nullptr) *was_member = *r ? 1 : 0;
    return ok(err);
  });
}

etcdr_code etcdr_group_member_members(etcdr_group_member* member, int64_t timeout_ms, char** ids, size_t* count,
                                      etcdr_error* err) {
  return guarded(err, [&] {
    if (ids != nullptr) *ids = nullptr;
    if (count != nullptr) *count = 0;
    if (member == nullptr || ids == nullptr || count == nullptr) {
      return invalid(err, "etcdr_group_member_members: member, ids and count are required");
    }
    auto ready = with_timeout(member->member->wait_initialized(), timeout_ms).wait();
    if (!ready.ok()) return fail(err, ready.status());
    const auto all = member->member->members();
    if (all.empty()) return ok(err);
    std::string packed;
    for (const auto& [id, payload] : all) packed.append(id).push_back('\0');
    packed.pop_back();  // copy_out adds the last NUL
    *ids = etcdr_impl::copy_out(packed);
    *count = all.size();
    return ok(err);
  });
}

etcdr_code etcdr_group_member_payload_of(etcdr_group_member* member, const char* id, char** payload, size_t* len,
                                         etcdr_error* err) {
  return guarded(err, [&] {
    if (payload != nullptr) *payload = nullptr;
    if (len != nullptr) *len = 0;
    if (member == nullptr || id == nullptr || payload == nullptr || len == nullptr) {
      return invalid(err, "etcdr_group_member_payload_of: member, id, payload and len are required");
    }
    const auto all = member->member->members();
    const auto it = all.find(id);
    if (it == all.end()) {
      return fail(err, etcd::Status(etcd::StatusCode::kNotFound,
                                    std::string(id) + " is not a member of " + member->member->group()));
    }
    *payload = etcdr_impl::copy_out(it->second);
    *len = it->second.size();
    return ok(err);
  });
}

int etcdr_group_member_is_member(const etcdr_group_member* member) {
  return member != nullptr && member->member->is_member() ? 1 : 0;
}

etcdr_code etcdr_group_member_on_change(etcdr_group_member* member, etcdr_group_cb on_change, void* user) {
  if (member == nullptr) return ETCDR_INVALID_ARGUMENT;
  member->changed->set(on_change, user);
  return ETCDR_OK;
}

void etcdr_group_member_destroy(etcdr_group_member* member) {
  if (member == nullptr) return;
  member->changed->set(nullptr, nullptr);
  close_shared_value_recipe(*member->member);
  delete member;
}

}  // extern "C"
