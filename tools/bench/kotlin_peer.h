// --kotlin-peer: the bench's workloads run with the Kotlin library
// etcd-recipes is modelled on (com.pambrose:etcd-recipes-core, on jetcd), by
// the JVM program in tools/peers/kotlin, against the same cluster in the same
// run; each number is reported as kt_<metric>.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace bench {

struct KotlinPeerOptions {
  bool enabled = false;            // --kotlin-peer (or a kt_* metric named in --only)
  std::filesystem::path src;       // --kotlin-peer-src: the directory holding pom.xml; empty: the usual places
  std::filesystem::path workdir;   // --kotlin-workdir: where the jar is built; empty: a per-user temp dir
  std::vector<std::string> only;   // the kt_* metrics named in --only (empty: all)
};

// Set by main() from the command line before any metric runs.
KotlinPeerOptions& kotlin_peer_options();

struct KotlinPeer {
  std::filesystem::path java;
  std::filesystem::path jar;
};

// Builds tools/peers/kotlin into its work dir unless the jar there is newer
// than its sources (offline first, then online); says what it did through
// `note`. Throws Skipped when java/mvn are missing or the library does not
// resolve from the Maven repositories this machine reaches.
KotlinPeer build_kotlin_peer(const std::function<void(const std::string&)>& note);

// The metrics the Kotlin peer reports (named kt_*).
inline bool is_kotlin_peer_metric(std::string_view name) { return name.starts_with("kt_"); }

}  // namespace bench
