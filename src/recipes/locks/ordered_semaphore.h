// DistributedSemaphore's ordered layout (internal): RecipeOptions::
// contender_layout = kOrdered. Waiters queue as the ordered mutex's
// contenders do (core/ordered_key.h), and the first in line moves into one
// of N permit keys.
//
//   NAME/permits             "N ordered" (the holders layout stores "N":
//                            each refuses the other's semaphore)
//   NAME/queue/~<R>-<lease>-<n>   a waiter (the ordered key layout)
//   NAME/slots/<i>           a permit, 0 <= i < N, bound to the holder's
//                            lease; its value: the queue key it came from,
//                            a space, the client id
//   NAME~queue-tail          the queue's tail record
//   NAME~handoff             the queue's hand-off record
//
// A permit is a slot key: at most N exist by construction, whatever
// happens to the queue. The first in line (nothing created before its queue
// key is left) takes a free slot with one Txn that deletes its queue key
// and records the hand-off, so that the next in line knows from one
// compare that it is first now; with no slot free, it alone watches
// NAME/slots/ for a release.
//
// Each Txn (S: the permits, N of them at most):
//   create  If(NAME/permits absent) Then Put(NAME/permits) and the body,
//           Else If(NAME/permits == "N ordered") Then the body. The body:
//           If(slot h holds our queue key) Then Get(slot h) (an earlier
//           attempt's: adopted) Else If(tail record absent, slot h absent,
//           version(NAME/permits) < 2) Then Put(slot h), Get(slot h)
//           (nobody waits, never resized: the permit at once) Else the
//           ordered creation of our queue key, Get(slots).
//           h: our queue key's count modulo N. A count that differs but
//           was resized (version > 1) is adopted and the creation sent
//           again (semaphore.h, "Resizing").
//   read    the ordered layout's read, Get(slots) and Get(NAME/permits);
//           the first in line, woken by a release or a resize, reads only
//           Get(K), Get(slots) and Get(NAME/permits). All slots held count,
//           those beyond a shrunk N too.
//   admit   If(create(K) == ours, slot i absent) Then Delete(K),
//           Put(slot i), Put(NAME~handoff, K), If(tail == K) Delete(tail),
//           Get(slot i) Else Get(slot i), Get(K).
//   leave   the first in line hands off as the admission does (it may have
//           waited for a slot, or declined a try); another waiter deletes
//           its key.
//   release Delete(slot) if it is still ours.
#pragma once

#include <memory>

#include "../core/contender.h"
#include "../core/recipe_core.h"
#include "permit_count.h"

namespace etcd::recipes::detail {

std::shared_ptr<ContenderDriver> ordered_semaphore_driver(std::shared_ptr<RecipeCore> core,
                                                         std::shared_ptr<PermitCount> permits);

// The key of permit slot `i` of the semaphore named `name`.
std::string semaphore_slot_key(const std::string& name, int i);

}  // namespace etcd::recipes::detail
