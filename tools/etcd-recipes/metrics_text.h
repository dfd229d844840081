// `etcd-recipes exporter`'s metrics: inspection reports (etcd/recipes/
// inspect.h) of the prefixes one scrape read, in Prometheus's text
// exposition format 0.0.4. Pure (no client, no I/O), so the unit tests
// drive it with hand-made reports; exporter_commands.cpp reads etcd and
// serves the text. docs/exporter.md says what each metric means.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/recipes/inspect.h"

namespace etcd_cli::metrics {

// One prefix's part of a scrape: its report, or why it could not be read.
struct PrefixScrape {
  std::string prefix;  // as the command line gave it: the `prefix` label
  // What was read; none: the read failed.
  std::optional<etcd::recipes::inspect::Report> report;
  std::string error;       // why the read failed (a comment line in the text)
  std::string stopped_at;  // a summary that stopped before the end: where (a comment line)
  double seconds = 0;      // how long the read took
  int64_t requests = 0;    // the etcd requests it made
};

// The Content-Type of the text.
inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

// The text of one scrape: for each metric family with samples, its HELP
// and TYPE lines once, then its samples from every prefix; first, as
// comment lines, why a prefix could not be read or where its summary
// stopped. `now_ms` (this host's clock,
// ms since the epoch) dates the work queues' records. A series that
// repeats one already given (same name and labels) is left out.
std::string render_metrics(const std::vector<PrefixScrape>& scrapes, int64_t now_ms);

// A label value as the format writes it between double quotes: `\` as
// `\\`, `"` as `\"`, a newline as `\n`; other control bytes and bytes that
// are not valid UTF-8 as the four characters `\xHH` (their backslash
// written `\\`), so the text is always valid UTF-8 on one line.
std::string escape_label_value(std::string_view bytes);

// A sample value: integers exactly, other numbers in the shortest form
// that reads back the same.
std::string format_value(double value);

}  // namespace etcd_cli::metrics
