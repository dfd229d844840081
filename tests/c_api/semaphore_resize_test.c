/* The C API's semaphore resize against a real etcd, from C:
 * c_api_semaphore_resize_test ENDPOINT (tests/c_api/with_etcd.sh starts
 * the etcd). Each check prints PASS or FAIL; the exit status is the number
 * of failures. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "etcd_recipes.h"

#include "c_test_support.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s ENDPOINT\n", argv[0]);
    return 2;
  }
  const char* name = set_prefix("c_api_semaphore_resize");

  etcdr_client_options o;
  etcdr_client_options_init(&o, sizeof o);
  o.endpoints = argv[argc - 1];
  etcdr_client* c = NULL;
  etcdr_error err = ETCDR_ERROR_INIT;
  if (etcdr_client_create(&o, &c, &err) != ETCDR_OK) {
    fprintf(stderr, "etcdr_client_create: %s\n", err.message ? err.message : "?");
    return 2;
  }

  etcdr_semaphore *sem = NULL, *late = NULL;
  CHECK(etcdr_semaphore_create(c, name, 1, NULL, &sem, &err) == ETCDR_OK, "a semaphore of 1");
  CHECK(etcdr_semaphore_resize(NULL, 2, -1, &err) == ETCDR_INVALID_ARGUMENT, "resize(NULL)");
  CHECK(etcdr_semaphore_resize(sem, 0, -1, &err) == ETCDR_INVALID_ARGUMENT && err.reason == ETCDR_REASON_BAD_ARGUMENT,
        "resize to 0: invalid argument");

  etcdr_permit *a = NULL, *b = NULL;
  CHECK(etcdr_semaphore_try_acquire(sem, &a, &err) == ETCDR_OK && a != NULL, "the one permit");
  CHECK(etcdr_semaphore_try_acquire(sem, &b, &err) == ETCDR_OK && b == NULL, "  ... and no second");
  CHECK(etcdr_semaphore_resize(sem, 2, 5000, &err) == ETCDR_OK, "resize to 2");
  CHECK(etcdr_semaphore_try_acquire(sem, &b, &err) == ETCDR_OK && b != NULL, "  ... a second permit now");

  /* A handle made with the old count adopts the new one. */
  CHECK(etcdr_semaphore_create(c, name, 1, NULL, &late, &err) == ETCDR_OK, "a new handle asking for 1");
  int32_t available = -1;
  CHECK(etcdr_semaphore_available(late, &available, &err) == ETCDR_OK && available == 0,
        "  ... sees 0 free of the 2 (%d)", (int)available);
  CHECK(etcdr_permit_release(a, &err) == ETCDR_OK, "one releases");
  etcdr_permit* d = NULL;
  CHECK(etcdr_semaphore_acquire(late, 5000, &d, &err) == ETCDR_OK && d != NULL, "  ... the new handle gets it");

  etcdr_permit_destroy(a);
  etcdr_permit_destroy(b);
  etcdr_permit_destroy(d);
  etcdr_semaphore_destroy(late);
  etcdr_semaphore_destroy(sem);
  etcdr_client_destroy(c);
  etcdr_error_clear(&err);
  printf("%d failure(s)\n", failures);
  return failures;
}
