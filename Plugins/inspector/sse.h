/*
 * sse.h - the live feed of GET /api/events: Server-Sent Events ("event:
 * NAME", "data: JSON"), one stream per browser, fed by the history
 * (history_feed) and framed here.
 *
 * Locking: none of its own. A stream belongs to its connection's thread;
 * it waits for news inside history_feed (the history's lock and condition),
 * and ends when the history stops (destroy).
 */
#ifndef TS_INSPECTOR_SSE_H
#define TS_INSPECTOR_SSE_H

#include "history.h"
#include "http.h"

/* Answers req with an event stream of h: a status first, then every record
 * of the ring and every new one, a "dropped" event when the browser falls
 * more than the ring behind, a comment every 15 s when nothing happens. */
http_result sse_open(history *h, http_request *req);

#endif /* TS_INSPECTOR_SSE_H */
