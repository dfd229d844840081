/* The rest of the catalog from C, against a real etcd: the read-write lock,
 * the priority queue, the barriers, the caches, watches, transient keys,
 * cancellation, connection-state and error callbacks, loss callbacks.
 *   c_api_catalog_test [TEST...] ENDPOINT   (tests/c_api/with_etcd.sh starts the etcd)
 * Each check prints PASS or FAIL; the exit status is the number of
 * failures (capped). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "c_test_support.h"
#include "etcd_recipes.h"

/* What an asynchronous call's callback saw. */
typedef struct {
  atomic_int fired;
  etcdr_code code;
  etcdr_reason reason;
  int64_t token;
  pthread_t thread;
} async_result;

static void async_result_init(async_result* r) {
  memset(r, 0, sizeof *r);
  atomic_init(&r->fired, 0);
}

static void on_token(void* user, const etcdr_error* result, int64_t token) {
  async_result* r = (async_result*)user;
  r->code = result->code;
  r->reason = result->reason;
  r->token = token;
  r->thread = pthread_self();
  atomic_store(&r->fired, 1);
}

static void on_done(void* user, const etcdr_error* result) {
  async_result* r = (async_result*)user;
  r->code = result->code;
  r->reason = result->reason;
  r->thread = pthread_self();
  atomic_store(&r->fired, 1);
}

static void on_value(void* user, const etcdr_error* result, const char* value, size_t value_len) {
  (void)value;
  (void)value_len;
  on_done(user, result);
}

static void on_lost(void* user, const etcdr_error* why) { on_done(user, why); }

/* Keys under `p` now, without changing them: a prefix watch would be
 * heavier; a children cache in subtree scope reads them at one revision. */
static int64_t count_keys(etcdr_client* c, const char* p) {
  etcdr_error err = ETCDR_ERROR_INIT;
  etcdr_path_children_cache_options o;
  etcdr_path_children_cache_options_init(&o, sizeof o);
  o.subtree = 1;
  o.start_mode = ETCDR_CACHE_START_SILENT;
  etcdr_path_children_cache* cache = NULL;
  etcdr_node_list* list = NULL;
  int64_t n = -1;
  if (etcdr_path_children_cache_create(c, p, NULL, &o, &cache, &err) == ETCDR_OK &&
      etcdr_path_children_cache_wait_initialized(cache, 5000, &err) == ETCDR_OK &&
      etcdr_path_children_cache_list(cache, &list, &err) == ETCDR_OK) {
    n = (int64_t)etcdr_node_list_count(list);
  }
  etcdr_node_list_free(list);
  etcdr_path_children_cache_destroy(cache);
  etcdr_error_clear(&err);
  return n;
}

/* --- read-write lock -------------------------------------------------------- */

static void test_rwlock(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  const char* name = name_of("rwlock");
  etcdr_rwlock *a = NULL, *b = NULL, *w = NULL;
  CHECK_CODE(etcdr_rwlock_create(c1, name, NULL, &a, &err), ETCDR_OK, err, "rwlock a on client 1");
  CHECK_CODE(etcdr_rwlock_create(c2, name, NULL, &b, &err), ETCDR_OK, err, "rwlock b on client 2");
  CHECK_CODE(etcdr_rwlock_create(c2, name, NULL, &w, &err), ETCDR_OK, err, "rwlock w on client 2");

  etcdr_rwlock* bad = NULL;
  CHECK_CODE(etcdr_rwlock_create(c1, "", NULL, &bad, &err), ETCDR_INVALID_ARGUMENT, err, "an empty name");
  CHECK_CODE(etcdr_rwlock_create(c1, "trailing/", NULL, &bad, &err), ETCDR_INVALID_ARGUMENT, err,
             "a name ending in '/'");
  CHECK_CODE(etcdr_rwlock_acquire(a, 7, 1000, NULL, &err), ETCDR_INVALID_ARGUMENT, err, "mode 7");
  CHECK_CODE(etcdr_rwlock_release(a, ETCDR_READ, &err), ETCDR_FAILED_PRECONDITION, err, "release with nothing held");

  int64_t ra = 0, rb = 0, tw = 0;
  int got = -1;
  CHECK_CODE(etcdr_rwlock_acquire(a, ETCDR_READ, 5000, &ra, &err), ETCDR_OK, err, "a reads");
  CHECK_CODE(etcdr_rwlock_acquire(b, ETCDR_READ, 5000, &rb, &err), ETCDR_OK, err, "b reads at the same time");
  CHECK(etcdr_rwlock_is_held(a, ETCDR_READ) && etcdr_rwlock_is_held(b, ETCDR_READ) && ra != rb,
        "  ... both hold, with tokens of their own (%lld, %lld)", (long long)ra, (long long)rb);
  CHECK_CODE(etcdr_rwlock_try_acquire(w, ETCDR_WRITE, &got, &tw, &err), ETCDR_OK, err, "w tries to write");
  CHECK(got == 0, "  ... and does not get it while readers hold");
  CHECK_CODE(etcdr_rwlock_acquire(w, ETCDR_WRITE, 300, &tw, &err), ETCDR_DEADLINE_EXCEEDED, err,
             "w waits 300 ms to write");
  CHECK_CODE(etcdr_rwlock_acquire(a, ETCDR_WRITE, 1000, NULL, &err), ETCDR_FAILED_PRECONDITION, err,
             "a reader cannot upgrade");

  async_result wr;
  async_result_init(&wr);
  CHECK(etcdr_rwlock_acquire_async(w, ETCDR_WRITE, -1, NULL, on_token, &wr) == ETCDR_OK, "w acquire_async(WRITE)");
  CHECK_CODE(etcdr_rwlock_release(a, ETCDR_READ, &err), ETCDR_OK, err, "a stops reading");
  sleep_ms(200);
  CHECK(atomic_load(&wr.fired) == 0, "  ... w still waits for b");
  CHECK_CODE(etcdr_rwlock_release(b, ETCDR_READ, &err), ETCDR_OK, err, "b stops reading");
  CHECK(wait_flag(&wr.fired, 5000) && wr.code == ETCDR_OK, "  ... w writes (%s)", etcdr_code_name(wr.code));
  tw = wr.token;
  CHECK(tw > ra && tw > rb, "  ... with a token above the readers' (%lld)", (long long)tw);
  CHECK_CODE(etcdr_rwlock_try_acquire(a, ETCDR_READ, &got, NULL, &err), ETCDR_OK, err, "a tries to read");
  CHECK(got == 0, "  ... and does not get it while w writes");

  /* Downgrade: w keeps its place and token as a reader; readers come in. */
  CHECK_CODE(etcdr_rwlock_downgrade(w, &err), ETCDR_OK, err, "w downgrades");
  CHECK(etcdr_rwlock_is_held(w, ETCDR_READ) && !etcdr_rwlock_is_held(w, ETCDR_WRITE), "  ... w reads, not writes");
  CHECK_CODE(etcdr_rwlock_try_acquire(a, ETCDR_READ, &got, &ra, &err), ETCDR_OK, err, "a tries to read again");
  CHECK(got == 1 && ra > tw, "  ... and gets it beside w (token %lld)", (long long)ra);
  CHECK_CODE(etcdr_rwlock_downgrade(w, &err), ETCDR_FAILED_PRECONDITION, err, "downgrade without a write hold");
  CHECK_CODE(etcdr_rwlock_release(w, ETCDR_READ, &err), ETCDR_OK, err, "w releases its read hold");
  CHECK_CODE(etcdr_rwlock_release(w, ETCDR_WRITE, &err), ETCDR_FAILED_PRECONDITION, err,
             "  ... and its write side holds nothing");

  /* Loss: the reader's key is deleted; the callback hears of it. */
  async_result lost;
  async_result_init(&lost);
  CHECK(etcdr_rwlock_on_lost(a, on_lost, &lost) == ETCDR_OK, "on_lost set on a");
  char read_keys[256];
  snprintf(read_keys, sizeof read_keys, "%s/read/", name);
  CHECK(count_and_delete(c2, read_keys) == 1, "an operator deletes a's read key");
  CHECK(wait_flag(&lost.fired, 5000) && lost.reason == ETCDR_REASON_HOLD_LOST, "a's on_lost fires (%s)",
        etcdr_reason_name(lost.reason));
  CHECK_CODE(etcdr_rwlock_release(a, ETCDR_READ, &err), ETCDR_ABORTED, err, "release after the loss");

  etcdr_rwlock_destroy(a);
  etcdr_rwlock_destroy(b);
  etcdr_rwlock_destroy(w);
  etcdr_rwlock_destroy(NULL);
  CHECK(count_keys(c1, name) == 0, "nothing is left under the lock's name");
  etcdr_error_clear(&err);
}

/* --- priority queue ----------------------------------------------------------- */

static void test_priority_queue(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  const char* name = name_of("pqueue");
  etcdr_priority_queue *p = NULL, *q = NULL;
  CHECK_CODE(etcdr_priority_queue_create(c1, name, NULL, &p, &err), ETCDR_OK, err, "producer");
  CHECK_CODE(etcdr_priority_queue_create(c2, name, NULL, &q, &err), ETCDR_OK, err, "consumer");
  CHECK_CODE(etcdr_priority_queue_push(p, "x", 1, 65536, 5000, &err), ETCDR_INVALID_ARGUMENT, err,
             "priority 65536 is refused");
  CHECK_CODE(etcdr_priority_queue_push(p, "x", 1, -1, 5000, &err), ETCDR_INVALID_ARGUMENT, err,
             "priority -1 is refused");
  CHECK_CODE(etcdr_priority_queue_push(p, NULL, 3, 1, 5000, &err), ETCDR_INVALID_ARGUMENT, err,
             "a NULL value with a length is refused");
  int64_t size = -1;
  CHECK_CODE(etcdr_priority_queue_size(q, &size, &err), ETCDR_OK, err, "size");
  CHECK(size == 0, "  ... 0: the refused pushes wrote nothing (%lld)", (long long)size);

  CHECK_CODE(etcdr_priority_queue_push(p, "low", 3, 10, 5000, &err), ETCDR_OK, err, "push low (10)");
  CHECK_CODE(etcdr_priority_queue_push(p, "high", 4, 0, 5000, &err), ETCDR_OK, err, "push high (0)");
  CHECK_CODE(etcdr_priority_queue_push(p, "mid-1", 5, 5, 5000, &err), ETCDR_OK, err, "push mid-1 (5)");
  CHECK_CODE(etcdr_priority_queue_push(p, "mid-2", 5, 5, 5000, &err), ETCDR_OK, err, "push mid-2 (5)");
  CHECK_CODE(etcdr_priority_queue_size(q, &size, &err), ETCDR_OK, err, "size");
  CHECK(size == 4, "  ... 4 (%lld)", (long long)size);
  const char* expected[] = {"high", "mid-1", "mid-2", "low"};
  for (int i = 0; i < 4; ++i) {
    char* v = NULL;
    size_t n = 0;
    CHECK_CODE(etcdr_priority_queue_pop(q, 5000, &v, &n, &err), ETCDR_OK, err, "pop");
    CHECK(v != NULL && strcmp(v, expected[i]) == 0 && n == strlen(expected[i]), "  ... %s (got %s)", expected[i],
          v ? v : "NULL");
    etcdr_free(v);
  }
  int found = -1;
  char* v = NULL;
  CHECK_CODE(etcdr_priority_queue_try_pop(q, &found, &v, NULL, &err), ETCDR_OK, err, "try_pop on an empty queue");
  CHECK(found == 0 && v == NULL, "  ... finds nothing");

  /* A pending pop, cancelled: CANCELLED, and a later item is not lost to it. */
  etcdr_call* call = NULL;
  CHECK_CODE(etcdr_call_create(&call, &err), ETCDR_OK, err, "a call handle");
  async_result pr;
  async_result_init(&pr);
  CHECK(etcdr_priority_queue_pop_async(q, -1, call, on_value, &pr) == ETCDR_OK, "pop_async on the empty queue");
  sleep_ms(200);
  CHECK(atomic_load(&pr.fired) == 0, "  ... waits");
  etcdr_call_cancel(call);
  CHECK(wait_flag(&pr.fired, 5000) && pr.code == ETCDR_CANCELLED, "  ... cancelled: CANCELLED (%s)",
        etcdr_code_name(pr.code));
  CHECK(etcdr_call_is_cancelled(call) == 1, "  ... the call says so");
  CHECK_CODE(etcdr_priority_queue_push(p, "after", 5, 1, 5000, &err), ETCDR_OK, err, "push after the cancel");
  CHECK_CODE(etcdr_priority_queue_pop(q, 5000, &v, NULL, &err), ETCDR_OK, err, "pop gets it");
  etcdr_free(v);
  async_result late;
  async_result_init(&late);
  CHECK(etcdr_priority_queue_pop_async(q, -1, call, on_value, &late) == ETCDR_OK, "pop_async with a cancelled call");
  CHECK(wait_flag(&late.fired, 5000) && late.code == ETCDR_CANCELLED, "  ... ends at once with CANCELLED (%s)",
        etcdr_code_name(late.code));
  etcdr_call_destroy(call);
  etcdr_priority_queue_destroy(p);
  etcdr_priority_queue_destroy(q);
  etcdr_error_clear(&err);
}

/* --- barriers ------------------------------------------------------------------ */

static void test_barriers(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  /* The gate. */
  const char* gate_name = name_of("gate");
  etcdr_barrier *setter = NULL, *waiter = NULL;
  CHECK_CODE(etcdr_barrier_create(c1, gate_name, NULL, &setter, &err), ETCDR_OK, err, "gate on client 1");
  CHECK_CODE(etcdr_barrier_create(c2, gate_name, NULL, &waiter, &err), ETCDR_OK, err, "gate on client 2");
  CHECK_CODE(etcdr_barrier_wait(waiter, 2000, &err), ETCDR_OK, err, "wait on a gate never set returns at once");
  int was = -1;
  CHECK_CODE(etcdr_barrier_set(setter, 5000, &was, &err), ETCDR_OK, err, "set");
  CHECK(was == 1, "  ... it was open");
  CHECK_CODE(etcdr_barrier_set(setter, 5000, &was, &err), ETCDR_OK, err, "set again");
  CHECK(was == 0, "  ... it was set already");
  CHECK_CODE(etcdr_barrier_wait(waiter, 300, &err), ETCDR_DEADLINE_EXCEEDED, err, "wait 300 ms on the set gate");
  async_result gw;
  async_result_init(&gw);
  CHECK(etcdr_barrier_wait_async(waiter, -1, NULL, on_done, &gw) == ETCDR_OK, "wait_async");
  sleep_ms(200);
  CHECK(atomic_load(&gw.fired) == 0, "  ... waits while the gate is set");
  CHECK_CODE(etcdr_barrier_remove(waiter, 5000, &was, &err), ETCDR_OK, err, "remove (by another than the setter)");
  CHECK(was == 1, "  ... it was set");
  CHECK(wait_flag(&gw.fired, 5000) && gw.code == ETCDR_OK, "  ... the waiter is released (%s)",
        etcdr_code_name(gw.code));
  etcdr_barrier_destroy(setter);
  etcdr_barrier_destroy(waiter);

  /* Two parties meet. */
  const char* meet = name_of("meet");
  etcdr_barrier_with_count *m1 = NULL, *m2 = NULL, *bad = NULL;
  CHECK_CODE(etcdr_barrier_with_count_create(c1, meet, 0, NULL, &bad, &err), ETCDR_INVALID_ARGUMENT, err,
             "0 parties is refused");
  CHECK_CODE(etcdr_barrier_with_count_create(c1, meet, 2, NULL, &m1, &err), ETCDR_OK, err, "party 1");
  CHECK_CODE(etcdr_barrier_with_count_create(c2, meet, 2, NULL, &m2, &err), ETCDR_OK, err, "party 2");
  async_result mr;
  async_result_init(&mr);
  CHECK(etcdr_barrier_with_count_wait_async(m1, -1, NULL, on_done, &mr) == ETCDR_OK, "party 1 waits (async)");
  int64_t waiting = 0;
  int64_t give_up = now_ms() + 5000;
  while (waiting < 1 && now_ms() < give_up) {
    if (etcdr_barrier_with_count_waiting(m2, &waiting, &err) != ETCDR_OK) break;
    if (waiting < 1) sleep_ms(10);
  }
  CHECK(waiting == 1 && atomic_load(&mr.fired) == 0, "  ... one party waiting, not released (%lld)",
        (long long)waiting);
  CHECK_CODE(etcdr_barrier_with_count_wait(m2, 5000, &err), ETCDR_OK, err, "party 2 arrives: both are released");
  CHECK(wait_flag(&mr.fired, 5000) && mr.code == ETCDR_OK, "  ... party 1 too (%s)", etcdr_code_name(mr.code));
  etcdr_barrier_with_count_destroy(m1);
  etcdr_barrier_with_count_destroy(m2);

  /* Enter together, leave together. */
  const char* phase = name_of("phase");
  etcdr_double_barrier *d1 = NULL, *d2 = NULL;
  CHECK_CODE(etcdr_double_barrier_create(c1, phase, 2, NULL, &d1, &err), ETCDR_OK, err, "double barrier party 1");
  CHECK_CODE(etcdr_double_barrier_create(c2, phase, 2, NULL, &d2, &err), ETCDR_OK, err, "double barrier party 2");
  CHECK_CODE(etcdr_double_barrier_leave(d1, 1000, &err), ETCDR_FAILED_PRECONDITION, err, "leave before entering");
  async_result e1;
  async_result_init(&e1);
  CHECK(etcdr_double_barrier_enter_async(d1, -1, NULL, on_done, &e1) == ETCDR_OK, "party 1 enters (async)");
  sleep_ms(300);
  CHECK(atomic_load(&e1.fired) == 0, "  ... and waits for party 2");
  CHECK_CODE(etcdr_double_barrier_enter(d2, 5000, &err), ETCDR_OK, err, "party 2 enters: the round starts");
  CHECK(wait_flag(&e1.fired, 5000) && e1.code == ETCDR_OK, "  ... party 1 is in too (%s)", etcdr_code_name(e1.code));
  CHECK(etcdr_double_barrier_entered(d1) && etcdr_double_barrier_entered(d2), "  ... both entered");
  CHECK_CODE(etcdr_double_barrier_enter(d1, 1000, &err), ETCDR_FAILED_PRECONDITION, err, "entering twice");
  async_result l1;
  async_result_init(&l1);
  CHECK(etcdr_double_barrier_leave_async(d1, -1, NULL, on_done, &l1) == ETCDR_OK, "party 1 leaves (async)");
  sleep_ms(300);
  CHECK(atomic_load(&l1.fired) == 0, "  ... and waits for party 2 to leave");
  CHECK_CODE(etcdr_double_barrier_leave(d2, 5000, &err), ETCDR_OK, err, "party 2 leaves");
  CHECK(wait_flag(&l1.fired, 5000) && l1.code == ETCDR_OK, "  ... party 1's leave completes (%s)",
        etcdr_code_name(l1.code));
  etcdr_double_barrier_destroy(d1);
  etcdr_double_barrier_destroy(d2);
  /* The last party out deletes the round's ready key: soon after. */
  int64_t left = -1;
  for (int64_t end = now_ms() + 5000; now_ms() < end; sleep_ms(20)) {
    if ((left = count_keys(c1, phase)) == 0) break;
  }
  CHECK(left == 0, "the round left no key (%lld)", (long long)left);

  /* A cancelled entry withdraws the party: its key goes. */
  const char* lonely = name_of("lonely");
  char ln[192];
  snprintf(ln, sizeof ln, "%s", lonely);
  etcdr_double_barrier* d3 = NULL;
  CHECK_CODE(etcdr_double_barrier_create(c1, ln, 2, NULL, &d3, &err), ETCDR_OK, err, "a party of 2 alone");
  etcdr_call* call = NULL;
  CHECK_CODE(etcdr_call_create(&call, &err), ETCDR_OK, err, "a call handle");
  async_result e3;
  async_result_init(&e3);
  CHECK(etcdr_double_barrier_enter_async(d3, -1, call, on_done, &e3) == ETCDR_OK, "it enters (async)");
  int64_t parties = 0;
  for (int64_t end = now_ms() + 5000; now_ms() < end; sleep_ms(20)) {
    if ((parties = count_keys(c1, ln)) >= 1) break;
  }
  CHECK(parties == 1 && atomic_load(&e3.fired) == 0, "  ... its key is there and it waits");
  etcdr_call_cancel(call);
  CHECK(wait_flag(&e3.fired, 5000) && e3.code == ETCDR_CANCELLED, "  ... cancelled: CANCELLED (%s)",
        etcdr_code_name(e3.code));
  CHECK(count_keys(c1, ln) == 0 && !etcdr_double_barrier_entered(d3), "  ... and its key is gone");
  etcdr_call_destroy(call);
  etcdr_double_barrier_destroy(d3);
  etcdr_error_clear(&err);
}

/* --- caches ---------------------------------------------------------------------- */

#define MAX_EVENTS 16
typedef struct {
  pthread_mutex_t mu;
  int count;
  etcdr_cache_event_type types[MAX_EVENTS];
  char names[MAX_EVENTS][64];
  char values[MAX_EVENTS][64];   /* current's value, "" when none */
  char previous[MAX_EVENTS][64]; /* previous's value, "" when none */
  int library_thread;
  pthread_t caller;
} event_log;

static void event_log_init(event_log* log) {
  memset(log, 0, sizeof *log);
  pthread_mutex_init(&log->mu, NULL);
  log->caller = pthread_self();
  log->library_thread = 1;
}

static void copy_field(char* dst, const char* src, size_t len) {
  size_t n = len < 63 ? len : 63;
  if (src != NULL) memcpy(dst, src, n);
  dst[src != NULL ? n : 0] = '\0';
}

static void on_cache_event(void* user, const etcdr_cache_event* e) {
  event_log* log = (event_log*)user;
  pthread_mutex_lock(&log->mu);
  if (pthread_equal(pthread_self(), log->caller)) log->library_thread = 0;
  if (log->count < MAX_EVENTS) {
    int i = log->count++;
    log->types[i] = e->type;
    const etcdr_node* n = e->current != NULL ? e->current : e->previous;
    if (n != NULL) copy_field(log->names[i], n->name, n->name_len);
    if (e->current != NULL) copy_field(log->values[i], e->current->value, e->current->value_len);
    if (e->previous != NULL) copy_field(log->previous[i], e->previous->value, e->previous->value_len);
  }
  pthread_mutex_unlock(&log->mu);
}

/* Waits until the log has `n` events; the count seen. */
static int wait_events(event_log* log, int n, int64_t ms) {
  int64_t end = now_ms() + ms;
  for (;;) {
    pthread_mutex_lock(&log->mu);
    int c = log->count;
    pthread_mutex_unlock(&log->mu);
    if (c >= n || now_ms() >= end) return c;
    sleep_ms(5);
  }
}

static void put_str(etcdr_client* c, const char* key, const char* value) {
  etcdr_error err = ETCDR_ERROR_INIT;
  etcdr_code got = etcdr_put(c, key, strlen(key), value, strlen(value), 0, 5000, NULL, &err);
  CHECK(got == ETCDR_OK, "put %s=%s (%s)", key, value, etcdr_code_name(got));
  etcdr_error_clear(&err);
}

static void del_key(etcdr_client* c, const char* key) {
  etcdr_error err = ETCDR_ERROR_INIT;
  etcdr_code got = etcdr_delete(c, key, strlen(key), 0, 5000, NULL, &err);
  CHECK(got == ETCDR_OK, "delete %s (%s)", key, etcdr_code_name(got));
  etcdr_error_clear(&err);
}

static void test_node_cache(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  const char* key = name_of("config/limit");
  char key_copy[192];
  snprintf(key_copy, sizeof key_copy, "%s", key);
  etcdr_node_cache* cache = NULL;
  CHECK_CODE(etcdr_node_cache_create(c1, "", NULL, &cache, &err), ETCDR_INVALID_ARGUMENT, err, "an empty key");
  CHECK_CODE(etcdr_node_cache_create(c1, key_copy, NULL, &cache, &err), ETCDR_OK, err, "node cache");
  event_log log;
  event_log_init(&log);
  CHECK(etcdr_node_cache_on_change(cache, on_cache_event, &log) == ETCDR_OK, "on_change set before the start");
  CHECK_CODE(etcdr_node_cache_wait_initialized(cache, 5000, &err), ETCDR_OK, err, "started and initialized");
  CHECK(wait_events(&log, 1, 5000) == 1 && log.types[0] == ETCDR_CACHE_INITIALIZED && log.values[0][0] == '\0',
        "  ... one INITIALIZED event, no value: the key is absent");
  int found = -1;
  char* v = NULL;
  CHECK_CODE(etcdr_node_cache_get(cache, &found, &v, NULL, NULL, &err), ETCDR_OK, err, "get");
  CHECK(found == 0 && v == NULL, "  ... nothing");

  put_str(c2, key_copy, "10");
  CHECK(wait_events(&log, 2, 5000) == 2 && log.types[1] == ETCDR_CACHE_ADDED && strcmp(log.values[1], "10") == 0,
        "the callback hears the put: ADDED 10 (%d, %s)", log.types[1], log.values[1]);
  int64_t mod = 0;
  size_t n = 0;
  CHECK_CODE(etcdr_node_cache_get(cache, &found, &v, &n, &mod, &err), ETCDR_OK, err, "get");
  CHECK(found == 1 && v != NULL && strcmp(v, "10") == 0 && n == 2 && mod > 0, "  ... 10 at mod revision %lld",
        (long long)mod);
  etcdr_free(v);
  put_str(c2, key_copy, "20");
  CHECK(wait_events(&log, 3, 5000) == 3 && log.types[2] == ETCDR_CACHE_UPDATED && strcmp(log.values[2], "20") == 0 &&
            strcmp(log.previous[2], "10") == 0,
        "UPDATED 10 -> 20");
  del_key(c2, key_copy);
  CHECK(wait_events(&log, 4, 5000) == 4 && log.types[3] == ETCDR_CACHE_REMOVED && strcmp(log.previous[3], "20") == 0,
        "REMOVED (previous 20)");
  CHECK(log.library_thread, "events ran on library threads");
  etcdr_node_cache_destroy(cache);
  etcdr_error_clear(&err);
}

static void test_children_cache(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  const char* path = name_of("members");
  char p[192], ka[256], kb[256], deep[256];
  snprintf(p, sizeof p, "%s", path);
  snprintf(ka, sizeof ka, "%s/a", p);
  snprintf(kb, sizeof kb, "%s/b", p);
  snprintf(deep, sizeof deep, "%s/a/deeper", p);
  put_str(c2, ka, "1");

  etcdr_path_children_cache_options o;
  etcdr_path_children_cache_options_init(&o, sizeof o);
  o.start_mode = 9;
  etcdr_path_children_cache* cache = NULL;
  CHECK_CODE(etcdr_path_children_cache_create(c1, p, NULL, &o, &cache, &err), ETCDR_INVALID_ARGUMENT, err,
             "an unknown start mode");
  o.start_mode = ETCDR_CACHE_START_POST_INITIALIZED;
  o.page_size = -1;
  CHECK_CODE(etcdr_path_children_cache_create(c1, p, NULL, &o, &cache, &err), ETCDR_INVALID_ARGUMENT, err,
             "a negative page size");
  o.page_size = 0;
  CHECK_CODE(etcdr_path_children_cache_create(c1, p, NULL, &o, &cache, &err), ETCDR_OK, err, "children cache");
  event_log log;
  event_log_init(&log);
  CHECK(etcdr_path_children_cache_on_event(cache, on_cache_event, &log) == ETCDR_OK, "on_event set");
  CHECK_CODE(etcdr_path_children_cache_start(cache, &err), ETCDR_OK, err, "start");
  CHECK_CODE(etcdr_path_children_cache_wait_initialized(cache, 5000, &err), ETCDR_OK, err, "initialized");
  CHECK(wait_events(&log, 2, 5000) == 2 && log.types[0] == ETCDR_CACHE_ADDED && strcmp(log.names[0], "a") == 0 &&
            log.types[1] == ETCDR_CACHE_INITIALIZED,
        "the first read: ADDED a, then INITIALIZED");

  put_str(c2, kb, "2");
  CHECK(wait_events(&log, 3, 5000) == 3 && log.types[2] == ETCDR_CACHE_ADDED && strcmp(log.names[2], "b") == 0 &&
            strcmp(log.values[2], "2") == 0,
        "ADDED b=2");
  put_str(c2, deep, "x"); /* not a direct child: no event */
  put_str(c2, ka, "1.1");
  CHECK(wait_events(&log, 4, 5000) == 4 && log.types[3] == ETCDR_CACHE_UPDATED && strcmp(log.names[3], "a") == 0 &&
            strcmp(log.values[3], "1.1") == 0 && strcmp(log.previous[3], "1") == 0,
        "UPDATED a 1 -> 1.1 (the deeper key gave no event)");
  del_key(c2, kb);
  CHECK(wait_events(&log, 5, 5000) == 5 && log.types[4] == ETCDR_CACHE_REMOVED && strcmp(log.names[4], "b") == 0,
        "REMOVED b");

  etcdr_node_list* list = NULL;
  CHECK_CODE(etcdr_path_children_cache_list(cache, &list, &err), ETCDR_OK, err, "list");
  const etcdr_node* a = etcdr_node_list_at(list, 0);
  CHECK(etcdr_node_list_count(list) == 1 && a != NULL && a->name_len == 1 && a->name[0] == 'a' &&
            strcmp(a->value, "1.1") == 0 && etcdr_node_list_revision(list) > 0 && etcdr_node_list_at(list, 1) == NULL,
        "  ... one child: a = 1.1");
  etcdr_node_list_free(list);
  int found = -1;
  char* v = NULL;
  CHECK_CODE(etcdr_path_children_cache_get(cache, "a", &found, &v, NULL, NULL, &err), ETCDR_OK, err, "get a");
  CHECK(found == 1 && v != NULL && strcmp(v, "1.1") == 0, "  ... 1.1");
  etcdr_free(v);
  CHECK_CODE(etcdr_path_children_cache_get(cache, "b", &found, &v, NULL, NULL, &err), ETCDR_OK, err, "get b");
  CHECK(found == 0, "  ... gone");
  etcdr_path_children_cache_destroy(cache);
  etcdr_error_clear(&err);
}

/* --- watches ---------------------------------------------------------------------- */

typedef struct {
  pthread_mutex_t mu;
  int puts, deletes, ended;
  char last_value[64];
  char last_prev[64];
  int64_t last_revision;
  etcdr_code end_code;
} watch_log;

static void on_watch(void* user, const etcdr_error* status, const etcdr_watch_event* events, size_t count,
                     int64_t revision) {
  watch_log* log = (watch_log*)user;
  pthread_mutex_lock(&log->mu);
  if (status->code != ETCDR_OK) {
    log->ended = 1;
    log->end_code = status->code;
  }
  for (size_t i = 0; i < count; ++i) {
    if (events[i].type == ETCDR_WATCH_PUT) {
      ++log->puts;
      copy_field(log->last_value, events[i].kv->value, events[i].kv->value_len);
    } else {
      ++log->deletes;
    }
    if (events[i].prev != NULL) copy_field(log->last_prev, events[i].prev->value, events[i].prev->value_len);
  }
  if (count > 0) log->last_revision = revision;
  pthread_mutex_unlock(&log->mu);
}

static int watch_seen(watch_log* log, int puts, int deletes, int64_t ms) {
  int64_t end = now_ms() + ms;
  for (;;) {
    pthread_mutex_lock(&log->mu);
    int ok = log->puts >= puts && log->deletes >= deletes;
    pthread_mutex_unlock(&log->mu);
    if (ok || now_ms() >= end) return ok;
    sleep_ms(5);
  }
}

static void test_watch(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  char dir[192], key[256];
  snprintf(dir, sizeof dir, "%s/", name_of("watched"));
  snprintf(key, sizeof key, "%sk", dir);
  watch_log log;
  memset(&log, 0, sizeof log);
  pthread_mutex_init(&log.mu, NULL);
  etcdr_watch* w = NULL;
  CHECK_CODE(etcdr_watch_create(c1, "", 0, NULL, on_watch, &log, &w, &err), ETCDR_INVALID_ARGUMENT, err,
             "an empty key without prefix");
  CHECK_CODE(etcdr_watch_create(c1, dir, strlen(dir), NULL, NULL, &log, &w, &err), ETCDR_INVALID_ARGUMENT, err,
             "no callback");
  etcdr_watch_options o;
  etcdr_watch_options_init(&o, sizeof o);
  o.prefix = 1;
  o.prev_kv = 1;
  CHECK_CODE(etcdr_watch_create(c1, dir, strlen(dir), &o, on_watch, &log, &w, &err), ETCDR_OK, err, "prefix watch");
  CHECK_CODE(etcdr_watch_wait_created(w, 5000, &err), ETCDR_OK, err, "  ... confirmed by etcd");
  put_str(c2, key, "v1");
  put_str(c2, key, "v2");
  CHECK(watch_seen(&log, 2, 0, 5000) && strcmp(log.last_value, "v2") == 0 && strcmp(log.last_prev, "v1") == 0,
        "two PUT events, the last v2 with previous v1");
  del_key(c2, key);
  CHECK(watch_seen(&log, 2, 1, 5000) && log.last_revision > 0, "a DELETE event (revision %lld)",
        (long long)log.last_revision);
  etcdr_watch_destroy(w);
  int puts = log.puts;
  put_str(c2, key, "after");
  sleep_ms(300);
  CHECK(log.puts == puts && !log.ended, "after destroy the callback runs no more");
  etcdr_watch_destroy(NULL);
  etcdr_error_clear(&err);
}

/* --- transient keys ------------------------------------------------------------ */

static void on_restored(void* user) {
  async_result* r = (async_result*)user;
  atomic_store(&r->fired, 1);
}

static void test_transient(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  char key[192];
  snprintf(key, sizeof key, "%s", name_of("workers/w7"));
  etcdr_transient *mine = NULL, *theirs = NULL;
  CHECK_CODE(etcdr_transient_create(c1, key, NULL, 4, NULL, &mine, &err), ETCDR_INVALID_ARGUMENT, err,
             "a NULL value with a length");
  CHECK_CODE(etcdr_transient_create(c1, key, "job-1", 5, NULL, &mine, &err), ETCDR_OK, err, "transient key");
  CHECK_CODE(etcdr_transient_create(c2, key, "other", 5, NULL, &theirs, &err), ETCDR_OK, err, "another owner's");
  char* v = NULL;
  CHECK_CODE(etcdr_get(c2, key, strlen(key), 5000, &v, NULL, NULL, &err), ETCDR_NOT_FOUND, err,
             "creating the handle wrote nothing");
  CHECK_CODE(etcdr_transient_create_key(mine, 5000, &err), ETCDR_OK, err, "create the key");
  CHECK(etcdr_transient_is_held(mine) && etcdr_transient_create_revision(mine) > 0, "  ... held, created at %lld",
        (long long)etcdr_transient_create_revision(mine));
  CHECK_CODE(etcdr_transient_create_key(theirs, 5000, &err), ETCDR_ALREADY_EXISTS, err,
             "the other owner is refused");
  CHECK_CODE(etcdr_transient_set_value(mine, "job-2", 5, 5000, &err), ETCDR_OK, err, "set the value");
  CHECK_CODE(etcdr_get(c2, key, strlen(key), 5000, &v, NULL, NULL, &err), ETCDR_OK, err, "get");
  CHECK(v != NULL && strcmp(v, "job-2") == 0, "  ... job-2");
  etcdr_free(v);
  v = NULL;

  /* Loss: an operator deletes it; the next write notices, on_lost fires,
   * and the key heals with the current value. */
  async_result lost, back;
  async_result_init(&lost);
  async_result_init(&back);
  CHECK(etcdr_transient_on_lost(mine, on_lost, &lost) == ETCDR_OK, "on_lost set");
  CHECK(etcdr_transient_on_restored(mine, on_restored, &back) == ETCDR_OK, "on_restored set");
  del_key(c2, key);
  CHECK_CODE(etcdr_transient_set_value(mine, "job-3", 5, 5000, &err), ETCDR_ABORTED, err,
             "set_value after the delete: the key is not ours");
  CHECK(err.reason == ETCDR_REASON_HOLD_LOST, "  ... HOLD_LOST");
  CHECK(wait_flag(&lost.fired, 5000) && lost.reason == ETCDR_REASON_HOLD_LOST, "on_lost fires (%s)",
        etcdr_reason_name(lost.reason));
  CHECK(wait_flag(&back.fired, 10000), "on_restored fires: the key healed");
  CHECK_CODE(etcdr_get(c2, key, strlen(key), 5000, &v, NULL, NULL, &err), ETCDR_OK, err, "get");
  CHECK(v != NULL && strcmp(v, "job-3") == 0, "  ... with the current value, job-3");
  etcdr_free(v);
  v = NULL;

  /* Destroying the handle deletes the key. */
  etcdr_transient_destroy(mine);
  int64_t give_up = now_ms() + 5000;
  etcdr_code got = ETCDR_OK;
  while (now_ms() < give_up) {
    got = etcdr_get(c2, key, strlen(key), 5000, &v, NULL, NULL, &err);
    etcdr_free(v);
    v = NULL;
    if (got == ETCDR_NOT_FOUND) break;
    sleep_ms(10);
  }
  CHECK(got == ETCDR_NOT_FOUND, "destroy deleted the key (%s)", etcdr_code_name(got));
  int was_ours = -1;
  CHECK_CODE(etcdr_transient_create_key(theirs, 5000, &err), ETCDR_OK, err, "the other owner creates it now");
  CHECK_CODE(etcdr_transient_release(theirs, 5000, &was_ours, &err), ETCDR_OK, err, "release");
  CHECK(was_ours == 1, "  ... it was ours");
  CHECK_CODE(etcdr_get(c2, key, strlen(key), 5000, &v, NULL, NULL, &err), ETCDR_NOT_FOUND, err, "  ... and is gone");
  CHECK_CODE(etcdr_transient_create_key(theirs, 5000, &err), ETCDR_FAILED_PRECONDITION, err,
             "a released handle is closed");
  CHECK(err.reason == ETCDR_REASON_CLOSED, "  ... reason CLOSED");
  etcdr_transient_destroy(theirs);
  etcdr_error_clear(&err);
}

/* --- cancellation ------------------------------------------------------------------- */

static void test_cancel(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  const char* name = name_of("cancel");
  char n[192];
  snprintf(n, sizeof n, "%s", name);
  etcdr_mutex *holder = NULL, *waiter = NULL, *third = NULL;
  CHECK_CODE(etcdr_mutex_create(c1, n, NULL, &holder, &err), ETCDR_OK, err, "holder");
  CHECK_CODE(etcdr_mutex_create(c2, n, NULL, &waiter, &err), ETCDR_OK, err, "waiter");
  CHECK_CODE(etcdr_mutex_acquire(holder, 5000, NULL, &err), ETCDR_OK, err, "holder acquires");
  CHECK_CODE(etcdr_call_create(NULL, &err), ETCDR_INVALID_ARGUMENT, err, "call_create(NULL)");
  etcdr_call* call = NULL;
  CHECK_CODE(etcdr_call_create(&call, &err), ETCDR_OK, err, "a call handle");
  async_result ar;
  async_result_init(&ar);
  CHECK(etcdr_mutex_acquire_async_cancellable(waiter, -1, call, on_token, &ar) == ETCDR_OK,
        "waiter acquire_async_cancellable");
  int64_t give_up = now_ms() + 5000;
  while (count_keys(c1, n) < 2 && now_ms() < give_up) sleep_ms(10);
  CHECK(count_keys(c1, n) == 2 && atomic_load(&ar.fired) == 0, "  ... its key is in line behind the holder's");
  etcdr_call_cancel(call);
  etcdr_call_cancel(call);
  CHECK(wait_flag(&ar.fired, 5000) && ar.code == ETCDR_CANCELLED, "cancel: the callback runs with CANCELLED (%s)",
        etcdr_code_name(ar.code));
  CHECK(count_keys(c1, n) == 1, "  ... and the waiter's key is gone before it ran (keys: %lld)",
        (long long)count_keys(c1, n));
  etcdr_call_destroy(call);
  CHECK_CODE(etcdr_mutex_release(holder, &err), ETCDR_OK, err, "holder releases");
  CHECK_CODE(etcdr_mutex_create(c1, n, NULL, &third, &err), ETCDR_OK, err, "a third handle");
  int got = 0;
  CHECK_CODE(etcdr_mutex_try_acquire(third, &got, NULL, &err), ETCDR_OK, err, "try_acquire");
  CHECK(got == 1, "  ... the lock is free: the cancelled waiter left nothing behind");
  CHECK_CODE(etcdr_mutex_release(third, &err), ETCDR_OK, err, "release");

  /* A call destroyed without cancelling: the acquire goes on. */
  CHECK_CODE(etcdr_mutex_acquire(holder, 5000, NULL, &err), ETCDR_OK, err, "holder acquires again");
  CHECK_CODE(etcdr_call_create(&call, &err), ETCDR_OK, err, "another call handle");
  async_result on;
  async_result_init(&on);
  CHECK(etcdr_mutex_acquire_async_cancellable(waiter, -1, call, on_token, &on) == ETCDR_OK, "waiter queues again");
  etcdr_call_destroy(call);
  CHECK_CODE(etcdr_mutex_release(holder, &err), ETCDR_OK, err, "holder releases");
  CHECK(wait_flag(&on.fired, 5000) && on.code == ETCDR_OK, "  ... the waiter gets it (%s)", etcdr_code_name(on.code));
  CHECK_CODE(etcdr_mutex_release(waiter, &err), ETCDR_OK, err, "waiter releases");

  /* The other cancellable calls: a semaphore acquire and a queue pop. */
  etcdr_semaphore* sem = NULL;
  CHECK_CODE(etcdr_semaphore_create(c1, name_of("cancel-sem"), 1, NULL, &sem, &err), ETCDR_OK, err, "semaphore");
  etcdr_permit* p = NULL;
  CHECK_CODE(etcdr_semaphore_acquire(sem, 5000, &p, &err), ETCDR_OK, err, "the one permit");
  CHECK_CODE(etcdr_call_create(&call, &err), ETCDR_OK, err, "a call handle");
  async_result sr;
  async_result_init(&sr);
  CHECK(etcdr_semaphore_acquire_async_cancellable(sem, -1, call, NULL, &sr) == ETCDR_INVALID_ARGUMENT,
        "no callback is refused");
  etcdr_queue* q = NULL;
  CHECK_CODE(etcdr_queue_create(c2, name_of("cancel-q"), NULL, &q, &err), ETCDR_OK, err, "queue");
  async_result qr;
  async_result_init(&qr);
  CHECK(etcdr_queue_pop_async_cancellable(q, -1, call, on_value, &qr) == ETCDR_OK, "a pop waits");
  etcdr_call_cancel(call);
  CHECK(wait_flag(&qr.fired, 5000) && qr.code == ETCDR_CANCELLED, "  ... cancelled (%s)", etcdr_code_name(qr.code));
  etcdr_call_destroy(call);
  etcdr_permit_destroy(p);
  etcdr_semaphore_destroy(sem);
  etcdr_queue_destroy(q);
  etcdr_mutex_destroy(holder);
  etcdr_mutex_destroy(waiter);
  etcdr_mutex_destroy(third);
  etcdr_error_clear(&err);
}

/* --- connection state, recipe errors, loss ------------------------------------------ */

typedef struct {
  atomic_int suspended;
  atomic_int calls;
} state_log;

static void on_state(void* user, etcdr_state state) {
  state_log* log = (state_log*)user;
  atomic_fetch_add(&log->calls, 1);
  if (state == ETCDR_STATE_SUSPENDED) atomic_store(&log->suspended, 1);
}

typedef struct {
  atomic_int count;
  etcdr_code code;
} error_log;

static void on_recipe_error(void* user, const etcdr_error* e) {
  error_log* log = (error_log*)user;
  log->code = e->code;
  atomic_fetch_add(&log->count, 1);
}

static void test_listeners(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  CHECK(strcmp(etcdr_state_name(ETCDR_STATE_SUSPENDED), "SUSPENDED") == 0 && strcmp(etcdr_state_name(42), "?") == 0,
        "state names");
  CHECK(etcdr_client_state(c1) == ETCDR_STATE_CONNECTED, "a working client is CONNECTED");
  CHECK(etcdr_client_on_state_change(NULL, on_state, NULL) == ETCDR_INVALID_ARGUMENT, "on_state_change(NULL)");

  /* A client whose endpoint refuses connections: its calls fail, it is
   * SUSPENDED, and the callback hears so. */
  etcdr_client* dead = make_client("127.0.0.1:1");
  state_log sl;
  atomic_init(&sl.suspended, 0);
  atomic_init(&sl.calls, 0);
  CHECK(etcdr_client_on_state_change(dead, on_state, &sl) == ETCDR_OK, "on_state_change on an unreachable client");
  CHECK(etcdr_client_ping(dead, 1000, &err) != ETCDR_OK, "  ... its ping fails (%s)", etcdr_code_name(err.code));
  CHECK(wait_flag(&sl.suspended, 5000), "  ... the callback hears SUSPENDED");
  CHECK(etcdr_client_state(dead) == ETCDR_STATE_SUSPENDED, "  ... and the state is SUSPENDED");

  /* A recipe over it records its failed attempts: the error callback. */
  etcdr_mutex* m = NULL;
  CHECK_CODE(etcdr_mutex_create(dead, name_of("unreachable"), NULL, &m, &err), ETCDR_OK, err, "a mutex over it");
  etcdr_recipe* r = etcdr_mutex_recipe(m);
  CHECK(r != NULL && etcdr_mutex_recipe(NULL) == NULL, "its recipe");
  error_log el;
  atomic_init(&el.count, 0);
  el.code = ETCDR_OK;
  CHECK(etcdr_recipe_on_error(r, on_recipe_error, &el) == ETCDR_OK, "on_error set");
  CHECK(etcdr_recipe_last_error(r, &err) == ETCDR_OK && err.code == ETCDR_OK, "  ... no error recorded yet");
  CHECK_CODE(etcdr_mutex_acquire(m, 1500, NULL, &err), ETCDR_DEADLINE_EXCEEDED, err, "acquire for 1.5 s");
  CHECK(wait_flag(&el.count, 5000) && el.code != ETCDR_OK, "  ... the error callback ran (%s)",
        etcdr_code_name(el.code));
  CHECK(etcdr_recipe_error_count(r) > 0, "  ... %zu errors recorded", etcdr_recipe_error_count(r));
  etcdr_code last = etcdr_recipe_last_error(r, &err);
  CHECK(last != ETCDR_OK && err.code == last && err.message != NULL, "  ... the last: %s (%s)", etcdr_code_name(last),
        err.message ? err.message : "");
  etcdr_recipe_clear_errors(r);
  CHECK(etcdr_recipe_error_count(r) == 0, "  ... cleared");
  CHECK(etcdr_recipe_on_error(r, NULL, NULL) == ETCDR_OK, "on_error removed");
  CHECK(etcdr_recipe_on_error(NULL, on_recipe_error, &el) == ETCDR_INVALID_ARGUMENT &&
            etcdr_recipe_on_state_change(NULL, on_state, &sl) == ETCDR_INVALID_ARGUMENT &&
            etcdr_recipe_error_count(NULL) == 0,
        "the recipe functions refuse NULL");
  etcdr_mutex_destroy(m);
  etcdr_client_destroy(dead);

  /* Every recipe handle has its recipe: discovery and its provider too. */
  etcdr_discovery* d = NULL;
  CHECK_CODE(etcdr_discovery_create(c1, NULL, &d, &err), ETCDR_OK, err, "discovery");
  etcdr_provider* pv = NULL;
  CHECK_CODE(etcdr_provider_create(d, "api", NULL, &pv, &err), ETCDR_OK, err, "provider");
  CHECK(etcdr_discovery_recipe(d) != NULL && etcdr_provider_recipe(pv) != NULL &&
            etcdr_recipe_error_count(etcdr_provider_recipe(pv)) == 0,
        "  ... both have their recipe, with no error recorded");
  etcdr_provider_destroy(pv);
  etcdr_discovery_destroy(d);

  /* Loss callbacks: a permit whose key an operator deletes. */
  const char* name = name_of("lossy-sem");
  char n[192];
  snprintf(n, sizeof n, "%s", name);
  etcdr_semaphore* sem = NULL;
  CHECK_CODE(etcdr_semaphore_create(c1, n, 2, NULL, &sem, &err), ETCDR_OK, err, "semaphore");
  etcdr_recipe* sr = etcdr_semaphore_recipe(sem);
  CHECK(etcdr_recipe_state(sr) == ETCDR_STATE_CONNECTED, "its recipe is CONNECTED (%s)",
        etcdr_state_name(etcdr_recipe_state(sr)));
  etcdr_permit* p = NULL;
  CHECK_CODE(etcdr_semaphore_acquire(sem, 5000, &p, &err), ETCDR_OK, err, "a permit");
  async_result lost;
  async_result_init(&lost);
  CHECK(etcdr_permit_on_lost(p, on_lost, &lost) == ETCDR_OK, "permit on_lost set");
  CHECK(etcdr_permit_on_lost(NULL, on_lost, &lost) == ETCDR_INVALID_ARGUMENT, "permit on_lost(NULL)");
  char holders[256];
  snprintf(holders, sizeof holders, "%s/", n);
  CHECK(count_and_delete(c2, holders) >= 1, "an operator deletes the semaphore's keys");
  CHECK(wait_flag(&lost.fired, 5000) && lost.reason == ETCDR_REASON_HOLD_LOST, "the permit's on_lost fires (%s)",
        etcdr_reason_name(lost.reason));
  CHECK(!etcdr_permit_is_held(p), "  ... and it is no longer held");
  etcdr_permit_destroy(p);
  etcdr_semaphore_destroy(sem);
  etcdr_error_clear(&err);
}

static char** only;
static int only_count;
static int selected(const char* test) {
  for (int i = 0; i < only_count; ++i) {
    if (strcmp(only[i], test) == 0) return 1;
  }
  return only_count == 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s [TEST...] ENDPOINT\n", argv[0]);
    return 2;
  }
  const char* endpoint = argv[argc - 1];
  only = argv + 1;
  only_count = argc - 2;
  snprintf(prefix, sizeof prefix, "/c_api_catalog_test/%ld-%lld", (long)getpid(), (long long)now_ms());

  etcdr_client* c1 = make_client(endpoint);
  etcdr_client* c2 = make_client(endpoint);
  if (selected("rwlock")) test_rwlock(c1, c2);
  if (selected("priority_queue")) test_priority_queue(c1, c2);
  if (selected("barriers")) test_barriers(c1, c2);
  if (selected("node_cache")) test_node_cache(c1, c2);
  if (selected("children_cache")) test_children_cache(c1, c2);
  if (selected("watch")) test_watch(c1, c2);
  if (selected("transient")) test_transient(c1, c2);
  if (selected("cancel")) test_cancel(c1, c2);
  if (selected("listeners")) test_listeners(c1, c2);
  count_and_delete(c1, prefix);
  etcdr_client_destroy(c1);
  etcdr_client_destroy(c2);
  printf("%d failed\n", failures);
  return failures > 100 ? 100 : failures;
}
