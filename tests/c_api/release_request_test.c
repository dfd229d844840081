/* The C API's cooperative release against a real etcd, from C:
 * c_api_release_request_test ENDPOINT (tests/c_api/with_etcd.sh starts the
 * etcd). Each check prints PASS or FAIL; the exit status is the number of
 * failures. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "etcd_recipes.h"

#include "c_test_support.h"

typedef struct {
  atomic_int fired;
  pthread_t thread;
} release_request_seen;

static void on_release_request(void* user) {
  release_request_seen* seen = (release_request_seen*)user;
  seen->thread = pthread_self();
  atomic_store(&seen->fired, 1);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s ENDPOINT\n", argv[0]);
    return 2;
  }
  const char* name = set_prefix("c_api_release_request");

  etcdr_client* c1 = make_client(argv[argc - 1]);
  etcdr_client* c2 = make_client(argv[argc - 1]);
  etcdr_error err = ETCDR_ERROR_INIT;

  CHECK(etcdr_mutex_request_release(NULL, -1, NULL, &err) == ETCDR_INVALID_ARGUMENT, "request_release(NULL)");
  etcdr_error_clear(&err);
  CHECK(etcdr_mutex_on_release_requested(NULL, on_release_request, NULL) == ETCDR_INVALID_ARGUMENT,
        "on_release_requested(NULL)");

  etcdr_mutex *holder = NULL, *asker = NULL;
  CHECK(etcdr_mutex_create(c1, name, NULL, &holder, &err) == ETCDR_OK, "holder's mutex");
  CHECK(etcdr_mutex_create(c2, name, NULL, &asker, &err) == ETCDR_OK, "asker's mutex on another client");

  int asked = -1;
  CHECK(etcdr_mutex_request_release(asker, 5000, &asked, &err) == ETCDR_OK && asked == 0,
        "asking while the name is free: asked 0 (%d)", asked);

  release_request_seen seen;
  memset(&seen, 0, sizeof seen);
  atomic_init(&seen.fired, 0);
  CHECK(etcdr_mutex_on_release_requested(holder, on_release_request, &seen) == ETCDR_OK, "callback set");
  int64_t token = 0;
  CHECK(etcdr_mutex_acquire(holder, 5000, &token, &err) == ETCDR_OK, "holder acquires");

  asked = -1;
  CHECK(etcdr_mutex_request_release(asker, 5000, &asked, &err) == ETCDR_OK && asked == 1,
        "asking while held: asked 1 (%d)", asked);
  CHECK(wait_flag(&seen.fired, 5000), "the holder's callback runs");
  CHECK(!pthread_equal(seen.thread, pthread_self()), "  ... on a library thread, not the caller's");
  CHECK(etcdr_mutex_is_held(holder) == 1, "  ... and the holder still holds (releasing is its choice)");

  /* The asker waits; the holder lets go when asked; the asker gets it. */
  CHECK(etcdr_mutex_release(holder, &err) == ETCDR_OK, "the holder releases");
  int64_t next = 0;
  CHECK(etcdr_mutex_acquire(asker, 5000, &next, &err) == ETCDR_OK && next > token,
        "the asker acquires with a larger token (%lld > %lld)", (long long)next, (long long)token);
  CHECK(etcdr_mutex_release(asker, &err) == ETCDR_OK, "the asker releases");

  /* A removed callback does not run. */
  atomic_store(&seen.fired, 0);
  CHECK(etcdr_mutex_on_release_requested(holder, NULL, NULL) == ETCDR_OK, "callback removed");
  CHECK(etcdr_mutex_acquire(holder, 5000, NULL, &err) == ETCDR_OK, "holder acquires again");
  CHECK(etcdr_mutex_request_release(asker, 5000, &asked, &err) == ETCDR_OK && asked == 1, "asked again");
  CHECK(!wait_flag(&seen.fired, 500), "  ... the removed callback does not run");
  CHECK(etcdr_mutex_release(holder, &err) == ETCDR_OK, "the holder releases");

  etcdr_mutex_destroy(holder);
  etcdr_mutex_destroy(asker);
  etcdr_client_destroy(c1);
  etcdr_client_destroy(c2);
  etcdr_error_clear(&err);
  printf("%d failure(s)\n", failures);
  return failures;
}
