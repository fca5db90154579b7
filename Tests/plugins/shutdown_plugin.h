/* shutdown_plugin.h - the counters that shutdown_plugin.c exports as
 * sp_report, for test_shutdown.c. */
#ifndef SHUTDOWN_PLUGIN_H
#define SHUTDOWN_PLUGIN_H

#include "turnstate.h"

typedef struct sp_counters {
    int created, destroyed;
    int run_after_destroy;         /* run() of an instance whose destroy() had begun */
    int ok_after_destroy_began;    /* thread dispatches that started after destroy() began and returned TS_OK */
    int gone_after_destroy_began;  /* ... and returned TS_E_STORE_GONE */
    int thread_dispatches;
    ts_status destroy_dispatch_status; /* what dispatch from destroy() returned */
    int destroy_order[16];         /* ids in the order destroy() ran */
} sp_counters;

#endif
