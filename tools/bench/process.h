// Running a helper program (the Go toolchain, the Go peer) and capturing
// its output.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bench {

struct ProcessResult {
  int exit_code = -1;  // -1 if killed by a signal or on timeout
  bool timed_out = false;
  std::string out;
  std::string err;
};

// Runs argv[0] (a path) with this process's environment plus `env`
// (overriding same-named variables), in its own process group so a timeout
// can kill the whole tree. Throws std::system_error if it cannot start.
ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                          std::chrono::milliseconds timeout);

// The first executable `name` on PATH.
std::optional<std::filesystem::path> find_on_path(const std::string& name);

// The last `lines` lines of `text`, for error messages.
std::string tail(std::string_view text, int lines = 15);

}  // namespace bench
