/*
 * inject.c - a fault injector for `make test-faults`, loaded with LD_PRELOAD
 * (see inject.h for what it interposes and the API that arms it).
 *
 * The library's C and C++ code, the plugins, libsimdjson and the Swift
 * runtime all reach malloc & co through the PLT, so the definitions here win
 * over libc's. The real functions: glibc's __libc_malloc family (no dlsym
 * needed, so no recursion through dlsym's own calloc) and, for the rest,
 * dlsym(RTLD_NEXT). Each failed call records its caller (dladdr of the
 * return address) in the armed report, so the test can tell a failure in
 * the Swift runtime (which ends the process by design) from one in C code.
 *
 * A throwing operator new that is to fail calls std::__throw_bad_alloc()
 * itself instead of letting libstdc++'s operator new see a NULL: nothing of
 * the injector's own state is then skipped by the unwinding.
 */
#define _GNU_SOURCE 1

#include "inject.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static __thread int tl_armed;
static __thread unsigned tl_classes;
static __thread long tl_count, tl_target;
static __thread int tl_suspended;
static __thread int tl_in_new; /* inside the real operator new: its malloc is not counted again */
static __thread int tl_in_shim;
static __thread tsfi_report *tl_report;

static void copy(char *to, size_t size, const char *from) {
    size_t n = from ? strlen(from) : 0;
    if (n >= size) n = size - 1;
    if (n) memcpy(to, from, n);
    to[n] = '\0';
}

/* The file mapped at `base`, from /proc/self/maps: the real path of a
 * plugin that the library loaded through /proc/self/fd/N (a descriptor it
 * has closed since). 1 if found. */
static int mapped_file(const void *base, char *out, size_t size) {
    static char text[65536];
    char *line;
    ssize_t n, got = 0;
    int fd, found = 0;
    tl_in_shim++;
    fd = open("/proc/self/maps", O_RDONLY);
    if (fd >= 0) {
        while (got < (ssize_t)sizeof text - 1 && (n = read(fd, text + got, sizeof text - 1 - (size_t)got)) > 0) got += n;
        close(fd);
    }
    tl_in_shim--;
    if (got <= 0) return 0;
    text[got] = '\0';
    for (line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        unsigned long start = strtoul(line, NULL, 16);
        if (start == (unsigned long)base) {
            char *path = strchr(line, '/');
            char *end = strchr(line, '\n');
            if (path && (!end || path < end)) {
                size_t length = end ? (size_t)(end - path) : strlen(path);
                if (length >= size) length = size - 1;
                memcpy(out, path, length);
                out[length] = '\0';
                found = 1;
            }
            break;
        }
    }
    return found;
}

/* The object that holds `address`, by path (for a plugin loaded through
 * /proc/self/fd/N, the file mapped there), and the offset in it. */
static int locate(void *address, char *module, size_t size, unsigned long *offset, const char **symbol) {
    Dl_info info;
    memset(&info, 0, sizeof info);
    if (dladdr(address, &info) == 0 || info.dli_fname == NULL) return 0;
    if (strncmp(info.dli_fname, "/proc/self/fd/", 14) != 0 || !mapped_file(info.dli_fbase, module, size))
        copy(module, size, info.dli_fname);
    *offset = (unsigned long)((char *)address - (char *)info.dli_fbase);
    if (symbol) *symbol = info.dli_sname;
    return 1;
}

/* Frames in this file (the interposed function, the injector) are left out. */
int tsfi_stack(tsfi_frame *frames, int max, int skip) {
    void *addresses[64];
    Dl_info self, info;
    union {
        int (*function)(tsfi_frame *, int, int);
        void *pointer;
    } me;
    int n = backtrace(addresses, 64), i, out = 0;
    me.function = tsfi_stack;
    if (dladdr(me.pointer, &self) == 0) self.dli_fbase = NULL;
    for (i = 0; i < n && out < max; i++) {
        if (dladdr(addresses[i], &info) != 0 && info.dli_fbase == self.dli_fbase) continue;
        if (skip > 0) {
            skip--;
            continue;
        }
        if (!locate(addresses[i], frames[out].module, sizeof frames[out].module, &frames[out].offset, NULL)) continue;
        out++;
    }
    return out;
}

/* Counts one call of `cls`; 1 if it is the one to fail. */
static int should_fail(unsigned cls, const char *function, void *caller) {
    int info = 0;
    if (!tl_armed || tl_suspended || tl_in_shim || !(cls & tl_classes)) return 0;
    if (++tl_count != tl_target) return 0;
    if (tl_report) {
        tl_in_shim = 1;
        tl_report->count = tl_count;
        copy(tl_report->function, sizeof tl_report->function, function);
        const char *symbol = NULL;
        (void)info;
        if (locate(caller, tl_report->module, sizeof tl_report->module, &tl_report->offset, &symbol))
            copy(tl_report->symbol, sizeof tl_report->symbol, symbol);
        tl_report->frame_count = tsfi_stack(tl_report->frames, TSFI_FRAMES, 0);
        tl_report->fired = 1;
        tl_in_shim = 0;
    }
    return 1;
}

#define CALLER __builtin_return_address(0)

/* ---- Control ------------------------------------------------------------ */

static void reset_live(void);

void tsfi_arm(unsigned classes, long n, tsfi_report *report) {
    tl_classes = classes;
    tl_count = 0;
    tl_target = n;
    tl_report = report;
    if (report) memset(report, 0, sizeof *report);
    reset_live();
    tl_armed = 1;
}

long tsfi_disarm(void) {
    tl_armed = 0;
    return tl_count;
}

void tsfi_suspend(void) { tl_suspended++; }
void tsfi_resume(void) { tl_suspended--; }

/* ---- Allocation ----------------------------------------------------------- */

static int alloc_fails(const char *function, void *caller) {
    if (tl_in_new) return 0;
    if (should_fail(TSFI_ALLOC, function, caller)) {
        errno = ENOMEM;
        return 1;
    }
    return 0;
}

/* ---- Leak tracking --------------------------------------------------------
 * While a thread is armed, the blocks that code in a tracked folder (the
 * plugins: tsfi_track) allocates on it are recorded, and free() from any
 * thread forgets them; tsfi_live() counts the ones still allocated. */

#define LIVE_SLOTS 65536u /* a power of two */
static void *live[LIVE_SLOTS];
static long live_count;
static char track_prefix[256];
static size_t track_prefix_length;
static char live_lock;

static void lock_live(void) {
    while (__atomic_test_and_set(&live_lock, __ATOMIC_ACQUIRE)) {
    }
}
static void unlock_live(void) { __atomic_clear(&live_lock, __ATOMIC_RELEASE); }

static void reset_live(void) {
    lock_live();
    memset(live, 0, sizeof live);
    live_count = 0;
    unlock_live();
}

static size_t slot_of(const void *p) { return (size_t)(((unsigned long)p >> 4) * 2654435761u) & (LIVE_SLOTS - 1); }

/* Open addressing with deletion by backward shift. */
static void live_add(void *p) {
    size_t i;
    lock_live();
    if (live_count < (long)(LIVE_SLOTS / 2)) {
        for (i = slot_of(p); live[i] != NULL; i = (i + 1) & (LIVE_SLOTS - 1)) {
        }
        live[i] = p;
        live_count++;
    }
    unlock_live();
}

static void live_remove(void *p) {
    size_t i, j, k;
    if (__atomic_load_n(&live_count, __ATOMIC_RELAXED) == 0) return;
    lock_live();
    for (i = slot_of(p); live[i] != NULL && live[i] != p; i = (i + 1) & (LIVE_SLOTS - 1)) {
    }
    if (live[i] == p) {
        live[i] = NULL;
        live_count--;
        for (j = (i + 1) & (LIVE_SLOTS - 1); live[j] != NULL; j = (j + 1) & (LIVE_SLOTS - 1)) {
            k = slot_of(live[j]);
            /* move live[j] into the hole at i if its home slot k is not in (i, j] */
            if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
                live[i] = live[j];
                live[j] = NULL;
                i = j;
            }
        }
    }
    unlock_live();
}

/* Whether `caller` lies in a tracked object; a few bases are remembered. */
static int tracked(void *caller) {
    static __thread struct {
        void *base;
        int yes;
    } seen[16];
    static __thread int seen_count;
    char module[256];
    unsigned long offset;
    Dl_info info;
    int k, yes;
    if (!tl_armed || track_prefix_length == 0 || tl_in_shim) return 0;
    if (dladdr(caller, &info) == 0) return 0;
    for (k = 0; k < seen_count; k++)
        if (seen[k].base == info.dli_fbase) return seen[k].yes;
    tl_in_shim = 1;
    yes = locate(caller, module, sizeof module, &offset, NULL) &&
          strncmp(module, track_prefix, track_prefix_length) == 0;
    tl_in_shim = 0;
    if (seen_count < 16) {
        seen[seen_count].base = info.dli_fbase;
        seen[seen_count].yes = yes;
        seen_count++;
    }
    return yes;
}

static void *note(void *p, void *caller) {
    if (p && tracked(caller)) live_add(p);
    return p;
}

void tsfi_track(const char *prefix) {
    copy(track_prefix, sizeof track_prefix, prefix);
    track_prefix_length = strlen(track_prefix);
}

long tsfi_live(void) { return __atomic_load_n(&live_count, __ATOMIC_RELAXED); }

void free(void *pointer) {
    if (pointer) live_remove(pointer);
    __libc_free(pointer);
}

void *malloc(size_t size) {
    if (alloc_fails("malloc", CALLER)) return NULL;
    return note(__libc_malloc(size), CALLER);
}

void *calloc(size_t count, size_t size) {
    if (alloc_fails("calloc", CALLER)) return NULL;
    return note(__libc_calloc(count, size), CALLER);
}

void *realloc(void *pointer, size_t size) {
    void *result;
    if (alloc_fails("realloc", CALLER)) return NULL;
    result = __libc_realloc(pointer, size);
    if (result && pointer) live_remove(pointer);
    return note(result, CALLER);
}

char *strdup(const char *text) {
    size_t n = strlen(text) + 1;
    char *copy_;
    if (alloc_fails("strdup", CALLER)) return NULL;
    copy_ = __libc_malloc(n);
    if (copy_) memcpy(copy_, text, n);
    return note(copy_, CALLER);
}

char *strndup(const char *text, size_t limit) {
    size_t n = strnlen(text, limit);
    char *copy_;
    if (alloc_fails("strndup", CALLER)) return NULL;
    copy_ = __libc_malloc(n + 1);
    if (copy_) {
        memcpy(copy_, text, n);
        copy_[n] = '\0';
    }
    return note(copy_, CALLER);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    static int (*real)(void **, size_t, size_t);
    if (alloc_fails("posix_memalign", CALLER)) return ENOMEM;
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "posix_memalign");
    return real(out, alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    static void *(*real)(size_t, size_t);
    if (alloc_fails("aligned_alloc", CALLER)) return NULL;
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "aligned_alloc");
    return real(alignment, size);
}

void *memalign(size_t alignment, size_t size) {
    if (alloc_fails("memalign", CALLER)) return NULL;
    return __libc_memalign(alignment, size);
}

/* operator new, every form (libstdc++'s mangled names). */
static void throw_bad_alloc(void) {
    static void (*thrower)(void);
    if (!thrower) *(void **)&thrower = dlsym(RTLD_NEXT, "_ZSt17__throw_bad_allocv");
    if (thrower) thrower();
    abort();
}

#define NEW_THROWING(NAME, PARAMS, ARGS)                                     \
    void *NAME PARAMS {                                                      \
        static void *(*real) PARAMS;                                         \
        void *result;                                                        \
        if (alloc_fails("operator new", CALLER)) throw_bad_alloc();          \
        if (!real) *(void **)&real = dlsym(RTLD_NEXT, #NAME);                \
        tl_in_new++;                                                         \
        result = real ARGS;                                                  \
        tl_in_new--;                                                         \
        return result;                                                       \
    }
#define NEW_NOTHROW(NAME, PARAMS, ARGS)                                      \
    void *NAME PARAMS {                                                      \
        static void *(*real) PARAMS;                                         \
        void *result;                                                        \
        if (alloc_fails("operator new", CALLER)) return NULL;                \
        if (!real) *(void **)&real = dlsym(RTLD_NEXT, #NAME);                \
        tl_in_new++;                                                         \
        result = real ARGS;                                                  \
        tl_in_new--;                                                         \
        return result;                                                       \
    }

void *_Znwm(size_t);
void *_Znam(size_t);
void *_ZnwmSt11align_val_t(size_t, size_t);
void *_ZnamSt11align_val_t(size_t, size_t);
void *_ZnwmRKSt9nothrow_t(size_t, const void *);
void *_ZnamRKSt9nothrow_t(size_t, const void *);
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t, size_t, const void *);
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t, size_t, const void *);

NEW_THROWING(_Znwm, (size_t n), (n))
NEW_THROWING(_Znam, (size_t n), (n))
NEW_THROWING(_ZnwmSt11align_val_t, (size_t n, size_t a), (n, a))
NEW_THROWING(_ZnamSt11align_val_t, (size_t n, size_t a), (n, a))
NEW_NOTHROW(_ZnwmRKSt9nothrow_t, (size_t n, const void *t), (n, t))
NEW_NOTHROW(_ZnamRKSt9nothrow_t, (size_t n, const void *t), (n, t))
NEW_NOTHROW(_ZnwmSt11align_val_tRKSt9nothrow_t, (size_t n, size_t a, const void *t), (n, a, t))
NEW_NOTHROW(_ZnamSt11align_val_tRKSt9nothrow_t, (size_t n, size_t a, const void *t), (n, a, t))

/* libffi's executable memory for closures (support.c). */
void *ffi_closure_alloc(size_t size, void **code);
void *ffi_closure_alloc(size_t size, void **code) {
    static void *(*real)(size_t, void **);
    if (alloc_fails("ffi_closure_alloc", CALLER)) return NULL;
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "ffi_closure_alloc");
    return real(size, code);
}

/* ---- I/O ------------------------------------------------------------------ */

static int io_fails(const char *function, void *caller) {
    if (should_fail(TSFI_IO, function, caller)) {
        errno = EIO;
        return 1;
    }
    return 0;
}

/* Declares real_NAME, a pointer to the next definition: RET (*real_NAME) PARAMS. */
#define REAL(NAME, RET, PARAMS) \
    static RET(*real_##NAME) PARAMS; \
    if (!real_##NAME) *(void **)&real_##NAME = dlsym(RTLD_NEXT, #NAME)

static int open_common(const char *name, const char *path, int flags, va_list ap, void *caller) {
    int (*real)(const char *, int, ...);
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) mode = (mode_t)va_arg(ap, int);
    if (io_fails(name, caller)) return -1;
    *(void **)&real = dlsym(RTLD_NEXT, name);
    return real(path, flags, mode);
}

int open(const char *path, int flags, ...) {
    va_list ap;
    int fd;
    va_start(ap, flags);
    fd = open_common("open", path, flags, ap, CALLER);
    va_end(ap);
    return fd;
}

int open64(const char *path, int flags, ...) {
    va_list ap;
    int fd;
    va_start(ap, flags);
    fd = open_common("open64", path, flags, ap, CALLER);
    va_end(ap);
    return fd;
}

ssize_t read(int fd, void *buffer, size_t size) {
    REAL(read, ssize_t, (int, void *, size_t));
    if (io_fails("read", CALLER)) return -1;
    return real_read(fd, buffer, size);
}

ssize_t pread(int fd, void *buffer, size_t size, off_t offset) {
    REAL(pread, ssize_t, (int, void *, size_t, off_t));
    if (io_fails("pread", CALLER)) return -1;
    return real_pread(fd, buffer, size, offset);
}

ssize_t write(int fd, const void *buffer, size_t size) {
    REAL(write, ssize_t, (int, const void *, size_t));
    if (io_fails("write", CALLER)) return -1;
    return real_write(fd, buffer, size);
}

int fsync(int fd) {
    REAL(fsync, int, (int));
    if (io_fails("fsync", CALLER)) return -1;
    return real_fsync(fd);
}

int ftruncate(int fd, off_t length) {
    REAL(ftruncate, int, (int, off_t));
    if (io_fails("ftruncate", CALLER)) return -1;
    return real_ftruncate(fd, length);
}

/* ---- Threads ------------------------------------------------------------- */

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg) {
    REAL(pthread_create, int, (pthread_t *, const pthread_attr_t *, void *(*)(void *), void *));
    if (should_fail(TSFI_THREAD, "pthread_create", CALLER)) return EAGAIN;
    return real_pthread_create(thread, attr, start, arg);
}

int pthread_mutex_init(pthread_mutex_t *mutex, const pthread_mutexattr_t *attr) {
    REAL(pthread_mutex_init, int, (pthread_mutex_t *, const pthread_mutexattr_t *));
    if (should_fail(TSFI_THREAD, "pthread_mutex_init", CALLER)) return ENOMEM;
    return real_pthread_mutex_init(mutex, attr);
}

int pthread_cond_init(pthread_cond_t *cond, const pthread_condattr_t *attr) {
    REAL(pthread_cond_init, int, (pthread_cond_t *, const pthread_condattr_t *));
    if (should_fail(TSFI_THREAD, "pthread_cond_init", CALLER)) return ENOMEM;
    return real_pthread_cond_init(cond, attr);
}
