/*
 * faults.c - replicate.so's refusals and faults, for Tests/replicate/run.sh
 * (Redis) and Tests/replicate/nats_run.py (NATS JetStream):
 *   faults PLUGIN URL STOP_CMD START_CMD [EXTRA_CONFIG]
 * Bad configs and an unreachable server refuse the load with a message; with
 * the server stopped (Redis) or two of three servers stopped (a JetStream
 * cluster loses its quorum) a dispatch fails with TS_E_IO and a message and
 * changes nothing; once they are back the plugin reconnects and the next
 * dispatch goes through, applied once. EXTRA_CONFIG is added to every config
 * (",\"replicas\":3"). Prints "N passed, M failed".
 */
#define _DEFAULT_SOURCE

#include "turnstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include <unistd.h>

static const char *extra = "";

static char *count(const char *slice, const ts_action *action, void *ctx) {
    char *out;
    (void)ctx;
    if (strcmp(action->type, "inc") != 0) return NULL;
    out = ts_alloc(24);
    if (out) snprintf(out, 24, "%lld", atoll(slice) + 1);
    return out;
}

static ts_store *new_store(void) {
    ts_store *s = NULL;
    if (ts_store_create("{\"counter\":0}", &s) != TS_OK || ts_store_add_reducer(s, "counter", count, NULL) != TS_OK) {
        printf("FAIL: cannot make a store\n");
        exit(1);
    }
    return s;
}

static void refused(const char *plugin, const char *config, ts_status want, const char *message) {
    ts_store *s = new_store();
    ts_status status = ts_store_load_plugin(s, plugin, config);
    char what[300];
    snprintf(what, sizeof what, "config %s is refused with %s", config, message);
    check(status == want && strstr(ts_last_error(), message) != NULL, what, ts_last_error());
    ts_store_destroy(s);
}

static long long counter(ts_store *s) {
    char *text = NULL;
    long long n = -1;
    if (ts_store_get_state(s, "/counter", &text) == TS_OK) n = atoll(text);
    ts_free(text);
    return n;
}

/* A listener that dispatches once, nested, when the counter reaches 2. */
static int nested_done;
static ts_status nested_status = 1;
static void nested_listener(ts_store *store, void *ctx) {
    (void)ctx;
    if (!nested_done && counter(store) == 2) {
        nested_done = 1;
        nested_status = ts_store_dispatch(store, "{\"type\":\"inc\"}");
    }
}

/* A listener that destroys its store when the counter reaches 3. */
static volatile int destroyed_from_listener;
static void destroying_listener(ts_store *store, void *ctx) {
    (void)ctx;
    if (!destroyed_from_listener && counter(store) >= 3) {
        destroyed_from_listener = 1;
        ts_store_destroy(store);
    }
}

static int wait_for(ts_store *s, long long n) {
    int i;
    for (i = 0; i < 400 && counter(s) < n; i++) usleep(10000);
    return counter(s) == n;
}

/* Remote entries reach listeners on the reader thread: a nested dispatch
 * from there is logged once and applied once everywhere; a store destroyed
 * from there goes cleanly. */
static void listeners_on_the_reader(const char *plugin, const char *url) {
    char config[512];
    uint64_t token;
    ts_store *x = new_store(), *y = new_store(), *z = new_store();
    int i;
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"stream\":\"nested\",\"timeout_ms\":2000%s}", url, extra);
    check(ts_store_subscribe(x, NULL, nested_listener, NULL, &token) == TS_OK &&
              ts_store_subscribe(z, NULL, destroying_listener, NULL, &token) == TS_OK,
          "listeners subscribe", ts_last_error());
    check(ts_store_load_plugin(x, plugin, config) == TS_OK && ts_store_load_plugin(y, plugin, config) == TS_OK &&
              ts_store_load_plugin(z, plugin, config) == TS_OK,
          "three stores of one process load the plugin", ts_last_error());
    check(ts_store_dispatch(y, "{\"type\":\"inc\"}") == TS_OK && ts_store_dispatch(y, "{\"type\":\"inc\"}") == TS_OK,
          "dispatches from y", ts_last_error());
    check(wait_for(x, 3) && wait_for(y, 3), "x's listener dispatched once from x's reader: 3 on both", NULL);
    check(nested_status == TS_OK, "the nested dispatch on the reader thread succeeded", NULL);
    {
        char detail[600], why[400];
        ts_status status = ts_store_dispatch(y, "{\"type\":\"inc\"}");
        int x4;
        snprintf(why, sizeof why, "%s", status == TS_OK ? "" : ts_last_error());
        x4 = wait_for(x, 4);
        snprintf(detail, sizeof detail, "%s; x at %lld, y at %lld; %s", ts_status_name(status), counter(x), counter(y),
                 why);
        check(status == TS_OK && x4 && counter(y) == 4, "then 4 on both: nothing applied twice", detail);
    }
    for (i = 0; i < 400 && !destroyed_from_listener; i++) usleep(10000);
    check(destroyed_from_listener, "z was destroyed from a listener on its reader thread", NULL);
    usleep(300000); /* its reader frees the instance on its way out */
    ts_store_destroy(x);
    ts_store_destroy(y);
}

/* A middleware added after the plugin: counts what reaches it. */
static ts_status counting_middleware(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *ctx) {
    (void)store;
    (*(int *)ctx)++;
    return next(action->json);
}

/* Middleware after the plugin runs on every replica, for every entry (the
 * plugin's dispatch_after); middleware before it, once, at the origin. */
static void middleware_sides(const char *plugin, const char *url) {
    char config[512];
    ts_store *p = new_store(), *q = new_store();
    int before_p = 0, after_p = 0, after_q = 0, i;
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"stream\":\"sides\",\"timeout_ms\":2000%s}", url, extra);
    check(ts_store_add_middleware(p, "before", counting_middleware, &before_p) == TS_OK &&
              ts_store_load_plugin(p, plugin, config) == TS_OK &&
              ts_store_add_middleware(p, "after", counting_middleware, &after_p) == TS_OK &&
              ts_store_load_plugin(q, plugin, config) == TS_OK &&
              ts_store_add_middleware(q, "after", counting_middleware, &after_q) == TS_OK,
          "p: before, replicate, after; q: replicate, after", ts_last_error());
    for (i = 0; i < 3; i++) check(ts_store_dispatch(q, "{\"type\":\"inc\"}") == TS_OK, "q dispatches", ts_last_error());
    for (i = 0; i < 2; i++) check(ts_store_dispatch(p, "{\"type\":\"inc\"}") == TS_OK, "p dispatches", ts_last_error());
    check(wait_for(p, 5) && wait_for(q, 5), "5 on both", NULL);
    check(before_p == 2, "middleware before the plugin ran once per local dispatch, at the origin", NULL);
    check(after_p == 5 && after_q == 5, "middleware after the plugin ran on every replica for every entry", NULL);
    ts_store_destroy(p);
    ts_store_destroy(q);
}

int main(int argc, char **argv) {
    const char *plugin, *url, *stop, *start;
    char config[1024];
    ts_store *s;
    ts_status status = TS_OK;
    long long before;
    int i, nats;
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: faults PLUGIN URL STOP_CMD START_CMD [EXTRA_CONFIG]\n");
        return 2;
    }
    plugin = argv[1];
    url = argv[2];
    stop = argv[3];
    start = argv[4];
    if (argc == 6) extra = argv[5];
    nats = strncmp(url, "nats://", 7) == 0 || strncmp(url, "tls://", 6) == 0;

    refused(plugin, "{\"stream\":\"f\"}", TS_E_PLUGIN, "config field \"url\" is required");
    refused(plugin, "{\"url\":\"redis://127.0.0.1:1\"}", TS_E_PLUGIN, "config field \"stream\" is required");
    refused(plugin, "{\"url\":\"http://x\",\"stream\":\"f\"}", TS_E_PLUGIN, "must start with redis://");
    refused(plugin, "{\"url\":\"redis://h\",\"stream\":\"f\",\"timeout_ms\":0}", TS_E_PLUGIN, "\"timeout_ms\" must be");
    refused(plugin, "{\"url\":\"redis://h\",\"stream\":\"f\",\"snapshot_every\":-1}", TS_E_PLUGIN,
            "\"snapshot_every\" must be");
    refused(plugin, "{\"url\":\"redis://h\",\"stream\":\"f\",\"colour\":1}", TS_E_PLUGIN, "unknown config field");
    refused(plugin, "[]", TS_E_PLUGIN, "must be a JSON object");
    refused(plugin, "{\"url\":\"nats://h\",\"stream\":\"f\",\"replicas\":6}", TS_E_PLUGIN, "\"replicas\" must be");
    refused(plugin, "{\"url\":\"redis://h\",\"stream\":\"f\",\"tls_ca\":\"/x\"}", TS_E_PLUGIN,
            "need a TLS url (rediss://)");
    refused(plugin, "{\"url\":\"nats://h\",\"stream\":\"f\",\"tls_ca\":\"/x\"}", TS_E_PLUGIN,
            "need a TLS url (tls://)");
    refused(plugin, "{\"url\":\"rediss://127.0.0.1:1\",\"stream\":\"f\",\"tls_ca\":\"/no/such/ca.pem\"}", TS_E_PLUGIN,
            "\"tls_ca\" file \"/no/such/ca.pem\" cannot be read");
    refused(plugin, "{\"url\":\"rediss://127.0.0.1:1\",\"stream\":\"f\",\"tls_cert\":\"/x\"}", TS_E_PLUGIN,
            "\"tls_cert\" and \"tls_key\" go together");
    if (nats) {
        refused(plugin, "{\"url\":\"nats://h\",\"stream\":\"a.b\"}", TS_E_PLUGIN, "letters, digits, '-' or '_'");
        refused(plugin, "{\"url\":\"nats://secret:@h\",\"stream\":\"f\"}", TS_E_PLUGIN, "must be USER:PASSWORD or TOKEN");
        refused(plugin, "{\"url\":\"nats://u:secret@h:1,/x\",\"stream\":\"f\"}", TS_E_PLUGIN, "not \"nats://***@h:1,/x\"");
        refused(plugin, "{\"url\":\"nats://h:99999\",\"stream\":\"f\"}", TS_E_PLUGIN, "from 1 to 65535");
        refused(plugin, "{\"url\":\"nats://u:secret@h:99999\",\"stream\":\"f\"}", TS_E_PLUGIN, "from 1 to 65535");
        /* Port 1 on loopback: nothing listens. */
        refused(plugin, "{\"url\":\"nats://127.0.0.1:1\",\"stream\":\"f\",\"timeout_ms\":500}", TS_E_PLUGIN,
                "cannot connect to nats://127.0.0.1:1");
    } else {
        refused(plugin, "{\"url\":\"redis://secret@127.0.0.1\",\"stream\":\"f\"}", TS_E_PLUGIN,
                "must be USER:PASSWORD or :PASSWORD");
        refused(plugin, "{\"url\":\"redis://u:secret@/x\",\"stream\":\"f\"}", TS_E_PLUGIN, "not \"redis://***@/x\"");
        refused(plugin, "{\"url\":\"redis://h:99999\",\"stream\":\"f\"}", TS_E_PLUGIN, "from 1 to 65535");
        /* With credentials too (run under valgrind: nothing of them may leak). */
        refused(plugin, "{\"url\":\"redis://u:secret@h:99999\",\"stream\":\"f\"}", TS_E_PLUGIN, "from 1 to 65535");
        /* Port 1 on loopback: nothing listens. */
        refused(plugin, "{\"url\":\"redis://127.0.0.1:1\",\"stream\":\"f\",\"timeout_ms\":500}", TS_E_PLUGIN,
                "cannot connect to redis://127.0.0.1:1");
    }

    s = new_store();
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"stream\":\"faults\",\"timeout_ms\":%d%s}", url,
             nats ? 1500 : 500, extra);
    status = ts_store_load_plugin(s, plugin, config);
    check(status == TS_OK, "loads with the server up", ts_last_error());
    check(ts_store_dispatch(s, "{\"type\":\"inc\"}") == TS_OK && counter(s) == 1, "a dispatch reads its own write",
          ts_last_error());
    check(system(stop) == 0, "the server stops", stop);
    before = counter(s);
    status = ts_store_dispatch(s, "{\"type\":\"inc\"}");
    check(status == TS_E_IO, "server down: TS_E_IO", ts_status_name(status));
    check(strstr(ts_last_error(), nats ? (strncmp(url, "tls", 3) ? "nats://" : "tls://") : "redis://") != NULL,
          "server down: the message names the server", ts_last_error());
    check(counter(s) == before, "server down: nothing applied", NULL);
    status = ts_store_dispatch(s, "{\"type\":\"inc\"}");
    check(status == TS_E_IO && (nats ? strstr(ts_last_error(), "did not acknowledge") != NULL
                                     : strstr(ts_last_error(), "reconnecting") || strstr(ts_last_error(), "cannot connect")),
          nats ? "quorum lost: the next dispatch fails too, unacknowledged"
               : "server down: the next dispatch says it is reconnecting",
          ts_last_error());
    check(counter(s) == before, "still nothing applied", NULL);
    check(system(start) == 0, "the server starts again", start);
    /* Redis: backoff, at most 2 s between attempts; NATS: the cluster elects
     * its leaders again. */
    for (i = 0; i < (nats ? 400 : 100); i++) {
        status = ts_store_dispatch(s, "{\"type\":\"inc\"}");
        if (status == TS_OK) break;
        usleep(50000);
    }
    check(status == TS_OK, "reconnects once the server is back", ts_last_error());
    check(counter(s) == before + 1, "after reconnecting: one more, nothing doubled", NULL);
    check(ts_store_dispatch(s, "not json") == TS_E_JSON, "bad JSON is refused before the plugin", NULL);
    ts_store_destroy(s);
    listeners_on_the_reader(plugin, url);
    middleware_sides(plugin, url);
    return check_summary();
}
