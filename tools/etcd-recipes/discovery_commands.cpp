// discovery register / list / pick: service discovery from the shell
// (include/etcd/recipes/service_discovery.h).
//
// `register` keeps one registration while CMD runs (the runner of
// `transient`, hold.h): it heals after a lease loss, so its loss does not
// stop CMD; it is removed at once when CMD exits or on SIGINT/SIGTERM.

#include <unistd.h>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/service_discovery.h"
#include "hold.h"
#include "simple_format.h"

namespace etcd_cli {
namespace {

using etcd::recipes::ServiceInstance;
using etcd::recipes::ServiceInstanceCodec;

constexpr const char* kServiceIdEnv = "ETCD_RECIPES_SERVICE_ID";

struct Base {
  std::string path = etcd::recipes::kDefaultServicesPath;
};

void add_base(CLI::App* cmd, Base& base) {
  cmd->add_option("--base", base.path, "Where services are registered: BASE/SERVICE/ID")
      ->check(name_validator("base path"))
      ->capture_default_str();
}

void add_service(CLI::App* cmd, std::string& service, bool required) {
  auto* opt = cmd->add_option("service", service, "The service's name (one key segment)")
                  ->check(CLI::Validator(
                      [](std::string& s) {
                        auto st = etcd::recipes::validate_segment("service name", s);
                        return st.ok() ? std::string() : st.message();
                      },
                      "SERVICE"));
  if (required) opt->required();
}

std::string default_id() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::snprintf(host, sizeof host, "host");
  return cat(host, "-", getpid());
}

std::string instance_line(const ServiceInstance& i) {
  return simple_line("", {i.name, i.id, i.endpoint()}) + (i.enabled ? "" : " disabled");
}

// --- register ------------------------------------------------------------------

struct RegisterArgs {
  Base base;
  std::string service;
  std::string address;
  std::optional<int> port;
  std::optional<int> ssl_port;
  std::string id;
  std::string payload;
  bool disabled = false;
  int ttl = 10;
  std::string kill_after = "3s";
  std::vector<std::string> command;
};

int run_register(Context& ctx, RegisterArgs& a) {
  if (!a.port && !a.ssl_port) throw UsageError("give --port or --ssl-port (or both)");
  ServiceInstance instance{.name = a.service,
                           .id = a.id.empty() ? default_id() : a.id,
                           .address = a.address,
                           .payload = a.payload,
                           .enabled = !a.disabled};
  if (a.port) instance.port = static_cast<uint16_t>(*a.port);
  if (a.ssl_port) instance.ssl_port = static_cast<uint16_t>(*a.ssl_port);
  if (auto st = etcd::recipes::validate_instance(instance); !st.ok()) throw UsageError(st.message());

  const std::string what = cat("discovery register ", a.service, "/", instance.id);
  auto complain = [&](const std::string& text) { std::cerr << kProgram << ": " << what << ": " << text << std::endl; };
  if (auto code = refuse_unrunnable(a.command, complain, "the instance was not registered")) return *code;
  etcd::recipes::ServiceRegistryOptions options{.base_path = a.base.path};
  options.recipe.session_ttl = std::chrono::seconds(a.ttl);
  etcd::recipes::ServiceRegistry registry(ctx.client(), std::move(options));
  auto lost = registry.on_lost([&](const ServiceInstance&, const etcd::Status& why) {
    complain(
        cat(explain(why), "; it is registered again where free", a.command.empty() ? "" : " (CMD keeps running)"));
  });
  auto restored = registry.on_restored([&](const ServiceInstance&) { complain("registered again"); });

  auto registered = registry.register_instance(instance).stop_token(ctx.stop()).timeout(ctx.timeout()).wait();
  if (!registered.ok()) {
    if (ctx.stop().stop_requested()) return kExitSignalBase + stop_signal();
    if (registered.status().code() == etcd::StatusCode::kAlreadyExists) {
      complain(cat(registered.status().message(), a.command.empty() ? "" : "; the command was not run"));
      return kExitFailed;
    }
    throw Failure(what, std::move(registered).status());
  }
  auto remove = [&] {
    auto r = registry.unregister(instance.name, instance.id).timeout(ctx.timeout()).wait();
    if (!r.ok()) complain(cat("unregistering: ", explain(r.status()), " (it expires with its lease)"));
  };
  if (a.command.empty()) {
    auto now = registry.registered();
    const ServiceInstance& shown = now.empty() ? instance : now.front();
    print_line(ctx.json() ? check(ServiceInstanceCodec::encode(shown), what) : instance_line(shown));
  }
  return run_while_present(ctx, a.command, {cat(kServiceIdEnv, "=", instance.id)}, a.kill_after, complain, remove);
}

void add_register(CLI::App* parent, Commands& commands) {
  auto a = std::make_shared<RegisterArgs>();
  auto* cmd = parent->add_subcommand(
      "register", "Register an instance of SERVICE while CMD runs (only if its id is free), remove it when CMD exits");
  add_service(cmd, a->service, true);
  cmd->add_option("--address", a->address, "Host name or address where the instance is reached")->required();
  cmd->add_option("--port", a->port, "Its port")->check(int_range(1, 65535));
  cmd->add_option("--ssl-port", a->ssl_port, "Its TLS port")->check(int_range(1, 65535));
  cmd->add_option("--id", a->id, "The instance's id (default: HOSTNAME-PID)");
  cmd->add_option("--payload", a->payload, "Any JSON value kept with the instance (an object, \"a string\", ...)");
  cmd->add_flag("--disabled", a->disabled, "Register it disabled: listed, never picked");
  add_presence_options(cmd, a->ttl, a->kill_after, "registration");
  add_base(cmd, a->base);
  cmd->add_option("command", a->command,
                  "Run CMD [ARGS...] while registered (put -- before it); without it, print the instance and keep it "
                  "registered until SIGINT/SIGTERM");
  cmd->footer(
      cat("The instance is the key BASE/SERVICE/ID, its value the instance's JSON (docs/recipes/discovery.md), "
          "created under a lease of its own (--ttl) only if the key is absent: if another owner has it, "
          "nothing is written, CMD is not run, and the exit status is 1. CMD runs with ",
          kServiceIdEnv,
          " in its environment, in a process group of its own; SIGINT/SIGTERM/SIGHUP are passed on to that group, "
          "SIGKILL follows after --kill-after. When CMD exits, the instance is removed at once.\n\n"
          "A registration heals: cut off from etcd longer than --ttl, etcd removes it; once the link returns it is "
          "registered again where free, never over a key someone else created meanwhile. Both are reported on stderr; "
          "CMD keeps running.\n\n"
          "Exit codes:\n"
          "  (CMD's)   with CMD: CMD's exit status (128+N if signal N killed it)\n"
          "  0         without CMD: ended by SIGINT/SIGTERM, the instance removed\n"
          "  1         the id is registered by another owner (CMD not run), or an etcd operation failed\n"
          "  2         invalid usage (no --port nor --ssl-port, a payload that is not JSON, ...)\n"
          "  126, 127  CMD could not be run, was not found\n"
          "  128+N     interrupted by signal N before CMD started; nothing is left behind"));
  commands.on_run(cmd, [a](Context& ctx) {
    const auto notices = ctx.announce_connection(std::string(kProgram) + ": discovery register " + a->service);
    return run_register(ctx, *a);
  });
}

// --- list -------------------------------------------------------------------------

struct ListArgs {
  Base base;
  std::string service;
  bool json = false;
};

void add_list(CLI::App* parent, Commands& commands) {
  auto a = std::make_shared<ListArgs>();
  auto* cmd = parent->add_subcommand("list", "List the registered instances of SERVICE, or of every service");
  add_service(cmd, a->service, false);
  cmd->add_flag("--json", a->json, "One instance per line in its JSON wire format (as -w json)");
  add_base(cmd, a->base);
  cmd->footer(
      "One line per instance: SERVICE ID ADDRESS:PORT (and \"disabled\" for a disabled one), sorted by service and "
      "id. With --json (or -w json), each line is the instance's JSON as stored. Instances whose JSON does not decode "
      "are reported on stderr and left out.\n\n"
      "Exit codes:\n"
      "  0  listed (possibly nothing)\n"
      "  1  an etcd operation failed");
  commands.on_run(cmd, [a](Context& ctx) {
    const std::string what = "discovery list";
    etcd::recipes::ServiceDiscovery discovery(ctx.client(),
                                              etcd::recipes::ServiceDiscoveryOptions{.base_path = a->base.path});
    std::vector<std::string> names;
    if (a->service.empty()) {
      names = check(discovery.query_names().timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
    } else {
      names = {a->service};
    }
    for (const auto& name : names) {
      auto instances =
          check(discovery.query_instances(name).timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
      for (const auto& i : instances) {
        print_line(a->json || ctx.json() ? check(ServiceInstanceCodec::encode(i), what) : instance_line(i));
      }
    }
    for (const auto& e : discovery.errors())
      std::cerr << kProgram << ": " << what << ": " << explain(e) << std::endl;
    return kExitOk;
  });
}

// --- pick -------------------------------------------------------------------------

struct PickArgs {
  Base base;
  std::string service;
  std::string strategy = "round-robin";
  int count = 1;
};

void add_pick(CLI::App* parent, Commands& commands) {
  auto a = std::make_shared<PickArgs>();
  auto* cmd = parent->add_subcommand("pick", "Pick an instance of SERVICE as a provider does: print ADDRESS:PORT");
  add_service(cmd, a->service, true);
  cmd->add_option("--strategy", a->strategy, "How to pick")
      ->check(CLI::IsMember({"random", "round-robin", "sticky"}))
      ->capture_default_str();
  cmd->add_option("--count", a->count, "Pick this many times (one line each), with one provider")
      ->check(int_range(1, 1000000))
      ->capture_default_str();
  add_base(cmd, a->base);
  cmd->footer(
      "Reads the service's instances once (a ServiceCache's first read) and picks among the enabled ones with the "
      "strategy; prints ADDRESS:PORT per pick (-w json: the instance's JSON).\n\n"
      "Exit codes:\n"
      "  0  picked\n"
      "  1  no instance to pick, or an etcd operation failed");
  commands.on_run(cmd, [a](Context& ctx) {
    const std::string what = "discovery pick " + a->service;
    etcd::recipes::ServiceProviderOptions options{.base_path = a->base.path};
    options.strategy = a->strategy == "random"   ? etcd::recipes::random_strategy()
                       : a->strategy == "sticky" ? etcd::recipes::sticky_strategy()
                                                 : etcd::recipes::round_robin_strategy();
    etcd::recipes::ServiceProvider provider(ctx.client(), a->service, std::move(options));
    check(provider.wait_initialized().timeout(ctx.timeout()).stop_token(ctx.stop()).wait(), what);
    for (int n = 0; n < a->count; ++n) {
      auto picked = provider.get_instance().timeout(ctx.timeout()).wait();
      if (!picked.ok() && picked.status().code() == etcd::StatusCode::kNotFound) {
        std::cerr << kProgram << ": " << what << ": " << picked.status().message() << std::endl;
        return kExitFailed;
      }
      const auto instance = check(std::move(picked), what);
      print_line(ctx.json() ? check(ServiceInstanceCodec::encode(instance), what) : instance.endpoint());
    }
    return kExitOk;
  });
}

}  // namespace

void add_discovery_commands(Commands& commands) {
  auto* discovery = commands.root().add_subcommand(
      "discovery", "Service discovery: register an instance while a command runs, list instances, pick one");
  add_register(discovery, commands);
  add_list(discovery, commands);
  add_pick(discovery, commands);
}

}  // namespace etcd_cli
