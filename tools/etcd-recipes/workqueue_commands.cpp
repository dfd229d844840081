// workqueue push / work / size / dead-letters / requeue-dead / purge-dead:
// a DistributedWorkQueue (at-least-once work) from the shell.
//
// `work` is a worker loop: it receives one item at a time and runs CMD for
// it with the runner every protected CMD shares (supervise(), hold.h): CMD
// in a process group of its own, never outliving this process nor the
// item's claim. CMD exiting 0 acks the item; anything else gives it back.

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/work_queue.h"
#include "hold.h"
#include "process.h"
#include "recipe_actions.h"
#include "simple_format.h"

namespace etcd_cli {
namespace {

using etcd::recipes::DistributedWorkQueue;
using etcd::recipes::WorkItem;

constexpr const char* kItemIdEnv = "ETCD_RECIPES_ITEM_ID";
constexpr const char* kItemKeyEnv = "ETCD_RECIPES_ITEM_KEY";
constexpr const char* kAttemptEnv = "ETCD_RECIPES_ATTEMPT";

struct WorkPushArgs {
  std::string name;
  std::vector<std::string> values;
  std::string file;
  std::string delay;
};

struct WorkArgs {
  std::string name;
  int visibility = 30;
  int max_deliveries = 5;
  int count = 0;  // 0: no limit
  std::string idle_exit;
  std::string kill_after = "3s";
  std::vector<std::string> command;
};

// One count read within the per-call --timeout: an unreachable or refusing
// etcd is reported at once (exit 1), not waited on by a receive.
int64_t queue_size(Context& ctx, DistributedWorkQueue& q, const std::string& what) {
  return check(q.size().timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
}

int work_push(Context& ctx, const WorkPushArgs& a) {
  const std::string what = "workqueue push " + a.name;
  std::vector<std::string> values = push_values(a.values, a.file, "workqueue push");
  const std::chrono::milliseconds delay = a.delay.empty() ? std::chrono::milliseconds(0) : *parse_duration(a.delay);
  DistributedWorkQueue q(ctx.client(), a.name);
  const auto done =
      check(q.enqueue_all(std::move(values), delay).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
  if (ctx.json()) {
    nlohmann::json keys = nlohmann::json::array();
    for (const auto& k : done.keys) keys.push_back(base64(k));
    print_line(dump_json({{"revision", done.revision}, {"keys", keys}}));
  } else {
    print_line(std::to_string(done.revision));
  }
  return kExitOk;
}

// --- work ----------------------------------------------------------------------

// The value as CMD's standard input: a memory file, so a value of any size
// is handed over without a writer thread, and CMD may read it, or not, or
// seek in it.
int value_fd(const std::string& value) {
  const int fd = ::memfd_create("etcd-recipes-item", MFD_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "memfd_create");
  size_t at = 0;
  while (at < value.size()) {
    const ssize_t n = ::write(fd, value.data() + at, value.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw std::system_error(err, std::generic_category(), "writing the item's value");
    }
    at += static_cast<size_t>(n);
  }
  ::lseek(fd, 0, SEEK_SET);
  return fd;
}

std::string seconds_text(etcd::Clock::duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", std::chrono::duration<double>(d).count());
  return buf;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? cat("SIG", abbrev) : cat("signal ", sig);
}

// What became of one delivery, for its report line.
struct Outcome {
  std::string result;  // acked, requeued, stale, lost, interrupted
  std::string text;    // the plain-text account
  std::optional<int> exit_status;
};

class Worker {
 public:
  Worker(Context& ctx, const WorkArgs& a) : ctx_(ctx), a_(a), what_("workqueue work " + a.name) {}

  int run() {
    // Before anything is received: a worker that cannot run CMD must not
    // take (and count a delivery of) items it cannot work on.
    if (auto code = refuse_unrunnable(a_.command, [this](const std::string& text) { say(text); },
                                      "no item was received")) {
      return *code;
    }
    etcd::recipes::WorkQueueOptions options;
    options.visibility_timeout = std::chrono::seconds(a_.visibility);
    options.max_deliveries = a_.max_deliveries;
    queue_.emplace(ctx_.client(), a_.name, options);
    // The items this worker meets with no deliveries left: never silent.
    dead_sub_ = queue_->on_dead_letter([this](const etcd::recipes::DeadLetter& dead) {
      if (ctx_.json()) {
        std::cerr << dump_json({{"id", dead.id},
                                {"result", "dead-lettered"},
                                {"deliveries", dead.deliveries},
                                {"reason", dead.reason}})
                  << std::endl;
      } else {
        say(cat("item ", dead.id, " moved to the dead letters after ", dead.deliveries,
                dead.deliveries == 1 ? " delivery" : " deliveries", " (", dead.reason, "), not run: see ", kProgram,
                " workqueue dead-letters ", a_.name));
      }
    });
    (void)queue_size(ctx_, *queue_, what_);

    for (int done = 0; a_.count == 0 || done < a_.count; ++done) {
      if (ctx_.stop().stop_requested()) return kExitOk;
      const std::optional<etcd::Deadline> give_up = wait_deadline(a_.idle_exit);
      auto received = bounded(queue_->receive(), give_up, ctx_.stop()).wait();
      if (!received.ok()) {
        if (ctx_.stop().stop_requested()) return kExitOk;
        if (give_up && etcd::Clock::now() >= *give_up &&
            received.status().code() == etcd::StatusCode::kDeadlineExceeded) {
          if (a_.count > 0) {
            say(cat("no item within ", a_.idle_exit, " (", done, " of ", a_.count, " done)"));
            return kExitTimedOut;
          }
          say(cat("no item within ", a_.idle_exit, ": exiting (", done, done == 1 ? " item" : " items", " done)"));
          return kExitOk;
        }
        throw Failure(what_, std::move(received).status());
      }
      if (const auto code = work_on(std::move(received).value())) return *code;
    }
    return kExitOk;
  }

 private:
  void say(const std::string& text) const { std::cerr << kProgram << ": " << what_ << ": " << text << std::endl; }

  void report(const WorkItem& item, const Outcome& o, etcd::Clock::duration took) const {
    if (ctx_.json()) {
      nlohmann::json j = {{"id", item.id()},
                          {"attempt", item.attempt()},
                          {"result", o.result},
                          {"seconds", std::chrono::duration<double>(took).count()}};
      if (o.exit_status) j["exit"] = *o.exit_status;
      std::cerr << dump_json(j) << std::endl;
    } else {
      say(cat("item ", item.id(), " attempt ", item.attempt(), ": ", o.text, " (", seconds_text(took), ")"));
    }
  }

  // Never with ctx.stop(): after a signal, giving the item back is exactly
  // the work that must still be done. An etcd failure here ends the worker
  // (exit 1): closing the queue revokes its lease, which frees the claim.
  bool settle(etcd::Call<bool> call, const std::string& which) const {
    return check(std::move(call).timeout(ctx_.timeout()).wait(), cat(what_, ": ", which));
  }

  // Runs CMD for one item; an exit code when the worker must stop.
  std::optional<int> work_on(WorkItem item) {
    const auto started = etcd::Clock::now();
    const std::string& program = a_.command.front();
    // A signal that came with the item: do not start what would be
    // interrupted at once.
    if (ctx_.stop().stop_requested()) {
      const bool back = settle(item.requeue(), "requeue " + item.id());
      report(item,
             {"interrupted",
              cat("received as ", signal_name(stop_signal()), " arrived: ", back ? "requeued" : "already lost",
                  ", CMD not run"),
              std::nullopt},
             etcd::Clock::now() - started);
      return kExitOk;
    }

    CommandGroup cmd;
    const std::vector<std::string> env = {cat(kItemIdEnv, "=", item.id()), cat(kItemKeyEnv, "=", item.key()),
                                          cat(kAttemptEnv, "=", item.attempt())};
    const int in = value_fd(item.value());
    const int err = cmd.start(a_.command, env, in);
    ::close(in);
    if (err != 0) {
      (void)settle(item.requeue(), "requeue " + item.id());
      say(cat("cannot run ", program, ": ", std::strerror(err), "; item ", item.id(), " requeued"));
      return err == ENOENT ? kExitNotFound : kExitCannotRun;
    }
    const Supervised run = supervise(ctx_, cmd,
                                     {.lost = item.stop_token(),
                                      .kill_after = *parse_duration(a_.kill_after),
                                      .kill_after_text = a_.kill_after,
                                      .on_lost = nullptr,  // reported below, once the whole group is gone
                                      .complain = [this](const std::string& text) { say(text); }});
    const auto took = etcd::Clock::now() - started;
    const std::string exited = run.status > kExitSignalBase
                                   ? cat("killed by ", signal_name(run.status - kExitSignalBase))
                                   : cat("exited ", run.status);

    if (run.lost) {
      report(item,
             {"lost",
              cat("the claim was lost while ", program,
                  " ran (this worker's lease expired or was revoked, or it was cut off from etcd): stopped ", program,
                  " (process group ", cmd.pid(), "), not acked; the item is delivered again"),
              run.status},
             took);
      return std::nullopt;
    }
    if (run.signalled) {
      // Whatever CMD's status, its work was interrupted: give the item back
      // now rather than after the visibility timeout.
      const bool back = settle(item.requeue(), "requeue " + item.id());
      report(item,
             {"interrupted",
              cat("interrupted by ", signal_name(stop_signal()), ": ", program, " (process group ", cmd.pid(),
                  ") stopped, ", exited, "; ", back ? "requeued" : "the claim had been lost meanwhile"),
              run.status},
             took);
      return kExitOk;
    }
    if (run.status == 0) {
      if (settle(item.ack(), "ack " + item.id())) {
        report(item, {"acked", "done, acked", 0}, took);
      } else {
        report(item,
               {"stale",
                cat(program,
                    " exited 0 but the ack failed: the claim had been lost and the item was delivered again "
                    "meanwhile (its work may be done twice)"),
                0},
               took);
      }
      return std::nullopt;
    }
    const bool back = settle(item.requeue(), "requeue " + item.id());
    report(item,
           {back ? "requeued" : "stale",
            cat(exited, ": ",
                back ? "requeued" : "the requeue failed: the claim had been lost and the item was delivered again"),
            run.status},
           took);
    return std::nullopt;
  }

  Context& ctx_;
  const WorkArgs& a_;
  std::string what_;
  std::optional<DistributedWorkQueue> queue_;
  etcd::Subscription dead_sub_;
};

// --- dead letters ----------------------------------------------------------------

std::string utc_text(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int dead_letters(Context& ctx, const std::string& name, bool json_alias) {
  DistributedWorkQueue q(ctx.client(), name);
  const auto dead =
      check(q.dead_letters().timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), "workqueue dead-letters " + name);
  if (ctx.json(json_alias)) {
    auto array = nlohmann::json::array();
    for (const auto& d : dead) {
      array.push_back(
          {{"id", d.id},
           {"key", base64(d.key)},
           {"value", base64(d.value)},
           {"deliveries", d.deliveries},
           {"reason", d.reason},
           {"since", std::chrono::duration_cast<std::chrono::milliseconds>(d.since.time_since_epoch()).count()},
           {"revision", d.revision}});
    }
    print_line(dump_json(array));
    return kExitOk;
  }
  if (dead.empty()) return kExitOk;
  std::vector<std::vector<std::string>> rows = {{"ID", "DELIVERIES", "SINCE", "REASON", "VALUE"}};
  for (const auto& d : dead) {
    rows.push_back({d.id, std::to_string(d.deliveries), utc_text(d.since), simple_field(d.reason), simple_field(d.value)});
  }
  print_table(rows);
  return kExitOk;
}

// requeue-dead and purge-dead (recipe_actions.h): no such dead letter is
// exit 1, as for a missing key (`kv get`).
int on_dead_letter(Context& ctx, const std::string& name, const std::string& id, bool requeue) {
  const ActionOutcome done = requeue ? requeue_dead_letter(ctx, name, id) : purge_dead_letter(ctx, name, id);
  if (!done.done) {
    throw Failure(cat("workqueue ", requeue ? "requeue-dead " : "purge-dead ", name, " ", id),
                  etcd::Status(etcd::StatusCode::kNotFound, done.message, etcd::Errc::kKeyNotFound));
  }
  return kExitOk;
}

// --- registration -----------------------------------------------------------------

CLI::Option* add_name(CLI::App* cmd, std::string& name) {
  return cmd->add_option("name", name, "The work queue's name (a key prefix)")
      ->required()
      ->check(name_validator("work queue"));
}

void add_work_push(CLI::App* group, Commands& commands) {
  auto a = std::make_shared<WorkPushArgs>();
  auto* cmd =
      group->add_subcommand("push", "Add the VALUEs at the tail of the work queue NAME, in order, in one transaction");
  add_name(cmd, a->name);
  cmd->add_option("values", a->values, "The values (- reads one from standard input)");
  cmd->add_option("--file", a->file, "Read the one value from this file")->check(CLI::ExistingFile);
  cmd->add_option("--delay", a->delay,
                  "Make the items ready only this long from now (this host's clock), e.g. 500ms, 30s, 1m")
      ->check(bounded_duration_validator());
  cmd->footer(
      "Prints the revision of the transaction that added them (-w json: {\"revision\":N,\"keys\":[B64...]}; an "
      "item's id is the last segment of its key). All values or none are added. A push whose outcome was unknown is "
      "sent again safely: it never adds an item twice.\n\n"
      "Exit codes:\n"
      "  0  added\n"
      "  1  an etcd operation failed (nothing added, or an outcome that stayed unknown: the message says which)\n"
      "  2  invalid usage");
  commands.on_run(cmd, [a](Context& ctx) { return work_push(ctx, *a); });
}

void add_work(CLI::App* group, Commands& commands) {
  auto a = std::make_shared<WorkArgs>();
  auto* cmd = group->add_subcommand(
      "work", "Receive items of the work queue NAME one at a time and run CMD for each: exit 0 acks, else requeue");
  add_name(cmd, a->name);
  cmd->add_option("--visibility", a->visibility,
                  "Visibility timeout in seconds: how long the item of a worker that died (or was cut off from etcd) "
                  "stays hidden before it is delivered again; not a limit on how long CMD may run")
      ->check(int_range(1, INT32_MAX))
      ->capture_default_str();
  cmd->add_option("--max-deliveries", a->max_deliveries,
                  "An item delivered this many times that comes up again goes to the dead letters instead")
      ->check(int_range(1, INT32_MAX))
      ->capture_default_str();
  cmd->add_option("-n,--count", a->count, "Exit after this many items (acked or not); default: no limit")
      ->check(int_range(1, INT32_MAX));
  cmd->add_option("--idle-exit", a->idle_exit,
                  "Exit when no item came for this long, e.g. 5s (exit 0; exit 3 if --count was not reached)")
      ->check(duration_validator());
  cmd->add_option("--kill-after", a->kill_after,
                  "When a signal is passed on to CMD or the item's claim is lost, SIGKILL CMD's process group this "
                  "long after the SIGTERM (or the signal) if it has not exited by then")
      ->check(duration_validator())
      ->capture_default_str();
  cmd->add_option("command", a->command, "CMD [ARGS...], run once per item (put -- before it)")->required();
  cmd->footer(
      std::string("CMD gets the item's value on its standard input (any bytes) and, in its environment, "
                  "ETCD_RECIPES_ITEM_ID, ETCD_RECIPES_ITEM_KEY and ETCD_RECIPES_ATTEMPT (1 on the first delivery); "
                  "its stdout and stderr are inherited. CMD exiting 0 acks the item (it is deleted); any other exit "
                  "requeues it at once, keeping its place in line (the delivery counts towards --max-deliveries).\n\n"
                  "CMD runs in a process group of its own, as under `lock NAME -- CMD`. If the item's claim is lost "
                  "while CMD runs (this worker's lease expired or was revoked), CMD's group gets SIGTERM (SIGKILL "
                  "after --kill-after), the loss is reported once the group is gone, and the worker goes on with "
                  "the next item. SIGINT/SIGTERM/SIGHUP while CMD runs are passed on to its group; once it is gone "
                  "the item is requeued at once (whatever CMD's status) and the worker exits 0. If the worker dies, "
                  "CMD gets SIGKILL (parent-death signal) and the item is delivered again after --visibility.\n\n"
                  "One line per item on stderr (stdout is CMD's): \"item ID attempt N: RESULT\"; with -w json, one "
                  "JSON object per item on stderr: "
                  "{\"id\",\"attempt\",\"result\":\"acked|requeued|stale|lost|interrupted\",\"exit\",\"seconds\"}. "
                  "\"stale\": CMD exited but the claim had been lost, so the ack (or requeue) failed: the item was "
                  "delivered again and its work may be done twice.\n\n") +
      "Exit codes:\n"
      "  0         --count items done, --idle-exit with nothing to do, or ended by SIGINT/SIGTERM (the "
      "unfinished item requeued)\n"
      "  1         an etcd operation failed (an unacked item is freed when the worker's lease goes)\n"
      "  2         invalid usage\n"
      "  3         --idle-exit before --count items were done\n"
      "  126, 127  CMD could not be run, was not found (no item taken; one taken is requeued)");
  commands.on_run(cmd, [a](Context& ctx) {
    const auto notices = ctx.announce_connection(std::string(kProgram) + ": workqueue work " + a->name);
    return Worker(ctx, *a).run();
  });
}

void add_work_size(CLI::App* group, Commands& commands) {
  auto name = std::make_shared<std::string>();
  auto* cmd = group->add_subcommand("size", "Print how many items the work queue NAME holds (ready, delayed, claimed)");
  add_name(cmd, *name);
  cmd->footer("One count read; dead letters are not counted. -w json: {\"size\":N}.");
  commands.on_run(cmd, [name](Context& ctx) {
    DistributedWorkQueue q(ctx.client(), *name);
    const int64_t n = queue_size(ctx, q, "workqueue size " + *name);
    print_line(ctx.json() ? dump_json({{"size", n}}) : std::to_string(n));
    return kExitOk;
  });
}

void add_dead_letters(CLI::App* group, Commands& commands) {
  auto name = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto* cmd = group->add_subcommand("dead-letters", "List the dead letters of the work queue NAME");
  add_name(cmd, *name);
  cmd->add_flag("--json", *json, "Same as -w json");
  cmd->footer(
      "A table (nothing when there are none): ID, DELIVERIES, SINCE (UTC), REASON, VALUE (control bytes "
      "escaped). With -w json, a JSON array of {id, key, value, deliveries, reason, since, revision}: key and value "
      "base64, since in milliseconds since the epoch.");
  commands.on_run(cmd, [name, json](Context& ctx) { return dead_letters(ctx, *name, *json); });
}

void add_dead_letter_action(CLI::App* group, Commands& commands, bool requeue) {
  auto name = std::make_shared<std::string>();
  auto id = std::make_shared<std::string>();
  auto* cmd = group->add_subcommand(
      requeue ? "requeue-dead" : "purge-dead",
      requeue ? "Move the dead letter ID back into the work queue NAME, at its tail, its deliveries counted from 0"
              : "Delete the dead letter ID of the work queue NAME");
  add_name(cmd, *name);
  cmd->add_option("id", *id, "The item's id (as `dead-letters` lists it)")
      ->required()
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            return !s.empty() && s.find('/') == std::string::npos
                       ? std::string()
                       : "not an item id (the last segment of its key): " + s;
          },
          "ID"));
  cmd->footer(
      "Prints nothing.\n\n"
      "Exit codes:\n"
      "  0  done\n"
      "  1  there is no such dead letter, or an etcd operation failed\n"
      "  2  invalid usage");
  commands.on_run(cmd, [name, id, requeue](Context& ctx) { return on_dead_letter(ctx, *name, *id, requeue); });
}

}  // namespace

void add_workqueue_commands(Commands& commands) {
  auto* group = commands.root().add_subcommand(
      "workqueue", "An at-least-once work queue: push, work -- CMD, size, dead-letters, requeue-dead, purge-dead");
  add_work_push(group, commands);
  add_work(group, commands);
  add_work_size(group, commands);
  add_dead_letters(group, commands);
  add_dead_letter_action(group, commands, true);
  add_dead_letter_action(group, commands, false);
}

}  // namespace etcd_cli
