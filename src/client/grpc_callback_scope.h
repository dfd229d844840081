// Marks the calling thread, for the scope's life, as running one of gRPC's
// callbacks (internal). A client core whose last reference goes on such a
// thread is deleted on a thread of its own, and a close() there does not
// wait: its destructor and close() wait for its calls' and streams' last
// callbacks, which gRPC may have to run on this very thread (waiting there
// would time out, holding up every client's callbacks meanwhile, and the
// late callback would meet a freed core).
#pragma once

namespace etcd::detail {

class GrpcCallbackScope {
 public:
  GrpcCallbackScope() { ++depth_; }
  ~GrpcCallbackScope() { --depth_; }
  GrpcCallbackScope(const GrpcCallbackScope&) = delete;
  GrpcCallbackScope& operator=(const GrpcCallbackScope&) = delete;
  static bool active() { return depth_ > 0; }

 private:
  static thread_local int depth_;
};

}  // namespace etcd::detail
