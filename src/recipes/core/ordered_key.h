// The ordered contender layout (internal): keys that name a revision, so
// that every read an acquisition makes is bounded by what it needs,
// however many contenders wait. RecipeOptions::contender_layout = kOrdered
// of the mutex, the election's candidates and both sides of the read-write
// lock.
//
//   SPACE~<R>-<lease>-<n>   (16 lower-case hex digits each)
//
// SPACE is the contender's key space (NAME/ for the mutex and a candidate,
// NAME/read/ and NAME/write/ for the read-write lock). R is a store
// revision the client had seen before it sent the creation (refreshed by
// one read when it is older than kFreshRevision), lease the session's, n
// the client's contender count (several contenders may share one
// session). A key therefore commits at a revision C > R, and every key
// created before ours (C' < C) has R' < C: it sorts before SPACE~<C>.
//
// The lowest create revision among the keys that conflict holds, as in
// etcd's Go concurrency layout — and the Go layout's keys (SPACE<lease
// hex>: digits and letters, which sort before '~') take part by their
// create revision: `etcdctl lock`, `etcdctl elect` and Go-layout
// contenders wait for ours and ours for theirs, so one lock excludes
// across a mixed fleet. A contender waits for the deletion of the newest
// key created before its own in the spaces that conflict with it (a mutex
// or a candidate: its own; a reader: the writers'; a writer: both) —
// the one just before it, but for keys whose R was stale — and looks again
// after each wake-up. A reader is not blocked by a writer key that was
// downgraded (put again after its creation: a read hold now) and wakes also
// when the writer it waits for is downgraded.
//
// The tail record: NAME~tail (beside NAME/, as the hand-off record; for
// the read-write lock's writers NAME~write-tail, its readers
// NAME~read-tail) holds the key last created in the space, and is deleted
// by the release of an exclusive holder whose key it still names — the
// last created, so then the only one. (A reader's release never deletes
// its space's: older readers may still hold.) The creation reads the
// tail records of the spaces that conflict with it before it puts its
// own: the one put last names the key created just before ours, the only
// key whose hand-off may spare a waiter its look back. The creation puts
// it in the same Txn, and each look back at a space whose tail record is
// absent is skipped: an uncontended acquisition reads nothing of the
// layout. (A waiter that gave up or a lost hold leaves it naming a key that
// is gone: the next creation then looks back.)
//
// The hand-off record: the key NAME~handoff (beside NAME/, not under it,
// so invisible to the Go layout and etcdctl; and not NAME itself, which
// users often keep the guarded data in) holds the key of the last
// exclusive hold that was released; the release deletes the key and puts
// the record in one guarded Txn. A waiter that waited for the key created
// just before its own (the tail records tell its creation which; when its
// look back found an older one, it waits for that key instead), woken by
// its deletion, first compares the record with that key: a key let go by
// its holder had nothing before it, and nothing was between it and the
// waiter, so the waiter holds without looking back. (A key whose R was
// stale sorts below keys created before it: a look back that stops at the
// first span holding an older key may find another than the one just
// before, and two waiters would take one hand-off.) (Looking back from a head of the queue
// would read, span after span, every key of the layout deleted since etcd's
// last compaction: etcd keeps them in its index until then.) A key that
// went another way — a waiter that gave up, a lease that expired, a reader,
// a Go-layout holder — does not match, and the waiter looks back.
//
// Each Txn and what etcd reads for it (G keys of the Go layout in the
// conflicting spaces):
//   create  If(K absent) Then Get(the conflicting spaces' tail records),
//           Put(K, lease), Put(the tail record, K),
//           and for each conflicting space the newest Go key (reads G)
//           and — unless its tail record is absent — the look back; Else
//           Get(K) (an earlier attempt's key: adopted). No "nothing under
//           NAME/" fast path as the Go layout's: etcd compares a range by
//           reading every key in it.
//   read    Get(K), and for each conflicting space the newest Go key
//           created before K and the look back — at one revision. After a
//           wake-up: If(NAME~handoff == the key waited for) Then Get(K)
//           Else the read.
//   release Delete(K) — with Put(NAME~handoff, K) and If(tail == K)
//           Delete(tail) for an exclusive hold — if K is still ours.
// The look back finds the newest key created before ours among the keys
// of a space with R in [R_K - 16, C_K) (for the creation: every key from
// R_K - 16 on, all older than ours then); if there is none, among those in
// the 64 times longer span below, and the next (to R_K - 65,536), then
// among all the keys below. A span is passed when every key in it was
// created after ours (a Compare over the range), and etcd evaluates only
// the compares on the path it takes: a look reads the keys of the spans
// it passes and of the one it stops in. With every contender on this
// layout G = 0; a waiter reads the keys created around its own creation (a
// few, at any number of waiters), and the one woken when its predecessor
// goes reads those and the empty spans below.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "contender.h"
#include "lowest_key.h"
#include "recipe_core.h"

namespace etcd::recipes::detail {

struct OrderedKeyClock;

// Where a contender's keys live and what blocks it (the defaults: the
// mutex's and a candidate's, NAME/ both).
struct OrderedSpaces {
  std::string own;                     // SPACE of this contender's keys
  std::vector<std::string> conflicts;  // the SPACEs whose older keys block it
  // A reader: a conflicting key put again after its creation (a downgraded
  // write key) does not block, and the one waited for wakes it when put.
  bool reader = false;
  // The hold ends when its key is put by someone else (a write hold, which
  // a downgrade turns into a read hold of the same key).
  bool require_unmodified = false;
  // An exclusive hold (the mutex's, a leader's, a writer's): its release
  // records the hand-off (NAME~handoff := the released key), which tells the one
  // waiting for it that nothing before it is left.
  bool records_handoff = true;
  // The SPACEs whose tail record is kept (see the header; default: own),
  // those whose keys are exclusive holds.
  std::vector<std::string> tailed;
};

class OrderedKeyDriver : public ContenderDriver {
 public:
  // The revisions a waiter's first look back covers below its R, and the
  // longest span before it looks at all the keys below.
  static constexpr uint64_t kFirstLook = 16;
  static constexpr uint64_t kLastLook = uint64_t{1} << 16;
  // A client's last seen revision is refreshed (one read) past this age.
  static constexpr Clock::duration kFreshRevision = std::chrono::seconds(1);

  OrderedKeyDriver(std::shared_ptr<RecipeCore> core, LowestKeySettings settings, OrderedSpaces spaces = {});

  const std::shared_ptr<RecipeCore> core;
  const std::string prefix;  // NAME/: every space is under it

  std::string key(const Session& s) override;
  std::string rekey(const std::string& key, int64_t revision) override;
  bool claims_key() const override { return false; }  // unique by its count
  // Through the client's group commit, which sends one creation per name
  // at a time: sent alone, thousands of contenders arriving at once would
  // each look back over all the others' keys (their revisions alike).
  std::string batch_scope() const override { return prefix; }
  Txn create(const std::string& key, int64_t lease) override;
  Created created(const TxnResponse& response) override;
  Txn read(const std::string& key, int64_t rev) override;
  // If(NAME~handoff == the key waited for) Then Get(K) (it was let go by a holder:
  // we hold) Else the read.
  Txn reread(const std::string& key, int64_t rev, const std::string& waited_for) override;
  Verdict judge(const TxnResponse& response, int64_t rev) override;
  HoldSpec hold_spec() override;
  const std::string& family() const override { return settings_.family; }
  const Labels& labels() const override { return settings_.labels; }
  std::string waiting_for() const override;

 private:
  // One conflicting space: its Go keys are [go, ordered), ours [ordered, end).
  struct Space {
    std::string go;       // SPACE
    std::string ordered;  // SPACE~
    std::string end;      // SPACE~g: past every key of the layout
    std::string tail;     // its tail record (tail_key), or empty: none kept
  };
  // The look back in `space` below R = `r`, within [.., to): keys created
  // before ours — at most at `rev` - 1 when rev is known (read), else every
  // key then (the creation, where ours is not there yet when etcd compares).
  static Txn look_back(const Space& space, uint64_t r, const std::string& to, uint64_t span, int64_t rev);
  // The reads of every conflicting space (the Go key, then the look back):
  // at most at `rev` - 1 when rev is known, else at the creation.
  std::vector<Op> conflicting(uint64_t r, int64_t rev) const;
  // The R a key of ours names (0: none).
  uint64_t r_of(const std::string& key) const;
  // The key a look (its responses) found, other than ours (created at
  // `own_rev`).
  static const KeyValue* found(const TxnResponse& look, int64_t own_rev);
  // Holds, or waits for the newest blocking key the reads found (from
  // `first` on: a Go key and a look back per space); at `at`.
  // `predecessor`: the key created just before ours in the conflicting
  // spaces, if known (the creation's read of their tail records).
  Verdict verdict(const std::vector<OpResponse>& reads, size_t first, int64_t own_rev, int64_t at,
                  const std::string& predecessor) const;
  // The tail records of the conflicting spaces, if each keeps one (none
  // otherwise).
  std::vector<std::string> predecessor_tails() const;
  void seen(int64_t revision);

  const LowestKeySettings settings_;
  const OrderedSpaces spaces_;
  const std::string own_;       // SPACE~ of our keys
  const std::string own_tail_;  // the tail record of our space, if kept
  std::vector<Space> conflicts_;
  const std::shared_ptr<OrderedKeyClock> clock_;
};

// The key of the hand-off record of the recipe named `name`.
inline std::string handoff_key(const std::string& name) { return name + "~handoff"; }
// The key of the tail record of `space` (NAME/ or NAME/<kind>/) of the
// recipe named `name`: NAME~tail, NAME~<kind>-tail.
std::string tail_key(const std::string& name, const std::string& space);

// The driver for "the lowest create revision holds" (the mutex, a
// candidate) in the recipe's contender layout.
std::shared_ptr<ContenderDriver> lowest_key_driver(const std::shared_ptr<RecipeCore>& core, LowestKeySettings settings);

}  // namespace etcd::recipes::detail
