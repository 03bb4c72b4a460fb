/* txray explicit API: mark transactions and steps in a program, whether or not the agent is loaded.
 *
 *   #include <txray/txray.h>
 *   txray_begin("nightly import");      // starts a transaction on this thread (kind "api")
 *   txray_step("parsed 1200 rows");      // a MESSAGE row in the current transaction
 *   txray_end(0, NULL);                  // status, error text (NULL or "" = success)
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

#ifdef __cplusplus
}
#endif

#endif /* TXRAY_TXRAY_H */
