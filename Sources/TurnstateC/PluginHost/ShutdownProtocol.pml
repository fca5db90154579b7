/*
 * ShutdownProtocol.pml - the store's shutdown protocol and the `next` rule,
 * as a Promela model that spin checks exhaustively (Tests/model/run.sh,
 * `make test-model`).
 *
 * The code it stands for:
 *   lock()/unlock()  the store's recursive lock (TurnstateCore/RecursiveLock.swift:
 *                    a pthread mutex and the owning thread in an atomic word):
 *                    owner + depth; a dispatch holds it for its whole length
 *   closed           Store.closed (TurnstateCore/Store.swift), set by Store.close
 *                    under the lock
 *   dispatch()       Store.dispatch as reached through ts_store_dispatch
 *                    (Exports.swift) or a kept ts_store_api table's dispatch
 *                    (StoreAPI.swift): checks `closed` under the lock and
 *                    answers TS_E_STORE_GONE (Store.refusal); ts_store_get_state,
 *                    subscribe, unsubscribe, replace_state and load_plugin
 *                    check it the same way (Store.exclusively)
 *   run0()           Plugins/delay/delay.c delay_run: swallows @@delay
 *                    actions into its queue, passes the others on
 *   run1()           the plugin loaded after it (journal.c / guard.c): passes on
 *   next0()/next1()  CMiddlewareHost.NextBinding's closure (CMiddleware.swift)
 *                    under Store.exclusivelyInFlight: valid only while its
 *                    run() is under way (`foreign` set) and only once
 *                    (`called`), checked under the store lock, else
 *                    TS_E_MISUSE; not refused by `closed` (the rest of a
 *                    dispatch under way)
 *   reducer()        Store.reduceAndNotifyLocked + the C reducers (ReducerTable)
 *   worker()         delay.c worker_main: dispatches queued actions through
 *                    the kept table until told to stop
 *   destroyer()      ts_store_destroy (Exports.swift): CStore.close, then,
 *                    unless isBusyOnCurrentThread, CStore.destroyPlugins ->
 *                    PluginSet.destroyAll with the lock released, last loaded
 *                    first
 *   destroy1()       the last loaded plugin's destroy() (PluginInstance.destroy),
 *                    which dispatches through its kept table (it must get
 *                    TS_E_STORE_GONE)
 *   destroy0()       delay.c delay_destroy: sets d->stop, joins the worker
 *   stray()          a thread that calls a `next` that delay_run kept, after
 *                    that run() returned
 *   app()            an application thread: one dispatch whose middleware
 *                    dispatches again (nested, same thread, recursive lock);
 *                    with -DDESTROY_IN_CALLBACK a callback calls
 *                    ts_store_destroy - a middleware before it calls next,
 *                    or a listener after the reducers: the store closes at
 *                    once, the dispatch under way finishes (next still
 *                    works in it), and destroyAll runs when the outermost
 *                    call returns and releases the store (CStore.deinit)
 * The typed Swift Store follows the same protocol when it is released
 * (Store.deinit closes, then drops its attachments last first: each
 * PluginSet.deinit runs destroyAll; TypedStorePlugins.swift).
 *
 * Properties (spin -a; pan without a claim for the safety ones):
 *   (1) no plugin's run() starts, or is under way, after its destroy() began
 *       (assertions in run0/run1 and destroy0/destroy1)
 *   (2) no deadlock: no invalid end state
 *   (3) every call returns and the store is destroyed: the LTL property
 *       `terminates` (checked with pan -a: no acceptance cycle, which also
 *       catches a deadlock through spin's stutter extension)
 *   (4) a next called after its run() returned, or a second time, answers
 *       TS_E_MISUSE and never reaches a reducer (assertions in reducer/stray)
 *   (5) a plugin's destroy() that dispatches gets TS_E_STORE_GONE, and no
 *       reducer runs after the store closed, except for the dispatch under
 *       way on the thread that closed it from inside a callback
 *
 * Broken variants (each must be caught; Tests/model/run.sh checks that):
 *   -DBROKEN_ORDER       destroy the plugins before closing (the code before
 *                        the shutdown protocol): a worker's dispatch reaches
 *                        a destroyed plugin's run() -> assertion violated
 *   -DBROKEN_NEXT_LIVE   next does not check that its run() is under way:
 *                        a kept next called from another thread after its
 *                        run() returned reaches the reducers -> assertion
 *                        violated
 *   -DBROKEN_NEXT_ONCE   next does not check that it was called already:
 *                        a second call does not answer TS_E_MISUSE
 *                        -> assertion violated
 *   -DBROKEN_UNDER_LOCK  destroy() runs with the store lock held: delay's
 *                        destroy joins a worker that waits for the lock
 *                        -> deadlock (invalid end state)
 *   with -DDESTROY_IN_CALLBACK, BROKEN_UNDER_LOCK means destroying at once
 *   inside the callback instead of deferring: the same deadlock, or (from a
 *   middleware) a destroy() while that plugin's run() is under way.
 */

#define NONE   255
#define OK     0
#define GONE   11   /* TS_E_STORE_GONE (-11) */
#define MISUSE 14   /* TS_E_MISUSE (-14) */
#define MAXT   12   /* run() invocations in one execution, at most */
#define QMAX   2    /* actions queued into delay's heap, in all */

/* The store lock (RecursiveLock): owner thread and depth. */
byte owner = NONE;
byte depth = 0;
/* CStore.close (Store.close): set once, under the lock, by `closer`. */
bool closed = 0;
byte closer = NONE;
/* Per plugin: destroy() began; run() invocations under way. Plugin 0 is
 * delay (loaded first), plugin 1 is journal/guard (loaded last). */
bool destroyed[2];
byte in_run[2];
/* One NextBinding activation per run() invocation ("ticket"): under way, used. */
byte nticket = 0;
bool live[MAXT];
bool used[MAXT];
/* The next that delay_run kept (for the stray thread). */
byte kept = NONE;
/* delay: queued actions, how many were ever queued, d->stop, worker ended. */
byte pending = 1;
byte queued = 1;
bool stop0 = 0;
bool worker_done = 0;
/* ts_store_destroy called from a callback: the thread that runs destroyAll
 * when its outermost call returns. */
byte deferred_by = NONE;
bool all_destroyed = 0;
bool app_done = 0;
bool stray_done = 0;
byte stray_pid = NONE;
byte reduced = 0; /* the counter reducer */

inline lock() {
  atomic { (owner == NONE || owner == _pid) -> owner = _pid; depth++ }
}

inline unlock() {
  atomic {
    assert(owner == _pid && depth > 0);
    depth--;
    if
    :: depth == 0 -> owner = NONE
    :: else -> skip
    fi
  }
}

inline new_ticket(t) {
  atomic { assert(nticket < MAXT); t = nticket; nticket++; live[t] = 1 }
}

/* The reducers: the end of the chain; only with the lock held, never from a
 * stray next, and after close only for the dispatch under way on the thread
 * that closed the store from inside one of its callbacks (it finishes). */
inline reducer() {
  assert(owner == _pid);
  assert(!closed || closer == _pid);  /* (5) */
  assert(_pid != stray_pid);  /* (4) */
  reduced++
}

/* When NextBinding's closure refuses a call: its run() is over, or next was
 * already called. */
#if defined(BROKEN_NEXT_LIVE)
#define NEXT_REFUSED(t) (used[t])
#elif defined(BROKEN_NEXT_ONCE)
#define NEXT_REFUSED(t) (!live[t])
#else
#define NEXT_REFUSED(t) (!live[t] || used[t])
#endif

/* NextBinding's closure for plugin 1: on to the reducers. */
inline next1(t1, st) {
  lock();
  if
  :: NEXT_REFUSED(t1) -> st = MISUSE
  :: else -> used[t1] = 1; reducer(); st = OK
  fi;
  unlock()
}

/* journal/guard run(): passes the action on. */
inline run1(t1, st) {
  assert(!destroyed[1]);      /* (1) */
  new_ticket(t1);
  in_run[1]++;
  next1(t1, st);
  in_run[1]--;
  live[t1] = 0
}

/* NextBinding's closure for plugin 0: on to plugin 1. */
inline next0(t0, t1, st) {
  lock();
  if
  :: NEXT_REFUSED(t0) -> st = MISUSE
  :: else -> used[t0] = 1; run1(t1, st)
  fi;
  unlock()
}

/* delay_run: keeps its next (maybe), then either queues a @@delay action for
 * the worker (swallowed) or passes the action on, maybe calling next twice. */
inline run0_tail(t0, t1, st, st2) {
  if
  :: kept == NONE -> kept = t0
  :: true -> skip
  fi;
  if
  :: atomic { queued < QMAX -> queued++; pending++ }; st = OK
  :: next0(t0, t1, st);
     if
     :: next0(t0, t1, st2); assert(st2 == MISUSE)   /* (4) a second call */
     :: skip
     fi
  fi;
  in_run[0]--;
  live[t0] = 0
}

inline run0_head(t0) {
  assert(!destroyed[0]);      /* (1) */
  new_ticket(t0);
  in_run[0]++
}

/* Store.dispatch without nesting: closed -> TS_E_STORE_GONE, else the chain. */
inline dispatch(t0, t1, st, st2) {
  lock();
  if
  :: closed -> st = GONE
  :: else -> run0_head(t0); run0_tail(t0, t1, st, st2)
  fi;
  unlock()
}

/* delay_destroy: stop the worker and join it. */
inline destroy0() {
  destroyed[0] = 1;
  assert(in_run[0] == 0);     /* (1) */
  stop0 = 1;
  worker_done                 /* pthread_join */
}

/* The last loaded plugin's destroy(): dispatches through its kept table. */
inline destroy1(t0, t1, st, st2) {
  destroyed[1] = 1;
  assert(in_run[1] == 0);     /* (1) */
  dispatch(t0, t1, st, st2);
#ifndef BROKEN_ORDER
  assert(st == GONE)          /* (5) */
#endif
}

/* PluginSet.destroyAll: last loaded first. */
inline destroy_all(t0, t1, st, st2) {
  destroy1(t0, t1, st, st2);
  destroy0();
  all_destroyed = 1
}

/* delay.c worker_main: dispatches queued actions until stopped. */
proctype worker() {
  byte t0, t1, st, st2;
  do
  :: stop0 -> break
  :: atomic { !stop0 && pending > 0 -> pending-- };
     dispatch(t0, t1, st, st2);
     assert(st == OK || st == GONE)
  od;
  worker_done = 1
}

#ifndef DESTROY_IN_CALLBACK
/* ts_store_destroy on its own thread. */
proctype destroyer() {
  byte t0, t1, st, st2;
#if defined(BROKEN_ORDER)
  /* Before the protocol: wait for a dispatch under way, destroy the
   * plugins, and only then is the store gone. */
  lock(); unlock();
  destroy_all(t0, t1, st, st2);
  lock(); closed = 1; closer = _pid; unlock()
#elif defined(BROKEN_UNDER_LOCK)
  lock(); closed = 1; closer = _pid;
  destroy_all(t0, t1, st, st2);
  unlock()
#else
  lock(); closed = 1; closer = _pid; unlock();    /* CStore.close */
  destroy_all(t0, t1, st, st2)     /* PluginSet.destroyAll, lock released */
#endif
}
#endif

/* ts_store_destroy from inside one of the store's callbacks, on the thread
 * whose dispatch holds the lock: close at once, destroy later. */
inline destroy_in_callback() {
  lock();
  closed = 1;
  closer = _pid;
#ifdef BROKEN_UNDER_LOCK
  destroy_all(n0, n1, nst, nst2);
#else
  deferred_by = _pid;
#endif
  unlock()
}

/* An application thread: ts_store_dispatch, whose delay_run dispatches
 * again on the same thread before passing the action on. */
proctype app() {
  byte t0, t1, st, st2, n0, n1, nst, nst2;
  bool early;
  if
  :: early = 1
  :: early = 0
  fi;
  lock();
  if
  :: closed -> st = GONE
  :: else ->
     run0_head(t0);
     if
     :: dispatch(n0, n1, nst, nst2)   /* nested: the recursive lock */
     :: skip
     fi;
#ifdef DESTROY_IN_CALLBACK
     if
     :: early -> destroy_in_callback()   /* a middleware, before next */
     :: else -> skip
     fi;
#endif
     run0_tail(t0, t1, st, st2);
#ifdef DESTROY_IN_CALLBACK
     if
     :: !early -> destroy_in_callback()  /* a listener, after the reducers */
     :: else -> skip
     fi
#else
     skip
#endif
  fi;
  unlock();
  /* The outermost call returns: a deferred destroy runs now. */
  if
  :: deferred_by == _pid -> deferred_by = NONE; destroy_all(n0, n1, nst, nst2)
  :: else -> skip
  fi;
  app_done = 1
}

/* A thread that calls the next that delay_run kept, after that run(). */
proctype stray() {
  byte t1, st;
  (kept != NONE || all_destroyed);
  if
  :: kept != NONE ->
     next0(kept, t1, st);
     assert(st == MISUSE)     /* (4) */
  :: else -> skip
  fi;
  stray_done = 1
}

init {
  atomic {
    run worker();
    run app();
    stray_pid = run stray();
#ifndef DESTROY_IN_CALLBACK
    run destroyer()
#endif
  }
}

/* (3) every call returns and the store ends destroyed. */
ltl terminates { <> (app_done && worker_done && stray_done && all_destroyed) }
