/* What the C API's test programs share: PASS/FAIL checks that count
 * failures, a monotonic clock, waits with deadlines, names under the run's
 * own prefix, clients. Each program includes it once (its definitions are
 * static). */
#ifndef ETCD_RECIPES_C_TEST_SUPPORT_H
#define ETCD_RECIPES_C_TEST_SUPPORT_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "etcd_recipes.h"

static int failures = 0;
static char prefix[128];

#define CHECK(cond, ...)                                \
  do {                                                  \
    if (cond) {                                         \
      printf("PASS: ");                                 \
    } else {                                            \
      printf("FAIL (%s:%d, %s): ", __FILE__, __LINE__, #cond); \
      ++failures;                                       \
    }                                                   \
    printf(__VA_ARGS__);                                \
    printf("\n");                                       \
    fflush(stdout);                                     \
  } while (0)

/* A check on a call's code that shows the error when it is not the one expected. */
#define CHECK_CODE(call, expected, err, what)                                                              \
  do {                                                                                                     \
    etcdr_code got_ = (call);                                                                              \
    CHECK(got_ == (expected), "%s: %s (%s%s%s)", what, etcdr_code_name(got_), etcdr_reason_name((err).reason), \
          (err).message ? ": " : "", (err).message ? (err).message : "");                                  \
  } while (0)

static inline int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void sleep_ms(int64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Polls `flag` until it is non-zero or `ms` passed; its last value. */
static inline int wait_flag(atomic_int* flag, int64_t ms) {
  int64_t end = now_ms() + ms;
  while (atomic_load(flag) == 0 && now_ms() < end) sleep_ms(5);
  return atomic_load(flag);
}

/* Sets `prefix` to /TEST/<pid>-<ns>, a name no other run uses, and returns it. */
static inline const char* set_prefix(const char* test) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  snprintf(prefix, sizeof prefix, "/%s/%ld-%ld", test, (long)getpid(), (long)ts.tv_nsec);
  return prefix;
}

static inline const char* name_of(const char* what) {
  static char buf[8][192];
  static int next = 0;
  char* b = buf[next++ % 8];
  snprintf(b, sizeof buf[0], "%s/%s", prefix, what);
  return b;
}

static inline etcdr_client* make_client(const char* endpoint) {
  etcdr_client_options o;
  etcdr_client_options_init(&o, sizeof o);
  o.endpoints = endpoint;
  etcdr_client* c = NULL;
  etcdr_error err = ETCDR_ERROR_INIT;
  if (etcdr_client_create(&o, &c, &err) != ETCDR_OK) {
    fprintf(stderr, "etcdr_client_create: %s\n", err.message ? err.message : "?");
    exit(2);
  }
  etcdr_error_clear(&err);
  return c;
}

/* Keys under `p` (deletes them: for prefixes the test owns). */
static inline int64_t count_and_delete(etcdr_client* c, const char* p) {
  etcdr_error err = ETCDR_ERROR_INIT;
  int64_t deleted = -1;
  if (etcdr_delete(c, p, strlen(p), 1, 5000, &deleted, &err) != ETCDR_OK) deleted = -1;
  etcdr_error_clear(&err);
  return deleted;
}

#endif /* ETCD_RECIPES_C_TEST_SUPPORT_H */
