// Typed values (etcd/recipes/codec.h, codec_json.h): what the typed recipes
// use to store a T, shown here with the client's own put and get. Built
// against the installed package's etcd_recipes::json (tests/consumer).
#include <cstdint>
#include <string>

#include "etcd/recipes/codec.h"
#include "etcd/recipes/codec_json.h"
#include "tour.h"

namespace tour_jobs {
struct Job {
  std::string name;
  int attempts = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Job, name, attempts)
}  // namespace tour_jobs

ETCD_TOUR_SECTION(typed_values) {
  using etcd::recipes::DefaultCodec;
  using etcd::recipes::JsonCodec;
  using tour_jobs::Job;

  // An integer is decimal text, as etcdctl would write it.
  const DefaultCodec<std::int64_t> integer;
  client.put(prefix + "hits", etcd::recipes::encode_value(integer, std::int64_t{41}).value()).wait().value();
  auto hits = client.get(prefix + "hits").wait().value();
  tour::expect(hits.first() && hits.first()->value == "41", "an integer is stored as decimal text");
  auto n = etcd::recipes::decode_value<std::int64_t>(integer, hits.first()->value, hits.first()->key);
  tour::expect(n.ok() && *n == 41, "and read back");

  // A user type as JSON.
  const JsonCodec<Job> json;
  client.put(prefix + "jobs/1", etcd::recipes::encode_value(json, Job{"resize", 0}).value()).wait().value();
  auto stored = client.get(prefix + "jobs/1").wait().value();
  auto job = etcd::recipes::decode_value<Job>(json, stored.first()->value, stored.first()->key);
  tour::expect(job.ok() && job->name == "resize", "a JSON value round-trips");

  // A value that is not a valid T: an error naming the key, not a throw.
  client.put(prefix + "jobs/2", "{\"name\": 7}").wait().value();
  auto poison = client.get(prefix + "jobs/2").wait().value();
  auto bad = etcd::recipes::decode_value<Job>(json, poison.first()->value, poison.first()->key);
  tour::expect(
      bad.status().is(etcd::Errc::kDecodeFailed) && bad.status().message().find(prefix + "jobs/2") != std::string::npos,
      "a poison value is kDecodeFailed naming its key: " + bad.status().to_string());
  client.del(prefix, {.prefix = true}).wait().value();
}
