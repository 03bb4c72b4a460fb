/* txray explicit API: mark transactions and steps in a program, whether or not the agent is loaded.
 *
 *   #include <txray/txray.h>
 *   txray_begin("nightly import");      // starts a transaction on this thread (kind "api")
 *   txray_step("parsed 1200 rows");      // a MESSAGE row in the current transaction
 *   txray_end(0, NULL);                  // status, error text (NULL or "" = success)
 *
 * Handing a request to another thread (thread pools, callbacks, coroutines):
 *   txray_context c = txray_context_capture();   // on the thread that read the request
 *   ... on a worker thread:
 *   txray_context_attach(c);                      // its steps (calls, SQL, DNS) go to that request
 *   ... call a back-end, query a database ...
 *   txray_context_detach();
 *   txray_context_release(c);                     // exactly once per capture, on any thread
 *
 * Header-only: each function looks the agent's exported txray_agent_* function up once with
 * dlsym(RTLD_DEFAULT, ...) and does nothing (returns 0) when the agent is not loaded (no LD_PRELOAD, or
 * TXRAY_MODE=off). txray_begin does nothing inside an HTTP request the agent is already tracing; steps
 * then go to that request's transaction. Link with -ldl on glibc older than 2.34. */
#ifndef TXRAY_TXRAY_H
#define TXRAY_TXRAY_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dlfcn.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int (*txray_begin_fn)(const char*);
typedef int (*txray_end_fn)(int, const char*);
typedef int (*txray_step_fn)(const char*);

/* A captured transaction (an opaque handle); 0 = none. */
typedef unsigned long long txray_context;
typedef txray_context (*txray_context_capture_fn)(void);
typedef int (*txray_context_attach_fn)(txray_context);
typedef void (*txray_context_detach_fn)(void);
typedef void (*txray_context_release_fn)(txray_context);

/* Looks a symbol up once per program (a racing first call just looks it up twice). */
static inline void* txray__lookup(const char* name, void** cache, int* done) {
  if (!__atomic_load_n(done, __ATOMIC_ACQUIRE)) {
    __atomic_store_n(cache, dlsym(RTLD_DEFAULT, name), __ATOMIC_RELAXED);
    __atomic_store_n(done, 1, __ATOMIC_RELEASE);
  }
  return __atomic_load_n(cache, __ATOMIC_RELAXED);
}

/* Starts a transaction named `name` on the calling thread. Returns 1 when one was started. */
static inline int txray_begin(const char* name) {
  static void* cache;
  static int done;
  txray_begin_fn f = (txray_begin_fn)txray__lookup("txray_agent_begin", &cache, &done);
  return f ? f(name) : 0;
}

/* Ends the transaction this thread started with txray_begin. error: NULL or "" when it succeeded. */
static inline int txray_end(int status, const char* error) {
  static void* cache;
  static int done;
  txray_end_fn f = (txray_end_fn)txray__lookup("txray_agent_end", &cache, &done);
  return f ? f(status, error) : 0;
}

/* Adds a MESSAGE row with `text` to the thread's current transaction (if any). */
static inline int txray_step(const char* text) {
  static void* cache;
  static int done;
  txray_step_fn f = (txray_step_fn)txray__lookup("txray_agent_step", &cache, &done);
  return f ? f(text) : 0;
}

/* The calling thread's current transaction, held for use on another thread until txray_context_release.
 * Returns 0 when the thread has none (or without the agent); 0 may be passed to the other three. */
static inline txray_context txray_context_capture(void) {
  static void* cache;
  static int done;
  txray_context_capture_fn f = (txray_context_capture_fn)txray__lookup("txray_agent_ctx_capture", &cache, &done);
  return f ? f() : 0;
}

/* Until txray_context_detach, the steps this thread makes belong to the captured transaction (if it is
 * no longer in flight they are kept as unattributed steps, never given to another request). Returns 1
 * when attached. */
static inline int txray_context_attach(txray_context ctx) {
  static void* cache;
  static int done;
  txray_context_attach_fn f = (txray_context_attach_fn)txray__lookup("txray_agent_ctx_attach", &cache, &done);
  return f ? f(ctx) : 0;
}

/* Ends this thread's txray_context_attach. */
static inline void txray_context_detach(void) {
  static void* cache;
  static int done;
  txray_context_detach_fn f = (txray_context_detach_fn)txray__lookup("txray_agent_ctx_detach", &cache, &done);
  if (f) f();
}

/* Releases a capture (exactly once per txray_context_capture, on any thread; detach first). */
static inline void txray_context_release(txray_context ctx) {
  static void* cache;
  static int done;
  txray_context_release_fn f = (txray_context_release_fn)txray__lookup("txray_agent_ctx_release", &cache, &done);
  if (f) f(ctx);
}

#ifdef __cplusplus
}
#endif

#endif /* TXRAY_TXRAY_H */
