/*
 * inspector.h - one inspector, as the plugin's entry (inspector.c) wires it
 * together: its config, clock, history (the model), commands (travel) and
 * HTTP server, and the API routes (api.c) that connect the last to the
 * others.
 *
 * Locking: the struct's fields are set in create() before the server's
 * threads start and only read after, until destroy() has stopped them; each
 * part locks what it owns (see the top of history.h and travel.h).
 */
#ifndef TS_INSPECTOR_INSPECTOR_H
#define TS_INSPECTOR_INSPECTOR_H

#include "turnstate_plugin.h"

#include "config.h"
#include "history.h"
#include "http.h"
#include "ticks.h"
#include "travel.h"

typedef struct inspector {
    const ts_store_api *store;
    inspector_config config;
    ticks_origin clock;
    history *history;
    travel *travel;
    history_gate *recording; /* history_gate_of(history): run()'s checks, inlined */
    travel_gate *replay;     /* travel_gate_of(travel) */
    http_server *http;
} inspector;

/* The API's routes (api.c): method + path -> handler, with an inspector as
 * the handlers' app. */
extern const http_route api_routes[];
extern const size_t api_route_count;

#endif /* TS_INSPECTOR_INSPECTOR_H */
