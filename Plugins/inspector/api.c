/*
 * api.c - the inspector's HTTP API: the routing table (method + path ->
 * handler) that http.c serves, and the handlers, which turn a request into
 * a call of the history (views), the commands (travel) or the feed (sse),
 * and the outcome into an answer. README.md ("HTTP endpoints") lists them.
 *
 * Locking: none here. A handler runs on its connection's thread; the
 * history and the commands take their own locks.
 */
#define _GNU_SOURCE 1

#include "inspector.h"

#include "../common/pjson.h"
#include "session.h"
#include "sse.h"

#include <stdint.h>
#include <stdlib.h>

/* A number field of a command's JSON body. */
static int body_uint(const char *body, const char *key, uint64_t *out) {
    if (body == NULL || pj_kind_of(body) != PJ_OBJECT) return 0;
    const char *v = pj_get(body, key);
    return v != NULL && pj_uint64(v, out) == PJ_U64_OK;
}

static int body_bool(const char *body, const char *key, int *out) {
    if (body == NULL || pj_kind_of(body) != PJ_OBJECT) return 0;
    const char *v = pj_get(body, key);
    if (v == NULL) return 0;
    enum pj_kind k = pj_kind_of(v);
    if (k != PJ_TRUE && k != PJ_FALSE) return 0;
    *out = k == PJ_TRUE;
    return 1;
}

/* A command's answer: {"ok": true, "status": {...}}, or 409 and why. */
static http_result command_result(inspector *in, http_request *req, int result, const char *why) {
    if (result != 0) return http_send_error(req, 409, "%s", why);
    sb b = {0};
    sb_str(&b, "{\"ok\":true,\"status\":");
    history_status_json(in->history, &b);
    sb_str(&b, "}");
    return http_send_json(req, 200, &b);
}

/* ---- GET --------------------------------------------------------------------- */

static http_result get_events(void *app, http_request *req) {
    inspector *in = app;
    return sse_open(in->history, req);
}

static http_result get_actions(void *app, http_request *req) {
    inspector *in = app;
    sb b = {0};
    history_actions_json(in->history, &b);
    return http_send_json(req, 200, &b);
}

static http_result get_state(void *app, http_request *req) {
    inspector *in = app;
    const char *arg = http_query(req, "seq");
    uint64_t seq;
    if (arg == NULL || pj_uint64(arg, &seq) != PJ_U64_OK)
        return http_send_error(req, 400, "/api/state needs ?seq=N (a record number)");
    sb b = {0};
    if (history_state_json(in->history, seq, &b) != 0) {
        free(b.text);
        return http_send_error(req, 404, "there is no record #%llu in the history", (unsigned long long)seq);
    }
    return http_send_json(req, 200, &b);
}

static http_result get_export(void *app, http_request *req) {
    inspector *in = app;
    size_t length;
    char *text = history_export(in->history, &length);
    if (text == NULL) return http_send_error(req, 500, "out of memory");
    uint32_t version = travel_store_version(in->store);
    if (version > 0 && length > 0) {
        /* A session of a versioned store says its version first (the
         * journal's V record), so that an import migrates it. */
        char json[32];
        sb b = {0};
        snprintf(json, sizeof json, "{\"version\":%lu}", (unsigned long)version);
        sb_record(&b, 'V', json);
        sb_add(&b, text, length);
        free(text);
        if (b.text == NULL) return http_send_error(req, 500, "out of memory");
        text = b.text;
        length = b.length;
    }
    return http_send_download(req, text, length, "text/plain; charset=utf-8", "turnstate-session.journal");
}

/* ---- POST -------------------------------------------------------------------- */

static http_result post_pause(void *app, http_request *req) {
    inspector *in = app;
    int paused;
    if (!body_bool(http_body(req, NULL), "paused", &paused))
        return http_send_error(req, 400, "pause needs {\"paused\": true|false}");
    history_set_paused(in->history, paused);
    return command_result(in, req, 0, "");
}

static http_result post_jump(void *app, http_request *req) {
    inspector *in = app;
    char why[1024] = "";
    uint64_t seq;
    if (!body_uint(http_body(req, NULL), "seq", &seq))
        return http_send_error(req, 400, "jump needs {\"seq\": N} (a record number)");
    return command_result(in, req, travel_jump(in->travel, seq, why, sizeof why), why);
}

static http_result post_present(void *app, http_request *req) {
    inspector *in = app;
    char why[1024] = "";
    return command_result(in, req, travel_present(in->travel, why, sizeof why), why);
}

static http_result post_skip(void *app, http_request *req) {
    inspector *in = app;
    char why[1024] = "";
    const char *body = http_body(req, NULL);
    uint64_t seq;
    int skip;
    if (!body_uint(body, "seq", &seq) || !body_bool(body, "skip", &skip))
        return http_send_error(req, 400, "skip needs {\"seq\": N, \"skip\": true|false}");
    return command_result(in, req, travel_skip(in->travel, seq, skip, why, sizeof why), why);
}

static http_result post_dispatch(void *app, http_request *req) {
    inspector *in = app;
    char why[1024] = "";
    return command_result(in, req, travel_dispatch(in->travel, http_body(req, NULL), why, sizeof why), why);
}

static http_result post_import(void *app, http_request *req) {
    inspector *in = app;
    char why[1024] = "";
    size_t length;
    const char *body = http_body(req, &length);
    return command_result(in, req, travel_import(in->travel, body, length, why, sizeof why), why);
}

/* ---- The table ------------------------------------------------------------------ */

const http_route api_routes[] = {
    {"GET", "/api/events", 0, get_events},
    {"GET", "/api/actions", 0, get_actions},
    {"GET", "/api/state", 0, get_state},
    {"GET", "/api/export", 0, get_export},
    {"POST", "/api/pause", HTTP_READ_ONLY_OK, post_pause},
    {"POST", "/api/jump", 0, post_jump},
    {"POST", "/api/present", 0, post_present},
    {"POST", "/api/skip", 0, post_skip},
    {"POST", "/api/dispatch", 0, post_dispatch},
    {"POST", "/api/import", 0, post_import},
};

const size_t api_route_count = sizeof api_routes / sizeof api_routes[0];
