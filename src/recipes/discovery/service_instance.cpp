// ServiceInstance's wire format (include/etcd/recipes/service_instance.h).
// nlohmann/json is used here only, privately: no public header needs it.
#include "etcd/recipes/service_instance.h"

#include <limits>
#include <nlohmann/json.hpp>

namespace etcd::recipes {

namespace {

using nlohmann::json;

constexpr int kCompact = -1;

std::string dump(const json& j) { return j.dump(kCompact, ' ', false, json::error_handler_t::strict); }

Status bad(std::string text) { return InvalidArgument(std::move(text)); }

Result<std::optional<uint16_t>> port_of(const json& object, const char* field, std::string_view key) {
  auto it = object.find(field);
  if (it == object.end() || it->is_null()) return std::optional<uint16_t>();
  if (!it->is_number_integer()) return decode_error(key, std::string("has a \"") + field + "\" that is not an integer");
  const auto v = it->get<int64_t>();
  if (v < 0 || v > std::numeric_limits<uint16_t>::max()) {
    return decode_error(key, std::string("has a \"") + field + "\" out of 0..65535: " + std::to_string(v));
  }
  return std::optional<uint16_t>(static_cast<uint16_t>(v));
}

Result<std::string> string_of(const json& object, const char* field, std::string_view key) {
  auto it = object.find(field);
  if (it == object.end() || !it->is_string()) {
    return decode_error(key, std::string("has no string \"") + field + "\"");
  }
  return it->get<std::string>();
}

}  // namespace

std::string ServiceInstance::endpoint() const {
  const bool v6 = address.find(':') != std::string::npos && !address.starts_with('[');
  std::string host = v6 ? "[" + address + "]" : address;
  if (port) return host + ":" + std::to_string(*port);
  if (ssl_port) return host + ":" + std::to_string(*ssl_port);
  return address;
}

Status validate_segment(std::string_view what, std::string_view segment) {
  if (segment.empty()) return bad(std::string(what) + " is empty");
  if (segment.find('/') != std::string_view::npos) {
    return bad(std::string(what) + " '" + std::string(segment) + "' contains '/' (it is one key segment)");
  }
  if (segment.find('\0') != std::string_view::npos) return bad(std::string(what) + " contains a NUL byte");
  return Status();
}

Status validate_instance(const ServiceInstance& instance) {
  if (Status st = validate_segment("service name", instance.name); !st.ok()) return st;
  if (Status st = validate_segment("instance id", instance.id); !st.ok()) return st;
  const std::string who = "instance " + instance.name + "/" + instance.id;
  if (instance.address.empty()) return bad(who + " has no address");
  for (const unsigned char c : instance.address) {
    if (c < 0x20 || c == 0x7f || c == ' ') {
      return bad(who + ": the address must not contain spaces or control characters (a newline, a tab)");
    }
  }
  if ((instance.port && *instance.port == 0) || (instance.ssl_port && *instance.ssl_port == 0)) {
    return bad(who + ": port 0 is not a port a client can reach");
  }
  if (!instance.payload.empty() && !json::accept(instance.payload)) {
    return bad("the payload of " + instance.name + "/" + instance.id +
               " is not JSON text (give a JSON value: an object, \"a string\" in quotes, a number, ...)");
  }
  return Status();
}

Result<std::string> ServiceInstanceCodec::encode(const ServiceInstance& i) {
  if (Status st = validate_instance(i); !st.ok()) return st;
  try {
    json j = json::object();
    j["name"] = i.name;
    j["id"] = i.id;
    j["address"] = i.address;
    j["port"] = i.port ? json(*i.port) : json(nullptr);
    j["sslPort"] = i.ssl_port ? json(*i.ssl_port) : json(nullptr);
    j["payload"] = i.payload.empty() ? json(nullptr) : json::parse(i.payload);
    j["registrationTimeUTC"] = i.registration_time_ms;
    j["enabled"] = i.enabled;
    return dump(j);
  } catch (const std::exception& e) {
    // Strings that are not UTF-8 cannot be JSON.
    return bad("cannot encode instance " + i.name + "/" + i.id + " as JSON: " + e.what());
  }
}

Result<ServiceInstance> ServiceInstanceCodec::decode(std::string_view bytes, std::string_view key) {
  json j = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return decode_error(key, "is not valid JSON (a service instance is a JSON object)");
  if (!j.is_object()) return decode_error(key, "is not a JSON object (a service instance is one)");
  ServiceInstance out;
  auto name = string_of(j, "name", key);
  if (!name.ok()) return std::move(name).status();
  auto id = string_of(j, "id", key);
  if (!id.ok()) return std::move(id).status();
  auto address = string_of(j, "address", key);
  if (!address.ok()) return std::move(address).status();
  auto port = port_of(j, "port", key);
  if (!port.ok()) return std::move(port).status();
  auto ssl_port = port_of(j, "sslPort", key);
  if (!ssl_port.ok()) return std::move(ssl_port).status();
  out.name = std::move(*name);
  out.id = std::move(*id);
  out.address = std::move(*address);
  out.port = *port;
  out.ssl_port = *ssl_port;
  if (auto it = j.find("payload"); it != j.end() && !it->is_null()) out.payload = dump(*it);
  if (auto it = j.find("registrationTimeUTC"); it != j.end()) {
    if (!it->is_number_integer()) return decode_error(key, "has a \"registrationTimeUTC\" that is not an integer");
    out.registration_time_ms = it->get<int64_t>();
  }
  if (auto it = j.find("enabled"); it != j.end()) {
    if (!it->is_boolean()) return decode_error(key, "has an \"enabled\" that is not a boolean");
    out.enabled = it->get<bool>();
  }
  return out;
}

}  // namespace etcd::recipes
