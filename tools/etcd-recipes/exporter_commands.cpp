// exporter PREFIX...: the state of the recipes under each PREFIX as
// Prometheus metrics, served over HTTP (http_server.h) and read afresh at
// each scrape of /metrics: a bounded summary per prefix (summary_reader.h),
// rendered by metrics_text.h.

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "etcd/recipes/inspect.h"
#include "http_server.h"
#include "metrics_text.h"
#include "summary_reader.h"

namespace etcd_cli {
namespace {

namespace in = etcd::recipes::inspect;

constexpr int kDefaultPort = 9464;
constexpr const char* kWhat = "exporter";

struct ExporterArgs {
  std::vector<std::string> prefixes;
  HttpOptions http;
};

// One prefix's summary at this scrape, or why it could not be read (said
// on stderr too).
metrics::PrefixScrape scrape(Context& ctx, const std::string& prefix) {
  metrics::PrefixScrape out;
  out.prefix = prefix;
  const auto start = std::chrono::steady_clock::now();
  const std::string what = cat(kWhat, " ", prefix.empty() ? "\"\"" : prefix);
  try {
    Snapshot s = read_summary(ctx, prefix_base(prefix), what);
    out.requests = s.requests;
    out.stopped_at = std::move(s.stopped_at);
    out.report = in::build_report(std::move(s.kvs), s.revision, s.totals);
  } catch (const Failure& f) {
    out.error = f.explained();
  } catch (const etcd::Error& e) {
    out.error = cat(what, ": ", explain(e.status()));
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!out.report) std::cerr << cat(kProgram, ": ", out.error, "\n") << std::flush;
  return out;
}

std::string index_page(const std::vector<std::string>& prefixes) {
  std::string page = "etcd-recipes exporter: the state of the recipes under ";
  for (size_t i = 0; i < prefixes.size(); ++i) {
    page += cat(i == 0 ? "" : ", ", "\"", prefixes[i], "\"");
  }
  return page + "\n\n/metrics  Prometheus metrics, read from etcd at each request\n/healthz  ok while serving\n";
}

int run_exporter(Context& ctx, const ExporterArgs& a) {
  check_disjoint_prefixes(a.prefixes);
  HttpServer server(a.http, kWhat, ctx.global().verbose);
  ctx.client();  // built once, before the server's threads share it
  const std::string index = index_page(a.prefixes);
  server.get("/", [index](const httplib::Request&, httplib::Response& res) { res.set_content(index, "text/plain"); });
  server.get("/healthz",
             [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  server.get("/metrics", [&ctx, &a](const httplib::Request&, httplib::Response& res) {
    std::vector<metrics::PrefixScrape> scrapes;
    for (const auto& prefix : a.prefixes) scrapes.push_back(scrape(ctx, prefix));
    const int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    res.set_content(metrics::render_metrics(scrapes, now_ms), metrics::kContentType);
  });
  server.serve(ctx.stop());
  return kExitOk;
}

}  // namespace

void add_exporter_commands(Commands& commands) {
  auto a = std::make_shared<ExporterArgs>();
  auto* cmd = commands.root().add_subcommand(
      "exporter",
      "Serve the state of the recipes under each PREFIX as Prometheus metrics: queue depths, in-flight work and "
      "dead letters, lock holders and waiters, leaders, barrier parties, counters, service instances");
  cmd->add_option("prefix", a->prefixes,
                  "A recipe's name or a path above many (/app): the key PREFIX and the keys under PREFIX/; \"\" "
                  "means every key. Prefixes must not overlap")
      ->required();
  add_http_options(cmd, a->http, kDefaultPort);
  cmd->footer(
      "Each request of /metrics reads a bounded summary of each PREFIX at one revision, as `inspect` does: a "
      "recipe's collections (a queue's items, a lock's waiters, ...) are counted exactly by count-only reads and only "
      "their head is read, so a scrape costs a few requests per recipe whatever their sizes. A PREFIX that cannot be "
      "read (etcd down, no permission) gives etcd_recipes_exporter_up{prefix} 0 and a comment line with the cause, "
      "which is also said on stderr; the scrape still answers. / is a short page, /healthz answers ok. "
      "docs/exporter.md lists the metrics.\n\n"
      "Exit codes:\n"
      "  0      stopped by SIGINT or SIGTERM\n"
      "  1      the address could not be bound\n"
      "  2      invalid usage (an address other than loopback without TLS or --insecure, overlapping prefixes, ...)");
  commands.on_run(cmd, [a](Context& ctx) { return run_exporter(ctx, *a); });
}

}  // namespace etcd_cli
