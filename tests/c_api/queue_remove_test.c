/* The C API's queue remove by id against a real etcd, from C:
 * c_api_queue_remove_test ENDPOINT (tests/c_api/with_etcd.sh starts the etcd).
 * Each check prints PASS or FAIL; the exit status is the number of failures. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "etcd_recipes.h"

#include "c_test_support.h"

/* 1 if `value` (of `len` bytes, freed here) is `want`. */
static int remove_test_is(char* value, size_t len, const char* want) {
  int same = value != NULL && len == strlen(want) && memcmp(value, want, len) == 0;
  etcdr_free(value);
  return same;
}

static void check_plain_queue(etcdr_client* c, const char* prefix) {
  char name[192];
  snprintf(name, sizeof name, "%s/queue", prefix);
  etcdr_error err = ETCDR_ERROR_INIT;
  etcdr_queue* q = NULL;
  CHECK(etcdr_queue_create(c, name, NULL, &q, &err) == ETCDR_OK, "queue: create");
  char *a = NULL, *b = NULL, *cc = NULL;
  CHECK(etcdr_queue_push_id(q, "a", 1, 5000, &a, &err) == ETCDR_OK && a != NULL && *a != '\0', "queue: push a, id %s",
        a ? a : "(none)");
  CHECK(etcdr_queue_push_id(q, "b", 1, 5000, &b, &err) == ETCDR_OK && b != NULL, "queue: push b");
  CHECK(etcdr_queue_push_id(q, "c", 1, 5000, &cc, &err) == ETCDR_OK && cc != NULL, "queue: push c");
  CHECK(a != NULL && b != NULL && strcmp(a, b) != 0, "queue: each item its own id");

  /* Bad ids: an error before any write, the queue unchanged. */
  int removed = 7;
  CHECK(etcdr_queue_remove(q, "x/y", 5000, &removed, &err) == ETCDR_INVALID_ARGUMENT && removed == 0,
        "queue: an id with '/' is invalid (%s)", err.message ? err.message : "");
  etcdr_error_clear(&err);
  CHECK(etcdr_queue_remove(q, "", 5000, &removed, &err) == ETCDR_INVALID_ARGUMENT, "queue: an empty id is invalid");
  etcdr_error_clear(&err);
  CHECK(etcdr_queue_remove(q, NULL, 5000, &removed, &err) == ETCDR_INVALID_ARGUMENT, "queue: a NULL id is invalid");
  etcdr_error_clear(&err);
  char* none = NULL;
  CHECK(etcdr_queue_push_id(q, "z", 1, 5000, NULL, &err) == ETCDR_INVALID_ARGUMENT, "queue: push_id without id out");
  etcdr_error_clear(&err);
  int64_t size = -1;
  CHECK(etcdr_queue_size(q, &size, &err) == ETCDR_OK && size == 3, "queue: still 3 items after bad input (%lld)",
        (long long)size);

  /* Remove b: a pop gets a, the next gets c. */
  CHECK(etcdr_queue_remove(q, b, 5000, &removed, &err) == ETCDR_OK && removed == 1, "queue: remove b");
  CHECK(etcdr_queue_remove(q, b, 5000, &removed, &err) == ETCDR_OK && removed == 0, "queue: remove b again: 0");
  CHECK(etcdr_queue_remove(q, "no-such-item", 5000, &removed, &err) == ETCDR_OK && removed == 0,
        "queue: remove of a missing id: 0");
  char* v = NULL;
  size_t len = 0;
  CHECK(etcdr_queue_pop(q, 5000, &v, &len, &err) == ETCDR_OK && remove_test_is(v, len, "a"), "queue: pop a");
  v = NULL;
  CHECK(etcdr_queue_pop(q, 5000, &v, &len, &err) == ETCDR_OK && remove_test_is(v, len, "c"), "queue: pop c (b gone)");
  /* A taken item is not removed. */
  CHECK(etcdr_queue_remove(q, a, 5000, &removed, &err) == ETCDR_OK && removed == 0, "queue: remove of a taken item: 0");
  /* The full key is accepted too. */
  char* d = NULL;
  char key[320];
  CHECK(etcdr_queue_push_id(q, "d", 1, 5000, &d, &err) == ETCDR_OK, "queue: push d");
  snprintf(key, sizeof key, "%s/items/%s", name, d ? d : "");
  CHECK(etcdr_queue_remove(q, key, 5000, NULL, &err) == ETCDR_OK, "queue: remove d by its key");
  int found = 1;
  v = NULL;
  CHECK(etcdr_queue_try_pop(q, &found, &v, &len, &err) == ETCDR_OK && found == 0, "queue: empty after removing d");
  etcdr_free(none);
  etcdr_free(a);
  etcdr_free(b);
  etcdr_free(cc);
  etcdr_free(d);
  etcdr_queue_destroy(q);
}

static void check_priority_queue(etcdr_client* c, const char* prefix) {
  char name[192];
  snprintf(name, sizeof name, "%s/pqueue", prefix);
  etcdr_error err = ETCDR_ERROR_INIT;
  etcdr_priority_queue* q = NULL;
  CHECK(etcdr_priority_queue_create(c, name, NULL, &q, &err) == ETCDR_OK, "pqueue: create");
  char *low = NULL, *high = NULL, *mid = NULL;
  CHECK(etcdr_priority_queue_push_id(q, "low", 3, 9, 5000, &low, &err) == ETCDR_OK && low != NULL, "pqueue: push low");
  CHECK(etcdr_priority_queue_push_id(q, "high", 4, 1, 5000, &high, &err) == ETCDR_OK && high != NULL,
        "pqueue: push high");
  CHECK(etcdr_priority_queue_push_id(q, "mid", 3, 5, 5000, &mid, &err) == ETCDR_OK && mid != NULL, "pqueue: push mid");
  int removed = 0;
  CHECK(etcdr_priority_queue_remove(q, "a/b", 5000, &removed, &err) == ETCDR_INVALID_ARGUMENT,
        "pqueue: an id with '/' is invalid");
  etcdr_error_clear(&err);
  CHECK(etcdr_priority_queue_remove(q, high, 5000, &removed, &err) == ETCDR_OK && removed == 1,
        "pqueue: remove the head");
  CHECK(etcdr_priority_queue_remove(q, "missing", 5000, &removed, &err) == ETCDR_OK && removed == 0,
        "pqueue: remove of a missing id: 0");
  char* v = NULL;
  size_t len = 0;
  CHECK(etcdr_priority_queue_pop(q, 5000, &v, &len, &err) == ETCDR_OK && remove_test_is(v, len, "mid"),
        "pqueue: pop gets the next one (mid)");
  etcdr_free(low);
  etcdr_free(high);
  etcdr_free(mid);
  etcdr_priority_queue_destroy(q);
}

static void check_work_queue(etcdr_client* c, const char* prefix) {
  char name[192];
  snprintf(name, sizeof name, "%s/wqueue", prefix);
  etcdr_error err = ETCDR_ERROR_INIT;
  etcdr_work_queue* q = NULL;
  CHECK(etcdr_work_queue_create(c, name, NULL, &q, &err) == ETCDR_OK, "wqueue: create");
  char *a = NULL, *b = NULL, *cc = NULL;
  CHECK(etcdr_work_queue_push_id(q, "a", 1, 0, 5000, &a, &err) == ETCDR_OK && a != NULL, "wqueue: push a");
  CHECK(etcdr_work_queue_push_id(q, "b", 1, 0, 5000, &b, &err) == ETCDR_OK && b != NULL, "wqueue: push b");
  CHECK(etcdr_work_queue_push_id(q, "c", 1, 60000, 5000, &cc, &err) == ETCDR_OK && cc != NULL,
        "wqueue: push c delayed");
  CHECK(etcdr_work_queue_push_id(q, "x", 1, -1, 5000, &cc, &err) == ETCDR_INVALID_ARGUMENT,
        "wqueue: a negative delay is invalid");
  etcdr_error_clear(&err);
  int removed = 0;
  CHECK(etcdr_work_queue_remove(q, "p/q", 5000, &removed, &err) == ETCDR_INVALID_ARGUMENT,
        "wqueue: an id with '/' is invalid");
  etcdr_error_clear(&err);
  /* a is claimed: not removed while held. */
  etcdr_work_item* item = NULL;
  CHECK(etcdr_work_queue_receive(q, 5000, &item, &err) == ETCDR_OK && item != NULL, "wqueue: receive");
  CHECK(item != NULL && a != NULL && strcmp(etcdr_work_item_id(item), a) == 0,
        "wqueue: the received item's id is the push's id");
  CHECK(etcdr_work_queue_remove(q, a, 5000, &removed, &err) == ETCDR_OK && removed == 0,
        "wqueue: a claimed item is not removed");
  CHECK(etcdr_work_queue_remove(q, b, 5000, &removed, &err) == ETCDR_OK && removed == 1, "wqueue: remove pending b");
  CHECK(etcdr_work_queue_remove(q, cc, 5000, &removed, &err) == ETCDR_OK && removed == 1,
        "wqueue: remove delayed c");
  CHECK(etcdr_work_queue_remove(q, "missing", 5000, &removed, &err) == ETCDR_OK && removed == 0,
        "wqueue: remove of a missing id: 0");
  CHECK(item != NULL && etcdr_work_item_ack(item, 5000, &err) == ETCDR_OK, "wqueue: ack a");
  etcdr_work_item_destroy(item);
  int64_t size = -1;
  CHECK(etcdr_work_queue_size(q, &size, &err) == ETCDR_OK && size == 0, "wqueue: empty (%lld)", (long long)size);
  etcdr_free(a);
  etcdr_free(b);
  etcdr_free(cc);
  etcdr_work_queue_destroy(q);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s ENDPOINT\n", argv[0]);
    return 2;
  }
  set_prefix("c_api_queue_remove");
  etcdr_client* c = make_client(argv[argc - 1]);
  check_plain_queue(c, prefix);
  check_priority_queue(c, prefix);
  check_work_queue(c, prefix);
  etcdr_client_destroy(c);
  printf("%d failure(s)\n", failures);
  return failures;
}
