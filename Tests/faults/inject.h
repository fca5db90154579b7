/*
 * inject.h - the control API of the fault injector (Tests/faults/inject.c).
 *
 * inject.so is loaded with LD_PRELOAD and interposes the allocation
 * functions (malloc, calloc, realloc, strdup, strndup, posix_memalign,
 * aligned_alloc, memalign, every operator new, ffi_closure_alloc; and free,
 * for leak tracking), some
 * system calls (open, read, pread, write, fsync, ftruncate) and thread
 * set-up calls (pthread_create, pthread_mutex_init, pthread_cond_init).
 * Nothing changes until a thread arms it: from then on the calls of the
 * armed classes that THIS thread makes are counted, and the Nth fails once
 * (NULL and ENOMEM for allocations, which for a throwing operator new means
 * std::bad_alloc; -1 and EIO for I/O; EAGAIN/ENOMEM for the thread calls).
 * Calls from other threads (the delay plugin's worker) are never counted,
 * so a run is deterministic. Test code brackets its own calls with
 * tsfi_suspend/tsfi_resume so they are neither counted nor failed.
 *
 * The program resolves the functions with dlsym(RTLD_DEFAULT, ...), so it
 * links without inject.so and can tell when it was not preloaded.
 */
#ifndef TSFI_INJECT_H
#define TSFI_INJECT_H

#define TSFI_ALLOC 1u  /* malloc & co, operator new, ffi_closure_alloc */
#define TSFI_IO 2u     /* open, read, pread, write, fsync, ftruncate */
#define TSFI_THREAD 4u /* pthread_create, pthread_mutex_init, pthread_cond_init */

#define TSFI_FRAMES 24

/* One return address: its shared object (dladdr's path; for a plugin loaded
 * through /proc/self/fd/N, the file it names) and the offset in it. */
typedef struct tsfi_frame {
    unsigned long offset;
    char module[120];
} tsfi_frame;

/* What the failed call was, written when it fails (into memory the parent
 * process shares, so that it survives a crash of the child). */
typedef struct tsfi_report {
    int fired;             /* 1 once the armed call has failed */
    long count;            /* calls counted when it failed (= N) */
    char function[32];     /* "malloc", "operator new", "fsync", ... */
    char module[256];      /* the caller's shared object, full path */
    char symbol[128];      /* the caller's dynamic symbol, if it has one */
    unsigned long offset;  /* the caller's return address minus the module's base */
    int frame_count;       /* the stack when it failed, caller first */
    tsfi_frame frames[TSFI_FRAMES];
    int crash_signal;      /* filled by the test's own signal handler */
    int crash_frame_count;
    tsfi_frame crash_frames[TSFI_FRAMES];
} tsfi_report;

/* Counts the calls of `classes` on this thread from now on; call number
 * `n` (1-based) fails once; n = 0 fails none (to count). `report` may be NULL. */
typedef void (*tsfi_arm_fn)(unsigned classes, long n, tsfi_report *report);
/* Stops counting on this thread; returns the number of calls counted. */
typedef long (*tsfi_disarm_fn)(void);
/* Nestable: calls on this thread are not counted while suspended. */
typedef void (*tsfi_suspend_fn)(void);
typedef void (*tsfi_resume_fn)(void);
/* The calling thread's stack (skipping `skip` frames) into frames[]; returns
 * how many. Usable from a signal handler once backtrace() has run once. */
typedef int (*tsfi_stack_fn)(tsfi_frame *frames, int max, int skip);
/* Leak tracking: while a thread is armed, the blocks that code in a shared
 * object whose real path starts with `prefix` allocates on it (malloc,
 * calloc, realloc, strdup, strndup) are recorded until freed, from any
 * thread. tsfi_live() is how many are still allocated; arming resets it. */
typedef void (*tsfi_track_fn)(const char *prefix);
typedef long (*tsfi_live_fn)(void);

#endif /* TSFI_INJECT_H */
