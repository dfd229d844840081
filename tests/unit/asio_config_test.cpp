// Before any include: the asio allocation choice must come from the build
// (the client target's compile definitions), not from which header a file
// happens to include first. See cmake/EtcdRecipesAsioConfig.cmake.
#if !defined(ASIO_HAS_STD_ALIGNED_ALLOC) && !defined(ASIO_DISABLE_STD_ALIGNED_ALLOC)
#error "etcd-recipes must fix asio's aligned-allocation choice for every translation unit"
#endif

#include <gtest/gtest.h>
#include <asio/detail/memory.hpp>

#include <cstdint>

#include "etcd/client.h"

namespace {

TEST(AsioConfig, RecyclingAllocatorUsesOneAllocationSchemeRegardlessOfIncludeOrder) {
  // asio included first here, yet its choice is the one the library made.
#if defined(ASIO_HAS_STD_ALIGNED_ALLOC)
  const bool aligned = true;
#else
  const bool aligned = false;
#endif
  EXPECT_EQ(aligned, ETCD_RECIPES_TEST_EXPECT_ALIGNED_ALLOC);
  void* p = asio::aligned_new(64, 100);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % (aligned ? 64 : 1), 0u);
  asio::aligned_delete(p);
}

}  // namespace
