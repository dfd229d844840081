// group join NAME ID [PAYLOAD] -- CMD / group list NAME: group membership (a
// GroupMember) from the shell, with the CMD runner of `transient` and
// `discovery register` (run_while_present(), hold.h).
//
// The membership heals like a transient key: cut off from etcd past --ttl,
// etcd removes it and it is re-joined (only where the id is free) once the
// link returns. Its loss therefore does not stop CMD: it is reported on
// stderr, as is its return.

#include <iostream>
#include <memory>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/group_member.h"
#include "hold.h"
#include "simple_format.h"

namespace etcd_cli {
namespace {

constexpr const char* kGroupMemberKeyEnv = "ETCD_RECIPES_GROUP_MEMBER_KEY";

struct GroupArgs {
  std::string group;
  std::string id;
  std::string payload;
  int ttl = 10;
  std::string kill_after = "3s";
  std::vector<std::string> command;
};

int run_group_join(Context& ctx, const GroupArgs& a) {
  const std::string what = "group join " + a.group + " " + a.id;
  auto complain = [&](const std::string& text) { std::cerr << kProgram << ": " << what << ": " << text << std::endl; };
  if (auto code = refuse_unrunnable(a.command, complain, "the group was not joined")) return *code;
  etcd::recipes::RecipeOptions options;
  options.session_ttl = std::chrono::seconds(a.ttl);
  etcd::recipes::GroupMember member(ctx.client(), a.group, a.id, a.payload, std::move(options));
  auto lost = member.on_lost([&](const etcd::Status& why) { complain(cat(explain(why), " (CMD keeps running)")); });
  auto restored = member.on_restored([&] { complain("re-joined"); });

  auto joined = member.join().stop_token(ctx.stop()).timeout(ctx.timeout()).wait();
  if (!joined.ok()) {
    if (ctx.stop().stop_requested()) return kExitSignalBase + stop_signal();
    if (joined.status().code() == etcd::StatusCode::kAlreadyExists) {
      complain(cat(joined.status().message(), a.command.empty() ? "" : "; the command was not run"));
      return kExitFailed;
    }
    throw Failure(what, std::move(joined).status());
  }
  // Whatever happens next, the member leaves. Never with ctx.stop(): after
  // a signal this is exactly the work that must still be done.
  auto leave = [&] {
    auto r = member.leave().timeout(ctx.timeout()).wait();
    if (!r.ok()) complain(cat("leaving: ", explain(r.status()), " (the key expires with its lease)"));
  };
  if (a.command.empty()) {
    if (ctx.json()) {
      print_line(dump_json({{"key", base64(member.member_key())}, {"lease", lease_hex(member.lease())}}));
    } else {
      print_line(simple_field(member.member_key()));
    }
  }
  return run_while_present(ctx, a.command, {cat(kGroupMemberKeyEnv, "=", member.member_key())}, a.kill_after, complain,
                           leave);
}

int run_group_list(Context& ctx, const GroupArgs& a) {
  etcd::GetOptions options;
  options.prefix = true;
  auto r = check(ctx.client().get(a.group + "/", options).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(),
                 "group list " + a.group);
  const size_t n = a.group.size() + 1;
  nlohmann::json members = nlohmann::json::array();
  for (const auto& kv : r.kvs) {
    std::string_view id = std::string_view(kv.key).substr(n);
    if (id.empty() || id.find('/') != std::string_view::npos) continue;  // not a member: a deeper key
    if (ctx.json()) {
      nlohmann::json m{{"id", base64(id)}, {"payload", base64(kv.value)}, {"create_revision", kv.create_revision}};
      if (kv.lease != 0) m["lease"] = lease_hex(kv.lease);
      members.push_back(std::move(m));
    } else {
      print_line(simple_line("", {id, kv.value}));
    }
  }
  if (ctx.json()) print_line(dump_json({{"members", members}, {"revision", r.header.revision}}));
  return kExitOk;
}

}  // namespace

void add_group_commands(Commands& commands) {
  auto* group = commands.root().add_subcommand(
      "group", "Group membership (a GroupMember): join a group with a payload while CMD runs, list the members");
  {
    auto a = std::make_shared<GroupArgs>();
    auto* cmd = group->add_subcommand(
        "join", "Join the group NAME as ID (with PAYLOAD) while CMD runs, only if ID is free; leave when CMD exits");
    cmd->add_option("name", a->group, "The group (its members are the keys NAME/ID)")
        ->required()
        ->check(name_validator("group"));
    cmd->add_option("id", a->id, "This member's id (one path segment: no '/')")
        ->required()
        ->check(CLI::Validator(
            [](std::string& s) -> std::string {
              if (s.empty()) return "the member id must not be empty";
              if (s.find('/') != std::string::npos) return "the member id must not contain '/'";
              return std::string();
            },
            "ID"));
    cmd->add_option("payload", a->payload, "The member's payload (default: empty)");
    add_presence_options(cmd, a->ttl, a->kill_after, "membership");
    cmd->add_option("command", a->command,
                    "Run CMD [ARGS...] while a member (put -- before it); without it, print the member's key and "
                    "stay a member until SIGINT/SIGTERM");
    cmd->footer(cat(
        "NAME/ID is created with PAYLOAD under a lease (--ttl) only if it is absent: if someone else has it, nothing "
        "is written, CMD is not run, and the exit status is 1. CMD runs with ",
        kGroupMemberKeyEnv,
        " in its environment, as `transient` runs it. When CMD exits the member leaves at once.\n\n"
        "Membership heals: cut off from etcd longer than --ttl, etcd removes the key; once the link returns it "
        "re-joins with PAYLOAD where the id is free, never overwriting a key someone else created meanwhile. Both "
        "are reported on stderr; CMD keeps running.\n\n"
        "Exit codes:\n"
        "  (CMD's)   with CMD: CMD's exit status (128+N if signal N killed it)\n"
        "  0         without CMD: ended by SIGINT/SIGTERM, the member left\n"
        "  1         ID is someone else's (CMD not run), or an etcd operation failed\n"
        "  126, 127  CMD could not be run, was not found\n"
        "  128+N     interrupted by signal N before CMD started; nothing is left behind"));
    commands.on_run(cmd, [a](Context& ctx) {
      const auto notices = ctx.announce_connection(std::string(kProgram) + ": group join " + a->group);
      return run_group_join(ctx, *a);
    });
  }
  {
    auto a = std::make_shared<GroupArgs>();
    auto* cmd = group->add_subcommand("list", "Print the members of the group NAME: `ID PAYLOAD` per line");
    cmd->add_option("name", a->group, "The group")->required()->check(name_validator("group"));
    cmd->footer(
        "One read of NAME/ (direct children only), in id order; ids and payloads as in -w simple. -w json: "
        "{\"members\": [{\"id\", \"payload\" (both base64), \"create_revision\", \"lease\"}], \"revision\"}.");
    commands.on_run(cmd, [a](Context& ctx) { return run_group_list(ctx, *a); });
  }
}

}  // namespace etcd_cli
