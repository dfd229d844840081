// Service discovery against a real etcd: registrations live with their
// registry, are never taken from another owner and reappear after a lease
// loss (the fault proxy cuts the registry off); providers follow the cache,
// never hand out an instance the cache saw removed, and eject and rejoin
// instances on time.
#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "etcd/recipes/service_discovery.h"
#include "etcd/testing/fault_proxy.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::ServiceCache;
using recipes::ServiceCacheOptions;
using recipes::ServiceDiscovery;
using recipes::ServiceDiscoveryOptions;
using recipes::ServiceInstance;
using recipes::ServiceProvider;
using recipes::ServiceProviderOptions;
using recipes::ServiceRegistry;
using recipes::ServiceRegistryOptions;

class DiscoveryTest : public SingleMemberTest {
 protected:
  std::string base() const { return prefix_ + "services"; }
  ServiceRegistryOptions registry_options(std::chrono::seconds ttl = std::chrono::seconds(10)) const {
    ServiceRegistryOptions o;
    o.base_path = base();
    o.recipe.session_ttl = ttl;
    return o;
  }
  ServiceProviderOptions provider_options() const {
    ServiceProviderOptions o;
    o.base_path = base();
    return o;
  }
  static ServiceInstance instance(std::string id, uint16_t port = 8080) {
    return ServiceInstance{.name = "api", .id = std::move(id), .address = "10.0.0.7", .port = port};
  }
  std::optional<KeyValue> get(const std::string& k) {
    auto r = client().get(k).wait().value();
    if (r.kvs.empty()) return std::nullopt;
    return r.kvs.front();
  }
  std::string instance_key(const std::string& id) const { return base() + "/api/" + id; }
};

TEST_F(DiscoveryTest, RegistersUpdatesQueriesAndUnregisters) {
  ServiceDiscovery discovery(client(), ServiceDiscoveryOptions{.base_path = base()});
  auto a = instance("a1");
  a.payload = R"({"zone":"eu"})";
  discovery.register_instance(a).wait().value();
  discovery.register_instance(instance("a2", 8081)).wait().value();
  discovery.register_instance(ServiceInstance{.name = "billing", .id = "b1", .address = "::1", .ssl_port = 8443})
      .wait()
      .value();

  auto kv = get(instance_key("a1"));
  ASSERT_TRUE(kv.has_value());
  EXPECT_NE(kv->lease, 0) << "a registration lives on a lease";
  auto stored = recipes::ServiceInstanceCodec::decode(kv->value, kv->key).value();
  EXPECT_EQ(stored.payload, R"({"zone":"eu"})");
  EXPECT_GT(stored.registration_time_ms, 0) << "the registry stamps the time";

  EXPECT_EQ(discovery.query_names().wait().value(), (std::vector<std::string>{"api", "billing"}));
  auto apis = discovery.query_instances("api").wait().value();
  ASSERT_EQ(apis.size(), 2u);
  EXPECT_EQ(apis[0].id, "a1");
  EXPECT_EQ(apis[1].endpoint(), "10.0.0.7:8081");
  auto b1 = discovery.query_instance("billing", "b1").wait().value();
  ASSERT_TRUE(b1.has_value());
  EXPECT_EQ(b1->endpoint(), "[::1]:8443");
  EXPECT_FALSE(discovery.query_instance("billing", "nope").wait().value().has_value());

  auto moved = instance("a1", 9090);
  discovery.update(moved).wait().value();
  auto now = discovery.query_instance("api", "a1").wait().value();
  ASSERT_TRUE(now.has_value());
  EXPECT_EQ(now->port, 9090);
  EXPECT_EQ(now->registration_time_ms, stored.registration_time_ms) << "an update keeps the registration time";
  EXPECT_EQ(get(instance_key("a1"))->create_revision, kv->create_revision) << "the same key, written in place";

  EXPECT_TRUE(discovery.unregister("api", "a1").wait().value());
  EXPECT_FALSE(get(instance_key("a1")).has_value());
  EXPECT_FALSE(discovery.unregister("api", "a1").wait().value()) << "no longer registered here";
  auto st = discovery.update(moved).wait().status();
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.to_string();

  discovery.close();
  EXPECT_TRUE(eventually([&] { return !get(instance_key("a2")).has_value(); }, 5s))
      << "close() removes every registration at once, not after the TTL";
}

TEST_F(DiscoveryTest, BadInstancesAndTakenIdsAreRefusedBeforeAnyWrite) {
  ServiceRegistry registry(client(), registry_options());
  const auto rpcs = client().stats().rpcs_started;
  for (auto bad : {ServiceInstance{.name = "", .id = "x", .address = "h"},
                   ServiceInstance{.name = "a/b", .id = "x", .address = "h"},
                   ServiceInstance{.name = "api", .id = "x", .address = ""},
                   ServiceInstance{.name = "api", .id = "x", .address = "h", .payload = "not json"}}) {
    auto st = registry.register_instance(bad).wait().status();
    EXPECT_TRUE(st.is(Errc::kBadArgument)) << st.to_string();
    EXPECT_NE(st.message().find("ServiceRegistry["), std::string::npos) << st.message();
  }
  EXPECT_EQ(client().stats().rpcs_started, rpcs) << "nothing was sent";

  // Someone else's key (a plain put) is refused and left alone.
  (void)client().put(instance_key("taken"), "someone else's").wait().value();
  auto st = registry.register_instance(instance("taken")).wait().status();
  EXPECT_EQ(st.code(), StatusCode::kAlreadyExists) << st.to_string();
  EXPECT_EQ(get(instance_key("taken"))->value, "someone else's");
  EXPECT_TRUE(registry.registered().empty()) << "a failed registration leaves nothing behind";

  // Another registry's instance too; and the same one twice here.
  ServiceRegistry other(client(), registry_options());
  other.register_instance(instance("mine")).wait().value();
  EXPECT_EQ(registry.register_instance(instance("mine")).wait().status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(other.register_instance(instance("mine")).wait().status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(other.registered().size(), 1u);
  EXPECT_FALSE(registry.unregister("api", "mine").wait().value()) << "not this registry's";
  EXPECT_TRUE(get(instance_key("mine")).has_value());
}

TEST_F(DiscoveryTest, RegistrationsReappearAfterALeaseLossOnlyWhereFree) {
  auto proxy = etcd::testing::FaultProxy::start(cluster().endpoint(0));
  ClientOptions via_proxy = options();
  via_proxy.endpoints = {proxy->endpoint()};
  Client flaky(via_proxy);
  ServiceRegistry registry(flaky, registry_options(std::chrono::seconds(2)));
  std::atomic<int> lost{0}, restored{0};
  auto l = registry.on_lost([&](const ServiceInstance& i, const Status&) {
    if (i.id == "a1") ++lost;
  });
  auto r = registry.on_restored([&](const ServiceInstance& i) {
    if (i.id == "a1") ++restored;
  });
  registry.register_instance(instance("a1")).wait().value();
  registry.register_instance(instance("a2")).wait().value();
  const int64_t first = get(instance_key("a1"))->create_revision;

  proxy->blackhole();
  ASSERT_TRUE(eventually([&] { return !get(instance_key("a1")).has_value(); }, 20s)) << "the lease expired";
  ASSERT_TRUE(eventually([&] { return registry.state() == ConnectionState::kLost; }, 20s));
  // While cut off: a2's id is taken by someone else; a1 gets a new port.
  (void)client().put(instance_key("a2"), "someone else's").wait().value();
  EXPECT_TRUE(registry.update(instance("a1", 9999)).wait().status().is(Errc::kHoldLost));
  proxy->pass();

  ASSERT_TRUE(eventually([&] { return get(instance_key("a1")).has_value(); }, 20s)) << "a1 reappears";
  auto kv = get(instance_key("a1"));
  EXPECT_GT(kv->create_revision, first);
  EXPECT_EQ(recipes::ServiceInstanceCodec::decode(kv->value, kv->key).value().port, 9999)
      << "with the instance as it is now";
  EXPECT_TRUE(eventually([&] { return lost.load() == 1 && restored.load() == 1; }));
  // a2 is left alone while someone else has it, and comes back once free.
  const auto others = get(instance_key("a2"))->mod_revision;
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& e : registry.errors())
          if (e.code() == StatusCode::kAlreadyExists) return true;
        return false;
      },
      20s));
  EXPECT_EQ(get(instance_key("a2"))->mod_revision, others) << "never overwritten";
  EXPECT_EQ(registry.state(), ConnectionState::kLost) << "a2 is still lost";
  (void)client().del(instance_key("a2")).wait().value();
  ASSERT_TRUE(eventually([&] { return get(instance_key("a2")).has_value(); }, 10s)) << "re-created once free";
  EXPECT_TRUE(eventually([&] { return registry.state() == ConnectionState::kReconnected; }));
}

TEST_F(DiscoveryTest, AProviderNeverPicksAnInstanceTheCacheSawRemoved) {
  ServiceRegistry registry(client(), registry_options());
  for (int i = 0; i < 4; ++i) registry.register_instance(instance("a" + std::to_string(i))).wait().value();
  ServiceProvider provider(client(), "api", provider_options());
  provider.wait_initialized().timeout(10s).wait().value();
  std::set<std::string> seen;
  for (int i = 0; i < 40; ++i) seen.insert(provider.pick().value().id);
  EXPECT_EQ(seen.size(), 4u) << "round robin reaches every instance";

  // Pickers run while instances go; a pick that began after the cache
  // reached the deletion's revision must never return the removed one.
  std::atomic<bool> stop{false};
  std::atomic<int64_t> removed_at[2] = {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max()};
  std::atomic<int> violations{0}, picks{0};
  std::vector<std::thread> pickers;
  for (int t = 0; t < 2; ++t) {
    pickers.emplace_back([&] {
      while (!stop.load()) {
        const int64_t seen_revision = provider.cache().revision();
        auto p = provider.pick();
        ++picks;
        if (!p) continue;
        if ((p->id == "a0" && seen_revision >= removed_at[0].load()) ||
            (p->id == "a1" && seen_revision >= removed_at[1].load())) {
          ++violations;
        }
      }
    });
  }
  ASSERT_TRUE(eventually([&] { return picks.load() > 1000; }));
  // a0 unregistered; a1 deleted behind the registry's back (an operator's del).
  const int64_t before = client().get("x").wait().value().header.revision;
  EXPECT_TRUE(registry.unregister("api", "a0").wait().value());
  auto del = client().del(instance_key("a1")).wait().value();
  // The unregister's delete is the first revision after `before`.
  removed_at[0] = before + 1;
  removed_at[1] = del.header.revision;
  ASSERT_TRUE(eventually([&] { return provider.cache().revision() >= del.header.revision; }));
  const int after = picks.load();
  ASSERT_TRUE(eventually([&] { return picks.load() > after + 5000; }));
  stop = true;
  for (auto& t : pickers) t.join();
  EXPECT_EQ(violations.load(), 0);
  seen.clear();
  for (int i = 0; i < 20; ++i) seen.insert(provider.pick().value().id);
  EXPECT_EQ(seen, (std::set<std::string>{"a2", "a3"}));
}

TEST_F(DiscoveryTest, ErrorsEjectAnInstanceForItsTimeThenItRejoins) {
  ServiceRegistry registry(client(), registry_options());
  registry.register_instance(instance("a1")).wait().value();
  registry.register_instance(instance("a2")).wait().value();
  auto options = provider_options();
  options.errors_before_ejection = 2;
  options.ejection_time = std::chrono::milliseconds(600);
  ServiceProvider provider(client(), "api", options);
  provider.wait_initialized().timeout(10s).wait().value();
  auto a1 = provider.all_instances().at(0);
  ASSERT_EQ(a1.id, "a1");

  provider.note_error(a1);
  EXPECT_EQ(provider.candidates().size(), 2u) << "one error is below the threshold";
  provider.note_error(a1);
  const auto ejected_at = std::chrono::steady_clock::now();
  EXPECT_EQ(provider.candidates().size(), 1u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(provider.pick().value().id, "a2");
  // Errors noted while it is out do not extend its time.
  provider.note_error(a1);
  provider.note_error(a1);
  ASSERT_TRUE(eventually([&] { return provider.candidates().size() == 2; }, 5s, 5ms));
  const auto out_for = std::chrono::steady_clock::now() - ejected_at;
  EXPECT_GE(out_for, std::chrono::milliseconds(600));
  EXPECT_LT(out_for, std::chrono::milliseconds(900)) << "rejoins on time";
  // Its count starts again: one error does not eject it.
  provider.note_error(a1);
  EXPECT_EQ(provider.candidates().size(), 2u);

  // The only instance left, ejected: none to pick rather than one known to fail.
  EXPECT_TRUE(registry.unregister("api", "a2").wait().value());
  ASSERT_TRUE(eventually([&] { return provider.candidates().size() == 1; }));
  provider.note_error(a1);
  EXPECT_FALSE(provider.pick().has_value());
  auto st = provider.get_instance().wait().status();
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("1 ejected"), std::string::npos) << st.message();
}

TEST_F(DiscoveryTest, StrategiesAndDisabledInstances) {
  ServiceRegistry registry(client(), registry_options());
  for (int i = 0; i < 3; ++i) registry.register_instance(instance("a" + std::to_string(i))).wait().value();
  auto off = instance("a9");
  off.enabled = false;
  registry.register_instance(off).wait().value();

  auto make = [&](std::shared_ptr<recipes::ProviderStrategy> s) {
    auto o = provider_options();
    o.strategy = std::move(s);
    auto p = std::make_unique<ServiceProvider>(client(), "api", o);
    p->wait_initialized().timeout(10s).wait().value();
    return p;
  };
  auto round_robin = make(recipes::round_robin_strategy());
  std::vector<std::string> order;
  for (int i = 0; i < 6; ++i) order.push_back(round_robin->pick().value().id);
  EXPECT_EQ(order, (std::vector<std::string>{"a0", "a1", "a2", "a0", "a1", "a2"}));
  EXPECT_EQ(round_robin->all_instances().size(), 4u) << "the disabled one is cached, never picked";

  auto random = make(recipes::random_strategy());
  std::map<std::string, int> counts;
  for (int i = 0; i < 600; ++i) ++counts[random->pick().value().id];
  EXPECT_EQ(counts.size(), 3u);
  for (auto& [id, n] : counts) EXPECT_GT(n, 100) << id;

  auto sticky = make(recipes::sticky_strategy());
  const auto first = sticky->pick().value().id;
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sticky->pick().value().id, first);
  EXPECT_TRUE(registry.unregister("api", first).wait().value());
  ASSERT_TRUE(eventually([&] { return sticky->candidates().size() == 2; }));
  const auto second = sticky->pick().value().id;
  EXPECT_NE(second, first);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sticky->pick().value().id, second);

  struct Last : recipes::ProviderStrategy {
    std::optional<std::size_t> pick(std::span<const ServiceInstance> c) override { return c.size() - 1; }
  };
  auto custom = make(std::make_shared<Last>());
  const auto candidates = custom->candidates();  // sorted by id; the sticky test removed one
  ASSERT_EQ(candidates.size(), 2u);
  EXPECT_EQ(custom->pick().value().id, candidates.back().id) << "the custom strategy's choice: the last by id";
}

TEST_F(DiscoveryTest, ACacheFollowsInstancesAndReportsOnesThatDoNotDecode) {
  ServiceRegistry registry(client(), registry_options());
  ServiceCache cache(client(), "api", ServiceCacheOptions{.base_path = base()});
  Mailbox<std::string> events;
  auto sub = cache.on_event(
      [&](const ServiceCache::Event& e) { events.put(std::to_string(static_cast<int>(e.type)) + " " + e.name); });
  cache.start();
  cache.wait_initialized().timeout(10s).wait().value();
  registry.register_instance(instance("a1")).wait().value();
  EXPECT_EQ(events.take(), "0 a1");
  (void)client().put(instance_key("junk"), "{not json").wait().value();
  EXPECT_EQ(events.take(), "0 junk");
  EXPECT_EQ(cache.instances().size(), 1u) << "what does not decode is left out";
  ASSERT_TRUE(eventually([&] {
    for (const auto& e : cache.errors())
      if (e.is(Errc::kDecodeFailed) && e.message().find("junk") != std::string::npos) return true;
    return false;
  }));
  EXPECT_TRUE(registry.unregister("api", "a1").wait().value());
  EXPECT_EQ(events.take(), "2 a1");
  EXPECT_TRUE(cache.instances().empty());
}

TEST_F(DiscoveryTest, TheFacadeClosesWhatItMade) {
  auto discovery = std::make_unique<ServiceDiscovery>(client(), ServiceDiscoveryOptions{.base_path = base()});
  discovery->register_instance(instance("a1")).wait().value();
  auto provider = discovery->provider("api");
  auto cache = discovery->cache("api");
  provider->wait_initialized().timeout(10s).wait().value();
  EXPECT_EQ(provider->pick().value().id, "a1");
  EXPECT_EQ(provider->get_instance().timeout(5s).wait().value().id, "a1");
  discovery->close();
  EXPECT_TRUE(provider->closed());
  EXPECT_TRUE(cache->closed());
  EXPECT_FALSE(provider->pick().has_value());
  EXPECT_THROW((void)discovery->provider("api"), Error);
  EXPECT_TRUE(eventually([&] { return !get(instance_key("a1")).has_value(); }, 5s));
}

}  // namespace
}  // namespace etcd::test
