// queue push / pop / size: a DistributedQueue from the shell.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/queue.h"
#include "hold.h"
#include "simple_format.h"

namespace etcd_cli {
namespace {

struct PushArgs {
  std::string name;
  std::vector<std::string> values;
  std::string file;
};

struct PopArgs {
  std::string name;
  std::string wait_timeout;
  bool no_wait = false;
  int count = 1;
  // -n given: each value is one line in the simple format (escaped); else
  // the one value is printed as stored.
  bool lines = false;
};

// An unreachable or refusing etcd is an error to report at once (exit 1),
// not a pop that waits for its view until --timeout: one count read within
// the per-call --timeout. It is also what `queue size` prints.
int64_t queue_size(Context& ctx, etcd::recipes::DistributedQueue& q, const std::string& what) {
  return check(q.size().timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
}

int push(Context& ctx, const PushArgs& a) {
  const std::string what = "queue push " + a.name;
  std::vector<std::string> values = push_values(a.values, a.file, "queue push");
  etcd::recipes::DistributedQueue q(ctx.client(), a.name);
  const auto done = check(q.enqueue_all(std::move(values)).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
  if (ctx.json()) {
    nlohmann::json keys = nlohmann::json::array();
    for (const auto& k : done.keys) keys.push_back(base64(k));
    print_line(dump_json({{"revision", done.revision}, {"keys", keys}}));
  } else {
    print_line(std::to_string(done.revision));
  }
  return kExitOk;
}

int pop(Context& ctx, const PopArgs& a) {
  const std::string what = "queue pop " + a.name;
  etcd::recipes::DistributedQueue q(ctx.client(), a.name);
  (void)queue_size(ctx, q, what);
  const std::optional<etcd::Deadline> give_up = wait_deadline(a.wait_timeout);
  for (int i = 0; i < a.count; ++i) {
    std::optional<std::string> value;
    if (a.no_wait) {
      // Take an item only if there is one now.
      value = check(q.try_dequeue().timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
    } else {
      // An item already taken when the wait ends (signal, --timeout) is
      // still delivered, and printed: it is never dropped.
      auto r = bounded(q.dequeue(), give_up, ctx.stop()).wait();
      if (r.ok()) {
        value = std::move(r).value();
      } else if (ctx.stop().stop_requested()) {
        return kExitSignalBase + stop_signal();
      } else if (r.status().code() != etcd::StatusCode::kDeadlineExceeded) {
        throw Failure(what, std::move(r).status());
      }
    }
    if (!value) {
      std::cerr << kProgram << ": " << what << ": "
                << (a.wait_timeout.empty() ? std::string("the queue is empty") : cat("no item within ", a.wait_timeout))
                << std::endl;
      return kExitTimedOut;
    }
    print_line(ctx.json() ? dump_json({{"value", base64(*value)}}) : a.lines ? simple_field(*value) : *value);
  }
  return kExitOk;
}

void add_push(CLI::App* queue, Commands& commands) {
  auto a = std::make_shared<PushArgs>();
  auto* cmd =
      queue->add_subcommand("push", "Add the VALUEs at the tail of the queue NAME, in order, in one transaction");
  cmd->add_option("name", a->name, "The queue's name (a key prefix)")->required()->check(name_validator("queue"));
  cmd->add_option("values", a->values, "The values (- reads one from standard input)");
  cmd->add_option("--file", a->file, "Read the one value from this file")->check(CLI::ExistingFile);
  cmd->footer(
      "Prints the revision of the transaction that added them (-w json: {\"revision\":N,\"keys\":[B64...]}). "
      "All values or none are added. A push whose outcome was unknown (a connection lost at the wrong moment) is "
      "sent again safely: it never adds an item twice.\n\n"
      "Exit codes:\n"
      "  0  added\n"
      "  1  an etcd operation failed (nothing added, or an outcome that stayed unknown: the message says which)\n"
      "  2  invalid usage");
  commands.on_run(cmd, [a](Context& ctx) { return push(ctx, *a); });
}

void add_pop(CLI::App* queue, Commands& commands) {
  auto a = std::make_shared<PopArgs>();
  auto* cmd = queue->add_subcommand("pop", "Take the item at the head of the queue NAME and print its value");
  cmd->add_option("name", a->name, "The queue's name (a key prefix)")->required()->check(name_validator("queue"));
  cmd->add_option("--timeout", a->wait_timeout,
                  "Give up waiting for an item after this long (exit 3), e.g. 500ms, 30s (the per-call --timeout "
                  "goes before the command name)")
      ->check(duration_validator());
  cmd->add_flag("--no-wait", a->no_wait, "Take an item only if there is one now (exit 3 if the queue is empty)")
      ->excludes("--timeout");
  auto* count = cmd->add_option("-n,--count", a->count,
                                "Take this many items, one after the other, each printed on a line of its own in "
                                "the simple format (escaped, see docs/cli.md); without -n the one value is printed "
                                "as stored")
                    ->check(int_range(1, INT32_MAX))
                    ->capture_default_str();
  cmd->footer(
      "Waits while the queue is empty (until SIGINT/SIGTERM or --timeout). Each item goes to exactly one taker, "
      "oldest first. An item this command took is printed even if the wait was ending meanwhile; a take is final "
      "(a taker that dies before printing loses the item). -w json: {\"value\":B64} per item.\n\n"
      "Exit codes:\n"
      "  0      the items were taken and printed\n"
      "  1      an etcd operation failed\n"
      "  2      invalid usage\n"
      "  3      no item within --timeout (--no-wait: the queue was empty)\n"
      "  128+N  interrupted by signal N while waiting");
  commands.on_run(cmd, [a, count](Context& ctx) {
    a->lines = count->count() > 0;
    return pop(ctx, *a);
  });
}

void add_size(CLI::App* queue, Commands& commands) {
  auto name = std::make_shared<std::string>();
  auto* cmd = queue->add_subcommand("size", "Print how many items the queue NAME holds now");
  cmd->add_option("name", *name, "The queue's name (a key prefix)")->required()->check(name_validator("queue"));
  cmd->footer("One count read; others may add and take items at any moment. -w json: {\"size\":N}.");
  commands.on_run(cmd, [name](Context& ctx) {
    etcd::recipes::DistributedQueue q(ctx.client(), *name);
    const int64_t n = queue_size(ctx, q, "queue size " + *name);
    print_line(ctx.json() ? dump_json({{"size", n}}) : std::to_string(n));
    return kExitOk;
  });
}

}  // namespace

void add_queue_commands(Commands& commands) {
  auto* queue = commands.root().add_subcommand("queue", "A distributed FIFO queue: push, pop, size");
  add_push(queue, commands);
  add_pop(queue, commands);
  add_size(queue, commands);
}

}  // namespace etcd_cli
