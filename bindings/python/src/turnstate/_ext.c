/* turnstate._ext: the compiled core of the Python package `turnstate`.
 *
 * What it does, and why it is in C (see README.md, "How it works"):
 * - It loads libturnstate with dlopen (the path the Python layer chose:
 *   TURNSTATE_LIB, the bundled copy or the system's) and calls the C API
 *   through function pointers: no ctypes, no link-time dependency, so one
 *   build of this module works with any libturnstate.so.0 of 0.2 or later
 *   (the 0.3 functions are looked up and used when present).
 * - Every call into the library releases the GIL (a library thread, such as
 *   the delay plugin's worker, may be running a Python callback meanwhile);
 *   the callbacks take it back. A store with no plugin has no code between
 *   its Python callbacks that could wait for another thread, so there the
 *   first callback of a call keeps the GIL until the call returns (one
 *   hand-over per dispatch instead of one per callback).
 * - Reducers get their slice as read-only Python values (FrozenDict,
 *   FrozenList), kept between dispatches and re-parsed only when the slice
 *   changed behind them (ts_reducer_slice_id says which slice they got).
 *   They are added as patch reducers (ts_store_add_patch_reducer) when the
 *   library has them: the store then never makes the text of a big slice
 *   for them, and keeps it as a tree that their patches change in place;
 *   a slice they do not know is read from its text, or from the texts of
 *   its parts joined when it is split.
 *   A list slice comes as a plain list for the action type the reducer
 *   last answered with a new list (list(state) is then CPython's fast
 *   copy), checked after the call against a copy of its item pointers.
 * - An action dispatched from Python reaches Python reducers as the Python
 *   payload (a read-only copy), not re-parsed from the text sent to the
 *   store; with ts_store_dispatch_parts (0.3) no action text is made at all.
 * - A reducer's answer becomes text through orjson, or a JSON Patch (a
 *   turnstate.Patch, or the changes found by comparing a new list or dict
 *   with the kept one item by item, by identity).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "turnstate.h"

#if PY_VERSION_HEX >= 0x030D0000
#define TS_FINALIZING() Py_IsFinalizing()
#else
#define TS_FINALIZING() _Py_IsFinalizing()
#endif

/* ---- The library ---------------------------------------------------------- */

typedef ts_status (*id_fn)(uint64_t *out);
typedef ts_status (*patch_fn)(const char *patch_json);
typedef ts_status (*add_for_fn)(ts_store *, const char *, const char *const *, ts_reducer_fn, void *);
typedef ts_status (*add_patch_fn)(ts_store *, const char *, const char *const *, ts_patch_reducer_fn, void *);

static struct {
    void *handle;
    int (*version_number)(void);
    const char *(*version_string)(void);
    const char *(*status_name)(ts_status);
    const char *(*last_error)(void);
    char *(*strdup_)(const char *);
    void (*free_)(void *);
    ts_status (*reducer_fail)(const char *);
    ts_status (*store_create)(const char *, ts_store **);
    void (*store_destroy)(ts_store *);
    ts_status (*add_reducer)(ts_store *, const char *, ts_reducer_fn, void *);
    ts_status (*replace_reducer)(ts_store *, const char *, ts_reducer_fn, void *);
    ts_status (*remove_reducer)(ts_store *, const char *);
    ts_status (*dispatch)(ts_store *, const char *);
    ts_status (*get_state)(ts_store *, const char *, char **);
    ts_status (*subscribe)(ts_store *, const char *, ts_listener_fn, void *, uint64_t *);
    ts_status (*unsubscribe)(ts_store *, uint64_t);
    ts_status (*add_middleware)(ts_store *, const char *, ts_middleware_fn, void *);
    ts_status (*remove_middleware)(ts_store *, const char *);
    ts_status (*load_plugin)(ts_store *, const char *, const char *);
    ts_status (*load_plugins)(ts_store *, const char *);
    /* Since 0.3 (NULL with an older library). */
    id_fn slice_id;
    id_fn answer_id;
    patch_fn reducer_patch;
    add_for_fn add_reducer_for;
    add_for_fn replace_reducer_for;
    /* Patch reducers (NULL with a library without them: reducers then get text). */
    add_patch_fn add_patch_reducer;
    ts_status (*json_next)(const ts_json *, size_t *, ts_json *, ts_json *);
    ts_status (*json_string)(const ts_json *, const char **, size_t *);
    /* The type and payload apart (NULL with a library without it: the text). */
    ts_status (*dispatch_parts)(ts_store *, const char *, const char *);
    /* Versions of the state (NULL with a library without them). */
    ts_status (*set_version)(ts_store *, uint32_t);
    ts_status (*get_version)(ts_store *, uint32_t *);
    ts_status (*add_migration)(ts_store *, uint32_t, ts_migration_fn, void *);
    ts_status (*replace_state_from)(ts_store *, const char *, uint32_t);
} lib;

/* ---- Hooks: the Python side's helpers (configure()) ----------------------- */

static struct {
    PyObject *raise_for;      /* (status, since, what) -> raises */
    PyObject *record;         /* (exception, where, nested) -> None */
    PyObject *failure_reason; /* (exception) -> bytes */
    PyObject *loads_exact;    /* (bytes) -> value: the stdlib scanner, exact numbers */
    PyObject *dumps_std;      /* (value) -> bytes: the stdlib encoder, exact Decimals; raises */
    PyObject *action_text;    /* (action, payload) -> bytes: dispatch()'s general case */
    PyObject *middleware_run; /* (fn, store, next, action, label) -> None or (status, message bytes) */
    PyObject *json_null;      /* turnstate.JSON_NULL */
    PyObject *patch_type;     /* turnstate.Patch */
    PyObject *gone;           /* () -> raises StoreGoneError */
} hooks;

static PyObject *orjson_loads, *orjson_dumps, *orjson_options;
static PyObject *str_ops;

/* The counter of exceptions recorded in callbacks (see _store.py, "Errors
 * raised inside callbacks"): a call notes it before calling the library and
 * looks for recorded exceptions only when it changed. Guarded by the GIL. */
static unsigned long long error_seq;

/* How often JSON went through the stdlib json module instead of orjson
 * (counters(): for tests and benchmarks). Guarded by the GIL. */
static unsigned long long dumps_fallbacks, exact_parses;

/* ---- Calls into the library and the GIL ---------------------------------- */

/* One call into the library from Python, on the calling thread's stack. */
typedef struct call_frame {
    struct call_frame *outer;
    PyThreadState *released; /* the thread state to take the GIL back with; NULL while held */
    int keep;                /* a callback that takes the GIL back keeps it until the call returns */
    int fast;                /* the GIL was not released at all (see core_begin) */
    /* An action dispatched from Python (dispatch("type", payload)): */
    const char *py_text;     /* the text handed to ts_store_dispatch */
    size_t py_text_len;
    PyObject *py_type;       /* borrowed: the type (str) */
    PyObject *py_payload;    /* borrowed: the payload, or NULL when none */
    /* Or dispatched as its parts (ts_store_dispatch_parts, py_text NULL):
     * the type's and the payload's texts handed to the library, and the
     * action text the library made of them once a reducer saw it. */
    const char *py_type_text, *py_payload_text, *py_parts_json;
    PyObject *action;        /* owned: the Action made for it, shared by the reducers */
} call_frame;

/* initial-exec: one load from the thread pointer, no __tls_get_addr call
 * (this module's TLS is one pointer: it fits the space the loader keeps). */
static _Thread_local call_frame *current_frame __attribute__((tls_model("initial-exec")));

static inline void call_begin(call_frame *f, int keep) {
    f->outer = current_frame;
    f->keep = keep;
    f->py_text = NULL;
    f->py_payload = NULL;
    f->py_type = NULL;
    f->py_type_text = f->py_payload_text = f->py_parts_json = NULL;
    f->action = NULL;
    f->fast = 0;
    current_frame = f;
    f->released = PyEval_SaveThread();
}

static inline void call_end(call_frame *f) {
    if (f->released != NULL) PyEval_RestoreThread(f->released);
    current_frame = f->outer;
    Py_CLEAR(f->action);
}

enum { GIL_HELD, GIL_KEPT, GIL_RESAVE, GIL_ENSURED };
typedef struct {
    int mode;
    PyGILState_STATE state;
    call_frame *frame;
} gil_hold;

/* Takes the GIL for a callback. 0 when Python is shutting down (the callback
 * must not run Python code). */
static inline int gil_enter(gil_hold *h) {
    call_frame *f = current_frame;
    h->frame = f;
    h->state = PyGILState_UNLOCKED;
    if (f != NULL) {
        if (f->released != NULL) {
            PyThreadState *t = f->released;
            f->released = NULL;
            PyEval_RestoreThread(t);
            h->mode = f->keep ? GIL_KEPT : GIL_RESAVE;
        } else {
            h->mode = GIL_HELD;
        }
        return 1;
    }
    /* A thread that is not inside a call from Python: a library thread. */
    if (TS_FINALIZING()) return 0;
    h->state = PyGILState_Ensure();
    h->mode = GIL_ENSURED;
    return 1;
}

static inline void gil_leave(gil_hold *h) {
    if (h->mode == GIL_RESAVE) h->frame->released = PyEval_SaveThread();
    else if (h->mode == GIL_ENSURED) PyGILState_Release(h->state);
}

/* ---- Small helpers ----------------------------------------------------- */

/* Calls a callback with `nargs` arguments at args[0..], args[-1] being
 * writable (PY_VECTORCALL_ARGUMENTS_OFFSET: a bound method puts its self
 * there instead of making a new tuple): through the callable's vectorcall
 * pointer when it has one (a Python function: what PyObject_Vectorcall does,
 * without its checks of the result, which cost about 30 instructions on
 * every reducer and listener call), else PyObject_Vectorcall. */
static inline PyObject *call_fast(PyObject *fn, PyObject *const *args, size_t nargs) {
    vectorcallfunc call = PyVectorcall_Function(fn);
    if (call != NULL) {
        PyObject *result = call(fn, args, nargs | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        if (result == NULL && !PyErr_Occurred())
            PyErr_Format(PyExc_SystemError, "%R returned NULL without setting an exception", fn);
        return result;
    }
    return PyObject_Vectorcall(fn, args, nargs | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

typedef struct {
    char *data;
    size_t length, capacity;
    char inline_[256];
} buffer;

static void buffer_init(buffer *b) {
    b->data = b->inline_;
    b->length = 0;
    b->capacity = sizeof b->inline_;
}

static void buffer_free(buffer *b) {
    if (b->data != b->inline_) PyMem_Free(b->data);
    buffer_init(b);
}

static int buffer_reserve(buffer *b, size_t more) {
    if (b->length + more + 1 <= b->capacity) return 0;
    size_t capacity = b->capacity * 2;
    while (capacity < b->length + more + 1) capacity *= 2;
    char *data;
    if (b->data == b->inline_) {
        data = PyMem_Malloc(capacity);
        if (data != NULL) memcpy(data, b->data, b->length);
    } else {
        data = PyMem_Realloc(b->data, capacity);
    }
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->capacity = capacity;
    return 0;
}

static inline int buffer_put(buffer *b, const char *text, size_t length) {
    if (buffer_reserve(b, length) < 0) return -1;
    memcpy(b->data + b->length, text, length);
    b->length += length;
    b->data[b->length] = '\0';
    return 0;
}

static inline int buffer_puts(buffer *b, const char *text) { return buffer_put(b, text, strlen(text)); }

/* Writes a long long in decimal to `out` (at least 21 bytes); returns the
 * length. (snprintf costs ten times more, and integers are the commonest
 * payloads and slices.) */
static int format_integer(char *out, long long value) {
    char digits[24];
    int n = 0;
    unsigned long long magnitude = value < 0 ? 0ULL - (unsigned long long)value : (unsigned long long)value;
    do {
        digits[n++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude != 0);
    int length = 0;
    if (value < 0) out[length++] = '-';
    while (n > 0) out[length++] = digits[--n];
    out[length] = '\0';
    return length;
}

/* Appends `text` as the inside of a JSON string (no quotes). */
static int buffer_put_escaped(buffer *b, const char *text, size_t length) {
    size_t start = 0;
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        if (buffer_put(b, text + start, i - start) < 0) return -1;
        char escape[8];
        if (c == '"' || c == '\\') snprintf(escape, sizeof escape, "\\%c", c);
        else snprintf(escape, sizeof escape, "\\u%04x", c);
        if (buffer_puts(b, escape) < 0) return -1;
        start = i + 1;
    }
    return buffer_put(b, text + start, length - start);
}

/* Appends "/token" to a JSON Pointer being built (~ and / escaped), as the
 * inside of a JSON string. */
static int buffer_put_token(buffer *b, PyObject *key) {
    if (buffer_put(b, "/", 1) < 0) return -1;
    if (PyLong_Check(key)) {
        char digits[32];
        int n = snprintf(digits, sizeof digits, "%zd", PyLong_AsSsize_t(key));
        return buffer_put(b, digits, (size_t)n);
    }
    Py_ssize_t length;
    const char *text = PyUnicode_AsUTF8AndSize(key, &length);
    if (text == NULL) return -1;
    size_t start = 0;
    for (Py_ssize_t i = 0; i < length; i++) {
        if (text[i] != '~' && text[i] != '/') continue;
        if (buffer_put_escaped(b, text + start, (size_t)i - start) < 0) return -1;
        if (buffer_puts(b, text[i] == '~' ? "~0" : "~1") < 0) return -1;
        start = (size_t)i + 1;
    }
    return buffer_put_escaped(b, text + start, (size_t)length - start);
}

/* ---- Read-only values: FrozenDict and FrozenList ------------------------ */

static PyTypeObject FrozenDict_Type, FrozenList_Type;

#define IS_FROZEN(o) (Py_IS_TYPE((o), &FrozenDict_Type) || Py_IS_TYPE((o), &FrozenList_Type))

static PyObject *frozen_refuse(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)args;
    (void)kwargs;
    PyErr_Format(PyExc_TypeError,
                 "this %s is read-only: the store keeps it, and reducers get their slice and payload read-only; "
                 "build a new value ({**state, key: value}, state + [item]) or copy it (copy.deepcopy(state))",
                 Py_TYPE(self)->tp_name);
    return NULL;
}

static int frozen_ass_subscript(PyObject *self, PyObject *key, PyObject *value) {
    (void)key;
    (void)value;
    frozen_refuse(self, NULL, NULL);
    return -1;
}

static int frozen_ass_item(PyObject *self, Py_ssize_t index, PyObject *value) {
    (void)index;
    (void)value;
    frozen_refuse(self, NULL, NULL);
    return -1;
}

static PyObject *frozen_inplace(PyObject *self, PyObject *other) {
    (void)other;
    return frozen_refuse(self, NULL, NULL);
}

static PyObject *frozen_inplace_repeat(PyObject *self, Py_ssize_t count) {
    (void)count;
    return frozen_refuse(self, NULL, NULL);
}

static int frozen_init(PyObject *self, PyObject *args, PyObject *kwargs) {
    frozen_refuse(self, args, kwargs);
    return -1;
}

static PyObject *frozen_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    (void)args;
    (void)kwargs;
    PyErr_Format(PyExc_TypeError, "cannot create '%s' instances: the store makes them (build a dict or a list)",
                 type->tp_name);
    return NULL;
}

/* A mutable deep copy: plain dicts and lists all the way down. */
static PyObject *thaw(PyObject *value) {
    if (PyDict_Check(value) && !PyDict_CheckExact(value) && !Py_IS_TYPE(value, &FrozenDict_Type)) {
        Py_INCREF(value);
        return value;
    }
    if (PyDict_Check(value)) {
        PyObject *copy = PyDict_New();
        if (copy == NULL) return NULL;
        Py_ssize_t position = 0;
        PyObject *key, *item;
        while (PyDict_Next(value, &position, &key, &item)) {
            PyObject *thawed = thaw(item);
            if (thawed == NULL || PyDict_SetItem(copy, key, thawed) < 0) {
                Py_XDECREF(thawed);
                Py_DECREF(copy);
                return NULL;
            }
            Py_DECREF(thawed);
        }
        return copy;
    }
    if (PyList_CheckExact(value) || Py_IS_TYPE(value, &FrozenList_Type)) {
        Py_ssize_t n = PyList_GET_SIZE(value);
        PyObject *copy = PyList_New(n);
        if (copy == NULL) return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *thawed = thaw(PyList_GET_ITEM(value, i));
            if (thawed == NULL) {
                Py_DECREF(copy);
                return NULL;
            }
            PyList_SET_ITEM(copy, i, thawed);
        }
        return copy;
    }
    Py_INCREF(value);
    return value;
}

static PyObject *frozen_deepcopy(PyObject *self, PyObject *memo) {
    (void)memo;
    return thaw(self);
}

static PyObject *frozen_copy(PyObject *self, PyObject *unused) {
    (void)unused;
    if (PyDict_Check(self)) return PyDict_Copy(self);
    return PyList_GetSlice(self, 0, PyList_GET_SIZE(self));
}

static PyObject *frozen_reduce(PyObject *self, PyObject *unused) {
    PyObject *copy = frozen_copy(self, unused);
    if (copy == NULL) return NULL;
    PyObject *type = PyDict_Check(self) ? (PyObject *)&PyDict_Type : (PyObject *)&PyList_Type;
    return Py_BuildValue("(O(N))", type, copy);
}

#define REFUSE(name) {name, (PyCFunction)(void (*)(void))frozen_refuse, METH_VARARGS | METH_KEYWORDS, NULL}

static PyMethodDef frozen_dict_methods[] = {
    REFUSE("update"), REFUSE("pop"), REFUSE("popitem"), REFUSE("clear"), REFUSE("setdefault"),
    {"__deepcopy__", frozen_deepcopy, METH_O, "A mutable deep copy (plain dicts and lists)."},
    {"__copy__", frozen_copy, METH_NOARGS, "A mutable shallow copy (a dict)."},
    {"__reduce__", frozen_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef frozen_list_methods[] = {
    REFUSE("append"), REFUSE("extend"), REFUSE("insert"), REFUSE("remove"), REFUSE("pop"),
    REFUSE("clear"), REFUSE("sort"), REFUSE("reverse"),
    {"__deepcopy__", frozen_deepcopy, METH_O, "A mutable deep copy (plain dicts and lists)."},
    {"__copy__", frozen_copy, METH_NOARGS, "A mutable shallow copy (a list)."},
    {"__reduce__", frozen_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyMappingMethods frozen_dict_mapping = {0, 0, frozen_ass_subscript};
static PyNumberMethods frozen_dict_number = {.nb_inplace_or = frozen_inplace};
static PyMappingMethods frozen_list_mapping = {0, 0, frozen_ass_subscript};
static PySequenceMethods frozen_list_sequence = {
    .sq_ass_item = frozen_ass_item,
    .sq_inplace_concat = frozen_inplace,
    .sq_inplace_repeat = frozen_inplace_repeat,
};

static PyTypeObject FrozenDict_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "turnstate.FrozenDict",
    .tp_doc = "A read-only dict: a JSON object as the store keeps it (see turnstate.FrozenDict in the docs).",
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_as_mapping = &frozen_dict_mapping,
    .tp_as_number = &frozen_dict_number,
    .tp_methods = frozen_dict_methods,
    .tp_init = frozen_init,
    .tp_new = frozen_new,
};

static PyTypeObject FrozenList_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "turnstate.FrozenList",
    .tp_doc = "A read-only list: a JSON array as the store keeps it (see turnstate.FrozenList in the docs).",
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_as_mapping = &frozen_list_mapping,
    .tp_as_sequence = &frozen_list_sequence,
    .tp_methods = frozen_list_methods,
    .tp_init = frozen_init,
    .tp_new = frozen_new,
};

/* Makes a value that was parsed here read-only, in place: every exact dict
 * and list becomes a FrozenDict or FrozenList (same layout, same memory). */
static void freeze_parsed(PyObject *value) {
    if (PyDict_CheckExact(value)) {
        Py_SET_TYPE(value, &FrozenDict_Type);
        Py_ssize_t position = 0;
        PyObject *key, *item;
        while (PyDict_Next(value, &position, &key, &item))
            if (PyDict_CheckExact(item) || PyList_CheckExact(item)) freeze_parsed(item);
    } else if (PyList_CheckExact(value)) {
        Py_SET_TYPE(value, &FrozenList_Type);
        Py_ssize_t n = PyList_GET_SIZE(value);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *item = PyList_GET_ITEM(value, i);
            if (PyDict_CheckExact(item) || PyList_CheckExact(item)) freeze_parsed(item);
        }
    }
}

/* Whether `value` is exactly what parsing its JSON text gives back (so it
 * may be kept for the next dispatch): dicts with str keys, lists, str, int
 * (within 64 bits), float, bool and None, read-only or not. 1 yes, 0 no. */
static int canonical(PyObject *value, int depth) {
    if (depth > TS_MAX_DEPTH) return 0;
    if (IS_FROZEN(value)) return 1; /* frozen here: canonical all the way down */
    if (PyDict_CheckExact(value)) {
        Py_ssize_t position = 0;
        PyObject *key, *item;
        while (PyDict_Next(value, &position, &key, &item))
            if (!PyUnicode_CheckExact(key) || !canonical(item, depth + 1)) return 0;
        return 1;
    }
    if (PyList_CheckExact(value)) {
        Py_ssize_t n = PyList_GET_SIZE(value);
        for (Py_ssize_t i = 0; i < n; i++)
            if (!canonical(PyList_GET_ITEM(value, i), depth + 1)) return 0;
        return 1;
    }
    if (PyUnicode_CheckExact(value) || value == Py_None || PyBool_Check(value) || PyFloat_CheckExact(value)) return 1;
    if (PyLong_CheckExact(value)) {
        int overflow;
        PyLong_AsLongLongAndOverflow(value, &overflow);
        return overflow == 0;
    }
    return 0;
}

/* Freezes a canonical value in place (see canonical()). */
static void freeze_canonical(PyObject *value) {
    if (IS_FROZEN(value)) return;
    if (PyDict_CheckExact(value)) {
        Py_SET_TYPE(value, &FrozenDict_Type);
        Py_ssize_t position = 0;
        PyObject *key, *item;
        while (PyDict_Next(value, &position, &key, &item)) freeze_canonical(item);
    } else if (PyList_CheckExact(value)) {
        Py_SET_TYPE(value, &FrozenList_Type);
        Py_ssize_t n = PyList_GET_SIZE(value);
        for (Py_ssize_t i = 0; i < n; i++) freeze_canonical(PyList_GET_ITEM(value, i));
    }
}

/* A read-only copy of a canonical value (the payload a Python caller
 * dispatched: the caller keeps its own). NULL with no exception set when the
 * value is not canonical. */
static PyObject *frozen_copy_of(PyObject *value, int depth) {
    if (depth > TS_MAX_DEPTH) return NULL;
    if (IS_FROZEN(value)) {
        Py_INCREF(value);
        return value;
    }
    if (PyDict_CheckExact(value)) {
        PyObject *copy = PyDict_New();
        if (copy == NULL) return NULL;
        Py_ssize_t position = 0;
        PyObject *key, *item;
        while (PyDict_Next(value, &position, &key, &item)) {
            PyObject *frozen = PyUnicode_CheckExact(key) ? frozen_copy_of(item, depth + 1) : NULL;
            if (frozen == NULL || PyDict_SetItem(copy, key, frozen) < 0) {
                Py_XDECREF(frozen);
                Py_DECREF(copy);
                return NULL;
            }
            Py_DECREF(frozen);
        }
        Py_SET_TYPE(copy, &FrozenDict_Type);
        return copy;
    }
    if (PyList_CheckExact(value)) {
        Py_ssize_t n = PyList_GET_SIZE(value);
        PyObject *copy = PyList_New(n);
        if (copy == NULL) return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *frozen = frozen_copy_of(PyList_GET_ITEM(value, i), depth + 1);
            if (frozen == NULL) {
                Py_DECREF(copy);
                return NULL;
            }
            PyList_SET_ITEM(copy, i, frozen);
        }
        Py_SET_TYPE(copy, &FrozenList_Type);
        return copy;
    }
    if (canonical(value, depth)) {
        Py_INCREF(value);
        return value;
    }
    return NULL;
}

/* ---- JSON in and out ------------------------------------------------------ */

/* Whether orjson may read the text otherwise than exactly: an integer of 19
 * digits or more (beyond 64 bits it gives a float), or an exponent of three
 * digits or more (1e-400 gives 0.0, 1e400 fails). Such texts go through the
 * stdlib scanner with the exact rules (decimal.Decimal); a false alarm (the
 * same digits inside a string) only costs that slower parse. */
static int needs_exact(const char *text, size_t length) {
    size_t run = 0;
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)text[i];
        if ((unsigned)(c - '0') < 10) {
            if (++run >= 19) return 1;
            continue;
        }
        run = 0;
        if ((c | 0x20) == 'e' && i > 0 && (unsigned)((unsigned char)text[i - 1] - '0') < 10) {
            size_t j = i + 1;
            if (j < length && (text[j] == '+' || text[j] == '-')) j++;
            size_t digits = 0;
            while (j < length && (unsigned)((unsigned char)text[j] - '0') < 10) j++, digits++;
            if (digits >= 3) return 1;
        }
    }
    return 0;
}

/* The Python value of JSON text that the library produced (valid, minified). */
static PyObject *parse(const char *text, size_t length, int frozen) {
    PyObject *result;
    if (length > 0 && length < 19 && (unsigned)((unsigned char)text[0] - '0') < 10) {
        size_t i = 0;
        long long number = 0;
        while (i < length && (unsigned)((unsigned char)text[i] - '0') < 10) number = number * 10 + (text[i++] - '0');
        if (i == length) return PyLong_FromLongLong(number);
    }
    if (needs_exact(text, length)) {
        PyObject *bytes = PyBytes_FromStringAndSize(text, (Py_ssize_t)length);
        if (bytes == NULL) return NULL;
        exact_parses++;
        result = PyObject_CallOneArg(hooks.loads_exact, bytes);
        Py_DECREF(bytes);
    } else {
        PyObject *view = PyMemoryView_FromMemory((char *)text, (Py_ssize_t)length, PyBUF_READ);
        if (view == NULL) return NULL;
        result = PyObject_CallOneArg(orjson_loads, view);
        Py_DECREF(view);
    }
    if (result != NULL && frozen) freeze_parsed(result);
    return result;
}

/* Appends the JSON text of a slice value that a patch reducer got: its text
 * when it has one, else (a split array or object of a big slice) its
 * children's texts joined with the punctuation between them. */
static int put_json_view(buffer *b, const ts_json *value, int depth) {
    if (value->text != NULL) return buffer_put(b, value->text, value->length);
    if ((value->kind != TS_JSON_ARRAY && value->kind != TS_JSON_OBJECT) || depth > TS_MAX_DEPTH) {
        PyErr_Format(PyExc_RuntimeError, "turnstate: the slice has a value with no text that is not a container "
                     "(kind %d)", (int)value->kind);
        return -1;
    }
    const int object = value->kind == TS_JSON_OBJECT;
    if (buffer_put(b, object ? "{" : "[", 1) < 0) return -1;
    size_t cursor = 0;
    ts_json key, child;
    for (int first = 1;; first = 0) {
        ts_status status = lib.json_next(value, &cursor, object ? &key : NULL, &child);
        if (status == TS_E_NOT_FOUND) break;
        if (status != TS_OK) {
            PyErr_Format(PyExc_RuntimeError, "turnstate: reading the slice failed: %s", lib.last_error());
            return -1;
        }
        if (!first && buffer_put(b, ",", 1) < 0) return -1;
        if (object) {
            if (key.text != NULL) {
                if (buffer_put(b, key.text, key.length) < 0) return -1;
            } else {
                const char *name;
                size_t name_length;
                if (lib.json_string(&key, &name, &name_length) != TS_OK) {
                    PyErr_Format(PyExc_RuntimeError, "turnstate: reading the slice failed: %s", lib.last_error());
                    return -1;
                }
                if (buffer_put(b, "\"", 1) < 0 || buffer_put_escaped(b, name, name_length) < 0 ||
                    buffer_put(b, "\"", 1) < 0)
                    return -1;
            }
            if (buffer_put(b, ":", 1) < 0) return -1;
        }
        if (put_json_view(b, &child, depth + 1) < 0) return -1;
    }
    return buffer_put(b, object ? "}" : "]", 1);
}

/* The Python value of a patch reducer's slice: its text parsed, or for a
 * split slice (no text) the text of its parts joined first (one copy, then
 * one parse: cheaper than a parse per part). Sets *joined when it joined. */
static PyObject *parse_view(const ts_json *slice, int frozen, int *joined) {
    *joined = 0;
    if (slice->text != NULL) return parse(slice->text, slice->length, frozen);
    buffer b;
    buffer_init(&b);
    if (buffer_reserve(&b, slice->length) < 0) return NULL;
    PyObject *value = NULL;
    if (put_json_view(&b, slice, 0) == 0) {
        *joined = 1;
        value = parse(b.data, b.length, frozen);
    }
    buffer_free(&b);
    return value;
}

/* Whether a value orjson wrote holds a float NaN or infinity (which orjson
 * writes as null, where the json module refuses it). */
static int has_nonfinite(PyObject *value, int depth) {
    if (PyFloat_Check(value)) {
        double number = PyFloat_AS_DOUBLE(value);
        return !(number - number == 0.0);
    }
    if (depth > 2 * TS_MAX_DEPTH) return 1; /* let the json module say what is wrong */
    if (PyDict_Check(value)) {
        Py_ssize_t position = 0;
        PyObject *key, *item;
        while (PyDict_Next(value, &position, &key, &item))
            if (has_nonfinite(item, depth + 1)) return 1;
    } else if (PyList_Check(value) || PyTuple_Check(value)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(value);
        PyObject **items = PySequence_Fast_ITEMS(value);
        for (Py_ssize_t i = 0; i < n; i++)
            if (has_nonfinite(items[i], depth + 1)) return 1;
    }
    return 0;
}

/* JSON text of a value, as bytes: orjson, or the stdlib encoder for what
 * orjson does not write as the json module would: Decimal, integers beyond
 * 64 bits, keys that are not str (orjson refuses them), and NaN and
 * infinities (orjson writes them as null: when its text holds "null" and the
 * value a non-finite float, the stdlib encoder refuses it with ValueError). */
static PyObject *dumps(PyObject *value) {
    if (PyLong_CheckExact(value)) {
        int overflow;
        long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (!overflow) {
            char digits[32];
            int n = format_integer(digits, number);
            return PyBytes_FromStringAndSize(digits, n);
        }
    }
    if (value == hooks.json_null || value == Py_None) return PyBytes_FromStringAndSize("null", 4);
    /* orjson matches keyword names by identity: the interned "option". */
    static PyObject *names;
    if (names == NULL) {
        PyObject *option = PyUnicode_InternFromString("option");
        if (option == NULL || (names = PyTuple_Pack(1, option)) == NULL) {
            Py_XDECREF(option);
            return NULL;
        }
        Py_DECREF(option);
    }
    PyObject *args[2] = {value, orjson_options};
    PyObject *text = PyObject_Vectorcall(orjson_dumps, args, 1, names);
    if (text != NULL) {
        const char *data = PyBytes_AS_STRING(text);
        Py_ssize_t length = PyBytes_GET_SIZE(text);
        if (length < 4 || memmem(data, (size_t)length, "null", 4) == NULL || !has_nonfinite(value, 0)) return text;
        Py_DECREF(text);
    } else {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return NULL; /* orjson.JSONEncodeError is a TypeError */
        PyErr_Clear();
    }
    dumps_fallbacks++;
    return PyObject_CallOneArg(hooks.dumps_std, value);
}

/* ---- Errors from callbacks ------------------------------------------------ */

/* Records the exception being raised in a callback (see _store.py). */
static PyObject *take_exception(void) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (value == NULL) {
        value = Py_None;
        Py_INCREF(value);
    }
    if (traceback != NULL && PyExceptionInstance_Check(value)) PyException_SetTraceback(value, traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    return value;
}

static void record_exception(PyObject *error, const char *where, int nested) {
    PyObject *result = PyObject_CallFunction(hooks.record, "Osi", error, where, nested);
    if (result == NULL) PyErr_WriteUnraisable(hooks.record);
    Py_XDECREF(result);
}

/* A reducer that raised: records the exception and fails the reducer call
 * with "Type: message". */
static void fail_reducer(int nested) {
    PyObject *error = take_exception();
    record_exception(error, "reducer", nested);
    PyObject *reason = PyObject_CallOneArg(hooks.failure_reason, error);
    if (reason != NULL && PyBytes_Check(reason)) lib.reducer_fail(PyBytes_AS_STRING(reason));
    else {
        PyErr_Clear();
        lib.reducer_fail("a Python reducer raised (its reason could not be written)");
    }
    Py_XDECREF(reason);
    Py_DECREF(error);
}

/* Raises for a finished call when it failed or a callback raised. */
static PyObject *raise_for(ts_status status, unsigned long long since, const char *what) {
    PyObject *result = PyObject_CallFunction(hooks.raise_for, "iKs", (int)status, since, what);
    if (result == NULL) return NULL;
    return result; /* None: nothing failed after all (a nested call took what was recorded) */
}

/* ---- Action --------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *type;         /* str */
    PyObject *json;         /* bytes: the whole action */
    PyObject *payload_text; /* bytes, or NULL when not known (a Python payload) or none */
    PyObject *payload;      /* the read-only payload once made, or NULL */
    int has_payload;
    const char *lib_json;   /* the library's text, during a middleware call only */
} ActionObject;

static PyTypeObject Action_Type;

static void action_dealloc(ActionObject *self) {
    Py_XDECREF(self->type);
    Py_XDECREF(self->json);
    Py_XDECREF(self->payload_text);
    Py_XDECREF(self->payload);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static ActionObject *action_alloc(void) {
    ActionObject *self = PyObject_New(ActionObject, &Action_Type);
    if (self == NULL) return NULL;
    self->type = self->json = self->payload_text = self->payload = NULL;
    self->has_payload = 0;
    self->lib_json = NULL;
    return self;
}

/* The str of an action type from the library, cached (a few types recur). */
#define TYPE_CACHE 256
static struct {
    char *text;
    size_t length;
    PyObject *str;
} type_cache[TYPE_CACHE];

static PyObject *type_str(const char *text) {
    size_t length = strlen(text);
    uint64_t hash = 1469598103934665603ULL;
    for (size_t i = 0; i < length; i++) hash = (hash ^ (unsigned char)text[i]) * 1099511628211ULL;
    size_t slot = (size_t)(hash % TYPE_CACHE);
    if (type_cache[slot].str != NULL && type_cache[slot].length == length && memcmp(type_cache[slot].text, text, length) == 0) {
        Py_INCREF(type_cache[slot].str);
        return type_cache[slot].str;
    }
    PyObject *str = PyUnicode_DecodeUTF8(text, (Py_ssize_t)length, "replace");
    if (str == NULL) return NULL;
    char *copy = PyMem_Malloc(length + 1);
    if (copy != NULL) {
        memcpy(copy, text, length + 1);
        PyMem_Free(type_cache[slot].text);
        Py_XDECREF(type_cache[slot].str);
        type_cache[slot].text = copy;
        type_cache[slot].length = length;
        type_cache[slot].str = str;
        Py_INCREF(str);
    }
    return str;
}

/* An Action for the library's view of an action (copies what it keeps). */
static PyObject *action_from_view(const ts_action *view) {
    ActionObject *self = action_alloc();
    if (self == NULL) return NULL;
    self->type = type_str(view->type);
    self->json = PyBytes_FromString(view->json);
    if (view->payload != NULL) {
        self->has_payload = 1;
        self->payload_text = PyBytes_FromString(view->payload);
    }
    if (self->type == NULL || self->json == NULL || (view->payload != NULL && self->payload_text == NULL)) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* The Action of a dispatch("type", payload) from Python, while the library
 * calls back with it: the payload is a read-only copy of the caller's object
 * (or, for a payload a copy cannot hold exactly, its text parsed). */
/* Whether `view` is the action dispatched from Python in frame `f` (not one
 * a middleware made instead): the same text, or for one dispatched as its
 * parts, the same type and payload texts (then the same JSON value). */
static int frame_action(call_frame *f, const ts_action *view) {
    if (f == NULL || f->py_type == NULL) return 0;
    if (f->py_text != NULL) return f->py_text == view->json;
    if (f->py_type_text == NULL) return 0;
    if (f->py_parts_json != NULL) return f->py_parts_json == view->json;
    if (strcmp(view->type, f->py_type_text) != 0 || (view->payload == NULL) != (f->py_payload_text == NULL) ||
        (view->payload != NULL && strcmp(view->payload, f->py_payload_text) != 0))
        return 0;
    f->py_parts_json = view->json; /* alive until the dispatch ends: no other action gets its address */
    return 1;
}

static PyObject *action_from_frame(call_frame *f, const ts_action *view) {
    if (f->action != NULL) {
        Py_INCREF(f->action);
        return f->action;
    }
    ActionObject *self = action_alloc();
    if (self == NULL) return NULL;
    Py_INCREF(f->py_type);
    self->type = f->py_type;
    self->json = f->py_text != NULL ? PyBytes_FromStringAndSize(f->py_text, (Py_ssize_t)f->py_text_len)
                                    : PyBytes_FromString(view->json);
    if (self->json == NULL) goto fail;
    if (f->py_payload != NULL) {
        self->has_payload = 1;
        self->payload = frozen_copy_of(f->py_payload, 1);
        if (self->payload == NULL) {
            if (PyErr_Occurred()) goto fail;
            self->payload_text = PyBytes_FromString(view->payload);
            if (self->payload_text == NULL) goto fail;
        }
    }
    f->action = (PyObject *)self;
    Py_INCREF(self);
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

static PyObject *action_payload(ActionObject *self, void *closure) {
    (void)closure;
    if (self->payload == NULL) {
        if (self->payload_text == NULL) Py_RETURN_NONE;
        self->payload = parse(PyBytes_AS_STRING(self->payload_text), (size_t)PyBytes_GET_SIZE(self->payload_text), 1);
        if (self->payload == NULL) return NULL;
    }
    Py_INCREF(self->payload);
    return self->payload;
}

static PyObject *action_get_type(ActionObject *self, void *closure) {
    (void)closure;
    Py_INCREF(self->type);
    return self->type;
}

static PyObject *action_has_payload(ActionObject *self, void *closure) {
    (void)closure;
    return PyBool_FromLong(self->has_payload);
}

static PyObject *action_json_text(ActionObject *self, void *closure) {
    (void)closure;
    Py_INCREF(self->json);
    return self->json;
}

static PyObject *action_data(ActionObject *self, void *closure) {
    (void)closure;
    return parse(PyBytes_AS_STRING(self->json), (size_t)PyBytes_GET_SIZE(self->json), 0);
}

static PyObject *action_address(ActionObject *self, void *closure) {
    (void)closure;
    if (self->lib_json == NULL) Py_RETURN_NONE;
    return PyLong_FromVoidPtr((void *)self->lib_json);
}

static PyObject *str_type, *str_payload;

static PyObject *action_item(ActionObject *self, PyObject *key, int *found) {
    *found = 1;
    if (key == str_type) return action_get_type(self, NULL);
    if (key == str_payload && self->has_payload) return action_payload(self, NULL);
    if (PyUnicode_Check(key)) {
        if (PyUnicode_CompareWithASCIIString(key, "type") == 0) return action_get_type(self, NULL);
        if (PyUnicode_CompareWithASCIIString(key, "payload") == 0) {
            if (!self->has_payload) {
                *found = 0;
                return NULL;
            }
            return action_payload(self, NULL);
        }
    }
    PyObject *data = action_data(self, NULL);
    if (data == NULL) return NULL;
    PyObject *value = PyDict_GetItemWithError(data, key);
    if (value == NULL) {
        *found = PyErr_Occurred() ? 1 : 0;
        Py_DECREF(data);
        return NULL;
    }
    Py_INCREF(value);
    Py_DECREF(data);
    freeze_parsed(value);
    return value;
}

static PyObject *action_subscript(ActionObject *self, PyObject *key) {
    int found;
    PyObject *value = action_item(self, key, &found);
    if (value == NULL && !found) PyErr_SetObject(PyExc_KeyError, key);
    return value;
}

static PyObject *action_get(ActionObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "Action.get(key, default=None)");
        return NULL;
    }
    int found;
    PyObject *value = action_item(self, args[0], &found);
    if (value == NULL && !found) {
        PyObject *fallback = nargs == 2 ? args[1] : Py_None;
        Py_INCREF(fallback);
        return fallback;
    }
    return value;
}

static PyObject *action_repr(ActionObject *self) {
    return PyUnicode_FromFormat("Action(%U)", PyUnicode_DecodeUTF8(PyBytes_AS_STRING(self->json),
                                                                    PyBytes_GET_SIZE(self->json), "replace"));
}

static PyObject *action_reduce(ActionObject *self, PyObject *unused) {
    (void)unused;
    PyObject *make = PyObject_GetAttrString((PyObject *)Py_TYPE(self), "_from_json");
    if (make == NULL) return NULL;
    return Py_BuildValue("(N(O))", make, self->json);
}

static PyObject *action_from_json(PyObject *cls, PyObject *text);

static PyGetSetDef action_getset[] = {
    {"type", (getter)action_get_type, NULL, "The action's type (str).", NULL},
    {"payload", (getter)action_payload, NULL,
     "The payload as a read-only Python value (FrozenDict, FrozenList...); None when there is none.", NULL},
    {"has_payload", (getter)action_has_payload, NULL, "Whether the action has a \"payload\" member (null counts).",
     NULL},
    {"json_text", (getter)action_json_text, NULL, "The whole action's JSON text (bytes).", NULL},
    {"data", (getter)action_data, NULL, "The whole action as a new (mutable) dict.", NULL},
    {"_address", (getter)action_address, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef action_methods[] = {
    {"get", (PyCFunction)(void (*)(void))action_get, METH_FASTCALL,
     "get(key, default=None): action[key] if the action has that member, else default."},
    {"_from_json", action_from_json, METH_O | METH_CLASS, NULL},
    {"__reduce__", (PyCFunction)action_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyMappingMethods action_mapping = {0, (binaryfunc)action_subscript, 0};

static PyTypeObject Action_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "turnstate.Action",
    .tp_basicsize = sizeof(ActionObject),
    .tp_dealloc = (destructor)action_dealloc,
    .tp_repr = (reprfunc)action_repr,
    .tp_as_mapping = &action_mapping,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An action as reducers and middleware receive it: .type, .payload (read-only), .has_payload, "
              ".data, .json_text; action[\"type\"], action[\"payload\"] and action.get(key) read it as a dict.",
    .tp_methods = action_methods,
    .tp_getset = action_getset,
};

/* Action._from_json(text): an Action of JSON text the library checked. */
static PyObject *action_from_json(PyObject *cls, PyObject *text) {
    (void)cls;
    if (!PyBytes_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "Action._from_json takes bytes");
        return NULL;
    }
    PyObject *data = parse(PyBytes_AS_STRING(text), (size_t)PyBytes_GET_SIZE(text), 0);
    if (data == NULL) return NULL;
    if (!PyDict_Check(data)) {
        Py_DECREF(data);
        PyErr_SetString(PyExc_ValueError, "not an action");
        return NULL;
    }
    ActionObject *self = action_alloc();
    if (self == NULL) {
        Py_DECREF(data);
        return NULL;
    }
    self->type = PyDict_GetItemString(data, "type");
    Py_XINCREF(self->type);
    Py_INCREF(text);
    self->json = text;
    PyObject *payload = PyDict_GetItemString(data, "payload");
    if (payload != NULL) {
        self->has_payload = 1;
        self->payload_text = dumps(payload);
    }
    Py_DECREF(data);
    if (self->type == NULL || !PyUnicode_Check(self->type) || (self->has_payload && self->payload_text == NULL)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "not an action");
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyObject *init_action; /* {"type":"@@turnstate/init"} */

/* ---- Store core ----------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    ts_store *handle;
    int has_plugins;    /* once a plugin was loaded: callbacks give the GIL back after each call */
    PyObject *heads;    /* dict: type (str) -> b'{"type":"..."' */
    /* The calls into the library under way on this store (any thread), the
     * thread that made the first of them, and whether another thread made
     * one meanwhile. Read and written under the GIL. */
    Py_ssize_t entered;
    unsigned long owner;
    int shared;
    /* The last types dispatched, by identity (their str held). */
    struct { PyObject *type, *head; } recent[16];
} CoreObject;

static PyTypeObject Core_Type;

#define KEEP(core) (!(core)->has_plugins)

/* Enters the library for a call on this store. A call that may run Python
 * callbacks must give the GIL up while it waits for the store's lock, or a
 * thread holding that lock and waiting for the GIL (in a callback) would
 * wait forever. The lock can be held by another thread only if that thread
 * entered through here (no plugin is loaded: no code but this module calls
 * the store) and has not left: so with no plugin and no other thread inside,
 * the call keeps the GIL all along (callbacks then find it held), which
 * saves two hand-overs of the GIL per dispatch. */
static inline void core_begin(CoreObject *self, call_frame *f) {
    unsigned long me = PyThread_get_thread_ident();
    int fast = !self->has_plugins && (self->entered == 0 || (self->owner == me && !self->shared));
    if (self->entered == 0) {
        self->owner = me;
        self->shared = 0;
    } else if (self->owner != me) {
        self->shared = 1;
    }
    self->entered++;
    Py_INCREF(self);
    f->outer = current_frame;
    f->keep = KEEP(self);
    f->fast = fast;
    f->py_text = NULL;
    f->py_payload = NULL;
    f->py_type = NULL;
    f->py_type_text = f->py_payload_text = f->py_parts_json = NULL;
    f->action = NULL;
    current_frame = f;
    f->released = fast ? NULL : PyEval_SaveThread();
}

static inline void core_end(CoreObject *self, call_frame *f) {
    call_end(f);
    self->entered--;
    Py_DECREF(self);
}

static int core_live(CoreObject *self) {
    if (self->handle != NULL) return 1;
    PyObject *result = PyObject_CallNoArgs(hooks.gone);
    Py_XDECREF(result);
    return 0;
}

static PyObject *core_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"initial", NULL};
    PyObject *initial_text = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O", names, &initial_text)) return NULL;
    if (initial_text != Py_None && !PyBytes_Check(initial_text)) {
        PyErr_SetString(PyExc_TypeError, "Core(initial): JSON text (bytes) or None");
        return NULL;
    }
    const char *initial = initial_text == Py_None ? NULL : PyBytes_AS_STRING(initial_text);
    if (lib.handle == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "turnstate._ext: the library is not loaded (call load() first)");
        return NULL;
    }
    CoreObject *self = (CoreObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->heads = PyDict_New();
    if (self->heads == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    ts_store *handle = NULL;
    call_frame f;
    unsigned long long since = error_seq;
    call_begin(&f, 0);
    ts_status status = lib.store_create(initial, &handle);
    call_end(&f);
    if (status != TS_OK) {
        Py_DECREF(self);
        PyObject *raised = raise_for(status, since, "Store()");
        Py_XDECREF(raised);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "ts_store_create failed");
        return NULL;
    }
    self->handle = handle;
    return (PyObject *)self;
}

static void core_close_handle(CoreObject *self) {
    ts_store *handle = self->handle;
    if (handle == NULL) return;
    self->handle = NULL;
    call_frame f;
    call_begin(&f, 0);
    lib.store_destroy(handle);
    call_end(&f);
}

static void core_dealloc(CoreObject *self) {
    core_close_handle(self);
    Py_XDECREF(self->heads);
    for (int i = 0; i < 16; i++) {
        Py_XDECREF(self->recent[i].type);
        Py_XDECREF(self->recent[i].head);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *core_close(CoreObject *self, PyObject *unused) {
    (void)unused;
    core_close_handle(self);
    Py_RETURN_NONE;
}

static PyObject *core_closed(CoreObject *self, void *closure) {
    (void)closure;
    return PyBool_FromLong(self->handle == NULL);
}

/* b'{"type":"<type>"' for a type, cached per store. */
static PyObject *core_head(CoreObject *self, PyObject *type) {
    size_t slot = ((uintptr_t)type >> 4) % 16;
    if (self->recent[slot].type == type) return self->recent[slot].head; /* borrowed */
    PyObject *head = PyDict_GetItemWithError(self->heads, type);
    if (head != NULL) {
        Py_INCREF(type);
        Py_INCREF(head);
        Py_XSETREF(self->recent[slot].type, type);
        Py_XSETREF(self->recent[slot].head, head);
        return head; /* borrowed */
    }
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t length;
    const char *text = PyUnicode_AsUTF8AndSize(type, &length);
    if (text == NULL) return NULL;
    buffer b;
    buffer_init(&b);
    if (buffer_puts(&b, "{\"type\":\"") < 0 || buffer_put_escaped(&b, text, (size_t)length) < 0 ||
        buffer_puts(&b, "\"") < 0) {
        buffer_free(&b);
        return NULL;
    }
    head = PyBytes_FromStringAndSize(b.data, (Py_ssize_t)b.length);
    buffer_free(&b);
    if (head == NULL) return NULL;
    if (PyDict_GET_SIZE(self->heads) >= 4096) PyDict_Clear(self->heads);
    int failed = PyDict_SetItem(self->heads, type, head);
    Py_DECREF(head);
    return failed ? NULL : head;
}

/* The dispatch itself: text to the library, with the Python payload noted for
 * the reducers. */
static PyObject *core_dispatch_text(CoreObject *self, const char *text, size_t length, PyObject *type,
                                    PyObject *payload) {
    call_frame f;
    unsigned long long since = error_seq;
    core_begin(self, &f);
    f.py_text = type != NULL ? text : NULL;
    f.py_text_len = length;
    f.py_type = type;
    f.py_payload = payload;
    ts_status status = lib.dispatch(self->handle, text);
    core_end(self, &f);
    if (status != TS_OK || error_seq != since) return raise_for(status, since, "dispatch");
    Py_RETURN_NONE;
}

/* The dispatch of a type and payload from Python as their parts
 * (ts_store_dispatch_parts): no action text to make, and none to parse. */
static PyObject *core_dispatch_parts(CoreObject *self, const char *type, PyObject *type_str, PyObject *payload) {
    char digits[32];
    const char *payload_text = NULL;
    PyObject *text = NULL;
    if (payload != NULL) {
        int overflow = 1;
        long long number = PyLong_CheckExact(payload) ? PyLong_AsLongLongAndOverflow(payload, &overflow) : 0;
        if (!overflow) {
            format_integer(digits, number);
            payload_text = digits;
        } else {
            text = dumps(payload);
            if (text == NULL) return NULL;
            payload_text = PyBytes_AS_STRING(text);
        }
    }
    call_frame f;
    unsigned long long since = error_seq;
    core_begin(self, &f);
    f.py_type = type_str;
    f.py_payload = payload;
    f.py_type_text = type;
    f.py_payload_text = payload_text;
    ts_status status = lib.dispatch_parts(self->handle, type, payload_text);
    core_end(self, &f);
    Py_XDECREF(text);
    if (status != TS_OK || error_seq != since) return raise_for(status, since, "dispatch");
    Py_RETURN_NONE;
}

/* dispatch(action, payload=<none>): see Store.dispatch. */
static PyObject *core_dispatch(CoreObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "dispatch(action, payload=...) takes 1 or 2 arguments");
        return NULL;
    }
    if (!core_live(self)) return NULL;
    PyObject *action = args[0];
    PyObject *payload = nargs == 2 ? args[1] : NULL;
    if (!PyUnicode_CheckExact(action)) {
        PyObject *text = PyObject_CallFunctionObjArgs(hooks.action_text, action, payload ? payload : Py_Ellipsis,
                                                      NULL);
        if (text == NULL) return NULL;
        PyObject *result = core_dispatch_text(self, PyBytes_AS_STRING(text), (size_t)PyBytes_GET_SIZE(text), NULL,
                                              NULL);
        Py_DECREF(text);
        return result;
    }
    if (lib.dispatch_parts != NULL) {
        Py_ssize_t length;
        const char *type = PyUnicode_AsUTF8AndSize(action, &length);
        if (type == NULL) return NULL;
        if ((size_t)length == strlen(type)) /* else (a NUL inside) the text, and its error */
            return core_dispatch_parts(self, type, action, payload);
    }
    PyObject *head = core_head(self, action);
    if (head == NULL) return NULL;
    buffer b;
    buffer_init(&b);
    PyObject *payload_text = NULL;
    int failed = buffer_put(&b, PyBytes_AS_STRING(head), (size_t)PyBytes_GET_SIZE(head));
    if (!failed && payload != NULL) {
        failed = buffer_puts(&b, ",\"payload\":");
        if (!failed && PyLong_CheckExact(payload)) {
            int overflow;
            long long number = PyLong_AsLongLongAndOverflow(payload, &overflow);
            if (!overflow) {
                char digits[32];
                int n = format_integer(digits, number);
                failed = buffer_put(&b, digits, (size_t)n);
            } else {
                payload_text = dumps(payload);
                failed = payload_text == NULL;
            }
        } else if (!failed) {
            payload_text = dumps(payload);
            failed = payload_text == NULL;
        }
        if (!failed && payload_text != NULL)
            failed = buffer_put(&b, PyBytes_AS_STRING(payload_text), (size_t)PyBytes_GET_SIZE(payload_text));
    }
    if (!failed) failed = buffer_put(&b, "}", 1);
    Py_XDECREF(payload_text);
    if (failed) {
        buffer_free(&b);
        return NULL;
    }
    PyObject *result = core_dispatch_text(self, b.data, b.length, action, payload);
    buffer_free(&b);
    return result;
}

static PyObject *core_dispatch_json(CoreObject *self, PyObject *text) {
    if (!PyBytes_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "dispatch_json takes bytes");
        return NULL;
    }
    if (!core_live(self)) return NULL;
    return core_dispatch_text(self, PyBytes_AS_STRING(text), (size_t)PyBytes_GET_SIZE(text), NULL, NULL);
}

/* get_text(path or None) -> bytes */
static PyObject *core_get_text(CoreObject *self, PyObject *path) {
    const char *pointer = NULL;
    if (path != Py_None) {
        pointer = PyUnicode_AsUTF8(path);
        if (pointer == NULL) return NULL;
    }
    if (!core_live(self)) return NULL;
    char *out = NULL;
    call_frame f;
    unsigned long long since = error_seq;
    core_begin(self, &f);
    ts_status status = lib.get_state(self->handle, pointer, &out);
    core_end(self, &f);
    if (status != TS_OK) return raise_for(status, since, "get");
    PyObject *text = PyBytes_FromString(out != NULL ? out : "null");
    lib.free_(out);
    return text;
}

/* get(path or None) -> a new (mutable) Python value */
static PyObject *core_get(CoreObject *self, PyObject *path) {
    PyObject *text = core_get_text(self, path);
    if (text == NULL) return NULL;
    PyObject *value = parse(PyBytes_AS_STRING(text), (size_t)PyBytes_GET_SIZE(text), 0);
    Py_DECREF(text);
    return value;
}

/* ---- Diffs: a new value against the kept one, by identity ------------------- */

typedef struct {
    buffer ops;          /* "[op,op," */
    buffer path;         /* the pointer being built */
    Py_ssize_t budget;   /* operations left before a whole text is cheaper */
    PyObject *changed;   /* list: the new values the operations carry */
    PyObject *containers;/* list: the new containers on the changed paths */
    /* The common ends of the top-level lists (-1 when not lists). */
    Py_ssize_t top_prefix, top_suffix;
} diff_ctx;

/* Appends one operation {"op":OP,"path":PATH[,"value":VALUE]}, and a comma. */
static int put_op(diff_ctx *d, const char *op, PyObject *value) {
    buffer *ops = &d->ops;
    if (buffer_puts(ops, "{\"op\":\"") < 0 || buffer_puts(ops, op) < 0 || buffer_puts(ops, "\",\"path\":\"") < 0 ||
        buffer_put(ops, d->path.data, d->path.length) < 0 || buffer_puts(ops, "\"") < 0)
        return -1;
    if (value != NULL) {
        PyObject *text = dumps(value);
        if (text == NULL) return -1;
        int failed = buffer_puts(ops, ",\"value\":") < 0 ||
                     buffer_put(ops, PyBytes_AS_STRING(text), (size_t)PyBytes_GET_SIZE(text)) < 0;
        Py_DECREF(text);
        if (failed || PyList_Append(d->changed, value) < 0) return -1;
    }
    return buffer_puts(ops, "},");
}

static int is_container(PyObject *value) {
    return PyList_CheckExact(value) || PyDict_CheckExact(value) || IS_FROZEN(value);
}

static int diff_value(diff_ctx *d, PyObject *old, PyObject *new_, int depth);

/* Pointers compared per memcmp (and 8 times as many first) when diff_value
 * skips the common ends of two lists. */
#define DIFF_BLOCK 64

/* A changed member: diffs it when both are containers of a kind and the old
 * one is read-only (kept), else replaces it. */
static int diff_member(diff_ctx *d, PyObject *old, PyObject *new_, int depth) {
    /* An equal str or int (another object, the same text) is no change. */
    if (Py_TYPE(old) == Py_TYPE(new_) && (PyUnicode_CheckExact(old) || PyLong_CheckExact(old))) {
        int equal = PyObject_RichCompareBool(old, new_, Py_EQ);
        if (equal != 0) return equal < 0 ? -1 : 1;
    }
    if (--d->budget < 0) return 0;
    if (IS_FROZEN(old) && is_container(new_) && PyList_Check(old) == PyList_Check(new_)) {
        size_t mark = d->ops.length, path = d->path.length;
        Py_ssize_t changed = PyList_GET_SIZE(d->changed), containers = PyList_GET_SIZE(d->containers);
        int found = diff_value(d, old, new_, depth + 1);
        if (found != 0) return found;
        if (d->budget < 0) return 0;
        /* Not worth it below: replace the member whole. */
        d->ops.length = mark;
        d->ops.data[mark] = '\0';
        d->path.length = path;
        if (PyList_SetSlice(d->changed, changed, PY_SSIZE_T_MAX, NULL) < 0 ||
            PyList_SetSlice(d->containers, containers, PY_SSIZE_T_MAX, NULL) < 0)
            return -1;
    }
    return put_op(d, "replace", new_) < 0 ? -1 : 1;
}

static int put_index(buffer *path, Py_ssize_t index) {
    char digits[32];
    digits[0] = '/';
    int n = format_integer(digits + 1, (long long)index);
    return buffer_put(path, digits, (size_t)n + 1);
}

/* Appends the operations that turn `old` (a read-only list or dict) into
 * `new_` (a list or dict of the same kind), comparing members by identity;
 * d->path is the pointer of `old`. 1: done; 0: not worth it (more changes
 * than the budget, or members in another order: the store appends new
 * members); -1: an exception. */
static int diff_value(diff_ctx *d, PyObject *old, PyObject *new_, int depth) {
    if (depth > TS_MAX_DEPTH) return 0;
    if (!IS_FROZEN(new_) && PyList_Append(d->containers, new_) < 0) return -1;
    size_t base = d->path.length;
    int result = 1;
    if (PyList_Check(old)) {
        Py_ssize_t n = PyList_GET_SIZE(old), m = PyList_GET_SIZE(new_);
        PyObject **a = ((PyListObject *)old)->ob_item, **b = ((PyListObject *)new_)->ob_item;
        Py_ssize_t prefix = 0, suffix = 0;
        /* The common ends by blocks of pointers (memcmp: 512, then 64),
         * then one by one: a new list that changes one item of a big one is
         * mostly ends. */
        for (Py_ssize_t block = DIFF_BLOCK * 8; block >= DIFF_BLOCK; block /= 8)
            while (prefix + block <= n && prefix + block <= m &&
                   memcmp(a + prefix, b + prefix, (size_t)block * sizeof *a) == 0)
                prefix += block;
        while (prefix < n && prefix < m && a[prefix] == b[prefix]) prefix++;
        for (Py_ssize_t block = DIFF_BLOCK * 8; block >= DIFF_BLOCK; block /= 8)
            while (suffix + block <= n - prefix && suffix + block <= m - prefix &&
                   memcmp(a + n - suffix - block, b + m - suffix - block, (size_t)block * sizeof *a) == 0)
                suffix += block;
        while (suffix < n - prefix && suffix < m - prefix && a[n - 1 - suffix] == b[m - 1 - suffix]) suffix++;
        if (depth == 1) {
            d->top_prefix = prefix;
            d->top_suffix = suffix;
        }
        Py_ssize_t removed = n - prefix - suffix, added = m - prefix - suffix;
        Py_ssize_t common = removed < added ? removed : added;
        if ((removed > added ? removed : added) > d->budget) return 0;
        for (Py_ssize_t i = 0; i < common && result == 1; i++) {
            d->path.length = base;
            if (put_index(&d->path, prefix + i) < 0) return -1;
            result = diff_member(d, a[prefix + i], b[prefix + i], depth);
        }
        for (Py_ssize_t i = common; i < added && result == 1; i++) {
            d->path.length = base;
            Py_ssize_t at = prefix + i;
            /* The array has n - removed + i elements here: "-" appends. */
            int failed = at == n - removed + i ? buffer_puts(&d->path, "/-") : put_index(&d->path, at);
            if (failed < 0 || put_op(d, "add", b[at]) < 0) return -1;
            if (--d->budget < 0) return 0;
        }
        for (Py_ssize_t i = common; i < removed && result == 1; i++) {
            d->path.length = base;
            if (put_index(&d->path, prefix + common) < 0 || put_op(d, "remove", NULL) < 0) return -1;
            if (--d->budget < 0) return 0;
        }
    } else {
        /* Members common to both must be in the same order, and new ones
         * after all of them: the store keeps a replaced member in its place
         * and appends added ones. */
        Py_ssize_t old_position = 0, new_position = 0;
        PyObject *old_key = NULL, *old_value = NULL, *key, *value;
        int have_old = PyDict_Next(old, &old_position, &old_key, &old_value);
        while (result == 1 && PyDict_Next(new_, &new_position, &key, &value)) {
            if (!PyUnicode_CheckExact(key)) return 0;
            while (have_old) { /* members removed before this one */
                int in_new = PyDict_Contains(new_, old_key);
                if (in_new < 0) return -1;
                if (in_new) break;
                d->path.length = base;
                if (buffer_put_token(&d->path, old_key) < 0 || put_op(d, "remove", NULL) < 0) return -1;
                if (--d->budget < 0) return 0;
                have_old = PyDict_Next(old, &old_position, &old_key, &old_value);
            }
            if (have_old) {
                int same = old_key == key ? 1 : PyUnicode_Compare(old_key, key) == 0;
                if (!same) return PyErr_Occurred() ? -1 : 0; /* a new member before kept ones, or another order */
                if (old_value != value) {
                    d->path.length = base;
                    if (buffer_put_token(&d->path, key) < 0) return -1;
                    result = diff_member(d, old_value, value, depth);
                }
                have_old = PyDict_Next(old, &old_position, &old_key, &old_value);
            } else {
                int in_old = PyDict_Contains(old, key);
                if (in_old < 0) return -1;
                if (in_old) return 0; /* another order */
                d->path.length = base;
                if (buffer_put_token(&d->path, key) < 0 || put_op(d, "add", value) < 0) return -1;
                if (--d->budget < 0) return 0;
            }
        }
        while (result == 1 && have_old) { /* members removed at the end */
            d->path.length = base;
            if (buffer_put_token(&d->path, old_key) < 0 || put_op(d, "remove", NULL) < 0) return -1;
            if (--d->budget < 0) return 0;
            have_old = PyDict_Next(old, &old_position, &old_key, &old_value);
        }
    }
    d->path.length = base;
    d->path.data[base] = '\0';
    return result;
}

/* Diffs `new_` against the kept `old`: 1 with d->ops the patch text ("[]"
 * when nothing changed), 0 when a whole text is cheaper, -1 on error. The
 * caller frees with diff_free. */
static int diff(diff_ctx *d, PyObject *old, PyObject *new_) {
    buffer_init(&d->ops);
    buffer_init(&d->path);
    Py_ssize_t size = PyList_Check(new_) ? PyList_GET_SIZE(new_) : PyDict_GET_SIZE(new_);
    d->budget = size / 8 + 8;
    d->top_prefix = d->top_suffix = -1;
    d->changed = PyList_New(0);
    d->containers = PyList_New(0);
    if (d->changed == NULL || d->containers == NULL || buffer_put(&d->ops, "[", 1) < 0) return -1;
    int found = diff_value(d, old, new_, 1);
    if (found != 1) return found;
    if (d->ops.length > 1) d->ops.data[d->ops.length - 1] = ']'; /* the last comma */
    else if (buffer_put(&d->ops, "]", 1) < 0) return -1;
    return 1;
}

static void diff_free(diff_ctx *d) {
    buffer_free(&d->ops);
    buffer_free(&d->path);
    Py_CLEAR(d->changed);
    Py_CLEAR(d->containers);
}

/* After a diff: makes the new value read-only where it is new (the members
 * it shares with the kept value are read-only already). 1 when the value can
 * be kept, 0 when some new part is not canonical. */
static int diff_freeze(diff_ctx *d) {
    Py_ssize_t n = PyList_GET_SIZE(d->changed);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!canonical(PyList_GET_ITEM(d->changed, i), 1)) return 0;
    for (Py_ssize_t i = 0; i < n; i++) freeze_canonical(PyList_GET_ITEM(d->changed, i));
    n = PyList_GET_SIZE(d->containers);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *container = PyList_GET_ITEM(d->containers, i);
        if (PyDict_CheckExact(container)) Py_SET_TYPE(container, &FrozenDict_Type);
        else if (PyList_CheckExact(container)) Py_SET_TYPE(container, &FrozenList_Type);
    }
    return 1;
}

/* ---- Patches on kept values ------------------------------------------------ */

/* A writable container at `*slot`: the same object when nothing else holds it
 * (its only reference is the slot), else a shallow copy put in the slot (the
 * old one stays as it was for whoever holds it). */
static PyObject *writable(PyObject **slot) {
    PyObject *value = *slot;
    if (Py_REFCNT(value) == 1) return value;
    PyObject *copy;
    if (PyDict_Check(value)) {
        copy = PyDict_Copy(value);
        if (copy != NULL) Py_SET_TYPE(copy, &FrozenDict_Type);
    } else {
        copy = PyList_GetSlice(value, 0, PyList_GET_SIZE(value));
        if (copy != NULL) Py_SET_TYPE(copy, &FrozenList_Type);
    }
    if (copy == NULL) return NULL;
    Py_SETREF(*slot, copy);
    return copy;
}

/* The tokens of a JSON Pointer as str (unescaped); NULL: not a pointer. */
static PyObject *pointer_tokens(PyObject *pointer) {
    if (!PyUnicode_Check(pointer)) return NULL;
    Py_ssize_t length;
    const char *text = PyUnicode_AsUTF8AndSize(pointer, &length);
    if (text == NULL) return NULL;
    PyObject *tokens = PyList_New(0);
    if (tokens == NULL || length == 0) return tokens;
    if (text[0] != '/') {
        Py_DECREF(tokens);
        return NULL;
    }
    buffer b;
    buffer_init(&b);
    for (Py_ssize_t i = 1; i <= length; i++) {
        if (i == length || text[i] == '/') {
            PyObject *token = PyUnicode_DecodeUTF8(b.data, (Py_ssize_t)b.length, "strict");
            if (token == NULL || PyList_Append(tokens, token) < 0) {
                Py_XDECREF(token);
                Py_DECREF(tokens);
                buffer_free(&b);
                return NULL;
            }
            Py_DECREF(token);
            b.length = 0;
        } else if (text[i] == '~' && i + 1 < length && (text[i + 1] == '0' || text[i + 1] == '1')) {
            if (buffer_put(&b, text[i + 1] == '0' ? "~" : "/", 1) < 0) break;
            i++;
        } else if (text[i] == '~') {
            Py_DECREF(tokens);
            buffer_free(&b);
            return NULL;
        } else if (buffer_put(&b, text + i, 1) < 0) {
            break;
        }
    }
    buffer_free(&b);
    if (PyErr_Occurred()) {
        Py_DECREF(tokens);
        return NULL;
    }
    return tokens;
}

/* An array index token: 0, or digits without a leading zero; -1 if not. */
static Py_ssize_t index_of(PyObject *token, Py_ssize_t limit) {
    Py_ssize_t length;
    const char *text = PyUnicode_AsUTF8AndSize(token, &length);
    if (text == NULL || length == 0 || length > 18 || (length > 1 && text[0] == '0')) return -1;
    Py_ssize_t index = 0;
    for (Py_ssize_t i = 0; i < length; i++) {
        if ((unsigned)(text[i] - '0') >= 10) return -1;
        index = index * 10 + (text[i] - '0');
    }
    return index <= limit ? index : -1;
}

/* A writable member of a writable container: the member itself when only
 * the container holds it, else a shallow copy put in its place. Borrowed;
 * NULL with no exception when there is no such member or it is not a
 * container. */
static PyObject *writable_member(PyObject *container, PyObject *token) {
    if (PyDict_Check(container)) {
        PyObject *member = PyDict_GetItemWithError(container, token);
        if (member == NULL || !is_container(member)) return NULL;
        if (Py_REFCNT(member) == 1) return member;
        Py_INCREF(member);
        PyObject *holder = member;
        if (writable(&holder) == NULL) {
            Py_DECREF(holder);
            return NULL;
        }
        int failed = PyDict_SetItem(container, token, holder);
        Py_DECREF(holder);
        return failed ? NULL : holder;
    }
    Py_ssize_t index = index_of(token, PyList_GET_SIZE(container) - 1);
    if (index < 0) return NULL;
    PyObject **slot = &((PyListObject *)container)->ob_item[index];
    if (!is_container(*slot)) return NULL;
    return writable(slot);
}

/* Walks to the parent of the pointer's target (at least one token), making
 * every container on the way writable; *parent is borrowed. 1 found, 0 not,
 * -1 an exception. */
static int walk_to_parent(PyObject **root, PyObject *tokens, PyObject **parent) {
    if (!is_container(*root)) return 0;
    PyObject *container = writable(root);
    if (container == NULL) return -1;
    Py_ssize_t n = PyList_GET_SIZE(tokens);
    for (Py_ssize_t i = 0; i < n - 1; i++) {
        container = writable_member(container, PyList_GET_ITEM(tokens, i));
        if (container == NULL) return PyErr_Occurred() ? -1 : 0;
    }
    *parent = container;
    return 1;
}

/* Applies one operation's change to the parent container. */
static int op_set(PyObject *parent, PyObject *token, PyObject *value, int insert) {
    if (PyDict_Check(parent)) return PyDict_SetItem(parent, token, value) < 0 ? -1 : 1;
    Py_ssize_t size = PyList_GET_SIZE(parent);
    if (PyUnicode_CompareWithASCIIString(token, "-") == 0) return insert && PyList_Append(parent, value) == 0 ? 1 : -1;
    Py_ssize_t index = index_of(token, insert ? size : size - 1);
    if (index < 0) return 0;
    if (insert) return PyList_Insert(parent, index, value) < 0 ? -1 : 1;
    Py_INCREF(value);
    return PyList_SetItem(parent, index, value) < 0 ? -1 : 1;
}

static PyObject *op_take(PyObject *parent, PyObject *token, int remove) {
    if (PyDict_Check(parent)) {
        PyObject *value = PyDict_GetItemWithError(parent, token);
        if (value == NULL) return NULL;
        Py_INCREF(value);
        if (remove && PyDict_DelItem(parent, token) < 0) {
            Py_DECREF(value);
            return NULL;
        }
        return value;
    }
    Py_ssize_t index = index_of(token, PyList_GET_SIZE(parent) - 1);
    if (index < 0) return NULL;
    PyObject *value = PyList_GET_ITEM(parent, index);
    Py_INCREF(value);
    if (remove && PyList_SetSlice(parent, index, index + 1, NULL) < 0) {
        Py_DECREF(value);
        return NULL;
    }
    return value;
}

/* Applies the operations of a patch the store accepted to the kept value
 * `*root` (in place where nothing else holds a container, else on copies).
 * 1: applied; 0: this code could not follow it (the caller parses the slice
 * instead); -1: an exception. */
static int apply_patch(PyObject **root, PyObject *ops) {
    if (!PyList_Check(ops)) return 0;
    Py_ssize_t n = PyList_GET_SIZE(ops);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *op = PyList_GET_ITEM(ops, i);
        if (!PyDict_Check(op)) return 0;
        PyObject *name = PyDict_GetItemString(op, "op");
        PyObject *path = PyDict_GetItemString(op, "path");
        if (name == NULL || path == NULL || !PyUnicode_Check(name)) return 0;
        if (PyUnicode_CompareWithASCIIString(name, "test") == 0) continue; /* the store checked it */
        PyObject *value = NULL;
        int add = PyUnicode_CompareWithASCIIString(name, "add") == 0;
        int replace = PyUnicode_CompareWithASCIIString(name, "replace") == 0;
        int remove = PyUnicode_CompareWithASCIIString(name, "remove") == 0;
        int move = PyUnicode_CompareWithASCIIString(name, "move") == 0;
        int copy = PyUnicode_CompareWithASCIIString(name, "copy") == 0;
        if (add || replace) {
            value = PyDict_GetItemString(op, "value");
            if (value == NULL || !canonical(value, 1)) return 0;
            freeze_canonical(value);
            Py_INCREF(value);
        } else if (move || copy) {
            PyObject *from = PyDict_GetItemString(op, "from");
            /* A move onto its own place changes nothing (RFC 6902 4.4; the
             * store applies it so): taking the member out and adding it
             * back would move it to the end of its object. Pointers are
             * equal exactly when their text is (~0 and ~1 are the only
             * escapes). */
            if (move && from != NULL && PyUnicode_Check(from) && PyUnicode_Check(path)) {
                int same = PyUnicode_Compare(from, path);
                if (same == -1 && PyErr_Occurred()) return -1;
                if (same == 0) continue;
            }
            PyObject *tokens = from != NULL ? pointer_tokens(from) : NULL;
            if (tokens == NULL) {
                PyErr_Clear();
                return 0;
            }
            if (PyList_GET_SIZE(tokens) == 0) {
                Py_DECREF(tokens);
                if (move) continue; /* moving the root onto itself or below fails in the store */
                value = *root;
                Py_INCREF(value);
            } else {
                PyObject *parent = NULL;
                int found = walk_to_parent(root, tokens, &parent);
                if (found == 1) value = op_take(parent, PyList_GET_ITEM(tokens, PyList_GET_SIZE(tokens) - 1), move);
                Py_DECREF(tokens);
                if (value == NULL) {
                    PyErr_Clear();
                    return found < 0 ? -1 : 0;
                }
            }
        } else if (!remove) {
            return 0;
        }
        PyObject *tokens = pointer_tokens(path);
        if (tokens == NULL) {
            Py_XDECREF(value);
            PyErr_Clear();
            return 0;
        }
        int result;
        if (PyList_GET_SIZE(tokens) == 0) {
            if (remove || value == NULL) result = 0;
            else {
                Py_SETREF(*root, value);
                value = NULL;
                result = 1;
            }
        } else {
            PyObject *parent = NULL;
            result = walk_to_parent(root, tokens, &parent);
            PyObject *token = PyList_GET_ITEM(tokens, PyList_GET_SIZE(tokens) - 1);
            if (result == 1) {
                if (remove) {
                    PyObject *gone = op_take(parent, token, 1);
                    result = gone != NULL ? 1 : 0;
                    Py_XDECREF(gone);
                } else if (replace) {
                    result = PyDict_Check(parent) && !PyDict_Contains(parent, token) ? 0 : op_set(parent, token, value, 0);
                } else {
                    result = op_set(parent, token, value, 1);
                }
            }
        }
        Py_DECREF(tokens);
        Py_XDECREF(value);
        if (result != 1) {
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

/* ---- Reducers ---------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *fn;
    PyObject *key;          /* str */
    PyObject *initial_text; /* bytes, or NULL */
    /* The value kept for the slice with id kept_id (0: none). */
    uint64_t kept_id;
    PyObject *kept;
    /* The last answer, until the next call shows whether it was applied:
     * the slice made from it has id pending_id; pending_value is the new
     * value, or pending_patch the operations to apply to `kept`. */
    uint64_t pending_id;
    PyObject *pending_value;
    PyObject *pending_patch;
    /* The last action type (NUL-terminated, "" for none) for which the
     * reducer answered its kept read-only list with a new list: for that
     * type it gets the kept list as a plain list (see reducer_call). */
    char open_type[64];
    /* The item pointers of the list `snap_of` (held) as it was when it became
     * the kept value with id snap_id: what an open call's list must still
     * hold after the call. Kept between calls and carried over to the next
     * kept list through the diff (only the changed middle is copied). */
    PyObject **snap;
    Py_ssize_t snap_len, snap_cap;
    PyObject *snap_of;
    uint64_t snap_id;
    /* Counters for tests and benchmarks. */
    unsigned long long parses, reuses, patches_sent, texts_sent, joins, opened;
} ReducerObject;

static PyTypeObject Reducer_Type;

static int reducer_traverse(ReducerObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->fn);
    Py_VISIT(self->kept);
    Py_VISIT(self->pending_value);
    Py_VISIT(self->pending_patch);
    Py_VISIT(self->snap_of);
    return 0;
}

static int reducer_clear(ReducerObject *self) {
    Py_CLEAR(self->fn);
    Py_CLEAR(self->kept);
    Py_CLEAR(self->pending_value);
    Py_CLEAR(self->pending_patch);
    Py_CLEAR(self->snap_of);
    PyMem_Free(self->snap);
    self->snap = NULL;
    self->snap_len = self->snap_cap = 0;
    return 0;
}

static void reducer_dealloc(ReducerObject *self) {
    PyObject_GC_UnTrack(self);
    reducer_clear(self);
    Py_XDECREF(self->key);
    Py_XDECREF(self->initial_text);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static void reducer_drop_pending(ReducerObject *self) {
    self->pending_id = 0;
    Py_CLEAR(self->pending_value);
    Py_CLEAR(self->pending_patch);
}

static void reducer_keep(ReducerObject *self, uint64_t id, PyObject *value) {
    Py_XINCREF(value);
    Py_XSETREF(self->kept, value);
    self->kept_id = value != NULL ? id : 0;
}

/* Notes the answer just given, applied if the next call's slice has the
 * id the store reserved for it. */
static void reducer_pend(ReducerObject *self, PyObject *value, PyObject *patch) {
    reducer_drop_pending(self);
    if ((value == NULL && patch == NULL) || lib.answer_id == NULL) return;
    uint64_t id = 0;
    if (lib.answer_id(&id) != TS_OK || id == 0) return;
    self->pending_id = id;
    Py_XINCREF(value);
    self->pending_value = value;
    Py_XINCREF(patch);
    self->pending_patch = patch;
}

/* The slice as a read-only Python value: the kept one when the store passes
 * the same slice (or the one made from this reducer's last answer), else the
 * slice parsed: `slice` (a patch reducer's, see ts_store_add_patch_reducer)
 * or `text` (a ts_reducer_fn's). Returns a new reference. */
static PyObject *reducer_state(ReducerObject *self, const ts_json *slice, const char *text) {
    uint64_t id = 0;
    int known = lib.slice_id != NULL && lib.slice_id(&id) == TS_OK && id != 0;
    if (known && self->kept != NULL && id == self->kept_id) {
        reducer_drop_pending(self);
        self->reuses++;
        Py_INCREF(self->kept);
        return self->kept;
    }
    if (known && self->pending_id != 0 && id == self->pending_id) {
        if (self->pending_value != NULL) {
            reducer_keep(self, id, self->pending_value);
            reducer_drop_pending(self);
            self->reuses++;
            Py_INCREF(self->kept);
            return self->kept;
        }
        if (self->pending_patch != NULL && self->kept != NULL) {
            PyObject *value = self->kept;
            self->kept = NULL;
            self->kept_id = 0;
            int applied = apply_patch(&value, self->pending_patch);
            reducer_drop_pending(self);
            if (applied == 1) {
                self->kept = value;
                self->kept_id = id;
                self->reuses++;
                Py_INCREF(value);
                return value;
            }
            Py_XDECREF(value);
            if (applied < 0) PyErr_Clear();
        }
    }
    reducer_drop_pending(self);
    int joined = 0;
    PyObject *value = slice != NULL ? parse_view(slice, 1, &joined) : parse(text, strlen(text), 1);
    if (value == NULL) return NULL;
    self->parses++;
    self->joins += (unsigned long long)joined;
    reducer_keep(self, known ? id : 0, known ? value : NULL);
    return value;
}


/* memcpy in blocks of 2 KiB: glibc copies a big block with `rep movsb`,
 * which callgrind counts as one instruction per byte (80,000 for a list of
 * 10,000 items), where its vector loop for a block below its threshold is
 * about one instruction per 16 bytes. */
static void copy_pointers(PyObject **to, PyObject *const *from, Py_ssize_t n) {
    const Py_ssize_t block = 2048 / sizeof *to;
    for (Py_ssize_t i = 0; i < n; i += block) memcpy(to + i, from + i, (size_t)(n - i < block ? n - i : block) * sizeof *to);
}

/* Room for n pointers in self->snap; 0 without memory (the snapshot dropped). */
static int snap_reserve(ReducerObject *self, Py_ssize_t n) {
    if (n <= self->snap_cap) return 1;
    PyObject **grown = PyMem_Realloc(self->snap, (size_t)n * sizeof *grown);
    if (grown == NULL) {
        Py_CLEAR(self->snap_of);
        return 0;
    }
    self->snap = grown;
    self->snap_cap = n;
    return 1;
}

/* Whether self->snap is the snapshot of the kept list `state`. */
static int snap_valid(ReducerObject *self, PyObject *state) {
    return self->snap_of == state && self->snap_id == self->kept_id;
}

/* The snapshot of `list`, kept with id `id`: a copy of its item pointers. */
static int snap_take(ReducerObject *self, PyObject *list, uint64_t id) {
    Py_ssize_t n = PyList_GET_SIZE(list);
    Py_CLEAR(self->snap_of);
    if (!snap_reserve(self, n > 0 ? n : 1)) return 0;
    copy_pointers(self->snap, ((PyListObject *)list)->ob_item, n);
    self->snap_len = n;
    Py_INCREF(list);
    self->snap_of = list;
    self->snap_id = id;
    return 1;
}

/* The snapshot of `new_` (to be kept with id `id`) from that of the kept
 * list it was diffed against: the same but for the middle the diff found
 * changed (items prefix to size - suffix). */
static void snap_follow(ReducerObject *self, PyObject *new_, uint64_t id, Py_ssize_t prefix, Py_ssize_t suffix) {
    Py_ssize_t n = self->snap_len, m = PyList_GET_SIZE(new_);
    if (prefix < 0 || suffix < 0 || prefix + suffix > n || prefix + suffix > m || !snap_reserve(self, m > 0 ? m : 1)) {
        Py_CLEAR(self->snap_of);
        return;
    }
    memmove(self->snap + m - suffix, self->snap + n - suffix, (size_t)suffix * sizeof *self->snap);
    copy_pointers(self->snap + prefix, ((PyListObject *)new_)->ob_item + prefix, m - suffix - prefix);
    self->snap_len = m;
    Py_INCREF(new_);
    Py_SETREF(self->snap_of, new_);
    self->snap_id = id;
}

/* The answer to give for `result`, a new value that is not the state. */
static char *reducer_answer(ReducerObject *self, PyObject *state, PyObject *result) {
    /* A list or dict that keeps most of the kept value's items (by identity):
     * the changed items as a JSON Patch. */
    if (lib.reducer_patch != NULL && state != NULL && state == self->kept &&
        ((PyList_Check(result) && Py_IS_TYPE(state, &FrozenList_Type)) ||
         (PyDict_Check(result) && Py_IS_TYPE(state, &FrozenDict_Type))) &&
        (PyList_CheckExact(result) || PyDict_CheckExact(result) || IS_FROZEN(result))) {
        diff_ctx d;
        int found = diff(&d, state, result);
        if (found < 0) {
            diff_free(&d);
            return NULL;
        }
        if (found == 1) {
            if (d.ops.length == 2) { /* "[]": no change at all */
                diff_free(&d);
                reducer_drop_pending(self);
                return NULL;
            }
            ts_status status = lib.reducer_patch(d.ops.data);
            if (status != TS_OK) {
                diff_free(&d);
                PyErr_Format(PyExc_RuntimeError, "turnstate: the store refused the patch made from the new value: %s",
                             lib.last_error());
                return NULL;
            }
            self->patches_sent++;
            int kept = diff_freeze(&d);
            diff_free(&d);
            reducer_pend(self, kept ? result : NULL, NULL);
            if (kept && self->pending_id != 0 && snap_valid(self, state) && Py_IS_TYPE(result, &FrozenList_Type))
                snap_follow(self, result, self->pending_id, d.top_prefix, d.top_suffix);
            return NULL;
        }
        diff_free(&d);
    }
    char *out;
    int overflow = 1;
    long long number = PyLong_CheckExact(result) ? PyLong_AsLongLongAndOverflow(result, &overflow) : 0;
    if (!overflow) {
        char digits[32];
        format_integer(digits, number);
        out = lib.strdup_(digits);
    } else {
        PyObject *text = dumps(result);
        if (text == NULL) return NULL;
        out = lib.strdup_(PyBytes_AS_STRING(text));
        Py_DECREF(text);
    }
    if (out == NULL) {
        PyErr_Format(PyExc_MemoryError, "no memory for the reducer's result");
        return NULL;
    }
    self->texts_sent++;
    int kept = result == hooks.json_null ? 1 : canonical(result, 1);
    if (kept && result != hooks.json_null) freeze_canonical(result);
    reducer_pend(self, kept ? (result == hooks.json_null ? Py_None : result) : NULL, NULL);
    return out;
}

/* A turnstate.Patch answer. */
static char *reducer_patch_answer(ReducerObject *self, PyObject *state, PyObject *result) {
    PyObject *ops = PyObject_GetAttr(result, str_ops);
    if (ops == NULL) return NULL;
    PyObject *text = dumps(ops);
    if (text == NULL) {
        Py_DECREF(ops);
        return NULL;
    }
    if (lib.reducer_patch == NULL) {
        Py_DECREF(ops);
        Py_DECREF(text);
        PyErr_Format(PyExc_RuntimeError, "a reducer returned a turnstate.Patch, but the loaded libturnstate %s has "
                     "no ts_reducer_patch (0.3 or later has)", lib.version_string());
        return NULL;
    }
    ts_status status = lib.reducer_patch(PyBytes_AS_STRING(text));
    Py_DECREF(text);
    if (status != TS_OK) {
        /* The library failed the reducer's call already (its message says
         * why): what the reducer returns is ignored. */
        Py_DECREF(ops);
        reducer_drop_pending(self);
        return NULL;
    }
    self->patches_sent++;
    /* The operations' values become the store's, as a returned value does:
     * read-only now, so that the caller cannot change them before the next
     * call applies them to the kept value. */
    int keep = state != NULL && state == self->kept && PyList_Check(ops);
    for (Py_ssize_t i = 0; keep && i < PyList_GET_SIZE(ops); i++) {
        PyObject *op = PyList_GET_ITEM(ops, i);
        PyObject *value = PyDict_Check(op) ? PyDict_GetItemString(op, "value") : NULL;
        if (value != NULL && !canonical(value, 1)) keep = 0;
    }
    for (Py_ssize_t i = 0; keep && i < PyList_GET_SIZE(ops); i++) {
        PyObject *op = PyList_GET_ITEM(ops, i);
        PyObject *value = PyDict_Check(op) ? PyDict_GetItemString(op, "value") : NULL;
        if (value != NULL) freeze_canonical(value);
    }
    reducer_pend(self, NULL, keep ? ops : NULL);
    Py_DECREF(ops);
    return NULL;
}

static char *reducer_call(ReducerObject *self, const ts_json *slice, const char *text, const ts_action *view,
                          int nested) {
    PyObject *state = NULL, *action = NULL, *result = NULL;
    char *out = NULL;
    if (slice == NULL && text == NULL) {
        reducer_keep(self, 0, NULL);
        reducer_drop_pending(self);
        if (self->initial_text != NULL) {
            out = lib.strdup_(PyBytes_AS_STRING(self->initial_text));
            if (out == NULL) lib.reducer_fail("no memory for the reducer's initial value");
            return out;
        }
        PyObject *args[2] = {Py_None, init_action};
        result = PyObject_Vectorcall(self->fn, args, 2, NULL);
        if (result == NULL) goto fail;
        if (result == Py_None) {
            PyErr_Format(PyExc_ValueError, "the reducer for %R returned None for its first value (return the value, "
                         "or pass initial=)", self->key);
            goto fail;
        }
        out = reducer_answer(self, NULL, result);
        if (out == NULL && PyErr_Occurred()) goto fail;
        Py_DECREF(result);
        return out;
    }
    state = reducer_state(self, slice, text);
    if (state == NULL) goto fail;
    call_frame *f = current_frame;
    action = frame_action(f, view) ? action_from_frame(f, view) : action_from_view(view);
    if (action == NULL) goto fail;
    PyObject *args[3] = {NULL, state, action};
    /* A reducer that answered this action type with a new list last time
     * most likely copies its kept read-only list again (list(state),
     * state[:], [*state]): CPython copies a list subclass item by item
     * through an iterator, ten times slower than a list. So for that type
     * it gets the kept list itself as a plain list, and after the call the
     * list must hold exactly the items it held before (its size, and its
     * item pointers against a copy made before the call, one memcmp): a
     * change in place fails the dispatch with TypeError and the kept value
     * is dropped (the next call parses the slice again), so the store's
     * value is never corrupted. The list is read-only again after the call,
     * whatever holds it. Its items stay read-only all along. */
    Py_ssize_t size = 0;
    int opened = self->open_type[0] != '\0' && state == self->kept && Py_IS_TYPE(state, &FrozenList_Type) &&
                 strcmp(self->open_type, view->type) == 0;
    if (opened) {
        size = PyList_GET_SIZE(state);
        if (!snap_valid(self, state) && !snap_take(self, state, self->kept_id)) {
            PyErr_NoMemory();
            goto fail;
        }
        Py_SET_TYPE(state, &PyList_Type);
        self->opened++;
    }
    result = call_fast(self->fn, args + 1, 2);
    if (opened) {
        Py_SET_TYPE(state, &FrozenList_Type);
        int intact = PyList_GET_SIZE(state) == size && self->snap_len == size &&
                     memcmp(((PyListObject *)state)->ob_item, self->snap, (size_t)size * sizeof *self->snap) == 0;
        if (!intact) {
            Py_CLEAR(self->snap_of);
            reducer_keep(self, 0, NULL);
            self->open_type[0] = '\0';
            if (result != NULL) /* else the reducer's own exception stands */
                PyErr_Format(PyExc_TypeError,
                         "the reducer for %R changed its state (a list) in place: it is read-only, the store keeps "
                         "it; build a new value (state + [item], [*state[:i], new, *state[i + 1:]]) or copy it "
                         "(list(state), copy.deepcopy(state))", self->key);
            Py_CLEAR(result);
        }
    }
    if (result == NULL) goto fail;
    /* A new list for a kept read-only list: remember the type (above). */
    if (PyList_CheckExact(result) && state == self->kept && Py_IS_TYPE(state, &FrozenList_Type)) {
        size_t length = strlen(view->type);
        if (length < sizeof self->open_type) memcpy(self->open_type, view->type, length + 1);
    }
    if (result == Py_None || result == state) {
        /* unchanged */
    } else if (hooks.patch_type != NULL && Py_IS_TYPE(result, (PyTypeObject *)hooks.patch_type)) {
        out = reducer_patch_answer(self, state, result);
    } else {
        out = reducer_answer(self, state, result);
    }
    if (out == NULL && PyErr_Occurred()) goto fail;
    Py_DECREF(result);
    Py_DECREF(action);
    Py_DECREF(state);
    return out;
fail:
    Py_XDECREF(result);
    Py_XDECREF(action);
    Py_XDECREF(state);
    reducer_drop_pending(self);
    fail_reducer(nested);
    return NULL;
}

static char *reducer_trampoline(const char *slice, const ts_action *view, void *ctx) {
    gil_hold h;
    if (!gil_enter(&h)) {
        lib.reducer_fail("the Python interpreter is shutting down");
        return NULL;
    }
    char *out = reducer_call((ReducerObject *)ctx, NULL, slice, view, h.mode != GIL_ENSURED);
    gil_leave(&h);
    return out;
}

/* The same for a reducer added with ts_store_add_patch_reducer: the store
 * never makes the text of a big slice for it (see README, "How it works"). */
static char *patch_reducer_trampoline(const ts_json *slice, const ts_action *view, void *ctx) {
    gil_hold h;
    if (!gil_enter(&h)) {
        lib.reducer_fail("the Python interpreter is shutting down");
        return NULL;
    }
    char *out = reducer_call((ReducerObject *)ctx, slice, NULL, view, h.mode != GIL_ENSURED);
    gil_leave(&h);
    return out;
}

static PyObject *reducer_stats(ReducerObject *self, PyObject *unused) {
    (void)unused;
    return Py_BuildValue("{sKsKsKsKsKsKsi}", "parses", self->parses, "reuses", self->reuses, "patches",
                         self->patches_sent, "texts", self->texts_sent, "joins", self->joins, "opened", self->opened,
                         "kept", self->kept != NULL);
}

/* forget(): drops the kept value (the reducer was replaced or removed: the
 * store will not call it again, and its value may be big). */
static PyObject *reducer_forget(ReducerObject *self, PyObject *unused) {
    (void)unused;
    reducer_keep(self, 0, NULL);
    reducer_drop_pending(self);
    Py_RETURN_NONE;
}

static PyMethodDef reducer_methods[] = {
    {"stats", (PyCFunction)reducer_stats, METH_NOARGS,
     "Counters: slices parsed (joins: of them, split slices joined first), kept values reused, answers given "
     "as a patch and as text."},
    {"forget", (PyCFunction)reducer_forget, METH_NOARGS, "Drops the kept value."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject Reducer_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "turnstate._ext.Reducer",
    .tp_basicsize = sizeof(ReducerObject),
    .tp_dealloc = (destructor)reducer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)reducer_traverse,
    .tp_clear = (inquiry)reducer_clear,
    .tp_methods = reducer_methods,
};

/* ---- Listeners -------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *fn;
    PyObject *store;
} ListenerObject;

static PyTypeObject Listener_Type;

static int listener_traverse(ListenerObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->fn);
    Py_VISIT(self->store);
    return 0;
}

static int listener_clear(ListenerObject *self) {
    Py_CLEAR(self->fn);
    Py_CLEAR(self->store);
    return 0;
}

static void listener_dealloc(ListenerObject *self) {
    PyObject_GC_UnTrack(self);
    listener_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static void listener_trampoline(ts_store *store, void *ctx) {
    (void)store;
    ListenerObject *self = ctx;
    gil_hold h;
    if (!gil_enter(&h)) return;
    if (self->fn != NULL) {
        PyObject *args[2] = {NULL, self->store};
        PyObject *result = call_fast(self->fn, args + 1, 1);
        if (result == NULL) {
            PyObject *error = take_exception();
            record_exception(error, "listener", h.mode != GIL_ENSURED);
            Py_DECREF(error);
        }
        Py_XDECREF(result);
    }
    gil_leave(&h);
}

static PyTypeObject Listener_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "turnstate._ext.Listener",
    .tp_basicsize = sizeof(ListenerObject),
    .tp_dealloc = (destructor)listener_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)listener_traverse,
    .tp_clear = (inquiry)listener_clear,
};

/* ---- Middleware ---------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *fn;
    PyObject *store;
    PyObject *label;
} MiddlewareObject;

static PyTypeObject Middleware_Type;

static int middleware_traverse(MiddlewareObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->fn);
    Py_VISIT(self->store);
    return 0;
}

static int middleware_clear(MiddlewareObject *self) {
    Py_CLEAR(self->fn);
    Py_CLEAR(self->store);
    return 0;
}

static void middleware_dealloc(MiddlewareObject *self) {
    PyObject_GC_UnTrack(self);
    middleware_clear(self);
    Py_XDECREF(self->label);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject Middleware_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "turnstate._ext.Middleware",
    .tp_basicsize = sizeof(MiddlewareObject),
    .tp_dealloc = (destructor)middleware_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)middleware_traverse,
    .tp_clear = (inquiry)middleware_clear,
};

/* The `next` of one middleware call, as the Python side's Next calls it:
 * call(text bytes or None for the action as received) -> status. */
typedef struct {
    PyObject_HEAD
    ts_next_fn next;
    ActionObject *action; /* borrowed while the middleware runs */
} NextFnObject;

static PyTypeObject NextFn_Type;

static PyObject *nextfn_call(NextFnObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "call(text or None)");
        return NULL;
    }
    const char *text;
    PyObject *data = args[0];
    if (data == Py_None) {
        if (self->action == NULL || self->action->lib_json == NULL) {
            PyErr_SetString(PyExc_RuntimeError, "next() without an action after the middleware returned");
            return NULL;
        }
        text = self->action->lib_json;
    } else if (PyBytes_Check(data)) {
        text = PyBytes_AS_STRING(data);
    } else {
        PyErr_SetString(PyExc_TypeError, "call(text or None)");
        return NULL;
    }
    call_frame f;
    call_frame *outer = current_frame;
    ts_status status;
    if (outer != NULL && outer->fast) {
        /* Within a call that kept the GIL: the rest of the chain may too. */
        status = self->next(text);
    } else {
        call_begin(&f, outer != NULL && outer->keep);
        status = self->next(text);
        call_end(&f);
    }
    return PyLong_FromLong(status);
}

static PyMethodDef nextfn_methods[] = {
    {"call", (PyCFunction)(void (*)(void))nextfn_call, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject NextFn_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "turnstate._ext.NextFn",
    .tp_basicsize = sizeof(NextFnObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = nextfn_methods,
};

static ts_status middleware_trampoline(const ts_store_api *api, ts_next_fn next, const ts_action *view, void *ctx) {
    MiddlewareObject *self = ctx;
    gil_hold h;
    if (!gil_enter(&h)) return api->fail(TS_E_REJECTED, "the Python interpreter is shutting down");
    ts_status status = TS_OK;
    PyObject *outcome = NULL;
    NextFnObject *nxt = NULL;
    ActionObject *action = (ActionObject *)action_from_view(view);
    if (action != NULL) {
        action->lib_json = view->json;
        nxt = PyObject_New(NextFnObject, &NextFn_Type);
    }
    if (nxt != NULL) {
        nxt->next = next;
        nxt->action = action;
        outcome = PyObject_CallFunction(hooks.middleware_run, "OOOOOi", self->fn, self->store, (PyObject *)nxt,
                                        (PyObject *)action, self->label, h.mode != GIL_ENSURED);
        nxt->action = NULL;
    }
    if (action != NULL) action->lib_json = NULL;
    if (outcome == NULL) {
        PyObject *error = take_exception();
        record_exception(error, "middleware", h.mode != GIL_ENSURED);
        Py_DECREF(error);
        status = api->fail(TS_E_REJECTED, "a Python middleware failed in the binding");
    } else if (outcome != Py_None) {
        int code = TS_E_REJECTED;
        const char *message = "";
        if (!PyArg_ParseTuple(outcome, "iy", &code, &message)) {
            PyErr_Clear();
            code = TS_E_REJECTED;
            message = "a Python middleware failed";
        }
        status = api->fail(code, message);
    }
    Py_XDECREF(outcome);
    Py_XDECREF(nxt);
    Py_XDECREF(action);
    gil_leave(&h);
    return status;
}

/* ---- Core: reducers, listeners, middleware, plugins ---------------------------- */

/* A NULL-terminated array of the patterns, or NULL for none (every action). */
static const char **types_array(PyObject *types, PyObject **keep) {
    *keep = NULL;
    if (types == Py_None) return NULL;
    PyObject *list = PySequence_List(types);
    if (list == NULL) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(list);
    const char **array = PyMem_Calloc((size_t)n + 1, sizeof *array);
    if (array == NULL) {
        Py_DECREF(list);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(list, i);
        if (!PyUnicode_Check(item)) {
            PyErr_Format(PyExc_TypeError, "on=: each action type is a str; item %zd is %s", i, Py_TYPE(item)->tp_name);
            PyMem_Free(array);
            Py_DECREF(list);
            return NULL;
        }
        array[i] = PyUnicode_AsUTF8(item);
        if (array[i] == NULL) {
            PyMem_Free(array);
            Py_DECREF(list);
            return NULL;
        }
    }
    *keep = list;
    return array;
}

/* add_reducer(key, fn, initial_text or None, types or None, replace) -> Reducer */
static PyObject *core_add_reducer(CoreObject *self, PyObject *args) {
    PyObject *key, *fn, *initial, *types;
    int replace;
    if (!PyArg_ParseTuple(args, "UOOOp", &key, &fn, &initial, &types, &replace)) return NULL;
    const char *key_text = PyUnicode_AsUTF8(key);
    if (key_text == NULL || !core_live(self)) return NULL;
    PyObject *keep_types = NULL;
    const char **patterns = NULL;
    if (types != Py_None) {
        if ((replace ? lib.replace_reducer_for : lib.add_reducer_for) == NULL) {
            PyErr_Format(PyExc_RuntimeError, "on= needs ts_store_%s_reducer_for, which the loaded libturnstate %s "
                         "lacks (0.3 or later has it)", replace ? "replace" : "add", lib.version_string());
            return NULL;
        }
        patterns = types_array(types, &keep_types);
        if (patterns == NULL) return NULL;
    }
    ReducerObject *reducer = PyObject_GC_New(ReducerObject, &Reducer_Type);
    if (reducer == NULL) {
        PyMem_Free(patterns);
        Py_XDECREF(keep_types);
        return NULL;
    }
    Py_INCREF(fn);
    reducer->fn = fn;
    Py_INCREF(key);
    reducer->key = key;
    reducer->initial_text = initial == Py_None ? NULL : initial;
    Py_XINCREF(reducer->initial_text);
    reducer->kept_id = reducer->pending_id = 0;
    reducer->kept = reducer->pending_value = reducer->pending_patch = NULL;
    reducer->parses = reducer->reuses = reducer->patches_sent = reducer->texts_sent = reducer->joins = reducer->opened = 0;
    reducer->open_type[0] = '\0';
    reducer->snap = NULL;
    reducer->snap_len = reducer->snap_cap = 0;
    reducer->snap_of = NULL;
    reducer->snap_id = 0;
    PyObject_GC_Track(reducer);
    call_frame f;
    unsigned long long since = error_seq;
    core_begin(self, &f);
    ts_status status;
    /* Added as a patch reducer when the library has them (a slice the
     * reducer keeps as a Python value then never needs its text, and a big
     * one is kept as a tree that a patch changes in place); the C API
     * replaces a reducer only with a ts_reducer_fn. */
    if (!replace && lib.add_patch_reducer != NULL)
        status = lib.add_patch_reducer(self->handle, key_text, patterns, patch_reducer_trampoline, reducer);
    else if (patterns != NULL)
        status = (replace ? lib.replace_reducer_for : lib.add_reducer_for)(self->handle, key_text, patterns,
                                                                          reducer_trampoline, reducer);
    else
        status = (replace ? lib.replace_reducer : lib.add_reducer)(self->handle, key_text, reducer_trampoline, reducer);
    core_end(self, &f);
    PyMem_Free(patterns);
    Py_XDECREF(keep_types);
    /* The caller raises (it keeps the reducer alive first: the library may
     * hold it even when a callback raised, as a listener of the replace
     * action). */
    return Py_BuildValue("(iKN)", (int)status, since, (PyObject *)reducer);
}

static PyObject *core_simple(CoreObject *self, PyObject *args, int which) {
    const char *text = NULL;
    if (!PyArg_ParseTuple(args, "s", &text) || !core_live(self)) return NULL;
    call_frame f;
    unsigned long long since = error_seq;
    core_begin(self, &f);
    ts_status status = which == 0 ? lib.remove_reducer(self->handle, text)
                     : which == 1 ? lib.remove_middleware(self->handle, text)
                                  : lib.load_plugins(self->handle, text);
    core_end(self, &f);
    if (status != TS_OK || error_seq != since)
        return raise_for(status, since, which == 0 ? "remove_reducer()" : which == 1 ? "remove_middleware()"
                                                                                    : "load_plugins");
    Py_RETURN_NONE;
}

static PyObject *core_remove_reducer(CoreObject *self, PyObject *args) { return core_simple(self, args, 0); }
static PyObject *core_remove_middleware(CoreObject *self, PyObject *args) { return core_simple(self, args, 1); }

/* ---- Versions of the state ---------------------------------------------------- */

/* A migration: `ctx` is a Python callable (bytes -> bytes: the state's JSON
 * text in, the new state's out), kept alive by the Store (_store.py). An
 * exception is recorded (raised by the call that brought the state in, as a
 * reducer's is) and fails the step with "Type: message". */
static char *py_migration(const char *state_json, void *ctx, char **error_message) {
    gil_hold h;
    char *out = NULL;
    if (!gil_enter(&h)) {
        *error_message = lib.strdup_("Python is shutting down");
        return NULL;
    }
    PyObject *text = PyBytes_FromString(state_json);
    PyObject *result = text != NULL ? PyObject_CallOneArg((PyObject *)ctx, text) : NULL;
    Py_XDECREF(text);
    if (result != NULL && !PyBytes_Check(result)) {
        PyErr_Format(PyExc_TypeError, "a migration returned %.100s, not JSON text (bytes)", Py_TYPE(result)->tp_name);
        Py_CLEAR(result);
    }
    if (result != NULL) {
        out = lib.strdup_(PyBytes_AS_STRING(result));
        Py_DECREF(result);
    } else {
        PyObject *error = take_exception();
        record_exception(error, "migration", h.frame != NULL);
        PyObject *reason = PyObject_CallOneArg(hooks.failure_reason, error);
        if (reason != NULL && PyBytes_Check(reason)) *error_message = lib.strdup_(PyBytes_AS_STRING(reason));
        else PyErr_Clear();
        Py_XDECREF(reason);
        Py_DECREF(error);
    }
    gil_leave(&h);
    return out;
}

static int versions_present(void) {
    if (lib.set_version != NULL && lib.get_version != NULL && lib.add_migration != NULL &&
        lib.replace_state_from != NULL)
        return 1;
    PyErr_SetString(PyExc_NotImplementedError, "this libturnstate has no state versions (ts_store_set_version)");
    return 0;
}

/* A state version from Python: 0 to 2^32 - 1, or OverflowError (0). */
static int version_in_range(unsigned long version) {
    if (version <= 4294967295UL) return 1;
    PyErr_SetString(PyExc_OverflowError, "a state version is 0 to 4294967295");
    return 0;
}

/* set_version(int) */
static PyObject *core_set_version(CoreObject *self, PyObject *args) {
    unsigned long version;
    if (!PyArg_ParseTuple(args, "k", &version) || !versions_present() || !core_live(self)) return NULL;
    if (!version_in_range(version)) return NULL;
    call_frame f;
    unsigned long long since = error_seq;
    core_begin(self, &f);
    ts_status status = lib.set_version(self->handle, (uint32_t)version);
    core_end(self, &f);
    if (status != TS_OK || error_seq != since) return raise_for(status, since, "version");
    Py_RETURN_NONE;
}

/* get_version() -> int */
static PyObject *core_get_version(CoreObject *self, PyObject *unused) {
    (void)unused;
    uint32_t version = 0;
    if (!versions_present() || !core_live(self)) return NULL;
    call_frame f;
    unsigned long long since = error_seq;
    core_begin(self, &f);
    ts_status status = lib.get_version(self->handle, &version);
    core_end(self, &f);
    if (status != TS_OK || error_seq != since) return raise_for(status, since, "version");
    return PyLong_FromUnsignedLong(version);
}

/* add_migration(from_version, fn): fn is kept alive by the caller. */
static PyObject *core_add_migration(CoreObject *self, PyObject *args) {
    unsigned long from;
    PyObject *fn;
    if (!PyArg_ParseTuple(args, "kO", &from, &fn) || !versions_present() || !core_live(self)) return NULL;
    if (!version_in_range(from)) return NULL;
    call_frame f;
    unsigned long long since = error_seq;
    core_begin(self, &f);
    ts_status status = lib.add_migration(self->handle, (uint32_t)from, py_migration, fn);
    core_end(self, &f);
    if (status != TS_OK || error_seq != since) return raise_for(status, since, "add_migration()");
    Py_RETURN_NONE;
}

/* replace_state_from(text, version) */
static PyObject *core_replace_state_from(CoreObject *self, PyObject *args) {
    const char *text;
    unsigned long version;
    if (!PyArg_ParseTuple(args, "yk", &text, &version) || !versions_present() || !core_live(self)) return NULL;
    if (!version_in_range(version)) return NULL;
    call_frame f;
    unsigned long long since = error_seq;
    core_begin(self, &f);
    ts_status status = lib.replace_state_from(self->handle, text, (uint32_t)version);
    core_end(self, &f);
    if (status != TS_OK || error_seq != since) return raise_for(status, since, "replace_state_from()");
    Py_RETURN_NONE;
}

static PyObject *core_load_plugins(CoreObject *self, PyObject *args) {
    self->has_plugins = 1;
    return core_simple(self, args, 2);
}

static PyObject *core_load_plugin(CoreObject *self, PyObject *args) {
    const char *path;
    PyObject *config_text;
    if (!PyArg_ParseTuple(args, "yO", &path, &config_text) || !core_live(self)) return NULL;
    if (config_text != Py_None && !PyBytes_Check(config_text)) {
        PyErr_SetString(PyExc_TypeError, "load_plugin(path, config): config is JSON text (bytes) or None");
        return NULL;
    }
    const char *config = config_text == Py_None ? NULL : PyBytes_AS_STRING(config_text);
    self->has_plugins = 1;
    call_frame f;
    unsigned long long since = error_seq;
    core_begin(self, &f);
    ts_status status = lib.load_plugin(self->handle, path, config);
    core_end(self, &f);
    if (status != TS_OK || error_seq != since) return raise_for(status, since, "load_plugin");
    Py_RETURN_NONE;
}

/* subscribe(fn, path or None, store) -> (token, Listener) */
static PyObject *core_subscribe(CoreObject *self, PyObject *args) {
    PyObject *fn, *path, *store;
    if (!PyArg_ParseTuple(args, "OOO", &fn, &path, &store)) return NULL;
    const char *pointer = NULL;
    if (path != Py_None && (pointer = PyUnicode_AsUTF8(path)) == NULL) return NULL;
    if (!core_live(self)) return NULL;
    ListenerObject *listener = PyObject_GC_New(ListenerObject, &Listener_Type);
    if (listener == NULL) return NULL;
    Py_INCREF(fn);
    listener->fn = fn;
    Py_INCREF(store);
    listener->store = store;
    PyObject_GC_Track(listener);
    uint64_t token = 0;
    call_frame f;
    unsigned long long since = error_seq;
    core_begin(self, &f);
    ts_status status = lib.subscribe(self->handle, pointer, listener_trampoline, listener, &token);
    core_end(self, &f);
    return Py_BuildValue("(iKKN)", (int)status, since, (unsigned long long)token, (PyObject *)listener);
}

static PyObject *core_unsubscribe(CoreObject *self, PyObject *args) {
    unsigned long long token;
    if (!PyArg_ParseTuple(args, "K", &token) || !core_live(self)) return NULL;
    call_frame f;
    unsigned long long since = error_seq;
    core_begin(self, &f);
    ts_status status = lib.unsubscribe(self->handle, token);
    core_end(self, &f);
    if (status != TS_OK || error_seq != since) return raise_for(status, since, "unsubscribe");
    Py_RETURN_NONE;
}

/* add_middleware(fn, store, label) -> Middleware */
static PyObject *core_add_middleware(CoreObject *self, PyObject *args) {
    PyObject *fn, *store, *label;
    if (!PyArg_ParseTuple(args, "OOU", &fn, &store, &label)) return NULL;
    const char *name = PyUnicode_AsUTF8(label);
    if (name == NULL || !core_live(self)) return NULL;
    MiddlewareObject *middleware = PyObject_GC_New(MiddlewareObject, &Middleware_Type);
    if (middleware == NULL) return NULL;
    Py_INCREF(fn);
    middleware->fn = fn;
    Py_INCREF(store);
    middleware->store = store;
    Py_INCREF(label);
    middleware->label = label;
    PyObject_GC_Track(middleware);
    call_frame f;
    unsigned long long since = error_seq;
    core_begin(self, &f);
    ts_status status = lib.add_middleware(self->handle, name, middleware_trampoline, middleware);
    core_end(self, &f);
    return Py_BuildValue("(iKN)", (int)status, since, (PyObject *)middleware);
}

static PyObject *core_dispatch_fast(CoreObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return core_dispatch(self, args, nargs);
}

static PyMethodDef core_methods[] = {
    {"dispatch", (PyCFunction)(void (*)(void))core_dispatch_fast, METH_FASTCALL,
     "dispatch(action, payload=...): dispatches an action through the middleware to the reducers, then calls "
     "the listeners: dispatch(\"todos/add\", {\"title\": \"x\"}), dispatch({\"type\": ..., \"payload\": ...}) "
     "or dispatch(action) with an Action received earlier. See turnstate.Store.dispatch."},
    {"dispatch_json", (PyCFunction)core_dispatch_json, METH_O, NULL},
    {"get_text", (PyCFunction)core_get_text, METH_O, NULL},
    {"get", (PyCFunction)core_get, METH_O, NULL},
    {"add_reducer", (PyCFunction)core_add_reducer, METH_VARARGS, NULL},
    {"remove_reducer", (PyCFunction)core_remove_reducer, METH_VARARGS, NULL},
    {"subscribe", (PyCFunction)core_subscribe, METH_VARARGS, NULL},
    {"unsubscribe", (PyCFunction)core_unsubscribe, METH_VARARGS, NULL},
    {"add_middleware", (PyCFunction)core_add_middleware, METH_VARARGS, NULL},
    {"remove_middleware", (PyCFunction)core_remove_middleware, METH_VARARGS, NULL},
    {"load_plugin", (PyCFunction)core_load_plugin, METH_VARARGS, NULL},
    {"load_plugins", (PyCFunction)core_load_plugins, METH_VARARGS, NULL},
    {"close", (PyCFunction)core_close, METH_NOARGS, NULL},
    {"set_version", (PyCFunction)core_set_version, METH_VARARGS, NULL},
    {"get_version", (PyCFunction)core_get_version, METH_NOARGS, NULL},
    {"add_migration", (PyCFunction)core_add_migration, METH_VARARGS, NULL},
    {"replace_state_from", (PyCFunction)core_replace_state_from, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef core_getset[] = {
    {"closed", (getter)core_closed, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject Core_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "turnstate._ext.Core",
    .tp_basicsize = sizeof(CoreObject),
    .tp_dealloc = (destructor)core_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = core_methods,
    .tp_getset = core_getset,
    .tp_new = core_new,
};

/* ---- Module functions --------------------------------------------------------- */

#define SYM(field, name, required)                                                                   \
    do {                                                                                             \
        *(void **)(&lib.field) = dlsym(handle, name);                                                \
        if ((required) && lib.field == NULL) {                                                       \
            missing = name;                                                                          \
            goto fail;                                                                               \
        }                                                                                            \
    } while (0)

/* load(path) -> the path of the file loaded (dladdr), or raises OSError. */
static PyObject *mod_load(PyObject *module, PyObject *arg) {
    (void)module;
    if (lib.handle != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "turnstate._ext: a library is loaded already");
        return NULL;
    }
    PyObject *encoded;
    if (!PyUnicode_FSConverter(arg, &encoded)) return NULL;
    void *handle = dlopen(PyBytes_AS_STRING(encoded), RTLD_NOW | RTLD_LOCAL);
    Py_DECREF(encoded);
    if (handle == NULL) {
        PyErr_SetString(PyExc_OSError, dlerror());
        return NULL;
    }
    const char *missing = NULL;
    SYM(version_number, "ts_version_number", 1);
    SYM(version_string, "ts_version_string", 1);
    SYM(status_name, "ts_status_name", 1);
    SYM(last_error, "ts_last_error", 1);
    SYM(strdup_, "ts_strdup", 1);
    SYM(free_, "ts_free", 1);
    SYM(reducer_fail, "ts_reducer_fail", 1);
    SYM(store_create, "ts_store_create", 1);
    SYM(store_destroy, "ts_store_destroy", 1);
    SYM(add_reducer, "ts_store_add_reducer", 1);
    SYM(replace_reducer, "ts_store_replace_reducer", 1);
    SYM(remove_reducer, "ts_store_remove_reducer", 1);
    SYM(dispatch, "ts_store_dispatch", 1);
    SYM(get_state, "ts_store_get_state", 1);
    SYM(subscribe, "ts_store_subscribe", 1);
    SYM(unsubscribe, "ts_store_unsubscribe", 1);
    SYM(add_middleware, "ts_store_add_middleware", 1);
    SYM(remove_middleware, "ts_store_remove_middleware", 1);
    SYM(load_plugin, "ts_store_load_plugin", 1);
    SYM(load_plugins, "ts_store_load_plugins", 1);
    SYM(slice_id, "ts_reducer_slice_id", 0);
    SYM(answer_id, "ts_reducer_answer_id", 0);
    SYM(reducer_patch, "ts_reducer_patch", 0);
    SYM(add_reducer_for, "ts_store_add_reducer_for", 0);
    SYM(replace_reducer_for, "ts_store_replace_reducer_for", 0);
    SYM(add_patch_reducer, "ts_store_add_patch_reducer", 0);
    SYM(json_next, "ts_json_next", 0);
    SYM(json_string, "ts_json_string", 0);
    SYM(dispatch_parts, "ts_store_dispatch_parts", 0);
    SYM(set_version, "ts_store_set_version", 0);
    SYM(get_version, "ts_store_get_version", 0);
    SYM(add_migration, "ts_store_add_migration", 0);
    SYM(replace_state_from, "ts_store_replace_state_from", 0);
    if (lib.json_next == NULL || lib.json_string == NULL) lib.add_patch_reducer = NULL;
    {
        Dl_info info;
        const char *file = dladdr(*(void **)&lib.version_number, &info) && info.dli_fname ? info.dli_fname : NULL;
        lib.handle = handle;
        return file != NULL ? PyUnicode_DecodeFSDefault(file) : (Py_INCREF(Py_None), Py_None);
    }
fail:
    memset(&lib, 0, sizeof lib);
    dlclose(handle);
    PyErr_Format(PyExc_OSError, "not libturnstate: it has no %s", missing);
    return NULL;
}

static PyObject *mod_version_number(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return PyLong_FromLong(lib.version_number ? lib.version_number() : 0);
}

static PyObject *mod_version_string(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return PyUnicode_FromString(lib.version_string ? lib.version_string() : "");
}

static PyObject *mod_status_name(PyObject *module, PyObject *arg) {
    (void)module;
    long status = PyLong_AsLong(arg);
    if (status == -1 && PyErr_Occurred()) return NULL;
    return PyUnicode_FromString(lib.status_name ? lib.status_name((ts_status)status) : "TS_E_UNKNOWN");
}

static PyObject *mod_last_error(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    const char *text = lib.last_error ? lib.last_error() : "";
    return PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "replace");
}

static PyObject *mod_has(PyObject *module, PyObject *arg) {
    (void)module;
    const char *name = PyUnicode_AsUTF8(arg);
    if (name == NULL) return NULL;
    void *fn = strcmp(name, "slice_id") == 0 ? (void *)lib.slice_id
             : strcmp(name, "answer_id") == 0 ? (void *)lib.answer_id
             : strcmp(name, "reducer_patch") == 0 ? (void *)lib.reducer_patch
             : strcmp(name, "add_reducer_for") == 0 ? (void *)lib.add_reducer_for
             : strcmp(name, "add_patch_reducer") == 0 ? (void *)lib.add_patch_reducer
             : strcmp(name, "dispatch_parts") == 0 ? (void *)lib.dispatch_parts
                                                     : NULL;
    return PyBool_FromLong(fn != NULL);
}

static PyObject *mod_configure(PyObject *module, PyObject *args, PyObject *kwargs) {
    (void)module;
    static char *names[] = {"raise_for", "record", "failure_reason", "loads_exact", "dumps_std", "action_text",
                            "middleware_run", "json_null", "patch_type", "gone", NULL};
    PyObject *values[10];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOOOO", names, &values[0], &values[1], &values[2],
                                     &values[3], &values[4], &values[5], &values[6], &values[7], &values[8],
                                     &values[9]))
        return NULL;
    PyObject **slots[10] = {&hooks.raise_for, &hooks.record, &hooks.failure_reason, &hooks.loads_exact,
                            &hooks.dumps_std, &hooks.action_text, &hooks.middleware_run, &hooks.json_null,
                            &hooks.patch_type, &hooks.gone};
    for (int i = 0; i < 10; i++) {
        Py_INCREF(values[i]);
        Py_XSETREF(*slots[i], values[i]);
    }
    Py_RETURN_NONE;
}

static PyObject *mod_seq(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return PyLong_FromUnsignedLongLong(error_seq);
}

static PyObject *mod_next_seq(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return PyLong_FromUnsignedLongLong(++error_seq);
}

static PyObject *mod_counters(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return Py_BuildValue("{sKsK}", "dumps_fallbacks", dumps_fallbacks, "exact_parses", exact_parses);
}

static PyObject *mod_loads(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs < 1 || nargs > 2 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "loads(bytes, frozen=False)");
        return NULL;
    }
    int frozen = nargs == 2 ? PyObject_IsTrue(args[1]) : 0;
    if (frozen < 0) return NULL;
    return parse(PyBytes_AS_STRING(args[0]), (size_t)PyBytes_GET_SIZE(args[0]), frozen);
}

static PyObject *mod_dumps(PyObject *module, PyObject *value) {
    (void)module;
    return dumps(value);
}

static PyObject *mod_freeze(PyObject *module, PyObject *value) {
    (void)module;
    PyObject *copy = frozen_copy_of(value, 1);
    if (copy == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "not a JSON value that a read-only copy can hold exactly");
    return copy;
}

static PyObject *mod_diff(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *old, *new_;
    if (!PyArg_ParseTuple(args, "OO", &old, &new_)) return NULL;
    if (!IS_FROZEN(old) || !is_container(new_) || PyList_Check(old) != PyList_Check(new_)) Py_RETURN_NONE;
    diff_ctx d;
    int found = diff(&d, old, new_);
    PyObject *result = NULL;
    if (found == 1) result = PyBytes_FromStringAndSize(d.ops.data, (Py_ssize_t)d.ops.length);
    else if (found == 0) {
        result = Py_None;
        Py_INCREF(result);
    }
    diff_free(&d);
    return result;
}

static PyObject *mod_apply(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *value, *ops;
    if (!PyArg_ParseTuple(args, "OO", &value, &ops)) return NULL;
    Py_INCREF(value);
    int applied = apply_patch(&value, ops);
    if (applied == 1) return value;
    Py_DECREF(value);
    if (applied < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"load", mod_load, METH_O, "load(path): dlopen libturnstate; returns the file loaded."},
    {"version_number", mod_version_number, METH_NOARGS, NULL},
    {"version_string", mod_version_string, METH_NOARGS, NULL},
    {"status_name", mod_status_name, METH_O, NULL},
    {"last_error", mod_last_error, METH_NOARGS, NULL},
    {"has", mod_has, METH_O, "has(name): whether the loaded library has an optional function."},
    {"configure", (PyCFunction)(void (*)(void))mod_configure, METH_VARARGS | METH_KEYWORDS, NULL},
    {"seq", mod_seq, METH_NOARGS, NULL},
    {"counters", mod_counters, METH_NOARGS,
     "How often JSON was written (dumps_fallbacks) or read (exact_parses) by the json module instead of orjson."},
    {"next_seq", mod_next_seq, METH_NOARGS, NULL},
    {"loads", (PyCFunction)(void (*)(void))mod_loads, METH_FASTCALL, NULL},
    {"dumps", mod_dumps, METH_O, NULL},
    {"freeze", mod_freeze, METH_O, "A read-only copy of a JSON value."},
    {"diff", mod_diff, METH_VARARGS, "diff(kept, new): the patch text found by identity, or None."},
    {"apply", mod_apply, METH_VARARGS, "apply(kept, ops): the kept value with a patch applied, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "turnstate._ext", NULL, -1, module_methods,
                                        NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__ext(void) {
    FrozenDict_Type.tp_base = &PyDict_Type;
    FrozenList_Type.tp_base = &PyList_Type;
    if (PyType_Ready(&FrozenDict_Type) < 0 || PyType_Ready(&FrozenList_Type) < 0 || PyType_Ready(&Action_Type) < 0 ||
        PyType_Ready(&Core_Type) < 0 || PyType_Ready(&Reducer_Type) < 0 || PyType_Ready(&Listener_Type) < 0 ||
        PyType_Ready(&Middleware_Type) < 0 || PyType_Ready(&NextFn_Type) < 0)
        return NULL;
    PyObject *orjson = PyImport_ImportModule("orjson");
    if (orjson == NULL) return NULL;
    orjson_loads = PyObject_GetAttrString(orjson, "loads");
    orjson_dumps = PyObject_GetAttrString(orjson, "dumps");
    PyObject *passthrough_dataclass = PyObject_GetAttrString(orjson, "OPT_PASSTHROUGH_DATACLASS");
    PyObject *passthrough_datetime = PyObject_GetAttrString(orjson, "OPT_PASSTHROUGH_DATETIME");
    Py_DECREF(orjson);
    if (orjson_loads == NULL || orjson_dumps == NULL || passthrough_dataclass == NULL || passthrough_datetime == NULL)
        return NULL;
    orjson_options = PyNumber_Or(passthrough_dataclass, passthrough_datetime);
    Py_DECREF(passthrough_dataclass);
    Py_DECREF(passthrough_datetime);
    if (orjson_options == NULL) return NULL;
    str_ops = PyUnicode_InternFromString("ops");
    str_type = PyUnicode_InternFromString("type");
    str_payload = PyUnicode_InternFromString("payload");
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    ActionObject *init = action_alloc();
    if (init == NULL) return NULL;
    init->type = PyUnicode_FromString("@@turnstate/init");
    init->json = PyBytes_FromString("{\"type\":\"@@turnstate/init\"}");
    init_action = (PyObject *)init;
    Py_INCREF(&FrozenDict_Type);
    Py_INCREF(&FrozenList_Type);
    Py_INCREF(&Action_Type);
    Py_INCREF(&Core_Type);
    Py_INCREF(&Reducer_Type);
    if (PyModule_AddObject(module, "FrozenDict", (PyObject *)&FrozenDict_Type) < 0 ||
        PyModule_AddObject(module, "FrozenList", (PyObject *)&FrozenList_Type) < 0 ||
        PyModule_AddObject(module, "Action", (PyObject *)&Action_Type) < 0 ||
        PyModule_AddObject(module, "Core", (PyObject *)&Core_Type) < 0 ||
        PyModule_AddObject(module, "Reducer", (PyObject *)&Reducer_Type) < 0 ||
        PyModule_AddObject(module, "INIT_ACTION", init_action) < 0)
        return NULL;
    Py_INCREF(init_action);
    return module;
}
