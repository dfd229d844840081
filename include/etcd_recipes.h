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

/* Hold-loss callbacks (mutex, election): `why` says how it was lost. */
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
/* Releases what it holds (without waiting) and frees the handle. */
ETCDR_API void etcdr_multi_lock_destroy(etcdr_multi_lock* lock);

#ifdef __cplusplus
}
#endif

#endif /* ETCD_RECIPES_H */
