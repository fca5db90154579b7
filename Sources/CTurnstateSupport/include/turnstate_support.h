/* Internal helpers of libturnstate (not installed, not exported: the
 * library's version script keeps only the ts_ functions of turnstate.h).
 *   - libffi closures that turn a (handler, userdata) pair into a plain C
 *     function pointer of one of the shapes the public API hands out;
 *   - the calling thread's last error message. */
#ifndef TURNSTATE_SUPPORT_H
#define TURNSTATE_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/* A libffi closure and the call interface it was prepared with. */
typedef struct tsi_closure tsi_closure;

/* int32_t f(const char *): the shape of ts_next_fn and ts_store_api.dispatch. */
typedef int32_t (*tsi_string_handler)(void *userdata, const char *text);
/* int32_t f(const char *, char **): the shape of ts_store_api.get_state. */
typedef int32_t (*tsi_string_out_handler)(void *userdata, const char *text, char **out);

/* Makes a closure whose code, stored in *code, calls handler(userdata, ...).
 * Returns NULL when libffi cannot allocate executable memory. */
tsi_closure *tsi_closure_string(tsi_string_handler handler, void *userdata, void **code);
tsi_closure *tsi_closure_string_out(tsi_string_out_handler handler, void *userdata, void **code);
/* Frees a closure made above. NULL-safe. */
void tsi_closure_free(tsi_closure *closure);

/* The calling thread's last error message (copied; truncated at a UTF-8
 * boundary to fit a fixed buffer, so that nothing leaks at thread exit). */
void tsi_set_last_error(const char *message, size_t length);
const char *tsi_last_error(void);
/* Counts the errors set on the calling thread: tells whether a call in
 * between set one. */
uint64_t tsi_last_error_serial(void);

/* The reason a middleware gave for refusing the action it is running on the
 * calling thread (ts_store_api.fail), taken (and cleared) by the store when
 * the middleware returns. tsi_take_refusal returns NULL if none was given. */
void tsi_set_refusal(const char *message);
const char *tsi_take_refusal(void);

#endif
