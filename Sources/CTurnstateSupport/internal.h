/* What the files of CTurnstateSupport share besides turnstate_support.h. */
#ifndef TURNSTATE_SUPPORT_INTERNAL_H
#define TURNSTATE_SUPPORT_INTERNAL_H

#include "turnstate_support.h"

#include <stddef.h>
#include <stdint.h>

/* The innermost reducer and middleware calls under way on this thread, or
 * NULL; each links to the ones around it (`outer`). */
tsi_reducer_call *tsi_innermost_reducer(void);
const tsi_middleware_frame *tsi_innermost_middleware(void);
/* Writes the ts_json (out) of a patch reducer's slice: the split tree
 * `tree` when not NULL, else the minified text[0..length) with its index
 * (a tsj_doc over it, or NULL). */
void tsi_slice_value(void *out, const char *text, size_t length, const void *tree, const void *index);

/* The function set with tsi_set_slice_index, or NULL. */
const void *(*tsi_slice_index(void))(void *owner);

/* Sets the calling thread's last error from a printf format. */
void tsi_set_last_errorf(const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

#endif
