// Every command family registers itself through one of these functions;
// main.cpp lists them. A new recipe command (lock, elect, queue, ...) is a
// new .cpp file with an add_*_commands function and one line in main.cpp.
#pragma once

#include "common.h"

namespace etcd_cli {

void add_kv_commands(Commands& commands);
void add_lease_commands(Commands& commands);
void add_status_commands(Commands& commands);     // status, member list
void add_lock_commands(Commands& commands);       // lock, semaphore, rwlock
void add_election_commands(Commands& commands);   // elect, observe
void add_queue_commands(Commands& commands);      // queue push, pop, size
void add_workqueue_commands(Commands& commands);  // workqueue push, work, size, dead letters
void add_transient_commands(Commands& commands);  // transient KEY VALUE -- CMD
void add_counter_commands(Commands& commands);    // counter get, add, set, cas
void add_barrier_commands(Commands& commands);    // barrier set, remove, wait
void add_cache_commands(Commands& commands);      // cache PREFIX
void add_discovery_commands(Commands& commands);  // discovery register, list, pick
void add_inspect_commands(Commands& commands);    // inspect PREFIX
void add_exporter_commands(Commands& commands);   // exporter PREFIX...
void add_dashboard_commands(Commands& commands);  // dashboard PREFIX...
void add_value_commands(Commands& commands);      // value get, set, cas, watch
void add_group_commands(Commands& commands);      // group join, list
void add_reap_commands(Commands& commands);       // reap PREFIX
void add_demo_command(Commands& commands);
void add_view_commands(Commands& commands);       // view PREFIX, node watch KEY

}  // namespace etcd_cli
