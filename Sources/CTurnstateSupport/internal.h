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
/* The function set with tsi_set_slice_index, or NULL. */
const void *(*tsi_slice_index(void))(void *owner);

/* Sets the calling thread's last error from a printf format. */
void tsi_set_last_errorf(const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

#endif
