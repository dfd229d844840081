// dashboard PREFIX...: a live web page of the recipes under each PREFIX
// (the page: dashboard/, embedded by dashboard_assets.h), fed by
// Server-Sent Events from one watch per prefix (dashboard_feed.h), the
// exporter's metrics at /metrics from the same state, and the operator's
// guarded actions (recipe_actions.h) behind --allow-actions. Serving rules
// (loopback by default, TLS or --insecure elsewhere, credentials):
// http_server.h.

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "dashboard_assets.h"
#include "dashboard_feed.h"
#include "dashboard_model.h"
#include "http_server.h"
#include "metrics_text.h"
#include "recipe_actions.h"
#include "summary_reader.h"

namespace etcd_cli {
namespace {

constexpr int kDefaultPort = 8080;
constexpr const char* kWhat = "dashboard";
// Pages open at once (each holds a server thread while it streams).
constexpr size_t kMaxPages = 32;
// A comment line keeps an idle stream open through proxies, and finds a
// page that went away.
constexpr auto kKeepAlive = std::chrono::seconds(15);

struct DashboardArgs {
  std::vector<std::string> prefixes;
  HttpOptions http;
  bool allow_actions = false;
};

void secure_headers(httplib::Response& res) {
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; "
                 "frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Cache-Control", "no-store");
}

std::string content_type(std::string_view path) {
  if (path.ends_with(".html")) return "text/html; charset=utf-8";
  if (path.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (path.ends_with(".css")) return "text/css; charset=utf-8";
  return "application/octet-stream";
}

void answer(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  secure_headers(res);
  res.set_content(dump_json(body) + "\n", "application/json");
}

// POST /api/action: one guarded write (recipe_actions.h), said on stderr;
// the page sees its effect through the watch, as any other change.
void act(Context& ctx, const DashboardArgs& a, const httplib::Request& req, httplib::Response& res) {
  auto refuse = [&](int status, const std::string& why) { answer(res, status, {{"ok", false}, {"error", why}}); };
  if (!a.allow_actions) return refuse(403, "actions are off: the dashboard was started without --allow-actions");
  // A page of this server sends this header; a form or a page elsewhere
  // cannot without the server's consent (CORS), which it never gives.
  if (req.get_header_value("X-Etcd-Recipes-Action") != "1" ||
      !req.get_header_value("Content-Type").starts_with("application/json")) {
    return refuse(400, "an action is a JSON POST with the header X-Etcd-Recipes-Action: 1");
  }
  nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
  if (!body.is_object() || !body.contains("action") || !body["action"].is_string() || !body.contains("name_b64") ||
      !body["name_b64"].is_string()) {
    return refuse(400, "expected {\"action\", \"prefix\", \"name_b64\", ...}");
  }
  const std::string action = body["action"];
  const auto name = base64_decode(body["name_b64"].get<std::string>());
  if (!name) return refuse(400, "name_b64: not base64");
  bool under = false;
  for (const auto& p : a.prefixes) under = under || key_within(*name, prefix_base(p));
  if (!under) return refuse(403, "not under a prefix this dashboard shows");

  ActionOutcome outcome;
  std::string subject;
  try {
    if (action == "requeue" || action == "purge") {
      if (!body.contains("id") || !body["id"].is_string()) return refuse(400, "expected the dead letter's id");
      const std::string id = body["id"];
      subject = cat(*name, " dead letter ", id);
      outcome = action == "requeue" ? requeue_dead_letter(ctx, *name, id) : purge_dead_letter(ctx, *name, id);
    } else if (action == "release") {
      if (!body.contains("key_b64") || !body["key_b64"].is_string() || !body.contains("create_revision") ||
          !body["create_revision"].is_number_integer()) {
        return refuse(400, "expected the holder's key_b64 and create_revision");
      }
      const auto key = base64_decode(body["key_b64"].get<std::string>());
      if (!key || !key_within(*key, *name) || *key == *name) {
        return refuse(400, "key_b64: not a key of that recipe");
      }
      subject = cat(*name, " key ", dashboard::display_text(*key));
      outcome = force_release(ctx, *name, *key, body["create_revision"].get<int64_t>());
    } else {
      return refuse(400, "unknown action \"" + dashboard::display_text(action, 40) + "\"");
    }
  } catch (const Failure& f) {
    // etcd refused or could not be reached: the page shows why.
    const std::string why = f.explained();
    std::cerr << cat(kProgram, " ", kWhat, ": action ", action, " ", dashboard::display_text(subject), " from ",
                     req.remote_addr, ": failed: ", why, "\n")
              << std::flush;
    return refuse(502, why);
  }
  std::cerr << cat(kProgram, " ", kWhat, ": action ", action, " ", dashboard::display_text(subject), " from ",
                   req.remote_addr, ": ", outcome.message, "\n")
            << std::flush;
  if (!outcome.done) return refuse(409, outcome.message);
  answer(res, 200, {{"ok", true}, {"message", outcome.message}});
}

int run_dashboard(Context& ctx, const DashboardArgs& a) {
  check_disjoint_prefixes(a.prefixes);
  HttpServer server(a.http, kWhat, ctx.global().verbose);
  server.set_threads(kMaxPages + 8);
  ctx.client();  // built once, before the server's threads share it
  DashboardFeed feed(ctx, a.prefixes, a.allow_actions);
  feed.start();

  for (const auto& asset : dashboard_assets()) {
    auto serve_asset = [&asset](const httplib::Request&, httplib::Response& res) {
      secure_headers(res);
      res.set_content(asset.body.data(), asset.body.size(), content_type(asset.path));
    };
    server.get(std::string(asset.path), serve_asset);
    if (asset.path == "/index.html") server.get("/", serve_asset);
  }
  server.get("/healthz",
             [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  server.get("/metrics", [&feed](const httplib::Request&, httplib::Response& res) {
    const int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    res.set_content(metrics::render_metrics(feed.scrapes(), now_ms), metrics::kContentType);
  });
  const std::stop_token stop = ctx.stop();
  server.get("/events", [&feed, stop](const httplib::Request&, httplib::Response& res) {
    if (feed.subscribers() >= kMaxPages) {
      res.status = 503;
      res.set_header("Retry-After", "10");
      res.set_content("503: too many pages open on this dashboard\n", "text/plain");
      return;
    }
    auto sub = feed.subscribe();
    secure_headers(res);
    res.set_header("X-Accel-Buffering", "no");
    auto last_write = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
    res.set_chunked_content_provider(
        "text/event-stream",
        [sub, stop, last_write](size_t, httplib::DataSink& sink) {
          // Called again and again until it returns false: each call waits
          // a little for messages, so a stop is seen within that.
          std::string out;
          if (!sub->take(out, std::chrono::milliseconds(200)) || stop.stop_requested()) return false;
          const auto now = std::chrono::steady_clock::now();
          if (out.empty()) {
            if (now - *last_write < kKeepAlive) return sink.is_writable();
            out = ": keep-alive\n\n";
          }
          *last_write = now;
          return sink.write(out.data(), out.size());
        },
        [&feed, sub](bool) { feed.unsubscribe(sub); });
  });
  server.post("/api/action",
              [&ctx, &a](const httplib::Request& req, httplib::Response& res) { act(ctx, a, req, res); });
  server.serve(ctx.stop());
  feed.stop();
  return kExitOk;
}

}  // namespace

void add_dashboard_commands(Commands& commands) {
  auto a = std::make_shared<DashboardArgs>();
  auto* cmd = commands.root().add_subcommand(
      "dashboard",
      "Serve a live web page of the recipes under each PREFIX: lock holders and waiters, leaders, queue depths and "
      "heads, in-flight work and dead letters, barriers, counters, service instances — updated as etcd changes");
  cmd->add_option("prefix", a->prefixes,
                  "A recipe's name or a path above many (/app): the key PREFIX and the keys under PREFIX/; \"\" "
                  "means every key. Prefixes must not overlap")
      ->required();
  add_http_options(cmd, a->http, kDefaultPort);
  cmd->add_flag("--allow-actions", a->allow_actions,
                "Offer the operator's actions on the page: requeue or purge a dead letter, release (delete) a lock "
                "holder's key. Each asks for confirmation, is one guarded write and is said on stderr. Off: the page "
                "is read-only and the server refuses them (403)");
  cmd->footer(
      "The page (/) is served from the tool itself and loads nothing from elsewhere. Each PREFIX is read once as a "
      "bounded summary (as `inspect` reads it: collections counted, only their heads read), then watched; a change "
      "re-reads only the recipe it belongs to, and open pages get the difference at once (/events, Server-Sent "
      "Events). /metrics serves the exporter's metrics from the same state, /healthz answers ok. Ages are exact "
      "for keys created while the dashboard watched, and shown as \"at least\" for older ones. docs/dashboard.md "
      "describes the page.\n\n"
      "Exit codes:\n"
      "  0      stopped by SIGINT or SIGTERM\n"
      "  1      the address could not be bound\n"
      "  2      invalid usage (an address other than loopback without TLS or --insecure, overlapping prefixes, ...)");
  commands.on_run(cmd, [a](Context& ctx) { return run_dashboard(ctx, *a); });
}

}  // namespace etcd_cli
