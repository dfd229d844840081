/* The C API against a real etcd, from C: c_api_test ENDPOINT
 * (tests/c_api/with_etcd.sh starts the etcd); "c_api_test mutex queue ENDPOINT"
 * runs only those tests. Each check prints PASS or FAIL;
 * the exit status is the number of failures (capped).
 *
 * "c_api_test --consume-and-crash ENDPOINT NAME" is the crashed consumer of
 * the visibility-timeout check: it claims one item and exits at once, so
 * its lease is neither renewed nor revoked. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "c_test_support.h"
#include "etcd_recipes.h"

extern char** environ;

/* --- version, errors, bad input ------------------------------------------------- */

static void test_version_and_bad_input(etcdr_client* c) {
  etcdr_error err = ETCDR_ERROR_INIT;
  CHECK(etcdr_version() == ETCDR_VERSION, "etcdr_version() %d == ETCDR_VERSION %d", etcdr_version(), ETCDR_VERSION);
  CHECK(strchr(etcdr_version_string(), '.') != NULL, "version string %s", etcdr_version_string());
  CHECK(strcmp(etcdr_code_name(ETCDR_DEADLINE_EXCEEDED), "DEADLINE_EXCEEDED") == 0, "code name %s",
        etcdr_code_name(ETCDR_DEADLINE_EXCEEDED));
  CHECK(strcmp(etcdr_code_name(999), "?") == 0, "unknown code name");

  etcdr_mutex* m = NULL;
  CHECK_CODE(etcdr_mutex_create(NULL, name_of("bad"), NULL, &m, &err), ETCDR_INVALID_ARGUMENT, err,
             "mutex_create with a NULL client");
  CHECK(err.message != NULL && m == NULL, "  ... with a message and no handle");
  CHECK(err.reason == ETCDR_REASON_BAD_ARGUMENT, "  ... reason bad_argument (%s)", etcdr_reason_name(err.reason));
  CHECK_CODE(etcdr_mutex_create(c, "", NULL, &m, &err), ETCDR_INVALID_ARGUMENT, err, "mutex_create with an empty name");
  CHECK_CODE(etcdr_mutex_create(c, NULL, NULL, &m, &err), ETCDR_INVALID_ARGUMENT, err, "mutex_create with a NULL name");
  CHECK_CODE(etcdr_mutex_create(c, "trailing/", NULL, &m, &err), ETCDR_INVALID_ARGUMENT, err,
             "mutex_create with a name ending in '/' (the recipe's own check)");
  CHECK_CODE(etcdr_mutex_acquire(NULL, 100, NULL, &err), ETCDR_INVALID_ARGUMENT, err, "mutex_acquire(NULL)");
  CHECK_CODE(etcdr_mutex_release(NULL, &err), ETCDR_INVALID_ARGUMENT, err, "mutex_release(NULL)");

  etcdr_semaphore* s = NULL;
  CHECK_CODE(etcdr_semaphore_create(c, name_of("bad-sem"), -1, NULL, &s, &err), ETCDR_INVALID_ARGUMENT, err,
             "semaphore_create with -1 permits");
  CHECK_CODE(etcdr_semaphore_create(c, name_of("bad-sem"), 0, NULL, &s, &err), ETCDR_INVALID_ARGUMENT, err,
             "semaphore_create with 0 permits");

  etcdr_recipe_options ro;
  memset(&ro, 0, sizeof ro);
  CHECK_CODE(etcdr_mutex_create(c, name_of("bad"), &ro, &m, &err), ETCDR_INVALID_ARGUMENT, err,
             "options whose size was never set");
  /* A struct from a "newer header": this library's fields, then one it
   * does not know. Zero there is its default, so accepted; anything else
   * is a request this library cannot honour. */
  struct {
    etcdr_recipe_options known;
    int64_t future_field;
  } newer;
  etcdr_recipe_options_init(&newer.known, sizeof newer);
  newer.future_field = 0;
  CHECK_CODE(etcdr_mutex_create(c, name_of("newer"), &newer.known, &m, &err), ETCDR_OK, err,
             "options from a newer header with its new field at its default");
  etcdr_mutex_destroy(m);
  m = NULL;
  newer.future_field = 7;
  CHECK_CODE(etcdr_mutex_create(c, name_of("newer"), &newer.known, &m, &err), ETCDR_INVALID_ARGUMENT, err,
             "options from a newer header asking for something unknown");
  etcdr_recipe_options_init(&ro, sizeof ro);
  ro.session_ttl_s = -5;
  CHECK_CODE(etcdr_mutex_create(c, name_of("bad"), &ro, &m, &err), ETCDR_INVALID_ARGUMENT, err,
             "a negative session TTL");

  etcdr_work_queue* wq = NULL;
  etcdr_work_queue_options wo;
  etcdr_work_queue_options_init(&wo, sizeof wo);
  wo.max_deliveries = -1;
  CHECK_CODE(etcdr_work_queue_create(c, name_of("bad-wq"), &wo, &wq, &err), ETCDR_INVALID_ARGUMENT, err,
             "work queue with negative max_deliveries");

  etcdr_client_options co;
  etcdr_client_options_init(&co, sizeof co);
  etcdr_client* bad = NULL;
  CHECK_CODE(etcdr_client_create(&co, &bad, &err), ETCDR_INVALID_ARGUMENT, err, "client without endpoints");
  co.endpoints = "not-an-endpoint";
  CHECK_CODE(etcdr_client_create(&co, &bad, &err), ETCDR_INVALID_ARGUMENT, err, "client with a malformed endpoint");
  co.endpoints = " , ";
  CHECK_CODE(etcdr_client_create(&co, &bad, &err), ETCDR_INVALID_ARGUMENT, err, "client with blank endpoints");

  CHECK(count_and_delete(c, prefix) == 0, "nothing was written by the refused calls");

  /* One etcdr_error serves many calls: a success resets it. */
  CHECK_CODE(etcdr_client_ping(c, 5000, &err), ETCDR_OK, err, "ping");
  CHECK(err.code == ETCDR_OK && err.message == NULL, "a success resets the error (message freed)");
  etcdr_error_clear(&err);
}

/* --- key/value and leases --------------------------------------------------- */

static void test_kv_and_leases(etcdr_client* c) {
  etcdr_error err = ETCDR_ERROR_INIT;
  const char* k = name_of("kv/binary");
  const char v[] = {'a', '\0', 'b'};
  int64_t rev = 0;
  CHECK_CODE(etcdr_put(c, k, strlen(k), v, sizeof v, 0, 5000, &rev, &err), ETCDR_OK, err, "put a binary value");
  char* got = NULL;
  size_t got_len = 0;
  int64_t mod = 0;
  CHECK_CODE(etcdr_get(c, k, strlen(k), 5000, &got, &got_len, &mod, &err), ETCDR_OK, err, "get it");
  CHECK(got_len == 3 && memcmp(got, v, 3) == 0 && got[3] == '\0', "the value's 3 bytes, NUL included, come back");
  CHECK(mod == rev && rev > 0, "mod revision %lld is the put's revision %lld", (long long)mod, (long long)rev);
  etcdr_free(got);

  int ok = -1;
  CHECK_CODE(etcdr_compare_and_put(c, k, strlen(k), "x", 1, rev - 1, 0, 5000, &ok, &err), ETCDR_OK, err,
             "compare_and_put with a stale revision");
  CHECK(ok == 0, "  ... did not write");
  CHECK_CODE(etcdr_compare_and_put(c, k, strlen(k), "x", 1, rev, 0, 5000, &ok, &err), ETCDR_OK, err,
             "compare_and_put with the current revision");
  CHECK(ok == 1, "  ... wrote");
  const char* fresh = name_of("kv/fresh");
  CHECK_CODE(etcdr_compare_and_put(c, fresh, strlen(fresh), "1", 1, 0, 0, 5000, &ok, &err), ETCDR_OK, err,
             "compare_and_put with 0 on an absent key");
  CHECK(ok == 1, "  ... created it");
  CHECK_CODE(etcdr_compare_and_put(c, fresh, strlen(fresh), "2", 1, 0, 0, 5000, &ok, &err), ETCDR_OK, err,
             "compare_and_put with 0 on a present key");
  CHECK(ok == 0, "  ... did not overwrite it");

  const char* absent = name_of("kv/absent");
  CHECK_CODE(etcdr_get(c, absent, strlen(absent), 5000, &got, &got_len, NULL, &err), ETCDR_NOT_FOUND, err,
             "get of an absent key");
  CHECK(got == NULL && err.reason == ETCDR_REASON_KEY_NOT_FOUND, "  ... reason key_not_found, no buffer");

  /* Leases: a key bound to a kept lease lives; revoking removes it. */
  int64_t lease = 0;
  CHECK_CODE(etcdr_lease_grant(c, 2, 5000, &lease, &err), ETCDR_OK, err, "lease_grant 2 s");
  etcdr_lease* kept = NULL;
  CHECK_CODE(etcdr_lease_keep_alive(c, lease, 2, &kept, &err), ETCDR_OK, err, "keep it alive");
  const char* lk = name_of("kv/leased");
  CHECK_CODE(etcdr_put(c, lk, strlen(lk), "v", 1, lease, 5000, NULL, &err), ETCDR_OK, err, "put with the lease");
  sleep_ms(3500);
  CHECK_CODE(etcdr_get(c, lk, strlen(lk), 5000, &got, &got_len, NULL, &err), ETCDR_OK, err,
             "the leased key outlives the TTL while kept alive");
  etcdr_free(got);
  CHECK(etcdr_lease_alive(kept) == 1, "  ... and the lease is alive");
  CHECK_CODE(etcdr_lease_revoke(c, lease, 5000, &err), ETCDR_OK, err, "lease_revoke");
  CHECK_CODE(etcdr_get(c, lk, strlen(lk), 5000, &got, &got_len, NULL, &err), ETCDR_NOT_FOUND, err,
             "the key went with the lease");
  etcdr_lease_destroy(kept);
  etcdr_error_clear(&err);
}

/* --- mutex ---------------------------------------------------------------------- */

typedef struct {
  atomic_int fired;
  etcdr_code code;
  etcdr_reason reason;
  int64_t token;
  pthread_t thread;
} acquire_result;

static void on_acquired(void* user, const etcdr_error* result, int64_t token) {
  acquire_result* r = (acquire_result*)user;
  r->code = result->code;
  r->reason = result->reason;
  r->token = token;
  r->thread = pthread_self();
  atomic_store(&r->fired, 1);
}

typedef struct {
  atomic_int fired;
  etcdr_code code;
  etcdr_reason reason;
} lost_result;

static void on_lost(void* user, const etcdr_error* why) {
  lost_result* r = (lost_result*)user;
  r->code = why->code;
  r->reason = why->reason;
  atomic_store(&r->fired, 1);
}

static void test_mutex(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  const char* name = name_of("mutex");
  etcdr_mutex *m1 = NULL, *m2 = NULL;
  CHECK_CODE(etcdr_mutex_create(c1, name, NULL, &m1, &err), ETCDR_OK, err, "mutex on client 1");
  CHECK_CODE(etcdr_mutex_create(c2, name, NULL, &m2, &err), ETCDR_OK, err, "same mutex on client 2");

  CHECK_CODE(etcdr_mutex_release(m1, &err), ETCDR_FAILED_PRECONDITION, err, "release with nothing held");

  int64_t t1 = 0, t2 = 0, t3 = 0;
  CHECK_CODE(etcdr_mutex_acquire(m1, 5000, &t1, &err), ETCDR_OK, err, "m1 acquires");
  CHECK(t1 > 0 && etcdr_mutex_is_held(m1), "  ... token %lld, held", (long long)t1);
  int acquired = -1;
  CHECK_CODE(etcdr_mutex_try_acquire(m2, &acquired, &t2, &err), ETCDR_OK, err, "m2 try_acquire while m1 holds");
  CHECK(acquired == 0, "  ... does not get it");
  int64_t start = now_ms();
  CHECK_CODE(etcdr_mutex_acquire(m2, 300, &t2, &err), ETCDR_DEADLINE_EXCEEDED, err, "m2 acquire with 300 ms");
  CHECK(err.message != NULL && strlen(err.message) > 0, "  ... with a message: %s", err.message ? err.message : "");
  CHECK(now_ms() - start >= 250, "  ... after about 300 ms (%lld)", (long long)(now_ms() - start));

  CHECK_CODE(etcdr_mutex_release(m1, &err), ETCDR_OK, err, "m1 releases");
  CHECK_CODE(etcdr_mutex_try_acquire(m2, &acquired, &t2, &err), ETCDR_OK, err, "m2 try_acquire after the release");
  CHECK(acquired == 1 && t2 > t1, "  ... gets it with a larger token (%lld > %lld)", (long long)t2, (long long)t1);
  CHECK_CODE(etcdr_mutex_acquire(m2, 1000, NULL, &err), ETCDR_FAILED_PRECONDITION, err,
             "acquiring again on the holding handle is refused (not a deadlock)");

  /* Async: parked until the holder releases, completed on a library thread. */
  acquire_result ar;
  memset(&ar, 0, sizeof ar);
  atomic_init(&ar.fired, 0);
  CHECK(etcdr_mutex_acquire_async(m1, -1, on_acquired, &ar) == ETCDR_OK, "m1 acquire_async while m2 holds");
  sleep_ms(300);
  CHECK(atomic_load(&ar.fired) == 0, "  ... has not completed while m2 holds");
  CHECK_CODE(etcdr_mutex_release(m2, &err), ETCDR_OK, err, "m2 releases");
  CHECK(wait_flag(&ar.fired, 5000) && ar.code == ETCDR_OK, "  ... m1's callback fires with OK (%s)",
        etcdr_code_name(ar.code));
  t3 = ar.token;
  CHECK(t3 > t2, "  ... with a larger token (%lld > %lld)", (long long)t3, (long long)t2);
  CHECK(!pthread_equal(ar.thread, pthread_self()), "  ... on a library thread, not the caller's");

  /* A pending async acquire ends, once, when its handle is destroyed. */
  acquire_result pending;
  memset(&pending, 0, sizeof pending);
  atomic_init(&pending.fired, 0);
  CHECK(etcdr_mutex_acquire_async(m2, -1, on_acquired, &pending) == ETCDR_OK, "m2 acquire_async while m1 holds");
  sleep_ms(200);
  etcdr_mutex_destroy(m2);
  m2 = NULL;
  CHECK(wait_flag(&pending.fired, 5000) && pending.code == ETCDR_FAILED_PRECONDITION &&
            pending.reason == ETCDR_REASON_CLOSED,
        "destroying m2 completes its pending acquire with FAILED_PRECONDITION/closed (%s/%s)",
        etcdr_code_name(pending.code), etcdr_reason_name(pending.reason));

  /* Destroying a holding handle releases the lock. */
  etcdr_mutex_destroy(m1);
  m1 = NULL;
  CHECK_CODE(etcdr_mutex_create(c2, name, NULL, &m2, &err), ETCDR_OK, err, "a new handle on client 2");
  int64_t t4 = 0;
  CHECK_CODE(etcdr_mutex_acquire(m2, 5000, &t4, &err), ETCDR_OK, err, "acquires after the holder was destroyed");
  CHECK(t4 > t3, "  ... token %lld > %lld", (long long)t4, (long long)t3);
  CHECK_CODE(etcdr_mutex_release(m2, &err), ETCDR_OK, err, "releases");

  /* Loss: someone deletes the lock's key. The callback hears of it and the
   * release says the hold had been lost. */
  lost_result lr;
  memset(&lr, 0, sizeof lr);
  atomic_init(&lr.fired, 0);
  CHECK(etcdr_mutex_on_lost(m2, on_lost, &lr) == ETCDR_OK, "on_lost set");
  CHECK_CODE(etcdr_mutex_acquire(m2, 5000, NULL, &err), ETCDR_OK, err, "acquire again");
  char key_prefix[256];
  snprintf(key_prefix, sizeof key_prefix, "%s/", name);
  CHECK(count_and_delete(c1, key_prefix) == 1, "an operator deletes the holder's key");
  CHECK(wait_flag(&lr.fired, 5000) && lr.reason == ETCDR_REASON_HOLD_LOST, "on_lost fires with hold_lost (%s/%s)",
        etcdr_code_name(lr.code), etcdr_reason_name(lr.reason));
  CHECK(etcdr_mutex_is_held(m2) == 0, "  ... and the handle no longer holds");
  CHECK_CODE(etcdr_mutex_release(m2, &err), ETCDR_ABORTED, err, "release after the loss");
  CHECK(err.reason == ETCDR_REASON_HOLD_LOST, "  ... reason hold_lost");
  etcdr_mutex_destroy(m2);
  etcdr_error_clear(&err);
}

/* The ordered layout excludes together with the Go layout on one name. */
static void test_ordered_mutex(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  const char* name = name_of("ordered");
  etcdr_recipe_options ro;
  etcdr_recipe_options_init(&ro, sizeof ro);
  ro.contender_layout = 7;
  etcdr_mutex *ordered = NULL, *go = NULL;
  CHECK_CODE(etcdr_mutex_create(c1, name, &ro, &ordered, &err), ETCDR_INVALID_ARGUMENT, err,
             "a contender layout that does not exist");
  ro.contender_layout = ETCDR_LAYOUT_ORDERED;
  CHECK_CODE(etcdr_mutex_create(c1, name, &ro, &ordered, &err), ETCDR_OK, err, "an ordered mutex");
  CHECK_CODE(etcdr_mutex_create(c2, name, NULL, &go, &err), ETCDR_OK, err, "a Go-layout mutex on the same name");
  int64_t t1 = 0, t2 = 0;
  int acquired = -1;
  CHECK_CODE(etcdr_mutex_acquire(ordered, 5000, &t1, &err), ETCDR_OK, err, "the ordered one acquires");
  CHECK_CODE(etcdr_mutex_try_acquire(go, &acquired, &t2, &err), ETCDR_OK, err, "the Go one tries");
  CHECK(acquired == 0, "  ... and does not get it");
  CHECK_CODE(etcdr_mutex_release(ordered, &err), ETCDR_OK, err, "the ordered one releases");
  CHECK_CODE(etcdr_mutex_acquire(go, 5000, &t2, &err), ETCDR_OK, err, "the Go one acquires");
  CHECK(t2 > t1, "  ... with a larger token (%lld > %lld)", (long long)t2, (long long)t1);
  CHECK_CODE(etcdr_mutex_try_acquire(ordered, &acquired, &t1, &err), ETCDR_OK, err, "the ordered one tries");
  CHECK(acquired == 0, "  ... and does not get it");
  CHECK_CODE(etcdr_mutex_release(go, &err), ETCDR_OK, err, "the Go one releases");
  etcdr_mutex_destroy(ordered);
  etcdr_mutex_destroy(go);
  /* No contender key is left: the ordered holder's release recorded its
   * hand-off in NAME~handoff, and the declined try's key is still named by
   * the tail record NAME~tail (it is gone: the next creation looks back). */
  CHECK(count_and_delete(c1, name) == 2, "no contender key left, only the hand-off and tail records");
  etcdr_error_clear(&err);
}

/* --- semaphore -------------------------------------------------------------------- */

typedef struct {
  atomic_int fired;
  etcdr_code code;
  etcdr_permit* permit;
} permit_result;

static void on_permit(void* user, const etcdr_error* result, etcdr_permit* permit) {
  permit_result* r = (permit_result*)user;
  r->code = result->code;
  r->permit = permit;
  atomic_store(&r->fired, 1);
}

/* Both permits of `b`'s semaphore taken, one of them `p1`: a try gets none,
 * an async acquire waits until `p1` is released, then holds (in `pr`). */
static void check_a_waiter_gets_a_released_permit(etcdr_semaphore* b, etcdr_permit* p1, permit_result* pr) {
  etcdr_error err = ETCDR_ERROR_INIT;
  etcdr_permit* none = NULL;
  CHECK_CODE(etcdr_semaphore_try_acquire(b, &none, &err), ETCDR_OK, err, "try_acquire with both taken");
  CHECK(none == NULL, "  ... gets no permit");
  memset(pr, 0, sizeof *pr);
  atomic_init(&pr->fired, 0);
  CHECK(etcdr_semaphore_acquire_async(b, 10000, on_permit, pr) == ETCDR_OK, "acquire_async waits");
  sleep_ms(200);
  CHECK(atomic_load(&pr->fired) == 0, "  ... while both are taken");
  CHECK_CODE(etcdr_permit_release(p1, &err), ETCDR_OK, err, "permit 1 released");
  CHECK(wait_flag(&pr->fired, 5000) && pr->code == ETCDR_OK && pr->permit != NULL, "the waiter gets the permit");
  CHECK(etcdr_permit_is_held(pr->permit) == 1, "  ... and holds it");
  etcdr_error_clear(&err);
}

static void test_semaphore(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  const char* name = name_of("sem");
  etcdr_semaphore *a = NULL, *b = NULL, *wrong = NULL;
  CHECK_CODE(etcdr_semaphore_create(c1, name, 2, NULL, &a, &err), ETCDR_OK, err, "semaphore of 2 on client 1");
  CHECK_CODE(etcdr_semaphore_create(c2, name, 2, NULL, &b, &err), ETCDR_OK, err, "same semaphore on client 2");
  etcdr_permit *p1 = NULL, *p2 = NULL, *p3 = NULL;
  CHECK_CODE(etcdr_semaphore_acquire(a, 5000, &p1, &err), ETCDR_OK, err, "permit 1");
  CHECK_CODE(etcdr_semaphore_acquire(b, 5000, &p2, &err), ETCDR_OK, err, "permit 2");
  CHECK(p1 && p2 && etcdr_permit_token(p1) != etcdr_permit_token(p2), "distinct tokens");
  int32_t available = -1;
  CHECK_CODE(etcdr_semaphore_available(a, &available, &err), ETCDR_OK, err, "available");
  CHECK(available == 0, "  ... is 0 (%d)", available);

  permit_result pr;
  check_a_waiter_gets_a_released_permit(b, p1, &pr);
  CHECK_CODE(etcdr_permit_release(p1, &err), ETCDR_FAILED_PRECONDITION, err, "released twice");

  CHECK_CODE(etcdr_semaphore_create(c1, name, 3, NULL, &wrong, &err), ETCDR_OK, err, "a handle asking for 3");
  CHECK_CODE(etcdr_semaphore_acquire(wrong, 2000, &p3, &err), ETCDR_FAILED_PRECONDITION, err,
             "its acquire: permit count mismatch");
  CHECK(err.reason == ETCDR_REASON_MISMATCH, "  ... reason mismatch (%s)", etcdr_reason_name(err.reason));

  etcdr_permit_destroy(p1);
  etcdr_permit_destroy(p2); /* releases */
  CHECK_CODE(etcdr_semaphore_acquire(a, 5000, &p3, &err), ETCDR_OK, err, "a permit after one was destroyed");
  CHECK_CODE(etcdr_permit_release(p3, &err), ETCDR_OK, err, "released");
  CHECK_CODE(etcdr_permit_release(pr.permit, &err), ETCDR_OK, err, "the async permit released");
  etcdr_permit_destroy(p3);
  etcdr_permit_destroy(pr.permit);
  etcdr_semaphore_destroy(a);
  etcdr_semaphore_destroy(b);
  etcdr_semaphore_destroy(wrong);
  etcdr_error_clear(&err);
}

/* The ordered layout: a queue and N permit slots; it refuses the default
 * layout's handles on the same name. */
static void test_ordered_semaphore(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  const char* name = name_of("ordered-sem");
  etcdr_recipe_options ro;
  etcdr_recipe_options_init(&ro, sizeof ro);
  ro.contender_layout = ETCDR_LAYOUT_ORDERED;
  etcdr_semaphore *a = NULL, *b = NULL, *holders = NULL;
  CHECK_CODE(etcdr_semaphore_create(c1, name, 2, &ro, &a, &err), ETCDR_OK, err, "an ordered semaphore of 2");
  CHECK_CODE(etcdr_semaphore_create(c2, name, 2, &ro, &b, &err), ETCDR_OK, err, "the same on client 2");
  etcdr_permit *p1 = NULL, *p2 = NULL, *p3 = NULL;
  CHECK_CODE(etcdr_semaphore_acquire(a, 5000, &p1, &err), ETCDR_OK, err, "permit 1");
  CHECK_CODE(etcdr_semaphore_acquire(b, 5000, &p2, &err), ETCDR_OK, err, "permit 2");
  CHECK(p1 && p2 && etcdr_permit_token(p1) < etcdr_permit_token(p2), "tokens in grant order");
  permit_result pr;
  check_a_waiter_gets_a_released_permit(b, p1, &pr);
  CHECK_CODE(etcdr_semaphore_create(c1, name, 2, NULL, &holders, &err), ETCDR_OK, err, "a default-layout handle");
  CHECK_CODE(etcdr_semaphore_acquire(holders, 2000, &p3, &err), ETCDR_FAILED_PRECONDITION, err,
             "its acquire: the other layout's semaphore");
  CHECK(err.reason == ETCDR_REASON_MISMATCH, "  ... reason mismatch (%s)", etcdr_reason_name(err.reason));
  CHECK_CODE(etcdr_permit_release(p2, &err), ETCDR_OK, err, "permit 2 released");
  CHECK_CODE(etcdr_permit_release(pr.permit, &err), ETCDR_OK, err, "the async permit released");
  etcdr_permit_destroy(p1);
  etcdr_permit_destroy(p2);
  etcdr_permit_destroy(pr.permit);
  etcdr_semaphore_destroy(a);
  etcdr_semaphore_destroy(b);
  etcdr_semaphore_destroy(holders);
  etcdr_error_clear(&err);
}

/* --- election ------------------------------------------------------------------- */

typedef struct {
  atomic_int became;  /* times it became leader */
  atomic_int ended;   /* terms ended */
  int64_t last_term;
  etcdr_code end_code;
} leadership_log;

static void on_change(void* user, int is_leader, int64_t term, const etcdr_error* why) {
  leadership_log* l = (leadership_log*)user;
  l->last_term = term;
  if (is_leader) {
    atomic_fetch_add(&l->became, 1);
  } else {
    l->end_code = why->code;
    atomic_fetch_add(&l->ended, 1);
  }
}

static void test_election(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  const char* name = name_of("election");
  etcdr_election *e1 = NULL, *e2 = NULL;
  leadership_log l1, l2;
  memset(&l1, 0, sizeof l1);
  memset(&l2, 0, sizeof l2);
  CHECK_CODE(etcdr_election_create(c1, name, "alpha", 5, NULL, &e1, &err), ETCDR_OK, err, "candidate alpha");
  CHECK_CODE(etcdr_election_create(c2, name, "beta", 4, NULL, &e2, &err), ETCDR_OK, err, "candidate beta");
  CHECK(etcdr_election_on_change(e1, on_change, &l1) == ETCDR_OK, "alpha listens");
  CHECK(etcdr_election_on_change(e2, on_change, &l2) == ETCDR_OK, "beta listens");

  char* v = NULL;
  size_t vlen = 0;
  int64_t term = 0, t1 = 0, t2 = 0;
  CHECK_CODE(etcdr_election_leader(e1, &v, &vlen, &term, &err), ETCDR_NOT_FOUND, err, "no leader yet");
  CHECK_CODE(etcdr_election_campaign(e1, 5000, &t1, &err), ETCDR_OK, err, "alpha campaigns");
  CHECK(t1 > 0 && etcdr_election_is_leader(e1) == 1, "  ... leads with term %lld", (long long)t1);
  CHECK_CODE(etcdr_election_campaign(e2, 300, &t2, &err), ETCDR_DEADLINE_EXCEEDED, err, "beta campaigns 300 ms");
  CHECK(etcdr_election_is_leader(e2) == 0, "  ... and does not lead");
  CHECK_CODE(etcdr_election_leader(e2, &v, &vlen, &term, &err), ETCDR_OK, err, "beta asks who leads");
  CHECK(v && vlen == 5 && memcmp(v, "alpha", 5) == 0 && term == t1, "  ... alpha, term %lld", (long long)term);
  etcdr_free(v);

  int was = -1;
  CHECK_CODE(etcdr_election_resign(e1, &was, &err), ETCDR_OK, err, "alpha resigns");
  CHECK(was == 1, "  ... it was leading");
  CHECK(wait_flag(&l1.ended, 5000) && l1.end_code == ETCDR_OK && l1.last_term == t1,
        "alpha hears its term %lld ended by resign (OK)", (long long)l1.last_term);
  CHECK(atomic_load(&l1.became) == 1, "  ... after hearing it began");
  /* Beta stayed in line after its timed-out campaign. */
  CHECK(wait_flag(&l2.became, 5000) && l2.last_term > t1, "beta hears it leads, term %lld > %lld",
        (long long)l2.last_term, (long long)t1);
  CHECK_CODE(etcdr_election_campaign(e2, 5000, &t2, &err), ETCDR_OK, err, "beta's campaign returns at once");
  CHECK(t2 == l2.last_term, "  ... with the same term");

  /* Async campaign: alpha waits behind beta until beta's handle goes. */
  acquire_result ar;
  memset(&ar, 0, sizeof ar);
  atomic_init(&ar.fired, 0);
  CHECK(etcdr_election_campaign_async(e1, 10000, on_acquired, &ar) == ETCDR_OK, "alpha campaigns again, async");
  sleep_ms(300);
  CHECK(atomic_load(&ar.fired) == 0, "  ... waits while beta leads");
  etcdr_election_destroy(e2);
  CHECK(wait_flag(&ar.fired, 5000) && ar.code == ETCDR_OK && ar.token > t2,
        "alpha leads once beta's handle is destroyed (term %lld)", (long long)ar.token);
  etcdr_election_destroy(e1);
  etcdr_error_clear(&err);
}

/* --- queue ---------------------------------------------------------------------- */

typedef struct {
  atomic_int fired;
  etcdr_code code;
  char value[64];
  size_t len;
} value_result;

static void on_value(void* user, const etcdr_error* result, const char* value, size_t len) {
  value_result* r = (value_result*)user;
  r->code = result->code;
  if (value != NULL && len < sizeof r->value) {
    memcpy(r->value, value, len);
    r->len = len;
  }
  atomic_store(&r->fired, 1);
}

/* Destroys the queue it was given from inside that queue's own callback. */
typedef struct {
  atomic_int fired;
  etcdr_queue* queue;
  etcdr_code code;
} self_destroy;

static void destroy_own_queue(void* user, const etcdr_error* result, const char* value, size_t len) {
  (void)value;
  (void)len;
  self_destroy* s = (self_destroy*)user;
  s->code = result->code;
  etcdr_queue_destroy(s->queue);
  atomic_store(&s->fired, 1);
}

static void test_queue(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  const char* name = name_of("queue");
  etcdr_queue *producer = NULL, *consumer = NULL;
  CHECK_CODE(etcdr_queue_create(c1, name, NULL, &producer, &err), ETCDR_OK, err, "queue producer");
  CHECK_CODE(etcdr_queue_create(c2, name, NULL, &consumer, &err), ETCDR_OK, err, "queue consumer");
  const char bin[] = {'c', '\0', 'd'};
  CHECK_CODE(etcdr_queue_push(producer, "first", 5, 5000, &err), ETCDR_OK, err, "push first");
  CHECK_CODE(etcdr_queue_push(producer, bin, 3, 5000, &err), ETCDR_OK, err, "push a binary item");
  int64_t size = 0;
  CHECK_CODE(etcdr_queue_size(consumer, &size, &err), ETCDR_OK, err, "size");
  CHECK(size == 2, "  ... 2 (%lld)", (long long)size);
  char* v = NULL;
  size_t len = 0;
  CHECK_CODE(etcdr_queue_pop(consumer, 5000, &v, &len, &err), ETCDR_OK, err, "pop");
  CHECK(v && len == 5 && memcmp(v, "first", 5) == 0, "  ... first, in order");
  etcdr_free(v);
  CHECK_CODE(etcdr_queue_pop(consumer, 5000, &v, &len, &err), ETCDR_OK, err, "pop");
  CHECK(v && len == 3 && memcmp(v, bin, 3) == 0, "  ... the binary item whole");
  etcdr_free(v);
  int found = -1;
  CHECK_CODE(etcdr_queue_try_pop(consumer, &found, &v, &len, &err), ETCDR_OK, err, "try_pop on the empty queue");
  CHECK(found == 0 && v == NULL, "  ... finds nothing");
  CHECK_CODE(etcdr_queue_pop(consumer, 200, &v, &len, &err), ETCDR_DEADLINE_EXCEEDED, err, "pop with 200 ms");

  value_result vr;
  memset(&vr, 0, sizeof vr);
  atomic_init(&vr.fired, 0);
  CHECK(etcdr_queue_pop_async(consumer, 10000, on_value, &vr) == ETCDR_OK, "pop_async on the empty queue");
  sleep_ms(200);
  CHECK(atomic_load(&vr.fired) == 0, "  ... waits");
  CHECK_CODE(etcdr_queue_push(producer, "late", 4, 5000, &err), ETCDR_OK, err, "push");
  CHECK(wait_flag(&vr.fired, 5000) && vr.code == ETCDR_OK && vr.len == 4 && memcmp(vr.value, "late", 4) == 0,
        "the async pop gets it");

  self_destroy sd;
  memset(&sd, 0, sizeof sd);
  atomic_init(&sd.fired, 0);
  CHECK_CODE(etcdr_queue_create(c2, name, NULL, &sd.queue, &err), ETCDR_OK, err, "another consumer");
  CHECK(etcdr_queue_pop_async(sd.queue, 10000, destroy_own_queue, &sd) == ETCDR_OK, "its pop_async");
  CHECK_CODE(etcdr_queue_push(producer, "last", 4, 5000, &err), ETCDR_OK, err, "push");
  CHECK(wait_flag(&sd.fired, 5000) && sd.code == ETCDR_OK, "its callback destroys the queue handle, no deadlock");
  etcdr_queue_destroy(producer);
  etcdr_queue_destroy(consumer);
  etcdr_error_clear(&err);
}

/* --- work queue ------------------------------------------------------------------- */

typedef struct {
  atomic_int fired;
  etcdr_code code;
  etcdr_reason reason;
  etcdr_work_item* item;
} item_result;

static void on_item(void* user, const etcdr_error* result, etcdr_work_item* item) {
  item_result* r = (item_result*)user;
  r->code = result->code;
  r->reason = result->reason;
  r->item = item;
  atomic_store(&r->fired, 1);
}

static etcdr_work_queue* make_work_queue(etcdr_client* c, const char* name, int64_t visibility_s, int32_t max) {
  etcdr_work_queue_options o;
  etcdr_work_queue_options_init(&o, sizeof o);
  o.visibility_timeout_s = visibility_s;
  o.max_deliveries = max;
  etcdr_work_queue* q = NULL;
  etcdr_error err = ETCDR_ERROR_INIT;
  CHECK_CODE(etcdr_work_queue_create(c, name, &o, &q, &err), ETCDR_OK, err, "work queue");
  etcdr_error_clear(&err);
  return q;
}

static int value_is(const etcdr_work_item* item, const char* expected) {
  size_t len = 0;
  const char* v = etcdr_work_item_value(item, &len);
  return v != NULL && len == strlen(expected) && memcmp(v, expected, len) == 0;
}

static void test_work_queue(etcdr_client* c1, etcdr_client* c2, const char* self, const char* endpoint) {
  etcdr_error err = ETCDR_ERROR_INIT;
  const char* name = name_of("work");
  etcdr_work_queue* a = make_work_queue(c1, name, 2, 5);
  etcdr_work_queue* b = make_work_queue(c2, name, 2, 5);
  etcdr_work_item *item = NULL, *again = NULL;

  /* nack: the item comes back, to anyone, as delivery 2. */
  CHECK_CODE(etcdr_work_queue_push(a, "job-1", 5, 0, 5000, &err), ETCDR_OK, err, "push job-1");
  CHECK_CODE(etcdr_work_queue_receive(a, 5000, &item, &err), ETCDR_OK, err, "a receives");
  CHECK(item && value_is(item, "job-1") && etcdr_work_item_attempt(item) == 1, "  ... job-1, delivery 1");
  char id[128];
  snprintf(id, sizeof id, "%s", item ? etcdr_work_item_id(item) : "");
  CHECK_CODE(etcdr_work_item_nack(item, 0, 5000, &err), ETCDR_OK, err, "a nacks it");
  CHECK_CODE(etcdr_work_queue_receive(b, 5000, &again, &err), ETCDR_OK, err, "b receives");
  CHECK(again && strcmp(etcdr_work_item_id(again), id) == 0 && etcdr_work_item_attempt(again) == 2,
        "  ... the same item, delivery 2");
  CHECK_CODE(etcdr_work_item_ack(again, 5000, &err), ETCDR_OK, err, "b acks");
  CHECK_CODE(etcdr_work_item_ack(item, 5000, &err), ETCDR_ABORTED, err, "a's stale ack of the nacked delivery");
  CHECK(err.reason == ETCDR_REASON_HOLD_LOST, "  ... hold_lost: a stale ack never succeeds");
  etcdr_work_item_destroy(item);
  etcdr_work_item_destroy(again);
  CHECK_CODE(etcdr_work_queue_receive(b, 300, &item, &err), ETCDR_DEADLINE_EXCEEDED, err,
             "an acked item is not delivered again");

  /* A destroyed, unsettled item is given back. */
  CHECK_CODE(etcdr_work_queue_push(a, "job-2", 5, 0, 5000, &err), ETCDR_OK, err, "push job-2");
  CHECK_CODE(etcdr_work_queue_receive(a, 5000, &item, &err), ETCDR_OK, err, "a receives");
  snprintf(id, sizeof id, "%s", item ? etcdr_work_item_id(item) : "");
  etcdr_work_item_destroy(item);
  /* The give-back is in flight while b's receive starts (b's view may not
   * have seen a's claim yet, and b's take of the item may fail): b still
   * gets the item as soon as its view sees it ready. */
  CHECK_CODE(etcdr_work_queue_receive(b, 5000, &again, &err), ETCDR_OK, err, "b receives after a dropped it");
  CHECK(again && strcmp(etcdr_work_item_id(again), id) == 0 && etcdr_work_item_attempt(again) == 2,
        "  ... the dropped item, delivery 2");
  CHECK_CODE(etcdr_work_item_ack(again, 5000, &err), ETCDR_OK, err, "acked");
  etcdr_work_item_destroy(again);

  /* A crashed consumer: its claim is neither acked nor revoked, so the item
   * comes back once its lease (the visibility timeout, 2 s) expires. */
  CHECK_CODE(etcdr_work_queue_push(a, "job-3", 5, 0, 5000, &err), ETCDR_OK, err, "push job-3");
  pid_t pid = 0;
  char* argv[] = {(char*)self, "--consume-and-crash", (char*)endpoint, (char*)name, NULL};
  int spawned = posix_spawn(&pid, self, NULL, NULL, argv, environ);
  int status = -1;
  CHECK(spawned == 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "a consumer process claims job-3 and dies (status %d)", status);
  int64_t start = now_ms();
  CHECK_CODE(etcdr_work_queue_receive(b, 10000, &item, &err), ETCDR_OK, err, "b receives");
  int64_t waited = now_ms() - start;
  CHECK(item && value_is(item, "job-3") && etcdr_work_item_attempt(item) == 2,
        "  ... job-3, delivery 2 (attempt %lld)", (long long)(item ? etcdr_work_item_attempt(item) : -1));
  CHECK(waited >= 500, "  ... only after the dead consumer's visibility timeout (%lld ms)", (long long)waited);
  CHECK_CODE(etcdr_work_item_ack(item, 5000, &err), ETCDR_OK, err, "acked");
  etcdr_work_item_destroy(item);

  /* receive_async: parked until an item comes. */
  item_result ir;
  memset(&ir, 0, sizeof ir);
  atomic_init(&ir.fired, 0);
  CHECK(etcdr_work_queue_receive_async(b, 10000, on_item, &ir) == ETCDR_OK, "receive_async on the empty queue");
  sleep_ms(200);
  CHECK(atomic_load(&ir.fired) == 0, "  ... waits");
  CHECK_CODE(etcdr_work_queue_push(a, "job-4", 5, 0, 5000, &err), ETCDR_OK, err, "push job-4");
  CHECK(wait_flag(&ir.fired, 5000) && ir.code == ETCDR_OK && ir.item && value_is(ir.item, "job-4"),
        "the async receive gets job-4");
  CHECK_CODE(etcdr_work_item_ack(ir.item, 5000, &err), ETCDR_OK, err, "acked");
  etcdr_work_item_destroy(ir.item);

  /* Destroying the queue ends a pending receive. */
  memset(&ir, 0, sizeof ir);
  atomic_init(&ir.fired, 0);
  CHECK(etcdr_work_queue_receive_async(b, -1, on_item, &ir) == ETCDR_OK, "another receive_async");
  sleep_ms(100);
  etcdr_work_queue_destroy(b);
  CHECK(wait_flag(&ir.fired, 5000) && ir.code == ETCDR_FAILED_PRECONDITION && ir.reason == ETCDR_REASON_CLOSED &&
            ir.item == NULL,
        "destroying the queue ends it with FAILED_PRECONDITION/closed (%s/%s)", etcdr_code_name(ir.code),
        etcdr_reason_name(ir.reason));
  etcdr_work_queue_destroy(a);

  /* Dead letters: with max_deliveries 1, a nacked item dies instead of
   * coming back; it can be listed, requeued and purged. */
  const char* dname = name_of("work-dead");
  etcdr_work_queue* d = make_work_queue(c1, dname, 2, 1);
  CHECK_CODE(etcdr_work_queue_push(d, "poison", 6, 0, 5000, &err), ETCDR_OK, err, "push poison");
  CHECK_CODE(etcdr_work_queue_receive(d, 5000, &item, &err), ETCDR_OK, err, "receive it");
  CHECK_CODE(etcdr_work_item_nack(item, 0, 5000, &err), ETCDR_OK, err, "nack it");
  etcdr_work_item_destroy(item);
  CHECK_CODE(etcdr_work_queue_receive(d, 500, &item, &err), ETCDR_DEADLINE_EXCEEDED, err,
             "it is not delivered a second time");
  etcdr_dead_letters* dl = NULL;
  CHECK_CODE(etcdr_work_queue_dead_letters(d, &dl, &err), ETCDR_OK, err, "dead letters");
  size_t dlen = 0;
  CHECK(etcdr_dead_letters_count(dl) == 1 && strcmp(etcdr_dead_letters_value(dl, 0, &dlen), "poison") == 0 &&
            dlen == 6 && etcdr_dead_letters_deliveries(dl, 0) == 1,
        "  ... one: poison, delivered once, because: %s", dl ? etcdr_dead_letters_reason(dl, 0) : "?");
  CHECK(etcdr_dead_letters_id(dl, 1) == NULL, "  ... index 1 is out of range");
  snprintf(id, sizeof id, "%s", dl && etcdr_dead_letters_count(dl) ? etcdr_dead_letters_id(dl, 0) : "");
  etcdr_dead_letters_free(dl);
  CHECK_CODE(etcdr_work_queue_requeue_dead(d, id, &err), ETCDR_OK, err, "requeue the dead letter");
  CHECK_CODE(etcdr_work_queue_receive(d, 5000, &item, &err), ETCDR_OK, err, "receive it again");
  CHECK(item && value_is(item, "poison") && etcdr_work_item_attempt(item) == 1, "  ... deliveries start over");
  CHECK_CODE(etcdr_work_item_ack(item, 5000, &err), ETCDR_OK, err, "acked");
  etcdr_work_item_destroy(item);
  CHECK_CODE(etcdr_work_queue_purge_dead(d, "no-such-id", &err), ETCDR_NOT_FOUND, err, "purge of an unknown id");
  etcdr_work_queue_destroy(d);
  etcdr_error_clear(&err);
}

static int consume_and_crash(const char* endpoint, const char* name) {
  etcdr_client* c = make_client(endpoint);
  etcdr_work_queue_options o;
  etcdr_work_queue_options_init(&o, sizeof o);
  o.visibility_timeout_s = 2;
  etcdr_work_queue* q = NULL;
  etcdr_work_item* item = NULL;
  etcdr_error err = ETCDR_ERROR_INIT;
  if (etcdr_work_queue_create(c, name, &o, &q, &err) != ETCDR_OK ||
      etcdr_work_queue_receive(q, 10000, &item, &err) != ETCDR_OK) {
    fprintf(stderr, "consumer: %s\n", err.message ? err.message : "?");
    _exit(1);
  }
  _exit(0); /* no destructor, no revoke: a crash as far as etcd can tell */
}

/* --- counter ---------------------------------------------------------------------- */

typedef struct {
  etcdr_counter* counter;
  int64_t values[50];
  int errors;
} incrementer;

static void* increment_50(void* arg) {
  incrementer* inc = (incrementer*)arg;
  etcdr_error err = ETCDR_ERROR_INIT;
  for (int i = 0; i < 50; ++i) {
    if (etcdr_counter_add(inc->counter, 1, 10000, &inc->values[i], &err) != ETCDR_OK) ++inc->errors;
  }
  etcdr_error_clear(&err);
  return NULL;
}

static int compare_int64(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

static void test_counter(etcdr_client* c1, etcdr_client* c2) {
  etcdr_error err = ETCDR_ERROR_INIT;
  const char* name = name_of("counter");
  etcdr_counter *a = NULL, *b = NULL;
  CHECK_CODE(etcdr_counter_create(c1, name, NULL, &a, &err), ETCDR_OK, err, "counter on client 1");
  CHECK_CODE(etcdr_counter_create(c2, name, NULL, &b, &err), ETCDR_OK, err, "counter on client 2");
  int64_t v = -1;
  CHECK_CODE(etcdr_counter_get(a, 5000, &v, &err), ETCDR_OK, err, "get");
  CHECK(v == 0, "  ... 0 while absent");
  CHECK_CODE(etcdr_counter_add(a, 1, 5000, &v, &err), ETCDR_OK, err, "increment");
  CHECK(v == 1, "  ... 1");
  CHECK_CODE(etcdr_counter_add(b, 10, 5000, &v, &err), ETCDR_OK, err, "add 10 from the other client");
  CHECK(v == 11, "  ... 11 (%lld)", (long long)v);

  incrementer i1 = {a, {0}, 0}, i2 = {b, {0}, 0};
  pthread_t t1, t2;
  pthread_create(&t1, NULL, increment_50, &i1);
  pthread_create(&t2, NULL, increment_50, &i2);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  CHECK(i1.errors == 0 && i2.errors == 0, "100 concurrent increments succeed");
  int64_t all[100];
  memcpy(all, i1.values, sizeof i1.values);
  memcpy(all + 50, i2.values, sizeof i2.values);
  qsort(all, 100, sizeof all[0], compare_int64);
  int distinct = 1;
  for (int i = 0; i < 100; ++i) distinct = distinct && all[i] == 12 + i;
  CHECK(distinct, "  ... each returned a distinct value, 12..111");
  CHECK_CODE(etcdr_counter_get(b, 5000, &v, &err), ETCDR_OK, err, "get");
  CHECK(v == 111, "  ... 111: no update lost (%lld)", (long long)v);
  int swapped = -1;
  CHECK_CODE(etcdr_counter_compare_and_set(a, 5, 0, 5000, &swapped, &err), ETCDR_OK, err, "cas 5 -> 0");
  CHECK(swapped == 0, "  ... refused (the value is 111)");
  CHECK_CODE(etcdr_counter_compare_and_set(a, 111, 0, 5000, &swapped, &err), ETCDR_OK, err, "cas 111 -> 0");
  CHECK(swapped == 1, "  ... done");
  CHECK_CODE(etcdr_counter_set(b, -7, 5000, &err), ETCDR_OK, err, "set -7");
  CHECK_CODE(etcdr_counter_get(a, 5000, &v, &err), ETCDR_OK, err, "get");
  CHECK(v == -7, "  ... -7");
  etcdr_counter_destroy(a);
  etcdr_counter_destroy(b);
  etcdr_error_clear(&err);
}

/* --- client lifecycle ------------------------------------------------------------- */

static void test_close(const char* endpoint) {
  etcdr_error err = ETCDR_ERROR_INIT;
  etcdr_client* c = make_client(endpoint);
  etcdr_queue* q = NULL;
  CHECK_CODE(etcdr_queue_create(c, name_of("closed-queue"), NULL, &q, &err), ETCDR_OK, err, "a queue");
  etcdr_client_destroy(c); /* the queue keeps the connection */
  CHECK_CODE(etcdr_queue_push(q, "x", 1, 5000, &err), ETCDR_OK, err, "the queue works after its client handle went");
  etcdr_queue_destroy(q);

  c = make_client(endpoint);
  etcdr_client_close(c);
  const char* k = name_of("closed");
  CHECK_CODE(etcdr_put(c, k, strlen(k), "v", 1, 0, 5000, NULL, &err), ETCDR_FAILED_PRECONDITION, err,
             "put on a closed client");
  CHECK(err.reason == ETCDR_REASON_CLOSED, "  ... reason closed");
  etcdr_client_destroy(c);
  etcdr_error_clear(&err);
}

/* The tests named on the command line (all when none is). */
static etcdr_discovery* make_discovery(etcdr_client* c, const char* base) {
  etcdr_discovery_options o;
  etcdr_discovery_options_init(&o, sizeof o);
  o.base_path = base;
  etcdr_discovery* d = NULL;
  etcdr_error err = ETCDR_ERROR_INIT;
  CHECK_CODE(etcdr_discovery_create(c, &o, &d, &err), ETCDR_OK, err, "discovery_create");
  etcdr_error_clear(&err);
  return d;
}

static etcdr_instance api_instance(const char* id, int32_t port) {
  etcdr_instance i;
  etcdr_instance_init(&i, sizeof i);
  i.name = "api";
  i.id = id;
  i.address = "10.0.0.7";
  i.port = port;
  return i;
}

static void test_discovery(etcdr_client* c1, etcdr_client* c2) {
  char base[192];
  snprintf(base, sizeof base, "%s/services", prefix);
  etcdr_error err = ETCDR_ERROR_INIT;
  etcdr_discovery* mine = make_discovery(c1, base);
  etcdr_discovery* theirs = make_discovery(c2, base);

  etcdr_instance a1 = api_instance("a1", 8081);
  a1.payload = "{\"zone\":\"eu\"}";
  etcdr_instance a2 = api_instance("a2", 8082);
  CHECK_CODE(etcdr_discovery_register(mine, &a1, 5000, &err), ETCDR_OK, err, "register a1");
  CHECK_CODE(etcdr_discovery_register(mine, &a2, 5000, &err), ETCDR_OK, err, "register a2");
  CHECK_CODE(etcdr_discovery_register(theirs, &a1, 5000, &err), ETCDR_ALREADY_EXISTS, err,
             "another process's id is refused");
  etcdr_instance bad = api_instance("bad", 1);
  bad.address = "";
  CHECK_CODE(etcdr_discovery_register(mine, &bad, 5000, &err), ETCDR_INVALID_ARGUMENT, err, "no address");
  bad = api_instance("bad", 70000);
  CHECK_CODE(etcdr_discovery_register(mine, &bad, 5000, &err), ETCDR_INVALID_ARGUMENT, err, "port out of range");

  char* names = NULL;
  size_t count = 0;
  CHECK_CODE(etcdr_discovery_query_names(theirs, 5000, &names, &count, &err), ETCDR_OK, err, "query names");
  CHECK(count == 1 && names != NULL && strcmp(names, "api") == 0, "one service, api");
  etcdr_free(names);
  etcdr_instance** found = NULL;
  CHECK_CODE(etcdr_discovery_query(theirs, "api", 5000, &found, &count, &err), ETCDR_OK, err, "query api");
  CHECK(count == 2 && strcmp(found[0]->id, "a1") == 0 && found[0]->port == 8081 && found[0]->payload != NULL &&
            strcmp(found[0]->payload, "{\"zone\":\"eu\"}") == 0 && found[0]->registration_time_ms > 0,
        "two instances, a1 first, with its payload and registration time");
  etcdr_instances_free(found, count);

  etcdr_provider_options po;
  etcdr_provider_options_init(&po, sizeof po);
  po.errors_before_ejection = 1;
  po.ejection_time_ms = 60000;
  etcdr_provider* provider = NULL;
  CHECK_CODE(etcdr_provider_create(theirs, "api", &po, &provider, &err), ETCDR_OK, err, "provider_create");
  etcdr_instance* first = NULL;
  etcdr_instance* second = NULL;
  CHECK_CODE(etcdr_provider_pick(provider, 5000, &first, &err), ETCDR_OK, err, "pick");
  CHECK_CODE(etcdr_provider_pick(provider, 5000, &second, &err), ETCDR_OK, err, "pick again");
  CHECK(first && second && strcmp(first->id, second->id) != 0, "round robin: two different instances");
  CHECK_CODE(etcdr_provider_note_error(provider, first->id, &err), ETCDR_OK, err, "note_error");
  int others = 1;
  for (int k = 0; k < 10; ++k) {
    etcdr_instance* p = NULL;
    if (etcdr_provider_pick(provider, 5000, &p, &err) != ETCDR_OK || strcmp(p->id, first->id) == 0) others = 0;
    etcdr_instance_free(p);
  }
  CHECK(others, "an ejected instance is left out");
  etcdr_instance_free(first);
  etcdr_instance_free(second);

  a2.disabled = 1;
  CHECK_CODE(etcdr_discovery_update(mine, &a2, 5000, &err), ETCDR_OK, err, "update: disable a2");
  int64_t give_up = now_ms() + 5000;
  etcdr_code picked = ETCDR_OK;
  while (now_ms() < give_up) {
    etcdr_instance* p = NULL;
    picked = etcdr_provider_pick(provider, 5000, &p, &err);
    etcdr_instance_free(p);
    if (picked == ETCDR_NOT_FOUND) break;
    sleep_ms(10);
  }
  CHECK(picked == ETCDR_NOT_FOUND, "a1 ejected and a2 disabled: none to pick (%s)", etcdr_code_name(picked));

  int was_ours = 0;
  CHECK_CODE(etcdr_discovery_unregister(mine, "api", "a1", 5000, &was_ours, &err), ETCDR_OK, err, "unregister a1");
  CHECK(was_ours == 1, "a1 was ours");
  /* Destroying the handle starts a2's delete without waiting for it (as
   * every destroy releases what it holds); the client drains it. */
  etcdr_discovery_destroy(mine);
  give_up = now_ms() + 5000;
  etcdr_code queried = ETCDR_OK;
  for (;;) {
    found = NULL;
    count = 0;
    queried = etcdr_discovery_query(theirs, "api", 5000, &found, &count, &err);
    if (queried != ETCDR_OK || count == 0 || now_ms() >= give_up) break;
    etcdr_instances_free(found, count);
    sleep_ms(10);
  }
  CHECK(queried == ETCDR_OK && count == 0 && found == NULL,
        "destroying the handle removed its registrations (%s, %zu left)", etcdr_code_name(queried), count);
  etcdr_instances_free(found, count);
  etcdr_provider_destroy(provider);
  etcdr_discovery_destroy(theirs);
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
  if (argc == 4 && strcmp(argv[1], "--consume-and-crash") == 0) return consume_and_crash(argv[2], argv[3]);
  if (argc < 2) {
    fprintf(stderr, "usage: %s [TEST...] ENDPOINT\n", argv[0]);
    return 2;
  }
  const char* endpoint = argv[argc - 1];
  only = argv + 1;
  only_count = argc - 2;
  snprintf(prefix, sizeof prefix, "/c_api_test/%ld-%lld", (long)getpid(), (long long)now_ms());

  /* posix_spawn of this very program, for the crashed consumer. */
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 2;
  self[n] = '\0';

  etcdr_client* c1 = make_client(endpoint);
  etcdr_client* c2 = make_client(endpoint);
  if (selected("errors")) test_version_and_bad_input(c1);
  if (selected("kv")) test_kv_and_leases(c1);
  if (selected("mutex")) test_mutex(c1, c2);
  if (selected("mutex")) test_ordered_mutex(c1, c2);
  if (selected("semaphore")) test_semaphore(c1, c2);
  if (selected("semaphore")) test_ordered_semaphore(c1, c2);
  if (selected("election")) test_election(c1, c2);
  if (selected("queue")) test_queue(c1, c2);
  if (selected("work_queue")) test_work_queue(c1, c2, self, endpoint);
  if (selected("counter")) test_counter(c1, c2);
  if (selected("discovery")) test_discovery(c1, c2);
  if (selected("close")) test_close(endpoint);
  count_and_delete(c1, prefix);
  etcdr_client_destroy(c1);
  etcdr_client_destroy(c2);
  printf("%d failed\n", failures);
  return failures > 100 ? 100 : failures;
}
