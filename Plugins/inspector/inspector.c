/*
 * inspector - a Turnstate middleware plugin: time-travel devtools in the
 * browser. It records every action that passes it in a bounded ring and
 * serves a page (embedded in the plugin, see web/ and embed.py) that shows
 * them live over Server-Sent Events, with the state after each action, its
 * diff, and time travel (jump, skip, dispatch, export and import).
 *
 * Config: {"port": 7311, "history": 1000, "bind": "127.0.0.1",
 *          "read_only": false, "token": "...", "hosts": ["name:port"]}
 * See README.md beside this file for what each field means, the HTTP
 * endpoints, the security rules, the cost, and the source map: this file is
 * the plugin's entry (create, run, destroy) and wires the parts together.
 *
 * Threads and locks: run() is called on the dispatching threads, with the
 * store held; it touches only the history (history.h: its gate's atomics,
 * then one short section under the history's lock) and the commands' gate
 * (travel.h: whether this thread replays). The HTTP server (http.h, one thread per connection) calls
 * into the store only through the commands (travel.h), never while holding
 * the history's lock. create() builds every part before the server's
 * threads start; destroy() stops the history (the event streams end), then
 * the server (MHD_stop_daemon joins its threads), then frees the parts.
 */
#define _GNU_SOURCE 1

#include "inspector.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- The middleware ----------------------------------------------------------- */

static ts_status inspector_run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
    inspector *in = self;
    /* A listener's dispatch while the inspector replays: its effect is in the
     * recorded history already. */
    if (travel_replaying_here(in->replay)) return TS_OK;
    uint64_t seq = history_begin(in->recording);
    if (seq == 0) return next(action->json); /* paused */
    uint64_t t0 = ticks_now();

    ts_status status = next(action->json);

    uint64_t t1 = ticks_now();
    char *message = NULL, *state = NULL;
    if (status != TS_OK) {
        message = strdup(travel_reason(in->travel, status));
    } else if (history_state_due(in->recording)) {
        /* The state is read only while a browser watches, and at checkpoints
         * (every history/4 actions) that replays start from. */
        if (store->get_state(NULL, &state) != TS_OK) state = NULL;
    }
    history_end(in->history, seq, action->json, t0, t1 - t0, status, message, state, 1);
    return status;
}

/* ---- Create, destroy ------------------------------------------------------------ */

static void free_instance(inspector *in) {
    if (in == NULL) return;
    http_stop(in->http);
    travel_destroy(in->travel);
    history_destroy(in->history);
    config_free(&in->config);
    free(in);
}

static ts_status refuse(inspector *in, char **error_message, const char *format, ...) {
    char message[1024];
    va_list ap;
    va_start(ap, format);
    vsnprintf(message, sizeof message, format, ap);
    va_end(ap);
    if (error_message) *error_message = strdup(message);
    free_instance(in);
    return TS_E_PLUGIN;
}

static ts_status inspector_create(const char *config, const ts_store_api *store, void **self, char **error_message) {
    char why[1024];
    inspector *in = calloc(1, sizeof *in);
    if (in == NULL) return TS_E_NOMEM;
    in->store = store;
    if (!TS_API_HAS(store, apply) || store->apply == NULL)
        return refuse(in, error_message, "inspector: this libturnstate's plugin table has no apply (added in 0.2.0): "
                      "time travel needs it; use a newer libturnstate");
    if (config_parse(&in->config, config, why, sizeof why) != 0) return refuse(in, error_message, "%s", why);

    /* The state replays start from: the state when the plugin was loaded. */
    char *initial = NULL;
    ts_status status = store->get_state(NULL, &initial);
    if (status != TS_OK)
        return refuse(in, error_message, "inspector: could not read the initial state (%s)", store->status_name(status));
    ticks_start(&in->clock);
    in->history = history_create(store, &in->config, &in->clock, initial);
    if (in->history == NULL)
        return refuse(in, error_message, "inspector: no memory for a history of %zu", in->config.history);
    in->travel = travel_create(store, in->history);
    if (in->travel == NULL) return refuse(in, error_message, "inspector: out of memory");
    in->recording = history_gate_of(in->history);
    in->replay = travel_gate_of(in->travel);

    in->http = http_start(&in->config, api_routes, api_route_count, in, why, sizeof why);
    if (in->http == NULL) return refuse(in, error_message, "%s", why);
    const inspector_config *c = &in->config;
    const char *shown = c->loopback ? (c->ipv6 ? "[::1]" : "127.0.0.1") : c->hosts[c->host_count - 1];
    if (c->loopback) {
        fprintf(stderr, "turnstate inspector: http://%s:%u/?token=%s%s\n", shown, c->port, c->token,
                c->read_only ? " (read-only)" : "");
    } else {
        fprintf(stderr, "turnstate inspector: http://%s/?token=%s%s (listening on %s, not only loopback)\n", shown,
                c->token, c->read_only ? " (read-only)" : "", c->bind);
    }
    fflush(stderr);
    *self = in;
    return TS_OK;
}

static void inspector_destroy(void *self) {
    inspector *in = self;
    if (in == NULL) return;
    /* The event streams end; then the server ends every connection and
     * joins its threads (free_instance). */
    history_stop(in->history);
    free_instance(in);
}

static const ts_plugin descriptor = {
    TS_PLUGIN_ABI_VERSION, sizeof(ts_plugin), "inspector", INSPECTOR_VERSION,
    inspector_create, inspector_run, inspector_destroy,
};

TS_API const ts_plugin *ts_plugin_entry(uint32_t host_abi_version) {
    return host_abi_version >= 1 ? &descriptor : NULL;
}
