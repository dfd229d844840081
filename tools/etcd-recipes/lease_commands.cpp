// lease grant | revoke | keep-alive | ttl | list

#include <condition_variable>
#include <memory>
#include <mutex>

#include "commands.h"
#include "common.h"
#include "simple_format.h"

namespace etcd_cli {
namespace {

// The remaining TTL of a lease, or a kLeaseNotFound failure: etcd answers
// a time-to-live query for a missing lease with TTL -1, not an error.
etcd::LeaseTimeToLiveResponse existing_lease(Context& ctx, int64_t id, bool with_keys, std::string_view what) {
  auto r = check(ctx.client().lease_time_to_live(id, with_keys).stop_token(ctx.stop()).wait(), what);
  if (r.ttl < 0) {
    throw Failure(std::string(what), etcd::Status(etcd::StatusCode::kNotFound,
                                                  "lease " + lease_hex(id) + " not found (expired or revoked)",
                                                  etcd::Errc::kLeaseNotFound));
  }
  return r;
}

void add_grant(Commands& commands, CLI::App* group) {
  auto ttl = std::make_shared<std::string>();
  auto* cmd = group->add_subcommand("grant", "Grant a lease; prints its id in hex");
  cmd->add_option("ttl", *ttl, "Time to live: seconds, or a duration such as 30s or 2m")
      ->required()
      ->check(bounded_duration_validator());
  commands.on_run(cmd, [ttl](Context& ctx) {
    auto seconds = std::chrono::ceil<std::chrono::seconds>(*parse_duration(*ttl));
    auto r = check(ctx.client().lease_grant(seconds).stop_token(ctx.stop()).wait(), "lease grant");
    print_line(ctx.json() ? dump_json({{"id", lease_hex(r.id)}, {"ttl", r.ttl}}) : lease_hex(r.id));
    return kExitOk;
  });
}

void add_revoke(Commands& commands, CLI::App* group) {
  auto id = std::make_shared<std::string>();
  auto* cmd = group->add_subcommand("revoke", "Revoke a lease; every key attached to it is deleted");
  cmd->add_option("id", *id, "Lease id")->required()->check(lease_id_validator());
  commands.on_run(cmd, [id](Context& ctx) {
    auto lease_id = *parse_lease_id(*id);
    check(ctx.client().lease_revoke(lease_id).stop_token(ctx.stop()).wait(), "lease revoke " + lease_hex(lease_id));
    print_line(ctx.json() ? dump_json({{"id", lease_hex(lease_id)}, {"revoked", true}})
                          : "lease " + lease_hex(lease_id) + " revoked");
    return kExitOk;
  });
}

void add_keep_alive(Commands& commands, CLI::App* group) {
  struct Args {
    std::string id;
    bool once = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = group->add_subcommand(
      "keep-alive", "Renew a lease until SIGINT/SIGTERM (it then expires after its TTL), printing each renewal");
  cmd->add_option("id", a->id, "Lease id")->required()->check(lease_id_validator());
  cmd->add_flag("--once", a->once, "Renew once and exit");
  commands.on_run(cmd, [a](Context& ctx) {
    const auto id = *parse_lease_id(a->id);
    const auto what = "lease keep-alive " + lease_hex(id);
    if (a->once) {
      auto r = check(ctx.client().lease_keep_alive_once(id).stop_token(ctx.stop()).wait(), what);
      if (r.ttl <= 0) {
        throw Failure(what, etcd::Status(etcd::StatusCode::kNotFound, "lease not found (expired or revoked)",
                                         etcd::Errc::kLeaseNotFound));
      }
      print_line(ctx.json() ? dump_json({{"id", lease_hex(id)}, {"ttl", r.ttl}})
                            : "lease " + lease_hex(id) + " keepalived with TTL(" + std::to_string(r.ttl) + ")");
      return kExitOk;
    }

    const auto granted = std::chrono::seconds(existing_lease(ctx, id, false, what).granted_ttl);
    struct State {
      std::mutex mutex;
      std::condition_variable_any changed;
      std::optional<etcd::Status> lost;
    };
    auto state = std::make_shared<State>();
    auto kept = ctx.client().keep_alive(id, granted);
    auto lost_sub = kept.on_lost([state](const etcd::Status& status) {
      std::lock_guard lock(state->mutex);
      state->lost = status;
      state->changed.notify_all();
    });
    // The Lease reports no individual renewals; a confirmed one moves
    // safe_until forward, so that is what is printed.
    auto last_renewal = kept.safe_until();
    std::unique_lock lock(state->mutex);
    while (!ctx.stop().stop_requested()) {
      state->changed.wait_for(lock, ctx.stop(), std::chrono::milliseconds(100),
                              [&] { return state->lost.has_value(); });
      if (state->lost) throw Failure(what, *state->lost);
      if (auto now = kept.safe_until(); now != last_renewal) {
        last_renewal = now;
        print_line(ctx.json()
                       ? dump_json({{"id", lease_hex(id)}, {"ttl", kept.ttl().count()}})
                       : "lease " + lease_hex(id) + " keepalived with TTL(" + std::to_string(kept.ttl().count()) + ")");
      }
    }
    // Leaving must not end the lease early: whoever granted it decides.
    kept.detach();
    return kExitOk;
  });
}

void add_ttl(Commands& commands, CLI::App* group) {
  struct Args {
    std::string id;
    bool keys = false;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = group->add_subcommand("ttl", "Show a lease's granted and remaining TTL (exit 1 if it is gone)");
  cmd->add_option("id", a->id, "Lease id")->required()->check(lease_id_validator());
  cmd->add_flag("--keys", a->keys, "Also list the keys attached to it");
  cmd->add_flag("--json", a->json, "Same as -w json")->group("");
  cmd->footer("With -w json: {id (hex), granted_ttl, ttl, keys (base64, with --keys)}.");
  commands.on_run(cmd, [a](Context& ctx) {
    const auto id = *parse_lease_id(a->id);
    auto r = existing_lease(ctx, id, a->keys, "lease ttl " + lease_hex(id));
    if (ctx.json(a->json)) {
      nlohmann::json j = {{"id", lease_hex(id)}, {"granted_ttl", r.granted_ttl}, {"ttl", r.ttl}};
      if (a->keys) {
        j["keys"] = nlohmann::json::array();
        for (const auto& k : r.keys) j["keys"].push_back(base64(k));
      }
      print_line(dump_json(j));
      return kExitOk;
    }
    auto line = cat("lease ", lease_hex(id), " granted with TTL(", r.granted_ttl, "s), remaining(", r.ttl, "s)");
    if (a->keys) {
      line += ", attached keys([";
      for (size_t i = 0; i < r.keys.size(); ++i) line += (i ? " " : "") + simple_field(r.keys[i]);
      line += "])";
    }
    print_line(line);
    return kExitOk;
  });
}

void add_list(Commands& commands, CLI::App* group) {
  auto* cmd = group->add_subcommand("list", "Print the id of every lease, one per line");
  commands.on_run(cmd, [](Context& ctx) {
    auto r = check(ctx.client().lease_leases().stop_token(ctx.stop()).wait(), "lease list");
    if (ctx.json()) {
      auto ids = nlohmann::json::array();
      for (auto id : r.leases) ids.push_back(lease_hex(id));
      print_line(dump_json({{"leases", ids}}));
      return kExitOk;
    }
    for (auto id : r.leases) print_line(lease_hex(id));
    return kExitOk;
  });
}

}  // namespace

void add_lease_commands(Commands& commands) {
  auto* lease = commands.root().add_subcommand(
      "lease", "Grant, renew, inspect and revoke leases (ids are hex, as etcdctl prints them; 0x is accepted)");
  lease->require_subcommand(1);
  add_grant(commands, lease);
  add_revoke(commands, lease);
  add_keep_alive(commands, lease);
  add_ttl(commands, lease);
  add_list(commands, lease);
}

}  // namespace etcd_cli
