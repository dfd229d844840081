/* The C API of KeyspaceView against a real etcd: view_test ENDPOINT
 * (tests/c_api/with_etcd.sh starts the etcd). The first read's keys arrive
 * as ADDED events then INITIALIZED, each change with its old and new value,
 * off the caller's thread, never after destroy; bad input is refused before
 * any I/O. Each check prints PASS or FAIL; the exit status is the number of
 * failures (capped). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etcd_recipes.h"

#include "c_test_support.h"

/* What the callback saw, under a lock. */
typedef struct {
  pthread_mutex_t mu;
  int added, updated, removed, initialized;
  char last_value[64];
  char last_prev[64];
  int64_t last_revision;
  int out_of_order;
  pthread_t caller;
  int on_caller_thread;
} view_seen;

static void on_view_event(void* user, const etcdr_view_event* e) {
  view_seen* s = (view_seen*)user;
  pthread_mutex_lock(&s->mu);
  if (pthread_equal(pthread_self(), s->caller)) s->on_caller_thread = 1;
  if (e->revision < s->last_revision) s->out_of_order = 1;
  s->last_revision = e->revision;
  switch (e->type) {
    case ETCDR_VIEW_ADDED: ++s->added; break;
    case ETCDR_VIEW_UPDATED: ++s->updated; break;
    case ETCDR_VIEW_REMOVED: ++s->removed; break;
    case ETCDR_VIEW_INITIALIZED: ++s->initialized; break;
    default: break;
  }
  if (e->has_value) snprintf(s->last_value, sizeof s->last_value, "%.*s", (int)e->value_len, e->value);
  if (e->has_prev_value) snprintf(s->last_prev, sizeof s->last_prev, "%.*s", (int)e->prev_value_len, e->prev_value);
  pthread_mutex_unlock(&s->mu);
}

/* Waits until `*counter` reaches `n` (under the lock) or 10 s passed. */
static int wait_count(view_seen* s, const int* counter, int n) {
  int64_t end = now_ms() + 10000;
  for (;;) {
    pthread_mutex_lock(&s->mu);
    int v = *counter;
    pthread_mutex_unlock(&s->mu);
    if (v >= n) return 1;
    if (now_ms() > end) return 0;
    struct timespec ts = {0, 5000000L};
    nanosleep(&ts, NULL);
  }
}

static void put(etcdr_client* c, const char* key, const char* value) {
  etcdr_error err = ETCDR_ERROR_INIT;
  etcdr_code rc = etcdr_put(c, key, strlen(key), value, strlen(value), 0, 5000, NULL, &err);
  CHECK(rc == ETCDR_OK, "put %s", key);
  etcdr_error_clear(&err);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s ENDPOINT\n", argv[0]);
    return 2;
  }
  etcdr_client_options co;
  etcdr_client_options_init(&co, sizeof co);
  co.endpoints = argv[1];
  etcdr_client* c = NULL;
  etcdr_error err = ETCDR_ERROR_INIT;
  if (etcdr_client_create(&co, &c, &err) != ETCDR_OK) return 2;
  char p[128];
  snprintf(p, sizeof p, "/view_test/%lld/", (long long)now_ms());
  char a[160], b[160];
  snprintf(a, sizeof a, "%sa", p);
  snprintf(b, sizeof b, "%sb", p);
  put(c, a, "1");
  put(c, b, "1");

  /* Bad input: refused before any I/O. */
  etcdr_view* v = NULL;
  CHECK(etcdr_view_create(c, "", NULL, NULL, NULL, NULL, &v, &err) == ETCDR_INVALID_ARGUMENT && v == NULL,
        "an empty key is refused");
  etcdr_view_options o;
  etcdr_view_options_init(&o, sizeof o);
  o.start = ETCDR_VIEW_START_FROM_REVISION; /* without a start_revision */
  CHECK(etcdr_view_create(c, p, &o, NULL, NULL, NULL, &v, &err) == ETCDR_INVALID_ARGUMENT && v == NULL,
        "from_revision without a revision is refused: %s", err.message ? err.message : "");
  o.start = 7;
  CHECK(etcdr_view_create(c, p, &o, NULL, NULL, NULL, &v, &err) == ETCDR_INVALID_ARGUMENT,
        "an unknown start is refused");
  etcdr_error_clear(&err);

  view_seen s;
  memset(&s, 0, sizeof s);
  pthread_mutex_init(&s.mu, NULL);
  s.caller = pthread_self();
  etcdr_view_options_init(&o, sizeof o);
  o.start = ETCDR_VIEW_START_WITH_SNAPSHOT;
  etcdr_code rc = etcdr_view_create(c, p, &o, NULL, on_view_event, &s, &v, &err);
  CHECK(rc == ETCDR_OK && v != NULL, "etcdr_view_create");
  CHECK(etcdr_view_wait_initialized(v, 10000, &err) == ETCDR_OK, "the first read");
  CHECK(wait_count(&s, &s.initialized, 1), "INITIALIZED after the first read");
  pthread_mutex_lock(&s.mu);
  CHECK(s.added == 2, "the first read's keys as ADDED events (%d)", s.added);
  pthread_mutex_unlock(&s.mu);
  CHECK(etcdr_view_size(v) == 2 && etcdr_view_revision(v) > 0, "size and revision");

  put(c, a, "2");
  CHECK(wait_count(&s, &s.updated, 1), "an UPDATED event");
  pthread_mutex_lock(&s.mu);
  CHECK(strcmp(s.last_value, "2") == 0 && strcmp(s.last_prev, "1") == 0, "with the old and new value");
  pthread_mutex_unlock(&s.mu);
  char* value = NULL;
  size_t len = 0;
  CHECK(etcdr_view_get(v, a, strlen(a), &value, &len, &err) == ETCDR_OK && len == 1 && value[0] == '2',
        "etcdr_view_get: the value now, without I/O");
  etcdr_free(value);
  CHECK(etcdr_view_get(v, "/nope", 5, &value, &len, &err) == ETCDR_NOT_FOUND && value == NULL,
        "a key it does not hold is NOT_FOUND");
  etcdr_error_clear(&err);
  etcdr_error del_err = ETCDR_ERROR_INIT;
  CHECK(etcdr_delete(c, b, strlen(b), 0, 5000, NULL, &del_err) == ETCDR_OK, "delete");
  CHECK(wait_count(&s, &s.removed, 1), "a REMOVED event");
  etcdr_view_destroy(v);
  pthread_mutex_lock(&s.mu);
  const int seen_before = s.added + s.updated + s.removed;
  CHECK(!s.out_of_order, "events in revision order");
  CHECK(!s.on_caller_thread, "the callback ran on the client's threads");
  pthread_mutex_unlock(&s.mu);
  put(c, a, "3"); /* after destroy: never heard */
  struct timespec ts = {0, 300000000L};
  nanosleep(&ts, NULL);
  pthread_mutex_lock(&s.mu);
  CHECK(s.added + s.updated + s.removed == seen_before, "no callback after etcdr_view_destroy");
  pthread_mutex_unlock(&s.mu);

  etcdr_delete(c, p, strlen(p), 1, 5000, NULL, &del_err);
  etcdr_error_clear(&del_err);
  etcdr_client_destroy(c);
  printf("%d failed\n", failures);
  return failures > 100 ? 100 : failures;
}
