// ServiceInstance: one registered instance of a service, as service
// discovery (service_discovery.h) stores and hands it out, and its JSON wire
// format.
//
//   etcd::recipes::ServiceInstance api{.name = "api", .id = "api-1", .address = "10.0.0.7", .port = 8080};
//   api.payload = R"({"zone":"eu-west-1a"})";          // any JSON value, or empty
//   // typed: api.payload = etcd::recipes::encode_payload(zone_info, JsonCodec<ZoneInfo>()).value();
//
// Where it lives: BASE/NAME/ID (BASE is the discovery's base path,
// "/services" by default), so every instance of a service is one prefix
// and a cache of it is one watch.
//
// The wire format (the key's value) is one JSON object, UTF-8:
//   {"name":"api","id":"api-1","address":"10.0.0.7","port":8080,"sslPort":null,
//    "payload":{"zone":"eu-west-1a"},"registrationTimeUTC":1764590400000,"enabled":true}
//   name, id              strings, required
//   address               string (a host name or an IP address), required
//   port, sslPort         integers 0..65535, or null / absent
//   payload               any JSON value, or null / absent (no payload)
//   registrationTimeUTC   milliseconds since the Unix epoch, UTC
//   enabled               boolean, default true: a disabled instance stays
//                         registered but providers never pick it
// Field names are Apache Curator's, so a reader written for Curator's JSON
// finds what it knows. Unknown fields are ignored (a later version may add
// some); a value that is not such an object is a DATA_LOSS [decode_failed]
// error naming the key, as every codec's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "etcd/recipes/codec.h"
#include "etcd/status.h"

namespace etcd::recipes {

struct ServiceInstance {
  // The service's name and this instance's id: one key segment each (not
  // empty, no '/', no NUL byte).
  std::string name{};
  std::string id{};
  // Where to reach it: a host name or an address, not empty, without
  // spaces or control characters. Ports: 1 to 65535 (or none).
  std::string address{};
  std::optional<uint16_t> port{};
  std::optional<uint16_t> ssl_port{};
  // JSON text of any value (an object, a string in quotes, a number, ...);
  // empty: no payload. A payload that is not JSON is refused before any
  // write.
  std::string payload{};
  // Milliseconds since the Unix epoch, UTC; 0 when registered: the registry
  // sets the time of registration.
  int64_t registration_time_ms = 0;
  // A disabled instance stays registered (operators see it) but providers
  // never pick it.
  bool enabled = true;

  // "address:port" — the ssl port when there is no port, the address alone
  // when there is neither; an IPv6 address in brackets.
  std::string endpoint() const;

  friend bool operator==(const ServiceInstance&, const ServiceInstance&) = default;
};

// OK, or INVALID_ARGUMENT [bad_argument] saying what is wrong with
// `instance` (a name or id that is not one key segment, no address, a
// payload that is not JSON).
Status validate_instance(const ServiceInstance& instance);

// Checks a service name or an instance id: one key segment. `what` names
// it in the error ("service name", "instance id").
Status validate_segment(std::string_view what, std::string_view segment);

// The wire format above, both ways.
struct ServiceInstanceCodec {
  static Result<std::string> encode(const ServiceInstance& instance);
  static Result<ServiceInstance> decode(std::string_view bytes, std::string_view key);
};
template <>
struct DefaultCodec<ServiceInstance> : ServiceInstanceCodec {};

// A typed payload: `value` through a codec whose bytes are JSON text
// (JsonCodec<P> from codec_json.h; the integer codecs also write JSON).
// Bytes that are not JSON are refused when the instance is registered.
template <class P, Codec<P> C>
Result<std::string> encode_payload(const P& value, const C& codec) {
  return encode_value<P>(codec, value);
}
template <class P, Codec<P> C>
Result<P> decode_payload(const ServiceInstance& instance, const C& codec) {
  return decode_value<P>(codec, instance.payload, "payload of " + instance.name + "/" + instance.id);
}

}  // namespace etcd::recipes
