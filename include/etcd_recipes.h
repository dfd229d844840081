/* etcd_recipes.h — the C API of etcd-recipes: a stable ABI over the client
 * and the main recipes, for C programs and for other languages' FFIs
 * (Python ctypes/cffi, Go cgo, Rust bindgen). See docs/c_api.md.
 *
 *   etcdr_client_options o;
 *   etcdr_client_options_init(&o, sizeof o);
 *   o.endpoints = "127.0.0.1:2379";
 *   etcdr_error err = ETCDR_ERROR_INIT;
 *   etcdr_client* c;
 *   if (etcdr_client_create(&o, &c, &err) != ETCDR_OK) { puts(err.message); ... }
 *   etcdr_mutex* m;
 *   etcdr_mutex_create(c, "/locks/orders", NULL, &m, &err);
 *   int64_t token;
 *   if (etcdr_mutex_acquire(m, 5000, &token, &err) == ETCDR_OK) {
 *     ... pass token to what the lock protects ...
 *     if (etcdr_mutex_release(m, &err) != ETCDR_OK) { the hold had been lost }
 *   }
 *   etcdr_mutex_destroy(m);
 *   etcdr_client_destroy(c);
 *   etcdr_error_clear(&err);
 *
 * Rules shared by every function (docs/c_api.md has the details):
 * - Errors: a fallible function returns an etcdr_code (ETCDR_OK = 0; the
 *   other values are gRPC's status codes, the same numbers as the C++
 *   etcd::StatusCode) and, when its `err` argument is not NULL, fills it
 *   with the code, a finer reason (etcdr_reason, the C++ etcd::Errc) and a
 *   message. `err` must start zeroed (ETCDR_ERROR_INIT); every call
 *   overwrites it (freeing the message it held), so one etcdr_error can
 *   serve a sequence of calls and is freed once with etcdr_error_clear().
 * - Bad input (NULL handle or out-pointer, empty name, permits < 1, ...) is
 *   ETCDR_INVALID_ARGUMENT, before anything is sent.
 * - Timeouts are milliseconds. For an operation that waits for something
 *   (acquire, campaign, pop, receive) a negative timeout waits until it
 *   happens, the handle is destroyed or the hold's session is lost; for any
 *   other call a negative timeout means the client's default timeout. A
 *   timeout that passes gives ETCDR_DEADLINE_EXCEEDED. Lease TTLs are whole
 *   seconds (etcd's unit) and their names end in _s.
 * - Keys and values may be binary: they are passed as pointer + length.
 *   Names of recipes are NUL-terminated strings. Buffers returned to the
 *   caller are NUL-terminated for convenience (the length excludes the NUL)
 *   and freed with etcdr_free().
 * - Options structs start with `size`: fill them with the _init() function
 *   (passing sizeof of your struct) and change what you need. Every field
 *   left zero means the library's default, and a library never reads past
 *   `size`, so programs built against an older header keep working with a
 *   newer library (and fields are only ever appended).
 * - Callbacks receive the `user` pointer given with them and run on the
 *   client's callback threads, never on a gRPC thread and never inside the
 *   call that registered them. They must not block for long.
 * - Handles may be used from several threads at once. A handle must not be
 *   destroyed while another thread is inside a call on it; an asynchronous
 *   call still pending when its handle is destroyed completes (usually with
 *   ETCDR_FAILED_PRECONDITION, reason ETCDR_REASON_CLOSED) and its callback
 *   runs exactly once, so its `user` pointer must stay valid until then.
 */
#ifndef ETCD_RECIPES_H
#define ETCD_RECIPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- Version and export ----------------------------------------------- */

#define ETCDR_VERSION_MAJOR 0
#define ETCDR_VERSION_MINOR 1
#define ETCDR_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH, comparable with etcdr_version(). */
#define ETCDR_VERSION (ETCDR_VERSION_MAJOR * 10000 + ETCDR_VERSION_MINOR * 100 + ETCDR_VERSION_PATCH)

#if defined(_WIN32)
#if defined(ETCDR_BUILDING_LIBRARY)
#define ETCDR_API __declspec(dllexport)
#else
#define ETCDR_API __declspec(dllimport)
#endif
#elif defined(__GNUC__)
#define ETCDR_API __attribute__((visibility("default")))
#else
#define ETCDR_API
#endif

/* On calls whose failure means the work they protected may have raced with
 * someone else (release, ack): ignoring their result is a bug. */
#if defined(__GNUC__)
#define ETCDR_MUST_CHECK __attribute__((warn_unused_result))
#else
#define ETCDR_MUST_CHECK
#endif

/* The version of the library loaded at run time (ETCDR_VERSION's encoding)
 * and as text ("0.1.0"). */
ETCDR_API int etcdr_version(void);
ETCDR_API const char* etcdr_version_string(void);

/* --- Errors ------------------------------------------------------------ */

/* Return codes: gRPC's status codes (etcd::StatusCode in C++). */
typedef int32_t etcdr_code;
enum {
  ETCDR_OK = 0,
  ETCDR_CANCELLED = 1,
  ETCDR_UNKNOWN = 2,
  ETCDR_INVALID_ARGUMENT = 3,
  ETCDR_DEADLINE_EXCEEDED = 4,
  ETCDR_NOT_FOUND = 5,
  ETCDR_ALREADY_EXISTS = 6,
  ETCDR_PERMISSION_DENIED = 7,
  ETCDR_RESOURCE_EXHAUSTED = 8,
  ETCDR_FAILED_PRECONDITION = 9,
  ETCDR_ABORTED = 10,
  ETCDR_OUT_OF_RANGE = 11,
  ETCDR_UNIMPLEMENTED = 12,
  ETCDR_INTERNAL = 13,
  ETCDR_UNAVAILABLE = 14,
  ETCDR_DATA_LOSS = 15,
  ETCDR_UNAUTHENTICATED = 16
};

/* What went wrong in etcd's (or the library's) terms (etcd::Errc in C++;
 * docs/errors.md says what to do about each). */
typedef int32_t etcdr_reason;
enum {
  ETCDR_REASON_NONE = 0,
  ETCDR_REASON_COMPACTED = 1,
  ETCDR_REASON_FUTURE_REVISION = 2,
  ETCDR_REASON_LEASE_NOT_FOUND = 3,
  ETCDR_REASON_LEASE_EXPIRED = 4,
  ETCDR_REASON_KEY_NOT_FOUND = 5,
  ETCDR_REASON_OUTCOME_UNKNOWN = 6, /* a write may or may not have been applied */
  ETCDR_REASON_CLOSED = 7,          /* the handle (or client) was closed */
  ETCDR_REASON_NO_LEADER = 8,
  ETCDR_REASON_AUTH_FAILED = 9,
  ETCDR_REASON_TOKEN_EXPIRED = 10,
  ETCDR_REASON_PERMISSION_DENIED = 11,
  ETCDR_REASON_REQUEST_TOO_LARGE = 12,
  ETCDR_REASON_TOO_MANY_OPS = 13,
  ETCDR_REASON_DUPLICATE_KEY = 14,
  ETCDR_REASON_BAD_ARGUMENT = 15, /* rejected before anything was sent */
  ETCDR_REASON_WATCH_CANCELED = 16,
  ETCDR_REASON_RESYNC_NEEDED = 17,
  ETCDR_REASON_HOLD_LOST = 18, /* a lock hold, permit, leadership or work claim is gone */
  ETCDR_REASON_MISMATCH = 19,  /* stored configuration differs (a semaphore's permits) */
  ETCDR_REASON_DECODE_FAILED = 20,
  ETCDR_REASON_UNREACHABLE = 21 /* no endpoint took a connection (refused, unknown host): nothing was sent */
};

/* The outcome of a call. `message` (NULL when code is ETCDR_OK) is for
 * people, not for parsing. Start with ETCDR_ERROR_INIT; free with
 * etcdr_error_clear(). In a callback the library owns it: read it there. */
typedef struct etcdr_error {
  etcdr_code code;
  etcdr_reason reason;
  char* message;
} etcdr_error;

#define ETCDR_ERROR_INIT {0, 0, NULL}

/* Frees the message and resets `err` to OK. NULL is allowed. */
ETCDR_API void etcdr_error_clear(etcdr_error* err);
/* "DEADLINE_EXCEEDED", "hold_lost": static strings ("?" for unknown values). */
ETCDR_API const char* etcdr_code_name(etcdr_code code);
ETCDR_API const char* etcdr_reason_name(etcdr_reason reason);

/* Frees a buffer returned by the library. NULL is allowed. */
ETCDR_API void etcdr_free(void* buffer);

/* --- Client -------------------------------------------------------------- */

typedef struct etcdr_client etcdr_client;

typedef struct etcdr_client_options {
  size_t size; /* set by etcdr_client_options_init */
  /* "host:port[,host:port...]": the members; the client fails over
   * between them. Required. */
  const char* endpoints;
  /* etcd authentication (both, or neither). */
  const char* user;
  const char* password;
  /* TLS: set ca_file to use TLS; cert_file + key_file for client
   * certificates; server_name overrides the name checked. */
  const char* ca_file;
  const char* cert_file;
  const char* key_file;
  const char* server_name;
  /* Every key the client (and every recipe over it) uses lives under this
   * prefix, invisible to the caller. */
  const char* namespace_prefix;
  /* Deadline of a call given a negative timeout. 0: 5000 ms. */
  int64_t default_timeout_ms;
  /* Threads that run this client's callbacks. 0: 2. */
  int32_t callback_threads;
} etcdr_client_options;

/* Zeroes the first `size` bytes of `options` (every field: its default)
 * and sets options->size = size. Pass sizeof your struct. */
ETCDR_API void etcdr_client_options_init(etcdr_client_options* options, size_t size);

/* Makes a client; no I/O happens here (etcdr_client_ping checks the
 * connection). Unusable options are ETCDR_INVALID_ARGUMENT. */
ETCDR_API etcdr_code etcdr_client_create(const etcdr_client_options* options, etcdr_client** out, etcdr_error* err);
/* A linearizable read that needs the cluster's quorum: is etcd there? */
ETCDR_API etcdr_code etcdr_client_ping(etcdr_client* client, int64_t timeout_ms, etcdr_error* err);
/* Closes the connection now: calls in flight and later calls of this
 * client and of every recipe made from it fail with ETCDR_REASON_CLOSED.
 * Idempotent. The handle stays valid until destroyed. */
ETCDR_API void etcdr_client_close(etcdr_client* client);
/* Lets go of the handle. Recipe handles made from the client keep the
 * connection open until they are destroyed too; then it closes. */
ETCDR_API void etcdr_client_destroy(etcdr_client* client);

/* --- Key/value ----------------------------------------------------------- */

/* The value of `key` (to be freed with etcdr_free) and optionally its mod
 * revision. An absent key is ETCDR_NOT_FOUND (reason KEY_NOT_FOUND). */
ETCDR_API etcdr_code etcdr_get(etcdr_client* client, const char* key, size_t key_len, int64_t timeout_ms,
                               char** value, size_t* value_len, int64_t* mod_revision, etcdr_error* err);
/* Puts `value` (bound to `lease` unless it is 0); `revision` (may be NULL)
 * gets the revision of the write. */
ETCDR_API etcdr_code etcdr_put(etcdr_client* client, const char* key, size_t key_len, const char* value,
                               size_t value_len, int64_t lease, int64_t timeout_ms, int64_t* revision,
                               etcdr_error* err);
/* Deletes `key` (with `prefix` non-zero: every key starting with it);
 * `deleted` (may be NULL) gets how many keys went. */
ETCDR_API etcdr_code etcdr_delete(etcdr_client* client, const char* key, size_t key_len, int prefix,
                                  int64_t timeout_ms, int64_t* deleted, etcdr_error* err);
/* One transaction: puts `value` only if the key's mod revision is
 * `expected_mod_revision` (0: only if the key is absent). `succeeded`
 * gets 1 if it wrote, 0 if the comparison failed (not an error). */
ETCDR_API etcdr_code etcdr_compare_and_put(etcdr_client* client, const char* key, size_t key_len,
                                           const char* value, size_t value_len, int64_t expected_mod_revision,
                                           int64_t lease, int64_t timeout_ms, int* succeeded, etcdr_error* err);

/* --- Leases -------------------------------------------------------------- */

typedef struct etcdr_lease etcdr_lease;

/* A lease of `ttl_s` seconds that expires unless kept alive. */
ETCDR_API etcdr_code etcdr_lease_grant(etcdr_client* client, int64_t ttl_s, int64_t timeout_ms, int64_t* lease_id,
                                       etcdr_error* err);
ETCDR_API etcdr_code etcdr_lease_revoke(etcdr_client* client, int64_t lease_id, int64_t timeout_ms,
                                        etcdr_error* err);
/* Keeps lease `lease_id` (granted with `ttl_s`) alive over the client's
 * shared keep-alive stream until the handle is destroyed, which revokes it
 * (without waiting). */
ETCDR_API etcdr_code etcdr_lease_keep_alive(etcdr_client* client, int64_t lease_id, int64_t ttl_s, etcdr_lease** out,
                                            etcdr_error* err);
/* 1 until the lease is known to be lost (expired, revoked elsewhere). */
ETCDR_API int etcdr_lease_alive(const etcdr_lease* lease);
/* Runs `on_lost(user, why)` once if the lease is lost (at once, on the
 * callback threads, if it already is). One callback per handle: a new one
 * replaces the old, NULL removes it. */
ETCDR_API etcdr_code etcdr_lease_on_lost(etcdr_lease* lease, void (*on_lost)(void* user, const etcdr_error* why),
                                         void* user);
ETCDR_API void etcdr_lease_destroy(etcdr_lease* lease);

/* --- Options shared by the recipes --------------------------------------- */

typedef struct etcdr_recipe_options {
  size_t size; /* set by etcdr_recipe_options_init */
  /* Shows in keys' values and in errors. NULL: "<hostname>:<pid>". */
  const char* client_id;
  /* TTL of the session lease behind holds (lock, permits, leadership):
   * how long a hold outlives a dead process. 0: 10 s. */
  int64_t session_ttl_s;
  /* The key layout of the mutex, an election and the semaphore (and of
   * the C++ read-write lock and leader selector): ETCDR_LAYOUT_GO (0,
   * etcd's Go concurrency layout, that of `etcdctl lock` and `etcdctl
   * elect`, and the semaphore's holders layout; each acquisition costs etcd
   * O(waiters)) or ETCDR_LAYOUT_ORDERED (keys in commit order: the same
   * cost at any number of waiters; a mutex or an election still excludes
   * together with the Go layout, while the two semaphore layouts refuse
   * each other). */
  int contender_layout;
} etcdr_recipe_options;

enum { ETCDR_LAYOUT_GO = 0, ETCDR_LAYOUT_ORDERED = 1 };

ETCDR_API void etcdr_recipe_options_init(etcdr_recipe_options* options, size_t size);

/* Loss callbacks (mutex, read-write lock, permit, transient key, lease):
 * `why` says how it was lost. */
typedef void (*etcdr_lost_cb)(void* user, const etcdr_error* why);

/* --- Mutex (etcd's own lock layout: interoperates with `etcdctl lock`) --- */

typedef struct etcdr_mutex etcdr_mutex;

/* `options` may be NULL. No I/O. */
ETCDR_API etcdr_code etcdr_mutex_create(etcdr_client* client, const char* name, const etcdr_recipe_options* options,
                                        etcdr_mutex** out, etcdr_error* err);
/* Waits until held; `token` (may be NULL) gets the fencing token, which
 * strictly increases from one holder to the next. A handle holds at most
 * once: acquiring again while holding is ETCDR_FAILED_PRECONDITION. */
ETCDR_API etcdr_code etcdr_mutex_acquire(etcdr_mutex* mutex, int64_t timeout_ms, int64_t* token, etcdr_error* err);
/* Takes the lock only if it is free now: `acquired` gets 1 (and `token`
 * the fencing token) or 0. */
ETCDR_API etcdr_code etcdr_mutex_try_acquire(etcdr_mutex* mutex, int* acquired, int64_t* token, etcdr_error* err);
/* etcdr_mutex_acquire without blocking: `done(user, result, token)` runs
 * once on the client's callback threads. */
typedef void (*etcdr_acquire_cb)(void* user, const etcdr_error* result, int64_t token);
ETCDR_API etcdr_code etcdr_mutex_acquire_async(etcdr_mutex* mutex, int64_t timeout_ms, etcdr_acquire_cb done,
                                               void* user);
/* Releases the hold. ETCDR_OK if it was still intact; ETCDR_ABORTED with
 * reason HOLD_LOST if it had been lost (the work it protected may have
 * raced with another holder); ETCDR_FAILED_PRECONDITION if nothing was held. */
ETCDR_API ETCDR_MUST_CHECK etcdr_code etcdr_mutex_release(etcdr_mutex* mutex, etcdr_error* err);
/* Advisory: 1 while held and not seen lost. */
ETCDR_API int etcdr_mutex_is_held(const etcdr_mutex* mutex);
/* Runs `on_lost(user, why)` each time a hold of this handle is lost (lease
 * expired, key deleted by someone else), not when it is released. One
 * callback per handle; NULL removes it. After this returns the previous
 * callback does not run again (a run in progress on another thread is
 * waited for, unless this is called from that callback). */
ETCDR_API etcdr_code etcdr_mutex_on_lost(etcdr_mutex* mutex, etcdr_lost_cb on_lost, void* user);
/* Cooperative release: asks whoever holds the name now (any process, any
 * handle) to let go, by marking the holder's key; releasing stays the
 * holder's choice. `asked` (may be NULL) gets 1 if a holder was asked (now
 * or before), 0 if the name is free. One read and one write. A negative
 * timeout is the client's default. */
ETCDR_API etcdr_code etcdr_mutex_request_release(etcdr_mutex* mutex, int64_t timeout_ms, int* asked,
                                                 etcdr_error* err);
/* Runs `on_request(user)` on the client's callback threads (never a gRPC
 * thread) each time a hold of this handle is asked to release. One
 * callback per handle; NULL removes it (as etcdr_mutex_on_lost). */
typedef void (*etcdr_release_requested_cb)(void* user);
ETCDR_API etcdr_code etcdr_mutex_on_release_requested(etcdr_mutex* mutex, etcdr_release_requested_cb on_request,
                                                      void* user);
/* Releases a hold (without waiting), fails pending acquires with reason
 * CLOSED and frees the handle. Its on_lost callback never runs after this
 * returns. NULL is allowed. */
ETCDR_API void etcdr_mutex_destroy(etcdr_mutex* mutex);

/* --- Semaphore ----------------------------------------------------------- */

typedef struct etcdr_semaphore etcdr_semaphore;
typedef struct etcdr_permit etcdr_permit;

/* At most `permits` (>= 1) holders of `name` at a time, FIFO. Everyone
 * using one name must ask for the same count (else ETCDR_FAILED_PRECONDITION,
 * reason MISMATCH, at acquire) until etcdr_semaphore_resize changes it. */
ETCDR_API etcdr_code etcdr_semaphore_create(etcdr_client* client, const char* name, int32_t permits,
                                            const etcdr_recipe_options* options, etcdr_semaphore** out,
                                            etcdr_error* err);
/* Waits for a permit: `permit` gets a handle the caller owns. */
ETCDR_API etcdr_code etcdr_semaphore_acquire(etcdr_semaphore* sem, int64_t timeout_ms, etcdr_permit** permit,
                                             etcdr_error* err);
/* A permit only if one is free now: `permit` gets it, or NULL. */
ETCDR_API etcdr_code etcdr_semaphore_try_acquire(etcdr_semaphore* sem, etcdr_permit** permit, etcdr_error* err);
/* `done(user, result, permit)`: the callback owns `permit` (NULL on error). */
typedef void (*etcdr_permit_cb)(void* user, const etcdr_error* result, etcdr_permit* permit);
ETCDR_API etcdr_code etcdr_semaphore_acquire_async(etcdr_semaphore* sem, int64_t timeout_ms, etcdr_permit_cb done,
                                                   void* user);
/* Permits not taken (or waited for) now; one read, within the client's
 * default timeout. */
ETCDR_API etcdr_code etcdr_semaphore_available(etcdr_semaphore* sem, int32_t* available, etcdr_error* err);
/* Changes the permit count for everyone using the semaphore (handles made
 * with the old count adopt it): growing admits waiters at once; shrinking
 * takes no permit back but admits nobody until fewer than `permits` are
 * held. permits < 1 is ETCDR_INVALID_ARGUMENT with nothing written; the
 * other layout's semaphore is FAILED_PRECONDITION/MISMATCH. One read and
 * one write; a negative timeout is the client's default. */
ETCDR_API etcdr_code etcdr_semaphore_resize(etcdr_semaphore* sem, int32_t permits, int64_t timeout_ms,
                                            etcdr_error* err);
/* Fails pending acquires (reason CLOSED) and frees the handle; permits
 * already granted stay held until released or destroyed. */
ETCDR_API void etcdr_semaphore_destroy(etcdr_semaphore* sem);

/* The permit's fencing token (distinct between concurrent permits). */
ETCDR_API int64_t etcdr_permit_token(const etcdr_permit* permit);
ETCDR_API int etcdr_permit_is_held(const etcdr_permit* permit);
/* As etcdr_mutex_release. The handle stays to be destroyed. */
ETCDR_API ETCDR_MUST_CHECK etcdr_code etcdr_permit_release(etcdr_permit* permit, etcdr_error* err);
/* Releases the permit if still held (without waiting) and frees it. */
ETCDR_API void etcdr_permit_destroy(etcdr_permit* permit);

/* --- Election (etcd's own layout: interoperates with `etcdctl elect`) ---- */

typedef struct etcdr_election etcdr_election;

/* A candidate for leadership of `name`, proposing `value` (what observers
 * and `etcdctl elect --listen` show). No I/O. */
ETCDR_API etcdr_code etcdr_election_create(etcdr_client* client, const char* name, const char* value,
                                           size_t value_len, const etcdr_recipe_options* options,
                                           etcdr_election** out, etcdr_error* err);
/* Joins the election (if not in it) and waits until this candidate leads;
 * `term` (may be NULL) gets the term token (strictly increasing from one
 * leader to the next). After a timeout the candidate stays in line (and
 * may still become leader: see on_change); etcdr_election_resign leaves.
 * A candidate that loses leadership joins again at the back of the line. */
ETCDR_API etcdr_code etcdr_election_campaign(etcdr_election* election, int64_t timeout_ms, int64_t* term,
                                             etcdr_error* err);
ETCDR_API etcdr_code etcdr_election_campaign_async(etcdr_election* election, int64_t timeout_ms,
                                                   etcdr_acquire_cb done, void* user);
/* Advisory: 1 while this candidate leads. */
ETCDR_API int etcdr_election_is_leader(const etcdr_election* election);
/* The current leader's value (freed with etcdr_free) and term, as etcd has
 * them now (one read, within the client's default timeout);
 * ETCDR_NOT_FOUND when there is no leader. */
ETCDR_API etcdr_code etcdr_election_leader(etcdr_election* election, char** value, size_t* value_len, int64_t* term,
                                           etcdr_error* err);
/* Leaves the election; `was_leader` (may be NULL) gets 1 if this candidate
 * was leading with its key intact. */
ETCDR_API etcdr_code etcdr_election_resign(etcdr_election* election, int* was_leader, etcdr_error* err);
/* Leadership changes of this candidate: (is_leader 1, its term, why OK)
 * when it becomes leader; (0, the ended term, why) when a term ends: why
 * is OK after resign, ABORTED/HOLD_LOST when lost, reason CLOSED on
 * destroy. In order. One callback per handle; NULL removes it (as
 * etcdr_mutex_on_lost). */
typedef void (*etcdr_leadership_cb)(void* user, int is_leader, int64_t term, const etcdr_error* why);
ETCDR_API etcdr_code etcdr_election_on_change(etcdr_election* election, etcdr_leadership_cb on_change, void* user);
/* Leaves the election (without waiting) and frees the handle. */
ETCDR_API void etcdr_election_destroy(etcdr_election* election);

/* --- Queue: each item to exactly one consumer, FIFO ---------------------- */

typedef struct etcdr_queue etcdr_queue;

ETCDR_API etcdr_code etcdr_queue_create(etcdr_client* client, const char* name, const etcdr_recipe_options* options,
                                        etcdr_queue** out, etcdr_error* err);
/* Adds an item at the tail (one transaction; a retry never duplicates it). */
ETCDR_API etcdr_code etcdr_queue_push(etcdr_queue* queue, const char* value, size_t value_len, int64_t timeout_ms,
                                      etcdr_error* err);
/* Takes the head item, waiting while the queue is empty. `value` is freed
 * with etcdr_free. */
ETCDR_API etcdr_code etcdr_queue_pop(etcdr_queue* queue, int64_t timeout_ms, char** value, size_t* value_len,
                                     etcdr_error* err);
/* The head item if there is one now: `found` gets 1 (and `value` it) or 0. */
ETCDR_API etcdr_code etcdr_queue_try_pop(etcdr_queue* queue, int* found, char** value, size_t* value_len,
                                         etcdr_error* err);
/* `done(user, result, value, value_len)`: `value` is the library's, valid
 * during the callback only (NULL on error). */
typedef void (*etcdr_value_cb)(void* user, const etcdr_error* result, const char* value, size_t value_len);
ETCDR_API etcdr_code etcdr_queue_pop_async(etcdr_queue* queue, int64_t timeout_ms, etcdr_value_cb done, void* user);
/* Items in the queue now (advisory). */
ETCDR_API etcdr_code etcdr_queue_size(etcdr_queue* queue, int64_t* size, etcdr_error* err);
ETCDR_API void etcdr_queue_destroy(etcdr_queue* queue);

/* --- Work queue: at-least-once ------------------------------------------- */

typedef struct etcdr_work_queue etcdr_work_queue;
typedef struct etcdr_work_item etcdr_work_item;
typedef struct etcdr_dead_letters etcdr_dead_letters;

typedef struct etcdr_work_queue_options {
  size_t size; /* set by etcdr_work_queue_options_init */
  const char* client_id;
  /* How long the items of a consumer that died stay hidden (the TTL of
   * the consumer's lease, renewed while it lives). 0: 30 s. */
  int64_t visibility_timeout_s;
  /* Deliveries of an item before it goes to the dead letters. 0: 5. */
  int32_t max_deliveries;
} etcdr_work_queue_options;

ETCDR_API void etcdr_work_queue_options_init(etcdr_work_queue_options* options, size_t size);
ETCDR_API etcdr_code etcdr_work_queue_create(etcdr_client* client, const char* name,
                                             const etcdr_work_queue_options* options, etcdr_work_queue** out,
                                             etcdr_error* err);
/* Adds an item, ready now (delay_ms 0) or after delay_ms. */
ETCDR_API etcdr_code etcdr_work_queue_push(etcdr_work_queue* queue, const char* value, size_t value_len,
                                           int64_t delay_ms, int64_t timeout_ms, etcdr_error* err);
/* Claims the first ready item, waiting while there is none; `item` gets a
 * handle the caller owns. */
ETCDR_API etcdr_code etcdr_work_queue_receive(etcdr_work_queue* queue, int64_t timeout_ms, etcdr_work_item** item,
                                              etcdr_error* err);
/* `done(user, result, item)`: the callback owns `item` (NULL on error). */
typedef void (*etcdr_work_item_cb)(void* user, const etcdr_error* result, etcdr_work_item* item);
ETCDR_API etcdr_code etcdr_work_queue_receive_async(etcdr_work_queue* queue, int64_t timeout_ms,
                                                    etcdr_work_item_cb done, void* user);
/* Items in the queue (ready, delayed and claimed). */
ETCDR_API etcdr_code etcdr_work_queue_size(etcdr_work_queue* queue, int64_t* size, etcdr_error* err);
/* The dead letters (items delivered max_deliveries times), in key order. */
ETCDR_API etcdr_code etcdr_work_queue_dead_letters(etcdr_work_queue* queue, etcdr_dead_letters** out,
                                                   etcdr_error* err);
/* Puts a dead letter back at the tail / deletes it. ETCDR_NOT_FOUND if there
 * is no dead letter `id`. */
ETCDR_API etcdr_code etcdr_work_queue_requeue_dead(etcdr_work_queue* queue, const char* id, etcdr_error* err);
ETCDR_API etcdr_code etcdr_work_queue_purge_dead(etcdr_work_queue* queue, const char* id, etcdr_error* err);
/* Fails pending receives (reason CLOSED), revokes the consumer's lease (its
 * unacked items are ready again at once) and frees the handle. Item
 * handles stay valid; their ack/nack then fail with reason CLOSED. */
ETCDR_API void etcdr_work_queue_destroy(etcdr_work_queue* queue);

/* The payload (the library's; valid until the item is destroyed). */
ETCDR_API const char* etcdr_work_item_value(const etcdr_work_item* item, size_t* value_len);
/* The item's id (NUL-terminated; valid until the item is destroyed). */
ETCDR_API const char* etcdr_work_item_id(const etcdr_work_item* item);
/* This delivery's number: 1 the first time. */
ETCDR_API int64_t etcdr_work_item_attempt(const etcdr_work_item* item);
/* Deletes the item: ETCDR_OK if this claim still held it; ETCDR_ABORTED
 * with reason HOLD_LOST if the claim had been lost (the item was or will
 * be delivered again: the work may be done twice). */
ETCDR_API ETCDR_MUST_CHECK etcdr_code etcdr_work_item_ack(etcdr_work_item* item, int64_t timeout_ms,
                                                          etcdr_error* err);
/* Gives the item back, ready again now (delay_ms 0) or after delay_ms, in
 * its place in line; this delivery stays counted. Errors as for ack. */
ETCDR_API etcdr_code etcdr_work_item_nack(etcdr_work_item* item, int64_t delay_ms, int64_t timeout_ms,
                                          etcdr_error* err);
/* Frees the item. One neither acked nor nacked is given back first
 * (a nack without waiting), so a dropped item is never hidden for as long
 * as its consumer lives. */
ETCDR_API void etcdr_work_item_destroy(etcdr_work_item* item);

ETCDR_API size_t etcdr_dead_letters_count(const etcdr_dead_letters* letters);
/* Of dead letter `i` (< count): its id, payload, deliveries and why it died.
 * The strings are the list's, valid until it is freed; out of range: NULL / 0. */
ETCDR_API const char* etcdr_dead_letters_id(const etcdr_dead_letters* letters, size_t i);
ETCDR_API const char* etcdr_dead_letters_value(const etcdr_dead_letters* letters, size_t i, size_t* value_len);
ETCDR_API int64_t etcdr_dead_letters_deliveries(const etcdr_dead_letters* letters, size_t i);
ETCDR_API const char* etcdr_dead_letters_reason(const etcdr_dead_letters* letters, size_t i);
ETCDR_API void etcdr_dead_letters_free(etcdr_dead_letters* letters);

/* --- Counter: a 64-bit counter in one key -------------------------------- */

typedef struct etcdr_counter etcdr_counter;

ETCDR_API etcdr_code etcdr_counter_create(etcdr_client* client, const char* name,
                                          const etcdr_recipe_options* options, etcdr_counter** out,
                                          etcdr_error* err);
/* The stored value (0 while the key is absent). */
ETCDR_API etcdr_code etcdr_counter_get(etcdr_counter* counter, int64_t timeout_ms, int64_t* value, etcdr_error* err);
/* Adds `delta` (may be negative); `new_value` (may be NULL) gets the value
 * this call committed: concurrent adds never lose an update and get
 * distinct values. */
ETCDR_API etcdr_code etcdr_counter_add(etcdr_counter* counter, int64_t delta, int64_t timeout_ms, int64_t* new_value,
                                       etcdr_error* err);
ETCDR_API etcdr_code etcdr_counter_set(etcdr_counter* counter, int64_t value, int64_t timeout_ms, etcdr_error* err);
/* Stores `desired` if the value is `expected`; `swapped` gets 1 if it did. */
ETCDR_API etcdr_code etcdr_counter_compare_and_set(etcdr_counter* counter, int64_t expected, int64_t desired,
                                                   int64_t timeout_ms, int* swapped, etcdr_error* err);
ETCDR_API void etcdr_counter_destroy(etcdr_counter* counter);

/* --- Service discovery ---------------------------------------------------
 * Instances of a service registered at BASE/SERVICE/ID (BASE "/services"
 * unless given), each while its registering process lives (a lease of its
 * own, healed after a loss only where the key is free); a provider picks
 * one with a strategy and leaves out instances reported failing for a
 * while. The value is the instance's JSON (docs/recipes/discovery.md). */

typedef struct etcdr_discovery etcdr_discovery;
typedef struct etcdr_provider etcdr_provider;

typedef struct etcdr_discovery_options {
  size_t size; /* set by etcdr_discovery_options_init */
  /* Where instances live. NULL: "/services". */
  const char* base_path;
  /* Shows in errors. NULL: "<hostname>:<pid>". */
  const char* client_id;
  /* TTL of each registration's lease: how long a registration outlives a
   * process that died without unregistering. 0: 10 s. */
  int64_t ttl_s;
} etcdr_discovery_options;

ETCDR_API void etcdr_discovery_options_init(etcdr_discovery_options* options, size_t size);

/* One instance. Strings are NUL-terminated; an instance the library
 * returns is one allocation (strings included) freed with
 * etcdr_instance_free. */
typedef struct etcdr_instance {
  size_t size; /* set by etcdr_instance_init */
  const char* name;    /* the service: one key segment */
  const char* id;      /* the instance: one key segment */
  const char* address; /* host name or address */
  int32_t port;        /* 0: none */
  int32_t ssl_port;    /* 0: none */
  /* JSON text of any value, or NULL: none. */
  const char* payload;
  /* Milliseconds since the Unix epoch, UTC; 0 when registering: now. */
  int64_t registration_time_ms;
  /* Non-zero: registered but never picked. */
  int32_t disabled;
} etcdr_instance;

ETCDR_API void etcdr_instance_init(etcdr_instance* instance, size_t size);
ETCDR_API void etcdr_instance_free(etcdr_instance* instance);
/* An array of instances from etcdr_discovery_query, with its count. */
ETCDR_API void etcdr_instances_free(etcdr_instance** instances, size_t count);

ETCDR_API etcdr_code etcdr_discovery_create(etcdr_client* client, const etcdr_discovery_options* options,
                                            etcdr_discovery** out, etcdr_error* err);
/* Starts unregistering every instance registered through it (without
 * waiting for the deletes: etcdr_client_destroy waits for them, and a
 * registration whose delete never arrives goes with its lease's TTL) and
 * destroys its providers' caches (a provider handle must still be
 * destroyed). */
ETCDR_API void etcdr_discovery_destroy(etcdr_discovery* discovery);

/* Registers `instance` (only where its key is absent: ETCDR_ALREADY_EXISTS,
 * nothing written, if another owner has the id). */
ETCDR_API etcdr_code etcdr_discovery_register(etcdr_discovery* discovery, const etcdr_instance* instance,
                                              int64_t timeout_ms, etcdr_error* err);
/* Replaces a registered instance (same name and id): ETCDR_NOT_FOUND if
 * not registered here; ETCDR_ABORTED (HOLD_LOST) while its key is lost
 * (the new instance is written when it heals). */
ETCDR_API etcdr_code etcdr_discovery_update(etcdr_discovery* discovery, const etcdr_instance* instance,
                                            int64_t timeout_ms, etcdr_error* err);
/* Removes a registration; `was_ours` (may be NULL) gets 1 if its key was
 * still this process's. */
ETCDR_API etcdr_code etcdr_discovery_unregister(etcdr_discovery* discovery, const char* service, const char* id,
                                                int64_t timeout_ms, int* was_ours, etcdr_error* err);
/* The instances of `service`, sorted by id: `*instances` is an array of
 * `*count` instances (NULL when none), freed with etcdr_instances_free. */
ETCDR_API etcdr_code etcdr_discovery_query(etcdr_discovery* discovery, const char* service, int64_t timeout_ms,
                                           etcdr_instance*** instances, size_t* count, etcdr_error* err);
/* The names of the services with instances, sorted: `*names` holds
 * `*count` NUL-terminated names back to back (NULL when none), freed with
 * etcdr_free. */
ETCDR_API etcdr_code etcdr_discovery_query_names(etcdr_discovery* discovery, int64_t timeout_ms, char** names,
                                                 size_t* count, etcdr_error* err);

enum { ETCDR_STRATEGY_ROUND_ROBIN = 0, ETCDR_STRATEGY_RANDOM = 1, ETCDR_STRATEGY_STICKY = 2 };

typedef struct etcdr_provider_options {
  size_t size; /* set by etcdr_provider_options_init */
  int32_t strategy; /* ETCDR_STRATEGY_*; 0: round robin */
  /* Errors reported against an instance before it is left out. 0: 2. */
  int32_t errors_before_ejection;
  /* How long an ejected instance stays out. 0: 30000. */
  int64_t ejection_time_ms;
} etcdr_provider_options;

ETCDR_API void etcdr_provider_options_init(etcdr_provider_options* options, size_t size);
/* A provider of `service`, following its instances with a watch. */
ETCDR_API etcdr_code etcdr_provider_create(etcdr_discovery* discovery, const char* service,
                                           const etcdr_provider_options* options, etcdr_provider** out,
                                           etcdr_error* err);
/* Waits for the provider's first read, then picks an instance (enabled,
 * not ejected; never one the provider saw removed): ETCDR_NOT_FOUND when
 * there is none. `*instance` is freed with etcdr_instance_free. */
ETCDR_API etcdr_code etcdr_provider_pick(etcdr_provider* provider, int64_t timeout_ms, etcdr_instance** instance,
                                         etcdr_error* err);
/* A request to instance `id` failed (see errors_before_ejection). */
ETCDR_API etcdr_code etcdr_provider_note_error(etcdr_provider* provider, const char* id, etcdr_error* err);
ETCDR_API void etcdr_provider_destroy(etcdr_provider* provider);

/* --- Cancelling asynchronous calls -------------------------------------- *
 * An etcdr_call is a cancel button the caller owns: give it to any number
 * of asynchronous calls (the functions that take an `etcdr_call* call`
 * argument; NULL there: not cancellable) and etcdr_call_cancel() ends
 * those still pending with ETCDR_CANCELLED — their callbacks run once, as
 * always. A cancelled acquire, campaign or enter leaves nothing behind:
 * the key it had created is deleted before its callback runs. */

typedef struct etcdr_call etcdr_call;

ETCDR_API etcdr_code etcdr_call_create(etcdr_call** out, etcdr_error* err);
/* Cancels every pending call given `call`; a call given it afterwards ends
 * at once with ETCDR_CANCELLED. Idempotent; from any thread, callbacks
 * included. */
ETCDR_API void etcdr_call_cancel(etcdr_call* call);
/* 1 once etcdr_call_cancel was called. */
ETCDR_API int etcdr_call_is_cancelled(const etcdr_call* call);
/* Frees the handle without cancelling: the calls given it go on (and can
 * no longer be cancelled). NULL is allowed. */
ETCDR_API void etcdr_call_destroy(etcdr_call* call);

/* The asynchronous calls above, cancellable (`call` may be NULL). */
ETCDR_API etcdr_code etcdr_mutex_acquire_async_cancellable(etcdr_mutex* mutex, int64_t timeout_ms, etcdr_call* call,
                                                           etcdr_acquire_cb done, void* user);
ETCDR_API etcdr_code etcdr_semaphore_acquire_async_cancellable(etcdr_semaphore* sem, int64_t timeout_ms,
                                                               etcdr_call* call, etcdr_permit_cb done, void* user);
ETCDR_API etcdr_code etcdr_election_campaign_async_cancellable(etcdr_election* election, int64_t timeout_ms,
                                                               etcdr_call* call, etcdr_acquire_cb done, void* user);
ETCDR_API etcdr_code etcdr_queue_pop_async_cancellable(etcdr_queue* queue, int64_t timeout_ms, etcdr_call* call,
                                                       etcdr_value_cb done, void* user);
ETCDR_API etcdr_code etcdr_work_queue_receive_async_cancellable(etcdr_work_queue* queue, int64_t timeout_ms,
                                                                etcdr_call* call, etcdr_work_item_cb done,
                                                                void* user);

/* --- Connection state, recipe errors, loss ------------------------------ */

/* The connection state of a client or a recipe (etcd::ConnectionState). */
typedef int32_t etcdr_state;
enum {
  ETCDR_STATE_CONNECTED = 0,   /* calls and streams work */
  ETCDR_STATE_SUSPENDED = 1,   /* calls or streams are failing; leases may still live */
  ETCDR_STATE_RECONNECTED = 2, /* working again after a suspension */
  ETCDR_STATE_LOST = 3         /* a lease is known to be gone */
};
/* "CONNECTED", "SUSPENDED", ...: static strings ("?" for unknown values). */
ETCDR_API const char* etcdr_state_name(etcdr_state state);

typedef void (*etcdr_state_cb)(void* user, etcdr_state state);
/* A background failure a recipe recorded (a retried write, an undecodable
 * value, a listener that failed): `error` is the library's, valid during
 * the call only. */
typedef void (*etcdr_error_cb)(void* user, const etcdr_error* error);

ETCDR_API etcdr_state etcdr_client_state(const etcdr_client* client);
/* Runs `on_change(user, state)` at every change of the client's connection
 * state, in order. One callback per handle, replaced by the next call,
 * removed with NULL (as etcdr_mutex_on_lost). */
ETCDR_API etcdr_code etcdr_client_on_state_change(etcdr_client* client, etcdr_state_cb on_change, void* user);

/* What every recipe handle shares: its recipe's connection state (that of
 * its session, if it has one), the background errors it recorded, and
 * callbacks for both. etcdr_<recipe>_recipe(handle) gives the handle's
 * etcdr_recipe: it belongs to the handle (never freed by the caller) and
 * lives as long as it; NULL for a NULL handle. */
typedef struct etcdr_recipe etcdr_recipe;

ETCDR_API etcdr_recipe* etcdr_mutex_recipe(etcdr_mutex* mutex);
ETCDR_API etcdr_recipe* etcdr_semaphore_recipe(etcdr_semaphore* sem);
ETCDR_API etcdr_recipe* etcdr_election_recipe(etcdr_election* election);
ETCDR_API etcdr_recipe* etcdr_queue_recipe(etcdr_queue* queue);
ETCDR_API etcdr_recipe* etcdr_work_queue_recipe(etcdr_work_queue* queue);
ETCDR_API etcdr_recipe* etcdr_counter_recipe(etcdr_counter* counter);
ETCDR_API etcdr_recipe* etcdr_discovery_recipe(etcdr_discovery* discovery);
ETCDR_API etcdr_recipe* etcdr_provider_recipe(etcdr_provider* provider);

ETCDR_API etcdr_state etcdr_recipe_state(const etcdr_recipe* recipe);
/* Background errors recorded so far (bounded, oldest dropped). */
ETCDR_API size_t etcdr_recipe_error_count(const etcdr_recipe* recipe);
/* The most recent recorded error: its code (ETCDR_OK when none was
 * recorded), and `out` (may be NULL) filled with it. */
ETCDR_API etcdr_code etcdr_recipe_last_error(const etcdr_recipe* recipe, etcdr_error* out);
ETCDR_API void etcdr_recipe_clear_errors(etcdr_recipe* recipe);
/* `on_error(user, error)` for each error recorded from now on. One
 * callback per recipe handle, NULL removes it (as etcdr_mutex_on_lost). */
ETCDR_API etcdr_code etcdr_recipe_on_error(etcdr_recipe* recipe, etcdr_error_cb on_error, void* user);
/* `on_change(user, state)` at every connection-state change of the recipe. */
ETCDR_API etcdr_code etcdr_recipe_on_state_change(etcdr_recipe* recipe, etcdr_state_cb on_change, void* user);

/* Runs `on_lost(user, why)` once if this permit is lost (its lease ended,
 * its key was deleted), not when it is released. One callback per permit;
 * NULL removes it (as etcdr_mutex_on_lost). */
ETCDR_API etcdr_code etcdr_permit_on_lost(etcdr_permit* permit, etcdr_lost_cb on_lost, void* user);

/* --- Read-write lock: many readers or one writer, fair to writers -------
 * Keys NAME/read/<lease> and NAME/write/<lease> (docs/recipes/locks.md).
 * A handle has two sides, ETCDR_READ and ETCDR_WRITE, each a lock as
 * etcdr_mutex is (one hold at a time, fencing tokens, loss). A write hold
 * excludes every other hold; read holds share. Upgrading is refused:
 * acquiring the write side while this handle holds or waits for the read
 * side is ETCDR_FAILED_PRECONDITION (release the read side first); use
 * etcdr_rwlock_downgrade to go from write to read keeping the place. */

typedef struct etcdr_rwlock etcdr_rwlock;
typedef int32_t etcdr_rwlock_mode;
enum { ETCDR_READ = 0, ETCDR_WRITE = 1 };

ETCDR_API etcdr_code etcdr_rwlock_create(etcdr_client* client, const char* name, const etcdr_recipe_options* options,
                                         etcdr_rwlock** out, etcdr_error* err);
/* Waits until side `mode` is held; `token` (may be NULL) gets its fencing
 * token: write tokens strictly increase from one writer to the next; a read
 * token is above every earlier write token and below every later one. */
ETCDR_API etcdr_code etcdr_rwlock_acquire(etcdr_rwlock* rw, etcdr_rwlock_mode mode, int64_t timeout_ms,
                                          int64_t* token, etcdr_error* err);
/* Side `mode` only if it can be held now: `acquired` gets 1 or 0. */
ETCDR_API etcdr_code etcdr_rwlock_try_acquire(etcdr_rwlock* rw, etcdr_rwlock_mode mode, int* acquired,
                                              int64_t* token, etcdr_error* err);
/* etcdr_rwlock_acquire without blocking (`call` may be NULL). */
ETCDR_API etcdr_code etcdr_rwlock_acquire_async(etcdr_rwlock* rw, etcdr_rwlock_mode mode, int64_t timeout_ms,
                                                etcdr_call* call, etcdr_acquire_cb done, void* user);
/* As etcdr_mutex_release, for side `mode`. */
ETCDR_API ETCDR_MUST_CHECK etcdr_code etcdr_rwlock_release(etcdr_rwlock* rw, etcdr_rwlock_mode mode,
                                                           etcdr_error* err);
/* Turns the write hold into a read hold in one write, keeping its place
 * and token: ETCDR_FAILED_PRECONDITION if the write side is not held,
 * ETCDR_ABORTED (HOLD_LOST) if it was lost. */
ETCDR_API etcdr_code etcdr_rwlock_downgrade(etcdr_rwlock* rw, etcdr_error* err);
/* Advisory: 1 while side `mode` is held and not seen lost. */
ETCDR_API int etcdr_rwlock_is_held(const etcdr_rwlock* rw, etcdr_rwlock_mode mode);
/* `on_lost(user, why)` each time a hold of either side is lost (as
 * etcdr_mutex_on_lost). */
ETCDR_API etcdr_code etcdr_rwlock_on_lost(etcdr_rwlock* rw, etcdr_lost_cb on_lost, void* user);
ETCDR_API etcdr_recipe* etcdr_rwlock_recipe(etcdr_rwlock* rw);
/* Releases what it holds (without waiting), fails pending acquires with
 * reason CLOSED and frees the handle. */
ETCDR_API void etcdr_rwlock_destroy(etcdr_rwlock* rw);

/* --- Priority queue: lowest priority value first, FIFO within one -------- */

typedef struct etcdr_priority_queue etcdr_priority_queue;

ETCDR_API etcdr_code etcdr_priority_queue_create(etcdr_client* client, const char* name,
                                                 const etcdr_recipe_options* options, etcdr_priority_queue** out,
                                                 etcdr_error* err);
/* Adds an item of `priority` (0..65535, lower served first; anything else
 * is ETCDR_INVALID_ARGUMENT, nothing written). One transaction. */
ETCDR_API etcdr_code etcdr_priority_queue_push(etcdr_priority_queue* queue, const char* value, size_t value_len,
                                               int64_t priority, int64_t timeout_ms, etcdr_error* err);
/* As etcdr_queue_pop / _try_pop / _pop_async / _size. */
ETCDR_API etcdr_code etcdr_priority_queue_pop(etcdr_priority_queue* queue, int64_t timeout_ms, char** value,
                                              size_t* value_len, etcdr_error* err);
ETCDR_API etcdr_code etcdr_priority_queue_try_pop(etcdr_priority_queue* queue, int* found, char** value,
                                                  size_t* value_len, etcdr_error* err);
ETCDR_API etcdr_code etcdr_priority_queue_pop_async(etcdr_priority_queue* queue, int64_t timeout_ms,
                                                    etcdr_call* call, etcdr_value_cb done, void* user);
ETCDR_API etcdr_code etcdr_priority_queue_size(etcdr_priority_queue* queue, int64_t* size, etcdr_error* err);
ETCDR_API etcdr_recipe* etcdr_priority_queue_recipe(etcdr_priority_queue* queue);
ETCDR_API void etcdr_priority_queue_destroy(etcdr_priority_queue* queue);

/* --- Barriers (docs/recipes/barriers.md) -------------------------------- */

/* `done(user, result)` of an asynchronous call with no value. */
typedef void (*etcdr_done_cb)(void* user, const etcdr_error* result);

/* A gate: set closes it, remove opens it, wait returns once it is open.
 * Keys NAME (under the setter's lease; etcd's Go Barrier's key) and
 * NAME/set-by. */
typedef struct etcdr_barrier etcdr_barrier;

ETCDR_API etcdr_code etcdr_barrier_create(etcdr_client* client, const char* name, const etcdr_recipe_options* options,
                                          etcdr_barrier** out, etcdr_error* err);
/* Closes the gate; `was_open` (may be NULL) gets 1 if it was open. */
ETCDR_API etcdr_code etcdr_barrier_set(etcdr_barrier* barrier, int64_t timeout_ms, int* was_open, etcdr_error* err);
/* Opens the gate, whoever set it; `was_set` (may be NULL) gets 1 if it was set. */
ETCDR_API etcdr_code etcdr_barrier_remove(etcdr_barrier* barrier, int64_t timeout_ms, int* was_set,
                                          etcdr_error* err);
/* Returns once the gate is open (at once if it is). */
ETCDR_API etcdr_code etcdr_barrier_wait(etcdr_barrier* barrier, int64_t timeout_ms, etcdr_error* err);
ETCDR_API etcdr_code etcdr_barrier_wait_async(etcdr_barrier* barrier, int64_t timeout_ms, etcdr_call* call,
                                              etcdr_done_cb done, void* user);
ETCDR_API etcdr_recipe* etcdr_barrier_recipe(etcdr_barrier* barrier);
/* Frees the handle; a gate it set stays set (it is explicit state). */
ETCDR_API void etcdr_barrier_destroy(etcdr_barrier* barrier);

/* N parties meet: each wait is one party and returns once `parties` are
 * waiting. A party that times out or is cancelled leaves (not counted). */
typedef struct etcdr_barrier_with_count etcdr_barrier_with_count;

ETCDR_API etcdr_code etcdr_barrier_with_count_create(etcdr_client* client, const char* name, int64_t parties,
                                                     const etcdr_recipe_options* options,
                                                     etcdr_barrier_with_count** out, etcdr_error* err);
ETCDR_API etcdr_code etcdr_barrier_with_count_wait(etcdr_barrier_with_count* barrier, int64_t timeout_ms,
                                                   etcdr_error* err);
ETCDR_API etcdr_code etcdr_barrier_with_count_wait_async(etcdr_barrier_with_count* barrier, int64_t timeout_ms,
                                                         etcdr_call* call, etcdr_done_cb done, void* user);
/* Parties waiting now, as etcd has them. */
ETCDR_API etcdr_code etcdr_barrier_with_count_waiting(etcdr_barrier_with_count* barrier, int64_t* waiting,
                                                      etcdr_error* err);
ETCDR_API etcdr_recipe* etcdr_barrier_with_count_recipe(etcdr_barrier_with_count* barrier);
ETCDR_API void etcdr_barrier_with_count_destroy(etcdr_barrier_with_count* barrier);

/* N parties enter together and leave together; one handle is one party.
 * enter returns once `parties` are in; leave once all of them left. */
typedef struct etcdr_double_barrier etcdr_double_barrier;

ETCDR_API etcdr_code etcdr_double_barrier_create(etcdr_client* client, const char* name, int64_t parties,
                                                 const etcdr_recipe_options* options, etcdr_double_barrier** out,
                                                 etcdr_error* err);
/* ETCDR_FAILED_PRECONDITION if this handle is in already; a timeout or a
 * cancel withdraws the party (its key is deleted). */
ETCDR_API etcdr_code etcdr_double_barrier_enter(etcdr_double_barrier* barrier, int64_t timeout_ms, etcdr_error* err);
ETCDR_API etcdr_code etcdr_double_barrier_enter_async(etcdr_double_barrier* barrier, int64_t timeout_ms,
                                                      etcdr_call* call, etcdr_done_cb done, void* user);
/* ETCDR_FAILED_PRECONDITION if this handle has not entered; after a
 * timeout the party has left all the same. */
ETCDR_API etcdr_code etcdr_double_barrier_leave(etcdr_double_barrier* barrier, int64_t timeout_ms, etcdr_error* err);
ETCDR_API etcdr_code etcdr_double_barrier_leave_async(etcdr_double_barrier* barrier, int64_t timeout_ms,
                                                      etcdr_call* call, etcdr_done_cb done, void* user);
/* 1 while entered and not left. */
ETCDR_API int etcdr_double_barrier_entered(const etcdr_double_barrier* barrier);
ETCDR_API etcdr_recipe* etcdr_double_barrier_recipe(etcdr_double_barrier* barrier);
ETCDR_API void etcdr_double_barrier_destroy(etcdr_double_barrier* barrier);

/* --- Caches: local copies kept current by a watch (docs/recipes/caches.md)
 * A cache reads at revision R and watches from R+1; after a gap it cannot
 * resume (a compaction while cut off) it reads again and reports the
 * difference (events with `resync` set). Events are delivered one at a
 * time, in revision order, on the client's callback threads. */

/* One cached key. Filled by the library; valid as long as what handed it
 * out (an event: during the callback; a list: until it is freed). */
typedef struct etcdr_node {
  size_t size; /* sizeof the library's etcdr_node: fields are only appended */
  const char* key;
  size_t key_len;
  /* The key after the cache's path + "/" (a node cache: the whole key). */
  const char* name;
  size_t name_len;
  const char* value; /* NUL-terminated for convenience */
  size_t value_len;
  int64_t create_revision;
  int64_t mod_revision;
  int64_t version;
  int64_t lease;
} etcdr_node;

typedef int32_t etcdr_cache_event_type;
enum {
  ETCDR_CACHE_ADDED = 0,       /* a key appeared: current */
  ETCDR_CACHE_UPDATED = 1,     /* its value, lease or incarnation changed: previous, current */
  ETCDR_CACHE_REMOVED = 2,     /* it is gone: previous */
  ETCDR_CACHE_INITIALIZED = 3, /* the first read is done (node cache: current if the key exists) */
  ETCDR_CACHE_RESET = 4        /* a resync after a gap is done (children cache): cause says why */
};

typedef struct etcdr_cache_event {
  size_t size; /* sizeof the library's etcdr_cache_event */
  etcdr_cache_event_type type;
  const etcdr_node* previous; /* NULL when none */
  const etcdr_node* current;  /* NULL when none */
  /* The cache is exact at this revision after the event. */
  int64_t revision;
  /* Part of the difference found by a read after a gap. */
  int32_t resync;
  /* ETCDR_CACHE_RESET: why the cache read again; else NULL. */
  const etcdr_error* cause;
} etcdr_cache_event;

/* `event` and everything it points to are the library's, valid during the
 * call only. */
typedef void (*etcdr_cache_event_cb)(void* user, const etcdr_cache_event* event);

/* A list of nodes (etcdr_path_children_cache_list), sorted by key. */
typedef struct etcdr_node_list etcdr_node_list;
ETCDR_API size_t etcdr_node_list_count(const etcdr_node_list* list);
/* Node `i` (< count), or NULL. */
ETCDR_API const etcdr_node* etcdr_node_list_at(const etcdr_node_list* list, size_t i);
/* The revision the list is exact at (0: the cache was not initialized). */
ETCDR_API int64_t etcdr_node_list_revision(const etcdr_node_list* list);
ETCDR_API void etcdr_node_list_free(etcdr_node_list* list);

/* One key. */
typedef struct etcdr_node_cache etcdr_node_cache;

/* No I/O: set the callback, then etcdr_node_cache_start. */
ETCDR_API etcdr_code etcdr_node_cache_create(etcdr_client* client, const char* key,
                                             const etcdr_recipe_options* options, etcdr_node_cache** out,
                                             etcdr_error* err);
/* Events of the key: INITIALIZED (once, after the first read), ADDED,
 * UPDATED, REMOVED. A callback set after the first read hears of later
 * changes only. One per handle; NULL removes it (as etcdr_mutex_on_lost). */
ETCDR_API etcdr_code etcdr_node_cache_on_change(etcdr_node_cache* cache, etcdr_cache_event_cb on_change, void* user);
/* Begins the first read and the watch in the background. Idempotent. */
ETCDR_API etcdr_code etcdr_node_cache_start(etcdr_node_cache* cache, etcdr_error* err);
/* Starts the cache if needed and waits for its first read. */
ETCDR_API etcdr_code etcdr_node_cache_wait_initialized(etcdr_node_cache* cache, int64_t timeout_ms,
                                                       etcdr_error* err);
/* The cached node now: `found` gets 1 and `value` (freed with etcdr_free)
 * its value, or 0 if the key is absent (or before the first read).
 * `mod_revision` may be NULL. No I/O. */
ETCDR_API etcdr_code etcdr_node_cache_get(etcdr_node_cache* cache, int* found, char** value, size_t* value_len,
                                          int64_t* mod_revision, etcdr_error* err);
ETCDR_API etcdr_recipe* etcdr_node_cache_recipe(etcdr_node_cache* cache);
ETCDR_API void etcdr_node_cache_destroy(etcdr_node_cache* cache);

/* The keys under PATH + "/". */
typedef struct etcdr_path_children_cache etcdr_path_children_cache;

enum {
  ETCDR_CACHE_START_NORMAL = 0,        /* the first read's children arrive as ADDED events */
  ETCDR_CACHE_START_SILENT = 1,        /* the first read fills the cache without events */
  ETCDR_CACHE_START_POST_INITIALIZED = 2 /* as NORMAL, then one INITIALIZED event */
};

typedef struct etcdr_path_children_cache_options {
  size_t size; /* set by etcdr_path_children_cache_options_init */
  int32_t start_mode; /* ETCDR_CACHE_START_*; 0: NORMAL */
  /* Non-zero: every key under PATH/ (names contain '/'); 0: direct children only. */
  int32_t subtree;
  /* Keys per read of a (re)load. 0: 1000. */
  int64_t page_size;
} etcdr_path_children_cache_options;

ETCDR_API void etcdr_path_children_cache_options_init(etcdr_path_children_cache_options* options, size_t size);
/* No I/O. `options` and `cache_options` may be NULL. */
ETCDR_API etcdr_code etcdr_path_children_cache_create(etcdr_client* client, const char* path,
                                                      const etcdr_recipe_options* options,
                                                      const etcdr_path_children_cache_options* cache_options,
                                                      etcdr_path_children_cache** out, etcdr_error* err);
/* Events of the children: ADDED, UPDATED, REMOVED (with the child's
 * node), INITIALIZED (START_POST_INITIALIZED), RESET. As
 * etcdr_node_cache_on_change. */
ETCDR_API etcdr_code etcdr_path_children_cache_on_event(etcdr_path_children_cache* cache,
                                                        etcdr_cache_event_cb on_event, void* user);
ETCDR_API etcdr_code etcdr_path_children_cache_start(etcdr_path_children_cache* cache, etcdr_error* err);
ETCDR_API etcdr_code etcdr_path_children_cache_wait_initialized(etcdr_path_children_cache* cache,
                                                                int64_t timeout_ms, etcdr_error* err);
/* Every cached child now, sorted by key (freed with etcdr_node_list_free). No I/O. */
ETCDR_API etcdr_code etcdr_path_children_cache_list(etcdr_path_children_cache* cache, etcdr_node_list** out,
                                                    etcdr_error* err);
/* The child called `name` (the key PATH/name): as etcdr_node_cache_get. */
ETCDR_API etcdr_code etcdr_path_children_cache_get(etcdr_path_children_cache* cache, const char* name, int* found,
                                                   char** value, size_t* value_len, int64_t* mod_revision,
                                                   etcdr_error* err);
ETCDR_API etcdr_recipe* etcdr_path_children_cache_recipe(etcdr_path_children_cache* cache);
ETCDR_API void etcdr_path_children_cache_destroy(etcdr_path_children_cache* cache);

/* --- Watches: the raw events of a key or a prefix ----------------------- */

typedef struct etcdr_watch etcdr_watch;

typedef struct etcdr_watch_options {
  size_t size; /* set by etcdr_watch_options_init */
  /* Non-zero: every key starting with `key`. */
  int32_t prefix;
  /* Non-zero: events carry the key's previous value. */
  int32_t prev_kv;
  /* Deliver events from this revision on. 0: from now. */
  int64_t start_revision;
} etcdr_watch_options;

ETCDR_API void etcdr_watch_options_init(etcdr_watch_options* options, size_t size);

enum { ETCDR_WATCH_PUT = 0, ETCDR_WATCH_DELETE = 1 };

typedef struct etcdr_watch_event {
  size_t size; /* sizeof the library's etcdr_watch_event */
  int32_t type; /* ETCDR_WATCH_PUT / ETCDR_WATCH_DELETE */
  const etcdr_node* kv;   /* the key after the event (a delete: key and mod_revision only) */
  const etcdr_node* prev; /* with prev_kv: the key before, if it existed; else NULL */
} etcdr_watch_event;

/* `on_events(user, status, events, count, revision)`: a batch of `count`
 * events in revision order (`revision`: the store revision they bring the
 * watcher to). When `status->code` is not OK the watch has ended and this
 * is the last call (no events): reason RESYNC_NEEDED (the revision to
 * resume from was compacted: read again and watch anew), or CLOSED.
 * Everything is the library's, valid during the call only. Calls come one
 * at a time, in order, on the client's callback threads; reconnections in
 * between lose and repeat nothing. */
typedef void (*etcdr_watch_cb)(void* user, const etcdr_error* status, const etcdr_watch_event* events, size_t count,
                               int64_t revision);

/* Starts watching `key` (or the prefix) at once. */
ETCDR_API etcdr_code etcdr_watch_create(etcdr_client* client, const char* key, size_t key_len,
                                        const etcdr_watch_options* options, etcdr_watch_cb on_events, void* user,
                                        etcdr_watch** out, etcdr_error* err);
/* Waits until etcd has confirmed the watch (events from then on are
 * delivered): ETCDR_DEADLINE_EXCEEDED if not within the timeout. */
ETCDR_API etcdr_code etcdr_watch_wait_created(etcdr_watch* watch, int64_t timeout_ms, etcdr_error* err);
/* Cancels the watch and frees the handle: the callback does not run after
 * this returns (a run in progress on another thread is waited for, unless
 * this is called from the callback). */
ETCDR_API void etcdr_watch_destroy(etcdr_watch* watch);

/* --- Transient keys: a key that lives while its owner does --------------
 * Created under a presence lease (TTL session_ttl_s), only where absent;
 * healed (re-created with the current value) after a loss where still
 * free; deleted by destroy. docs/recipes/transient.md. */

typedef struct etcdr_transient etcdr_transient;

/* No I/O. */
ETCDR_API etcdr_code etcdr_transient_create(etcdr_client* client, const char* key, const char* value,
                                            size_t value_len, const etcdr_recipe_options* options,
                                            etcdr_transient** out, etcdr_error* err);
/* Creates the key if absent; ETCDR_ALREADY_EXISTS (nothing written) if
 * another owner has it. Idempotent while the key is ours. */
ETCDR_API etcdr_code etcdr_transient_create_key(etcdr_transient* transient, int64_t timeout_ms, etcdr_error* err);
/* Changes the value (the key is created first if it never was):
 * ETCDR_ABORTED (HOLD_LOST) while the key is not ours (the value is kept
 * and written when it heals). */
ETCDR_API etcdr_code etcdr_transient_set_value(etcdr_transient* transient, const char* value, size_t value_len,
                                               int64_t timeout_ms, etcdr_error* err);
/* Deletes the key if it is still ours and ends the handle's work (later
 * calls fail with reason CLOSED); `was_ours` (may be NULL) gets 1 if it was. */
ETCDR_API etcdr_code etcdr_transient_release(etcdr_transient* transient, int64_t timeout_ms, int* was_ours,
                                             etcdr_error* err);
/* Advisory: the key exists and is ours. */
ETCDR_API int etcdr_transient_is_held(const etcdr_transient* transient);
/* The key's create revision while it is ours, else 0. */
ETCDR_API int64_t etcdr_transient_create_revision(const etcdr_transient* transient);
/* `on_lost(user, why)` once per loss (lease lost, key deleted or taken);
 * `on_restored(user)` when it was re-created after a loss. One of each
 * per handle; NULL removes it (as etcdr_mutex_on_lost). */
ETCDR_API etcdr_code etcdr_transient_on_lost(etcdr_transient* transient, etcdr_lost_cb on_lost, void* user);
ETCDR_API etcdr_code etcdr_transient_on_restored(etcdr_transient* transient, void (*on_restored)(void* user),
                                                 void* user);
ETCDR_API etcdr_recipe* etcdr_transient_recipe(etcdr_transient* transient);
/* Deletes the key if ours (without waiting) and frees the handle. */
ETCDR_API void etcdr_transient_destroy(etcdr_transient* transient);

/* ---- KeyspaceView: a gap-free view of a prefix (src/c_api/keyspace_view.cpp) ----
 *
 * Every key under a prefix (or in [key, range_end)), held in memory and kept
 * current by a watch; after a gap in the watch (a compaction while cut off)
 * it reads again and reports exactly the differences as one RESET event
 * (docs/recipes/keyspace_view.md). Events reach `on_event` one at a time, in
 * revision order, on the client's callback threads (never on gRPC's);
 * after etcdr_view_destroy returns it never runs again. The event and the
 * bytes it points to are valid only during the call. */
typedef struct etcdr_view etcdr_view;

enum {
  ETCDR_VIEW_ADDED = 0,       /* value: the key now */
  ETCDR_VIEW_UPDATED = 1,     /* value, prev_value */
  ETCDR_VIEW_REMOVED = 2,     /* prev_value: the last value the view had */
  ETCDR_VIEW_INITIALIZED = 3, /* the first read is done */
  ETCDR_VIEW_RESET = 4        /* after a gap: `changes` are the differences, `cause` why */
};
enum { ETCDR_VIEW_START_FROM_NOW = 0, ETCDR_VIEW_START_WITH_SNAPSHOT = 1, ETCDR_VIEW_START_FROM_REVISION = 2 };

typedef struct etcdr_view_options {
  size_t size; /* set by etcdr_view_options_init */
  int32_t start; /* ETCDR_VIEW_START_*; 0: from now (the first read fills the view silently) */
  int64_t start_revision; /* ETCDR_VIEW_START_FROM_REVISION: the first read's revision (a compacted one fails) */
  const char* range_end;  /* NULL: `key` is a prefix; else the view is [key, range_end) */
  size_t range_end_len;
  int64_t page_size; /* keys per Range of a read; 0: 1000 */
} etcdr_view_options;

typedef struct etcdr_view_event {
  int32_t type; /* ETCDR_VIEW_* */
  const char* key;
  size_t key_len;
  int has_value; /* ADDED, UPDATED: value and its revisions */
  const char* value;
  size_t value_len;
  int64_t create_revision;
  int64_t mod_revision;
  int64_t version;
  int64_t lease;
  int has_prev_value; /* UPDATED, REMOVED */
  const char* prev_value;
  size_t prev_value_len;
  int64_t revision; /* the view is exact at this revision after the event */
  const struct etcdr_view_event* changes; /* RESET: `change_count` differences, in key order */
  size_t change_count;
  const etcdr_error* cause; /* RESET: why (never NULL then) */
} etcdr_view_event;

typedef void (*etcdr_view_cb)(void* user, const etcdr_view_event* event);

ETCDR_API void etcdr_view_options_init(etcdr_view_options* options, size_t size);
/* Creates and starts a view of `key` (a prefix, e.g. "/config/"): `on_event`
 * hears every event from the first on. Invalid input (an empty key, a bad
 * range_end or start) is reported here, before any I/O. */
ETCDR_API etcdr_code etcdr_view_create(etcdr_client* client, const char* key, const etcdr_view_options* options,
                                       const etcdr_recipe_options* recipe, etcdr_view_cb on_event, void* user,
                                       etcdr_view** out, etcdr_error* err);
/* Waits for the first read (timeout_ms < 0: no deadline). */
ETCDR_API etcdr_code etcdr_view_wait_initialized(etcdr_view* view, int64_t timeout_ms, etcdr_error* err);
/* The revision the view is exact at (0 before the first read), and its keys. */
ETCDR_API int64_t etcdr_view_revision(const etcdr_view* view);
ETCDR_API size_t etcdr_view_size(const etcdr_view* view);
/* The value of `key` (no I/O): ETCDR_NOT_FOUND when the view does not hold
 * it; `*value` (NUL-terminated, `*value_len` bytes) is freed with etcdr_free. */
ETCDR_API etcdr_code etcdr_view_get(etcdr_view* view, const char* key, size_t key_len, char** value,
                                    size_t* value_len, etcdr_error* err);
ETCDR_API void etcdr_view_destroy(etcdr_view* view);

/* --- Shared value: one key's value, watched and versioned ----------------- */

typedef struct etcdr_shared_value etcdr_shared_value;

/* The value of `key` (the key itself, bytes as stored); starts reading and
 * watching it in the background. The version compare_and_set compares is
 * the key's mod revision (0: absent). */
ETCDR_API etcdr_code etcdr_shared_value_create(etcdr_client* client, const char* key,
                                               const etcdr_recipe_options* options, etcdr_shared_value** out,
                                               etcdr_error* err);
/* The newest value the handle knows (no I/O once the first read is done;
 * waits for it up to `timeout_ms`): `*bytes` (freed with etcdr_free) and its
 * mod revision. An absent key is ETCDR_NOT_FOUND. */
ETCDR_API etcdr_code etcdr_shared_value_get(etcdr_shared_value* value, int64_t timeout_ms, char** bytes, size_t* len,
                                            int64_t* mod_revision, etcdr_error* err);
/* Stores the bytes, whatever was there; `mod_revision` (may be NULL) gets
 * the new version. One Txn. */
ETCDR_API etcdr_code etcdr_shared_value_set(etcdr_shared_value* value, const char* bytes, size_t len,
                                            int64_t timeout_ms, int64_t* mod_revision, etcdr_error* err);
/* Stores the bytes if the key's mod revision is still `expected_revision`
 * (0: if it is absent): `*swapped` 1 if it did, 0 if someone wrote since
 * (nothing written). One Txn. */
ETCDR_API etcdr_code etcdr_shared_value_compare_and_set(etcdr_shared_value* value, int64_t expected_revision,
                                                        const char* bytes, size_t len, int64_t timeout_ms,
                                                        int* swapped, etcdr_error* err);
/* Every change the watch delivers, in order: the value now (NULL and
 * exists 0 when the key was deleted) and its mod revision. The bytes are
 * the library's for the duration of the call. One callback per handle;
 * NULL removes it (as etcdr_mutex_on_lost). */
typedef void (*etcdr_shared_value_cb)(void* user, const char* bytes, size_t len, int exists, int64_t mod_revision);
ETCDR_API etcdr_code etcdr_shared_value_on_change(etcdr_shared_value* value, etcdr_shared_value_cb on_change,
                                                  void* user);
ETCDR_API void etcdr_shared_value_destroy(etcdr_shared_value* value);

/* --- Group membership: join a group with a payload, list its members ------ */

typedef struct etcdr_group_member etcdr_group_member;

enum { ETCDR_GROUP_JOINED = 0, ETCDR_GROUP_UPDATED = 1, ETCDR_GROUP_LEFT = 2 };

/* Member `id` (one path segment) of `group`, the key GROUP/ID holding the
 * payload under a presence lease while the handle lives; joins in the
 * background (only where the id is free; it re-joins after a lease loss)
 * and follows the member list. */
ETCDR_API etcdr_code etcdr_group_member_create(etcdr_client* client, const char* group, const char* id,
                                               const char* payload, size_t payload_len,
                                               const etcdr_recipe_options* options, etcdr_group_member** out,
                                               etcdr_error* err);
/* Joins now: ETCDR_ALREADY_EXISTS (nothing written) if the id is someone
 * else's. */
ETCDR_API etcdr_code etcdr_group_member_join(etcdr_group_member* member, int64_t timeout_ms, etcdr_error* err);
ETCDR_API etcdr_code etcdr_group_member_set_payload(etcdr_group_member* member, const char* payload, size_t len,
                                                    int64_t timeout_ms, etcdr_error* err);
/* Leaves (and stops following the group): `was_member` (may be NULL) gets
 * 1 if the key was still this member's. */
ETCDR_API etcdr_code etcdr_group_member_leave(etcdr_group_member* member, int64_t timeout_ms, int* was_member,
                                              etcdr_error* err);
/* The members' ids, sorted (waits for the first read up to `timeout_ms`):
 * `*ids` holds `*count` NUL-terminated ids back to back (NULL when none),
 * freed with etcdr_free. */
ETCDR_API etcdr_code etcdr_group_member_members(etcdr_group_member* member, int64_t timeout_ms, char** ids,
                                                size_t* count, etcdr_error* err);
/* The payload of member `id` as the list shows it (freed with etcdr_free):
 * ETCDR_NOT_FOUND when it is not a member. No I/O. */
ETCDR_API etcdr_code etcdr_group_member_payload_of(etcdr_group_member* member, const char* id, char** payload,
                                                   size_t* len, etcdr_error* err);
/* Advisory: 1 while this member's key is its own. */
ETCDR_API int etcdr_group_member_is_member(const etcdr_group_member* member);
/* Joins, updates and leaves, in order: ETCDR_GROUP_*, the id and the
 * payload (the last one seen for a leave), the library's for the duration
 * of the call. One callback per handle; NULL removes it. */
typedef void (*etcdr_group_cb)(void* user, int event, const char* id, const char* payload, size_t len);
ETCDR_API etcdr_code etcdr_group_member_on_change(etcdr_group_member* member, etcdr_group_cb on_change, void* user);
/* Leaves (without waiting) and frees the handle. */
ETCDR_API void etcdr_group_member_destroy(etcdr_group_member* member);

/* --- MultiLock: several mutex names held as one (etcd/recipes/multi_lock.h) ---
 * The names are sorted and de-duplicated into one global order and taken
 * one after the other, so multi-locks sharing names never deadlock; when
 * one name cannot be had, the names already taken are released before the
 * call returns. Each name is a mutex (it excludes etcdr_mutex and
 * `etcdctl lock` on that name). */

typedef struct etcdr_multi_lock etcdr_multi_lock;

/* `names`: `count` names (at least one; none a path prefix of another, as
 * "a" and "a/b"), copied. `options` may be NULL. No I/O: bad names are
 * ETCDR_INVALID_ARGUMENT here. */
ETCDR_API etcdr_code etcdr_multi_lock_create(etcdr_client* client, const char* const* names, size_t count,
                                             const etcdr_recipe_options* options, etcdr_multi_lock** out,
                                             etcdr_error* err);
/* Waits until every name is held (ETCDR_DEADLINE_EXCEEDED, holding
 * nothing, when `timeout_ms` runs out). */
ETCDR_API etcdr_code etcdr_multi_lock_acquire(etcdr_multi_lock* lock, int64_t timeout_ms, etcdr_error* err);
/* Takes every name only if each is free now: `acquired` gets 1 or 0. */
ETCDR_API etcdr_code etcdr_multi_lock_try_acquire(etcdr_multi_lock* lock, int* acquired, etcdr_error* err);
/* The fencing token of `name` in the current hold; 0 when not held or not
 * one of the names. */
ETCDR_API int64_t etcdr_multi_lock_token(const etcdr_multi_lock* lock, const char* name);
/* Releases every name: ETCDR_OK if all were intact; ETCDR_ABORTED with
 * reason ETCDR_REASON_HOLD_LOST if one had been lost, and
 * ETCDR_FAILED_PRECONDITION when nothing was held. */
ETCDR_API ETCDR_MUST_CHECK etcdr_code etcdr_multi_lock_release(etcdr_multi_lock* lock, etcdr_error* err);
/* 1 while every name is held and none was seen lost. */
ETCDR_API int etcdr_multi_lock_is_held(const etcdr_multi_lock* lock);
/* Runs `on_lost(user, why)` each time a hold of this handle is lost (any
 * name lost; the others are then let go), not when it is released. One
 * callback per handle; NULL removes it (as etcdr_mutex_on_lost). */
ETCDR_API etcdr_code etcdr_multi_lock_on_lost(etcdr_multi_lock* lock, etcdr_lost_cb on_lost, void* user);
/* Cooperative release: a request for any one of the names
 * (etcdr_mutex_request_release on it) asks the whole hold.
 * etcdr_multi_lock_release_requested gives 1 once the current hold was
 * asked; `on_request(user)` runs once per hold asked, on the client's
 * callback threads. One callback per handle; NULL removes it. */
ETCDR_API int etcdr_multi_lock_release_requested(const etcdr_multi_lock* lock);
ETCDR_API etcdr_code etcdr_multi_lock_on_release_requested(etcdr_multi_lock* lock,
                                                           etcdr_release_requested_cb on_request, void* user);
/* Releases what it holds (without waiting) and frees the handle. */
ETCDR_API void etcdr_multi_lock_destroy(etcdr_multi_lock* lock);

/* --- Queues: an item's id at push time, and removing a pending item ------
 * An item's id is its key after NAME/items/ (a work item's id, as
 * etcdr_work_item_id gives it). The _push_id functions push as their
 * etcdr_*_push counterparts and give back the id of the item written in
 * `*id` (freed with etcdr_free). The _remove functions delete item `id`
 * without delivering it, in one request: `removed` (may be NULL) gets 1 if
 * this call deleted it, 0 if it was not there (taken, removed, never
 * pushed). A work queue removes only a pending item (ready or delayed):
 * 0 while a consumer holds it. An id that is not an item id (it has a
 * '/', say) is ETCDR_INVALID_ARGUMENT, nothing written; a full item key
 * (NAME/items/<id>) is accepted too. */

ETCDR_API etcdr_code etcdr_queue_push_id(etcdr_queue* queue, const char* value, size_t value_len, int64_t timeout_ms,
                                         char** id, etcdr_error* err);
ETCDR_API etcdr_code etcdr_queue_remove(etcdr_queue* queue, const char* id, int64_t timeout_ms, int* removed,
                                        etcdr_error* err);
ETCDR_API etcdr_code etcdr_priority_queue_push_id(etcdr_priority_queue* queue, const char* value, size_t value_len,
                                                  int64_t priority, int64_t timeout_ms, char** id, etcdr_error* err);
ETCDR_API etcdr_code etcdr_priority_queue_remove(etcdr_priority_queue* queue, const char* id, int64_t timeout_ms,
                                                 int* removed, etcdr_error* err);
ETCDR_API etcdr_code etcdr_work_queue_push_id(etcdr_work_queue* queue, const char* value, size_t value_len,
                                              int64_t delay_ms, int64_t timeout_ms, char** id, etcdr_error* err);
ETCDR_API etcdr_code etcdr_work_queue_remove(etcdr_work_queue* queue, const char* id, int64_t timeout_ms, int* removed,
                                             etcdr_error* err);

#ifdef __cplusplus
}
#endif

#endif /* ETCD_RECIPES_H */
