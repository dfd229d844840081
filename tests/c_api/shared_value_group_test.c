/* The C API's shared value and group membership against a real etcd, from
 * C: shared_value_group_test ENDPOINT (tests/c_api/with_etcd.sh starts the
 * etcd). Each check prints PASS or FAIL; the exit status is the number of
 * failures (capped). */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "etcd_recipes.h"

#include "c_test_support.h"

static int wait_count(atomic_int* n, int at_least, int64_t ms) {
  int64_t end = now_ms() + ms;
  while (atomic_load(n) < at_least && now_ms() < end) sleep_ms(5);
  return atomic_load(n);
}

static atomic_int value_changes;
static atomic_int value_last_exists;

static void on_value(void* user, const char* bytes, size_t len, int exists, int64_t mod_revision) {
  (void)user;
  (void)bytes;
  (void)len;
  (void)mod_revision;
  atomic_store(&value_last_exists, exists);
  atomic_fetch_add(&value_changes, 1);
}

static void test_shared_value(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  char key[192];
  snprintf(key, sizeof key, "%s/value", prefix);
  etcdr_shared_value *a = NULL, *b = NULL, *bad = NULL;
  CHECK_CODE(etcdr_shared_value_create(c1, key, NULL, &a, &err), ETCDR_OK, err, "shared value on client 1");
  CHECK_CODE(etcdr_shared_value_create(c2, key, NULL, &b, &err), ETCDR_OK, err, "shared value on client 2");
  CHECK_CODE(etcdr_shared_value_create(c1, "", NULL, &bad, &err), ETCDR_INVALID_ARGUMENT, err, "an empty key");
  CHECK(bad == NULL, "no handle for an empty key");
  etcdr_shared_value_on_change(b, on_value, NULL);

  char* bytes = NULL;
  size_t len = 0;
  int64_t rev = 0;
  CHECK_CODE(etcdr_shared_value_get(a, 5000, &bytes, &len, &rev, &err), ETCDR_NOT_FOUND, err, "get: absent");
  /* b has read the key too: the changes below are changes it hears of. */
  CHECK_CODE(etcdr_shared_value_get(b, 5000, &bytes, &len, &rev, &err), ETCDR_NOT_FOUND, err, "get on b: absent");
  CHECK_CODE(etcdr_shared_value_set(a, "one", 3, 5000, &rev, &err), ETCDR_OK, err, "set");
  CHECK(rev > 0, "set gives the new mod revision (%lld)", (long long)rev);
  CHECK_CODE(etcdr_shared_value_get(a, 5000, &bytes, &len, NULL, &err), ETCDR_OK, err, "get after set");
  CHECK(len == 3 && bytes && memcmp(bytes, "one", 3) == 0, "get reads this handle's own write at once");
  etcdr_free(bytes);
  int swapped = -1;
  CHECK_CODE(etcdr_shared_value_compare_and_set(b, rev, "two", 3, 5000, &swapped, &err), ETCDR_OK, err, "cas");
  CHECK(swapped == 1, "compare_and_set against the version set gave");
  CHECK_CODE(etcdr_shared_value_compare_and_set(a, rev, "three", 5, 5000, &swapped, &err), ETCDR_OK, err, "cas");
  CHECK(swapped == 0, "compare_and_set against a stale version writes nothing");
  CHECK_CODE(etcdr_shared_value_get(a, 5000, &bytes, &len, NULL, &err), ETCDR_OK, err, "get after a lost cas");
  CHECK(len == 3 && bytes && memcmp(bytes, "two", 3) == 0, "the lost compare_and_set brought the value that won");
  etcdr_free(bytes);
  CHECK(wait_count(&value_changes, 2, 10000) >= 2, "the other handle heard both changes");
  CHECK(atomic_load(&value_last_exists) == 1, "the value exists");
  CHECK_CODE(etcdr_shared_value_compare_and_set(a, -1, "x", 1, 5000, &swapped, &err), ETCDR_INVALID_ARGUMENT, err,
             "a negative revision");
  etcdr_shared_value_destroy(a);
  etcdr_shared_value_destroy(b);
  etcdr_error_clear(&err);
}

static atomic_int group_joined;
static atomic_int group_left;

static void on_group(void* user, int event, const char* id, const char* payload, size_t len) {
  (void)user;
  (void)payload;
  (void)len;
  if (strcmp(id, "b") != 0) return;
  if (event == ETCDR_GROUP_JOINED) atomic_fetch_add(&group_joined, 1);
  if (event == ETCDR_GROUP_LEFT) atomic_fetch_add(&group_left, 1);
}

static void test_group(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  char group[192];
  snprintf(group, sizeof group, "%s/group", prefix);
  etcdr_group_member *a = NULL, *b = NULL, *twin = NULL, *bad = NULL;
  CHECK_CODE(etcdr_group_member_create(c1, group, "a", "pa", 2, NULL, &a, &err), ETCDR_OK, err, "member a");
  etcdr_group_member_on_change(a, on_group, NULL);
  CHECK_CODE(etcdr_group_member_join(a, 5000, &err), ETCDR_OK, err, "a joins");
  CHECK_CODE(etcdr_group_member_create(c2, group, "b", "pb", 2, NULL, &b, &err), ETCDR_OK, err, "member b");
  CHECK_CODE(etcdr_group_member_join(b, 5000, &err), ETCDR_OK, err, "b joins");
  CHECK(etcdr_group_member_is_member(b) == 1, "b is a member");
  CHECK(wait_count(&group_joined, 1, 10000) >= 1, "a heard b join");
  char* ids = NULL;
  size_t count = 0;
  CHECK_CODE(etcdr_group_member_members(a, 5000, &ids, &count, &err), ETCDR_OK, err, "members");
  CHECK(count == 2 && ids && strcmp(ids, "a") == 0 && strcmp(ids + 2, "b") == 0, "a and b, in id order");
  etcdr_free(ids);
  char* payload = NULL;
  size_t len = 0;
  CHECK_CODE(etcdr_group_member_payload_of(a, "b", &payload, &len, &err), ETCDR_OK, err, "payload of b");
  CHECK(len == 2 && payload && memcmp(payload, "pb", 2) == 0, "b's payload");
  etcdr_free(payload);

  CHECK_CODE(etcdr_group_member_create(c1, group, "b", "x", 1, NULL, &twin, &err), ETCDR_OK, err, "a twin of b");
  CHECK_CODE(etcdr_group_member_join(twin, 5000, &err), ETCDR_ALREADY_EXISTS, err, "the twin's join is refused");
  etcdr_group_member_destroy(twin);
  CHECK_CODE(etcdr_group_member_create(c1, group, "x/y", "", 0, NULL, &bad, &err), ETCDR_INVALID_ARGUMENT, err,
             "an id with '/'");
  CHECK(bad == NULL, "no handle for a bad id");

  int was_member = -1;
  CHECK_CODE(etcdr_group_member_leave(b, 5000, &was_member, &err), ETCDR_OK, err, "b leaves");
  CHECK(was_member == 1, "b was a member");
  CHECK(wait_count(&group_left, 1, 10000) >= 1, "a heard b leave");
  CHECK_CODE(etcdr_group_member_payload_of(a, "b", &payload, &len, &err), ETCDR_NOT_FOUND, err, "b is gone");
  etcdr_group_member_destroy(b);
  etcdr_group_member_destroy(a);
  etcdr_error_clear(&err);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s ENDPOINT\n", argv[0]);
    return 2;
  }
  snprintf(prefix, sizeof prefix, "/c_api_value_group_test/%ld-%lld", (long)getpid(), (long long)now_ms());
  etcdr_client* c1 = make_client(argv[1]);
  etcdr_client* c2 = make_client(argv[1]);
  test_shared_value(c1, c2);
  test_group(c1, c2);
  etcdr_client_destroy(c1);
  etcdr_client_destroy(c2);
  printf("%d failed\n", failures);
  return failures > 100 ? 100 : failures;
}
