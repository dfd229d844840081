// The demo's scenes beyond the first ones of demo.cpp: counters, transient
// keys, queues, semaphores and read-write locks, and (with --members 3) an
// etcd member failover under running recipes. Each is a row of kSteps.
#pragma once

#include "demo.h"

namespace etcd_cli::demo {

void counter_adds(Demo& d);
void transient_keys(Demo& d);
void queues(Demo& d);
void semaphore_and_rwlock(Demo& d);
void member_failover(Demo& d);

}  // namespace etcd_cli::demo
