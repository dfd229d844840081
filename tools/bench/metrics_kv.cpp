// Plain KV metrics: the base rates (put_seq, put_pipelined) every other
// metric is compared with, plus txn and linearizable range.
#include <string>

#include "bench.h"

namespace bench::metrics_kv {
namespace {

double put_seq(Context& ctx) {
  const std::string key = put_seq_key();
  return measure_sequential(ctx, [&] { ctx.client.put(key, kValue).wait().value(); });
}

double put_pipelined(Context& ctx) {
  const std::string key = Context::key_prefix("put_pipelined") + "k";
  return measure_pipelined<etcd::PutResponse>(ctx, kPipelineDepth, [&] { return ctx.client.put(key, kValue); });
}

// Compare-and-swap on mod_revision, the shape every recipe's guarded write
// has. Each iteration's guard is the revision of the previous write, so
// every txn succeeds (a failed one would measure a cheaper path).
double txn_seq(Context& ctx) {
  const std::string key = Context::key_prefix("txn_seq") + "k";
  int64_t revision = ctx.client.put(key, kValue).wait().value().header.revision;
  return measure_sequential(ctx, [&] {
    etcd::Txn txn;
    txn.when(etcd::Compare::mod_revision(key) == revision).then(etcd::Op::put(key, kValue));
    auto response = ctx.client.txn(txn).wait().value();
    if (!response.succeeded) throw std::runtime_error("txn_seq: compare failed; another writer on " + key + "?");
    revision = response.header.revision;
  });
}

double range_seq(Context& ctx) {
  const std::string key = Context::key_prefix("range_seq") + "k";
  ctx.client.put(key, kValue).wait().value();
  return measure_sequential(ctx, [&] {
    if (ctx.client.get(key).wait().value().kvs.size() != 1) throw std::runtime_error("range_seq: key missing");
  });
}

[[maybe_unused]] const bool kRegistered = add_metrics({
    {.name = "put_seq", .unit = "puts/s", .order = 100, .run = put_seq},
    {.name = "put_pipelined", .unit = "puts/s", .order = 200, .run = put_pipelined},
    {.name = "txn_seq", .unit = "txns/s", .order = 300, .run = txn_seq},
    {.name = "range_seq", .unit = "gets/s", .order = 310, .run = range_seq},
});

}  // namespace
}  // namespace bench::metrics_kv
