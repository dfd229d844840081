// queue push / pop / size / remove: a DistributedQueue from the shell;
// pqueue push / pop / size / remove: a DistributedPriorityQueue.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/priority_queue.h"
#include "etcd/recipes/queue.h"
#include "hold.h"
#include "simple_format.h"

namespace etcd_cli {
namespace {

// `remove`: the item was not there (taken, removed, never enqueued).
constexpr int kExitNoSuchQueueItem = 3;

struct PushArgs {
  std::string name;
  std::vector<std::string> values;
  std::string file;
  bool ids = false;      // print the item ids instead of the revision
  int64_t priority = 0;  // pqueue only
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
template <class Q>
int64_t queue_size(Context& ctx, Q& q, const std::string& what) {
  return check(q.size().timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
}

// What a push prints: the revision, or (--ids) the item ids one per line,
// the ids `remove` takes.
void print_pushed(Context& ctx, const PushArgs& a, const etcd::recipes::Enqueued& done) {
  if (ctx.json()) {
    nlohmann::json keys = nlohmann::json::array();
    for (const auto& k : done.keys) keys.push_back(base64(k));
    print_line(dump_json({{"revision", done.revision}, {"keys", keys}}));
  } else if (a.ids) {
    for (const auto& k : done.keys) print_line(simple_field(k.substr(k.rfind('/') + 1)));
  } else {
    print_line(std::to_string(done.revision));
  }
}

int push(Context& ctx, const PushArgs& a) {
  const std::string what = "queue push " + a.name;
  std::vector<std::string> values = push_values(a.values, a.file, "queue push");
  etcd::recipes::DistributedQueue q(ctx.client(), a.name);
  print_pushed(ctx, a,
               check(q.enqueue_all(std::move(values)).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what));
  return kExitOk;
}

int push_priority(Context& ctx, const PushArgs& a) {
  const std::string what = cat("pqueue push ", a.name, " ", a.priority);
  std::vector<std::string> values = push_values(a.values, a.file, "pqueue push");
  etcd::recipes::DistributedPriorityQueue q(ctx.client(), a.name);
  print_pushed(
      ctx, a,
      check(q.enqueue_all(std::move(values), a.priority).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what));
  return kExitOk;
}

template <class Q>
int pop(Context& ctx, const PopArgs& a, const char* family) {
  const std::string what = cat(family, " pop ", a.name);
  Q q(ctx.client(), a.name);
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

void add_push_values(CLI::App* cmd, PushArgs& a) {
  cmd->add_option("values", a.values, "The values (- reads one from standard input)");
  cmd->add_option("--file", a.file, "Read the one value from this file")->check(CLI::ExistingFile);
  cmd->add_flag("--ids", a.ids,
                "Print the id of each item added, one per line (what `remove NAME ID` takes), instead of the "
                "revision");
}

void add_push(CLI::App* queue, Commands& commands) {
  auto a = std::make_shared<PushArgs>();
  auto* cmd =
      queue->add_subcommand("push", "Add the VALUEs at the tail of the queue NAME, in order, in one transaction");
  cmd->add_option("name", a->name, "The queue's name (a key prefix)")->required()->check(name_validator("queue"));
  add_push_values(cmd, *a);
  cmd->footer(
      "Prints the revision of the transaction that added them, or with --ids the items' ids (-w json: "
      "{\"revision\":N,\"keys\":[B64...]}). "
      "All values or none are added. A push whose outcome was unknown (a connection lost at the wrong moment) is "
      "sent again safely: it never adds an item twice.\n\n"
      "Exit codes:\n"
      "  0  added\n"
      "  1  an etcd operation failed (nothing added, or an outcome that stayed unknown: the message says which)\n"
      "  2  invalid usage");
  commands.on_run(cmd, [a](Context& ctx) { return push(ctx, *a); });
}

template <class Q>
void add_pop(CLI::App* queue, Commands& commands, const char* family, const char* order) {
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
      cat("Waits while the queue is empty (until SIGINT/SIGTERM or --timeout). Each item goes to exactly one taker, ",
          order,
          ". An item this command took is printed even if the wait was ending meanwhile; a take is final "
          "(a taker that dies before printing loses the item). -w json: {\"value\":B64} per item.\n\n"
          "Exit codes:\n"
          "  0      the items were taken and printed\n"
          "  1      an etcd operation failed\n"
          "  2      invalid usage\n"
          "  3      no item within --timeout (--no-wait: the queue was empty)\n"
          "  128+N  interrupted by signal N while waiting"));
  commands.on_run(cmd, [a, count, family](Context& ctx) {
    a->lines = count->count() > 0;
    return pop<Q>(ctx, *a, family);
  });
}

template <class Q>
void add_size(CLI::App* queue, Commands& commands, const char* family) {
  auto name = std::make_shared<std::string>();
  auto* cmd = queue->add_subcommand("size", "Print how many items the queue NAME holds now");
  cmd->add_option("name", *name, "The queue's name (a key prefix)")->required()->check(name_validator("queue"));
  cmd->footer("One count read; others may add and take items at any moment. -w json: {\"size\":N}.");
  commands.on_run(cmd, [name, family](Context& ctx) {
    Q q(ctx.client(), *name);
    const int64_t n = queue_size(ctx, q, cat(family, " size ", *name));
    print_line(ctx.json() ? dump_json({{"size", n}}) : std::to_string(n));
    return kExitOk;
  });
}

template <class Q>
void add_remove(CLI::App* queue, Commands& commands, const char* family) {
  struct RemoveArgs {
    std::string name;
    std::string id;
  };
  auto a = std::make_shared<RemoveArgs>();
  auto* cmd = queue->add_subcommand("remove", "Remove the item ID from the queue NAME without delivering it");
  cmd->add_option("name", a->name, "The queue's name (a key prefix)")->required()->check(name_validator("queue"));
  cmd->add_option("id", a->id, "The item's id (as `push --ids` prints it) or its whole key")->required();
  cmd->footer(
      "One delete, the same a pop's take is: of a remove and any number of pops of one item exactly one gets it. "
      "A removed item is never delivered; an item already taken is not removed. -w json: {\"removed\":BOOL}.\n\n"
      "Exit codes:\n"
      "  0  removed\n"
      "  1  an etcd operation failed, or ID names no item of this queue (nothing written)\n"
      "  2  invalid usage\n"
      "  3  no such item (taken, removed, or never there)");
  commands.on_run(cmd, [a, family](Context& ctx) {
    const std::string what = cat(family, " remove ", a->name, " ", a->id);
    Q q(ctx.client(), a->name);
    const bool removed = check(q.remove(a->id).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
    if (ctx.json()) print_line(dump_json({{"removed", removed}}));
    if (removed) return kExitOk;
    std::cerr << kProgram << ": " << what << ": no such item (taken, removed, or never there)" << std::endl;
    return kExitNoSuchQueueItem;
  });
}

void add_priority_push(CLI::App* pqueue, Commands& commands) {
  auto a = std::make_shared<PushArgs>();
  auto* cmd = pqueue->add_subcommand(
      "push", "Add the VALUEs with PRIORITY to the priority queue NAME, in order, in one transaction");
  cmd->add_option("name", a->name, "The queue's name (a key prefix)")->required()->check(name_validator("queue"));
  cmd->add_option("priority", a->priority, "0..65535, lower is served first")
      ->required()
      ->check(int_range(etcd::recipes::DistributedPriorityQueue::kMinPriority,
                        etcd::recipes::DistributedPriorityQueue::kMaxPriority));
  add_push_values(cmd, *a);
  cmd->footer(
      "Prints the revision of the transaction that added them, or with --ids the items' ids (-w json: "
      "{\"revision\":N,\"keys\":[B64...]}). All values or none are added; a push whose outcome was unknown is "
      "sent again safely, never adding an item twice.\n\n"
      "Exit codes:\n"
      "  0  added\n"
      "  1  an etcd operation failed (nothing added, or an outcome that stayed unknown: the message says which)\n"
      "  2  invalid usage (a PRIORITY outside 0..65535)");
  commands.on_run(cmd, [a](Context& ctx) { return push_priority(ctx, *a); });
}

}  // namespace

void add_queue_commands(Commands& commands) {
  auto* queue = commands.root().add_subcommand("queue", "A distributed FIFO queue: push, pop, size, remove");
  add_push(queue, commands);
  add_pop<etcd::recipes::DistributedQueue>(queue, commands, "queue", "oldest first");
  add_size<etcd::recipes::DistributedQueue>(queue, commands, "queue");
  add_remove<etcd::recipes::DistributedQueue>(queue, commands, "queue");

  auto* pqueue = commands.root().add_subcommand(
      "pqueue", "A distributed priority queue (lower priority first, then oldest first): push, pop, size, remove");
  add_priority_push(pqueue, commands);
  add_pop<etcd::recipes::DistributedPriorityQueue>(pqueue, commands, "pqueue",
                                                   "the lowest priority first, oldest first within a priority");
  add_size<etcd::recipes::DistributedPriorityQueue>(pqueue, commands, "pqueue");
  add_remove<etcd::recipes::DistributedPriorityQueue>(pqueue, commands, "pqueue");
}

}  // namespace etcd_cli
