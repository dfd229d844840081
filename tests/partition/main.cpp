// The partition tests run in a private network (etcd/testing/private_network.h),
// entered before GoogleTest or anything else starts a thread.
#include <gtest/gtest.h>

#include "etcd/testing/private_network.h"

int main(int argc, char** argv) {
  etcd::testing::enter_private_network();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
