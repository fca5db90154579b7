/*
 * http.h - the inspector's HTTP server, over libmicrohttpd (only http.c
 * includes microhttpd.h): the listening socket, the security checks every
 * request passes before its body is read, the headers every response
 * carries, the page's embedded files, and the routing of API requests
 * through a table (method + path -> handler) that api.c fills.
 *
 * Locking: the server has no lock of its own. libmicrohttpd runs one
 * listening thread and one thread per connection; a request's handler runs
 * on its connection's thread, and an event stream's reader too. What the
 * server reads of the config and the route table is never written after
 * http_start. http_stop ends every connection and joins the threads.
 */
#ifndef TS_INSPECTOR_HTTP_H
#define TS_INSPECTOR_HTTP_H

#include "config.h"
#include "text.h"

#include <stddef.h>
#include <sys/types.h>

/* One request, while its handler runs. */
typedef struct http_request http_request;

/* What a handler returns: what the http_send_* function it ended with
 * returned (the request is answered, or the connection is to be dropped). */
typedef int http_result;

typedef http_result (*http_handler)(void *app, http_request *req);

/* An API route: requests for `path` (exactly, under /api/) with `method`
 * ("GET", which HEAD matches too, or "POST") go to `handler`. */
typedef struct http_route {
    const char *method;
    const char *path;
    unsigned flags;
    http_handler handler;
} http_route;

/* A POST that "read_only": true allows: one that does not change the store
 * (every other POST under /api/, known or not, is refused with 403). */
#define HTTP_READ_ONLY_OK 1u

typedef struct http_server http_server;

/* Listens on cfg's address and port (0: any free one), sets the port and
 * the accepted Host values in cfg (config_bound), and starts serving: the
 * page, and the `count` routes of `routes`, whose handlers get `app`.
 * NULL with the reason in why. cfg, routes and app must outlive the server. */
http_server *http_start(inspector_config *cfg, const http_route *routes, size_t count, void *app, char *why,
                        size_t why_size);

/* Ends every connection and joins the server's threads. */
void http_stop(http_server *server);

/* ---- For handlers ----------------------------------------------------------- */

/* The request body ("" when there is none): NUL-terminated, and without a
 * NUL byte inside (the server refused those); *length its bytes. */
const char *http_body(const http_request *req, size_t *length);

/* The value of a query argument, or NULL. */
const char *http_query(http_request *req, const char *name);

/* Answers with `body` as JSON (500 when it ran out of memory); frees it. */
http_result http_send_json(http_request *req, unsigned code, sb *body);

/* Answers {"error": message} with `code`. */
http_result http_send_error(http_request *req, unsigned code, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Answers with `text` (malloc'ed, taken over) as a file to save, named
 * `filename`. */
http_result http_send_download(http_request *req, char *text, size_t length, const char *type, const char *filename);

/* An endless response, read piece by piece on the connection's thread:
 * read() fills up to max bytes of out and returns how many, or
 * HTTP_STREAM_END (the response ends) or HTTP_STREAM_ERROR (the connection
 * is dropped); done() is called once when the response is over (also when
 * it could not be started), with ctx. */
#define HTTP_STREAM_END (-1)
#define HTTP_STREAM_ERROR (-2)
typedef ssize_t (*http_stream_read)(void *ctx, char *out, size_t max);
http_result http_send_stream(http_request *req, const char *type, http_stream_read read, void (*done)(void *ctx),
                             void *ctx);

#endif /* TS_INSPECTOR_HTTP_H */
