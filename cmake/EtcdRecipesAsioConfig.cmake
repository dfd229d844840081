# asio 1.22 decides how its recycling allocator gets and frees memory
# (std::aligned_alloc + std::free, or operator new + operator delete) from
# _GLIBCXX_HAVE_ALIGNED_ALLOC, a macro of the standard library's
# <bits/c++config.h>. asio/detail/config.hpp tests it without including any
# standard header first, so a TU that includes asio before any standard
# header sees it undefined and one that includes it after sees it defined.
# Both kinds of TU share one per-thread memory cache (and one definition of
# the inline asio::detail::aligned_new, an ODR violation), so a block
# allocated in one TU and freed in another is freed the wrong way: ASan's
# alloc-dealloc-mismatch at shutdown, heap corruption without ASan.
#
# The fix is to decide once, here, and to hand the decision to every TU
# (ours and our consumers') as a compile definition of the client target,
# so that include order no longer matters.
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-std=c++20")
check_cxx_source_compiles([=[
#include <cstdlib>
#if !defined(_GLIBCXX_HAVE_ALIGNED_ALLOC) && !defined(_LIBCPP_HAS_ALIGNED_ALLOC)
#error no aligned_alloc
#endif
int main() { void* p = std::aligned_alloc(64, 64); std::free(p); return 0; }
]=] ETCD_RECIPES_HAVE_STD_ALIGNED_ALLOC)
unset(CMAKE_REQUIRED_FLAGS)
if(ETCD_RECIPES_HAVE_STD_ALIGNED_ALLOC)
  # What a TU that includes a standard header first gets anyway.
  set(ETCD_RECIPES_ASIO_DEFINITIONS ASIO_HAS_STD_ALIGNED_ALLOC=1)
else()
  set(ETCD_RECIPES_ASIO_DEFINITIONS ASIO_DISABLE_STD_ALIGNED_ALLOC=1)
endif()
