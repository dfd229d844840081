// ServiceInstance's JSON wire format and checks (pure logic, no etcd).
#include <gtest/gtest.h>

#include "etcd/recipes/service_instance.h"

namespace etcd::recipes {
namespace {

TEST(ServiceInstanceTest, RoundTripsThroughTheWireFormat) {
  ServiceInstance i{.name = "api",
                    .id = "api-1",
                    .address = "10.0.0.7",
                    .port = 8080,
                    .ssl_port = 8443,
                    .payload = R"({"zone":"eu","weight":3})",
                    .registration_time_ms = 1764590400000,
                    .enabled = false};
  auto bytes = ServiceInstanceCodec::encode(i).value();
  EXPECT_EQ(bytes,
            R"({"address":"10.0.0.7","enabled":false,"id":"api-1","name":"api","payload":{"weight":3,"zone":"eu"},)"
            R"("port":8080,"registrationTimeUTC":1764590400000,"sslPort":8443})");
  auto back = ServiceInstanceCodec::decode(bytes, "/services/api/api-1").value();
  EXPECT_EQ(back.payload, R"({"weight":3,"zone":"eu"})") << "the payload as compact JSON";
  back.payload = i.payload;
  EXPECT_EQ(back, i);
}

TEST(ServiceInstanceTest, DecodesCuratorStyleJsonAndIgnoresUnknownFields) {
  auto i =
      ServiceInstanceCodec::decode(R"({"name":"api","id":"x","address":"h","port":null,"sslPort":443,"payload":null,)"
                                   R"("registrationTimeUTC":5,"serviceType":"DYNAMIC","uriSpec":null})",
                                   "k")
          .value();
  EXPECT_FALSE(i.port.has_value());
  EXPECT_EQ(i.ssl_port, 443);
  EXPECT_TRUE(i.payload.empty());
  EXPECT_TRUE(i.enabled) << "absent means enabled";
  EXPECT_EQ(i.endpoint(), "h:443");
}

TEST(ServiceInstanceTest, ValuesThatAreNotInstancesAreDecodeErrorsNamingTheKey) {
  for (const char* bad :
       {"{not json", "[1,2]", R"({"id":"x","address":"h"})", R"({"name":"a","id":"x"})",
        R"({"name":"a","id":"x","address":"h","port":70000})", R"({"name":"a","id":"x","address":"h","port":"80"})",
        R"({"name":"a","id":"x","address":"h","enabled":"yes"})"}) {
    auto r = ServiceInstanceCodec::decode(bad, "/services/a/x");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(r.status().is(Errc::kDecodeFailed)) << r.status().to_string();
    EXPECT_NE(r.status().message().find("/services/a/x"), std::string::npos) << r.status().message();
  }
}

TEST(ServiceInstanceTest, ChecksSayWhatIsWrong) {
  EXPECT_TRUE(validate_instance({.name = "a", .id = "x", .address = "h"}).ok());
  auto st = validate_instance({.name = "a/b", .id = "x", .address = "h"});
  EXPECT_TRUE(st.is(Errc::kBadArgument));
  EXPECT_NE(st.message().find("one key segment"), std::string::npos) << st.message();
  EXPECT_NE(validate_instance({.name = "a", .id = "", .address = "h"}).message().find("instance id"),
            std::string::npos);
  EXPECT_NE(validate_instance({.name = "a", .id = "x", .address = ""}).message().find("no address"), std::string::npos);
  EXPECT_NE(
      validate_instance({.name = "a", .id = "x", .address = "h", .payload = "plain text"}).message().find("not JSON"),
      std::string::npos);
  EXPECT_TRUE(validate_instance({.name = "a", .id = "x", .address = "h", .payload = R"("plain text")"}).ok());
  EXPECT_FALSE(ServiceInstanceCodec::encode({.name = "a", .id = "x", .address = ""}).ok())
      << "encoding checks too: nothing invalid is ever written";
}

TEST(ServiceInstanceTest, EndpointsAndTypedPayloads) {
  EXPECT_EQ((ServiceInstance{.address = "h", .port = 80}.endpoint()), "h:80");
  EXPECT_EQ((ServiceInstance{.address = "::1", .port = 80}.endpoint()), "[::1]:80");
  EXPECT_EQ((ServiceInstance{.address = "h"}.endpoint()), "h");
  ServiceInstance i{.name = "a", .id = "x", .address = "h"};
  i.payload = encode_payload(int64_t{42}, IntegerCodec<int64_t>()).value();
  EXPECT_TRUE(validate_instance(i).ok()) << "an integer codec writes JSON";
  EXPECT_EQ(decode_payload<int64_t>(i, IntegerCodec<int64_t>()).value(), 42);
}

}  // namespace
}  // namespace etcd::recipes
