/* The C API's multi-lock against a real etcd, from C:
 * c_api_multi_lock_test ENDPOINT (tests/c_api/with_etcd.sh starts the etcd).
 * Each check prints PASS or FAIL; the exit status is the number of failures. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "etcd_recipes.h"

#include "c_test_support.h"

static void on_flag(void* user) { atomic_store((atomic_int*)user, 1); }
static void on_lost_flag(void* user, const etcdr_error* why) {
  (void)why;
  atomic_store((atomic_int*)user, 1);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s ENDPOINT\n", argv[0]);
    return 2;
  }
  const char* p = set_prefix("c_api_multi_lock");
  char a[160], b[160], c[160], bad[160];
  snprintf(a, sizeof a, "%s/a", p);
  snprintf(b, sizeof b, "%s/b", p);
  snprintf(c, sizeof c, "%s/c", p);
  snprintf(bad, sizeof bad, "%s/a/sub", p);

  etcdr_client* c1 = make_client(argv[argc - 1]);
  etcdr_client* c2 = make_client(argv[argc - 1]);
  etcdr_error err = ETCDR_ERROR_INIT;

  /* Bad input: no names, a path prefix. */
  etcdr_multi_lock* none = NULL;
  CHECK(etcdr_multi_lock_create(c1, NULL, 0, NULL, &none, &err) == ETCDR_INVALID_ARGUMENT && none == NULL,
        "no names: invalid argument");
  etcdr_error_clear(&err);
  const char* prefixed[] = {a, bad};
  CHECK(etcdr_multi_lock_create(c1, prefixed, 2, NULL, &none, &err) == ETCDR_INVALID_ARGUMENT && none == NULL,
        "a path prefix of another name: invalid argument (%s)", err.message ? err.message : "");
  etcdr_error_clear(&err);

  /* {c, a, b} in one handle, {b, a} in another: they exclude each other. */
  const char* three[] = {c, a, b};
  const char* two[] = {b, a};
  etcdr_multi_lock* first = NULL;
  etcdr_multi_lock* second = NULL;
  CHECK(etcdr_multi_lock_create(c1, three, 3, NULL, &first, &err) == ETCDR_OK, "create three");
  CHECK(etcdr_multi_lock_create(c2, two, 2, NULL, &second, &err) == ETCDR_OK, "create two");
  CHECK(etcdr_multi_lock_acquire(first, 5000, &err) == ETCDR_OK, "acquire three");
  CHECK(etcdr_multi_lock_is_held(first) == 1, "held");
  int64_t ta = etcdr_multi_lock_token(first, a), tb = etcdr_multi_lock_token(first, b);
  CHECK(ta > 0 && tb > ta && etcdr_multi_lock_token(first, c) > tb, "one token per name, taken in order");
  CHECK(etcdr_multi_lock_token(first, "/not/one") == 0, "no token for another name");
  int acquired = 1;
  CHECK(etcdr_multi_lock_try_acquire(second, &acquired, &err) == ETCDR_OK && acquired == 0, "try: declined");
  CHECK(etcdr_multi_lock_acquire(second, 200, &err) == ETCDR_DEADLINE_EXCEEDED, "acquire: deadline exceeded");
  etcdr_error_clear(&err);
  CHECK(etcdr_multi_lock_release(first, &err) == ETCDR_OK, "release three");
  CHECK(etcdr_multi_lock_release(first, &err) == ETCDR_FAILED_PRECONDITION, "release again: nothing held");
  etcdr_error_clear(&err);
  CHECK(etcdr_multi_lock_try_acquire(second, &acquired, &err) == ETCDR_OK && acquired == 1, "try: taken");
  CHECK(etcdr_multi_lock_token(second, b) > tb, "tokens increase per name");
  CHECK(etcdr_multi_lock_release(second, &err) == ETCDR_OK, "release two");

  /* A request for one name asks the whole hold; a deleted key loses it. */
  atomic_int asked_flag, lost_flag;
  atomic_init(&asked_flag, 0);
  atomic_init(&lost_flag, 0);
  CHECK(etcdr_multi_lock_on_release_requested(NULL, on_flag, NULL) == ETCDR_INVALID_ARGUMENT,
        "on_release_requested(NULL)");
  CHECK(etcdr_multi_lock_on_lost(NULL, on_lost_flag, NULL) == ETCDR_INVALID_ARGUMENT, "on_lost(NULL)");
  CHECK(etcdr_multi_lock_on_release_requested(first, on_flag, &asked_flag) == ETCDR_OK, "request callback set");
  CHECK(etcdr_multi_lock_on_lost(first, on_lost_flag, &lost_flag) == ETCDR_OK, "loss callback set");
  CHECK(etcdr_multi_lock_acquire(first, 5000, &err) == ETCDR_OK, "acquire three again");
  CHECK(etcdr_multi_lock_release_requested(first) == 0, "not asked yet");
  etcdr_mutex* asker = NULL;
  CHECK(etcdr_mutex_create(c2, c, NULL, &asker, &err) == ETCDR_OK, "a mutex on the last name");
  int asked = 0;
  CHECK(etcdr_mutex_request_release(asker, 5000, &asked, &err) == ETCDR_OK && asked == 1, "ask its holder");
  CHECK(wait_flag(&asked_flag, 5000), "the multi-lock's request callback runs");
  CHECK(etcdr_multi_lock_release_requested(first) == 1 && etcdr_multi_lock_is_held(first) == 1,
        "  ... asked, and still held (releasing is its choice)");
  CHECK(etcdr_mutex_try_acquire(asker, &acquired, NULL, &err) == ETCDR_OK && acquired == 0, "  ... still excluding");
  char holder_key[200];
  snprintf(holder_key, sizeof holder_key, "%s/", b);
  int64_t gone = 0;
  CHECK(etcdr_delete(c2, holder_key, strlen(holder_key), 1, 5000, &gone, &err) == ETCDR_OK && gone == 1,
        "someone deletes the key of a name");
  CHECK(wait_flag(&lost_flag, 5000), "the multi-lock's loss callback runs");
  CHECK(etcdr_multi_lock_release(first, &err) == ETCDR_ABORTED && err.reason == ETCDR_REASON_HOLD_LOST,
        "release after the loss: hold lost");
  etcdr_error_clear(&err);
  etcdr_mutex_destroy(asker);

  etcdr_multi_lock_destroy(first);
  etcdr_multi_lock_destroy(second);
  etcdr_multi_lock_destroy(NULL);

  int64_t deleted = 0;
  (void)etcdr_delete(c1, p, strlen(p), 1, 5000, &deleted, &err);
  etcdr_error_clear(&err);
  etcdr_client_destroy(c1);
  etcdr_client_destroy(c2);
  printf("%d failed\n", failures);
  return failures > 100 ? 100 : failures;
}
