// RecipeOptions::session_factory: a recipe's holds live on the sessions the
// factory makes, the factory runs with none of the recipe's locks held (it
// may call the recipe, or take a lock another thread holds while calling
// the recipe), and a factory that throws or gives nothing fails the
// operation with a clear error, nothing written.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "etcd/recipes/mutex.h"
#include "etcd/session.h"
#include "support/etcd_fixture.h"

namespace etcd::test {
namespace {

using recipes::DistributedMutex;
using recipes::RecipeOptions;

class SessionFactoryTest : public SingleMemberTest {
 protected:
  // The keys under the mutex's name.
  int64_t session_factory_key_count(const std::string& name) {
    auto got = client().get(name + "/", {.prefix = true}).wait();
    EXPECT_TRUE(got.ok());
    return got.ok() ? static_cast<int64_t>(got->kvs.size()) : -1;
  }
};

TEST_F(SessionFactoryTest, TheHoldLivesOnTheFactorysSession) {
  int made = 0;
  std::shared_ptr<Session> last;
  RecipeOptions o;
  o.session_factory = [&] {
    ++made;
    last = Session::create(client(), {.ttl = std::chrono::seconds(5)});
    return last;
  };
  DistributedMutex m(client(), key("lock"), o);
  auto h = m.acquire().wait();
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  EXPECT_EQ(made, 1);
  auto got = client().get(h->key()).wait();
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->kvs.size(), 1u);
  EXPECT_EQ(got->kvs[0].lease, last->lease_id());
  ASSERT_TRUE(h->release().wait().ok());
}

TEST_F(SessionFactoryTest, TheFactoryRunsWithNoLockOfTheRecipeHeld) {
  // The factory calls the recipe (errors() takes the recipe's lock): were
  // it called under that lock, the acquisition would never end.
  RecipeOptions o;
  std::weak_ptr<DistributedMutex> weak;
  o.session_factory = [this, &weak] {
    if (auto self = weak.lock()) (void)self->errors();
    return Session::create(client(), {.ttl = std::chrono::seconds(5)});
  };
  auto m = std::make_shared<DistributedMutex>(client(), key("lock"), o);
  weak = m;
  auto done = std::make_shared<std::promise<bool>>();
  auto result = done->get_future();
  std::thread acquirer([m, done] {
    auto h = m->acquire().wait();
    done->set_value(h.ok() && h->release().wait().ok());
  });
  if (result.wait_for(20s) != std::future_status::ready) {
    std::fprintf(stderr, "the session factory deadlocked against the recipe's lock\n");
    std::abort();  // the acquiring thread can never end: no way to clean up
  }
  acquirer.join();
  EXPECT_TRUE(result.get());
}

TEST_F(SessionFactoryTest, AFactoryThatThrowsFailsTheOperationWithItsMessage) {
  RecipeOptions o;
  o.session_factory = []() -> std::shared_ptr<Session> { throw std::runtime_error("no lease for this tenant"); };
  DistributedMutex m(client(), key("lock"), o);
  auto h = m.acquire().wait();
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(h.status().message().find("the session factory failed: no lease for this tenant"), std::string::npos)
      << h.status().to_string();
  EXPECT_EQ(session_factory_key_count(key("lock")), 0);
}

TEST_F(SessionFactoryTest, AFactoryThatGivesNoSessionFailsTheOperation) {
  RecipeOptions o;
  o.session_factory = []() -> std::shared_ptr<Session> { return nullptr; };
  DistributedMutex m(client(), key("lock"), o);
  auto h = m.acquire().wait();
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(h.status().message().find("gave no session"), std::string::npos) << h.status().to_string();
  EXPECT_EQ(session_factory_key_count(key("lock")), 0);
}

}  // namespace
}  // namespace etcd::test
