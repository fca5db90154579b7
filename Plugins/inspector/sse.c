/*
 * sse.c - the event streams of GET /api/events (sse.h).
 *
 * Locking: none here. A stream's buffer and cursor belong to its
 * connection's thread; history_feed takes the history's lock, waits on its
 * condition, and calls frame() with that lock held (frame only appends to
 * the stream's own buffer).
 */
#define _GNU_SOURCE 1

#include "sse.h"

#include <stdlib.h>
#include <string.h>

#define STREAM_BATCH 256   /* records per read of the feed */
#define KEEP_ALIVE_SECONDS 15 /* a comment when nothing happened for so long */

/* The event stream of one browser. */
typedef struct stream {
    history *history;
    history_cursor cursor;
    sb pending; /* framed events not yet sent */
    size_t offset;
} stream;

static void frame(void *ctx, const char *event, const char *json, size_t length) {
    stream *s = ctx;
    sb_str(&s->pending, "event: ");
    sb_str(&s->pending, event);
    sb_str(&s->pending, "\ndata: ");
    sb_add(&s->pending, json, length);
    sb_str(&s->pending, "\n\n");
}

static ssize_t stream_read(void *ctx, char *out, size_t max) {
    stream *s = ctx;
    while (s->offset >= s->pending.length) {
        s->pending.length = 0;
        s->offset = 0;
        if (s->pending.text) s->pending.text[0] = '\0';
        int fed = history_feed(s->history, &s->cursor, STREAM_BATCH, KEEP_ALIVE_SECONDS, frame, s);
        if (fed > 0) return HTTP_STREAM_END;
        if (fed < 0 || s->pending.failed) return HTTP_STREAM_ERROR;
        if (s->pending.length == 0) {
            /* A comment keeps proxies and the connection alive. */
            sb_str(&s->pending, ": keep-alive\n\n");
        }
    }
    size_t n = s->pending.length - s->offset;
    if (n > max) n = max;
    memcpy(out, s->pending.text + s->offset, n);
    s->offset += n;
    return (ssize_t)n;
}

static void stream_done(void *ctx) {
    stream *s = ctx;
    history_unwatch(s->history);
    free(s->pending.text);
    free(s);
}

http_result sse_open(history *h, http_request *req) {
    stream *s = calloc(1, sizeof *s);
    if (s == NULL) return http_send_error(req, 500, "out of memory");
    s->history = h;
    history_watch(h, &s->cursor);
    return http_send_stream(req, "text/event-stream", stream_read, stream_done, s);
}
