/*
 * config.c - the inspector's configuration (config.h): every field checked,
 * with a message that names it; the token drawn when none is given; the
 * Host values accepted once the port is known.
 *
 * Locking: none; see config.h (filled in create() before any thread starts,
 * read-only after).
 */
#define _GNU_SOURCE 1

#include "config.h"

#include "../common/pjson.h"
#include "text.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* The Host values the server adds itself: three names of loopback, the
 * bind address. */
static size_t automatic_hosts(const inspector_config *c) { return c->loopback ? 4 : 1; }

int config_parse(inspector_config *c, const char *json, char *why, size_t why_size) {
    uint64_t port = 7311, history = 1000;
    const char *hosts = NULL, *key, *value;
    pj_iter it;
    int more;
    snprintf(c->bind, sizeof c->bind, "127.0.0.1");
    if (!pj_begin(&it, json, '{')) return failf(why, why_size, "inspector: the config must be a JSON object");
    while ((more = pj_next_member(&it, &key, &value)) == 1) {
        enum pj_kind kind = pj_kind_of(value);
        if (pj_str_eq(key, "port")) {
            int r = pj_uint64(value, &port);
            if (r != PJ_U64_OK || port > 65535)
                return failf(why, why_size, "inspector: \"port\" must be an integer from 0 to 65535 (0: any free port), "
                             "not %s", r == PJ_U64_OK ? "a larger number" : pj_uint64_why(kind, r));
        } else if (pj_str_eq(key, "history")) {
            int r = pj_uint64(value, &history);
            if (r != PJ_U64_OK || history < 1 || history > 1000000)
                return failf(why, why_size, "inspector: \"history\" must be an integer from 1 to 1000000 (the actions "
                             "kept), not %s", r == PJ_U64_OK ? "that number" : pj_uint64_why(kind, r));
        } else if (pj_str_eq(key, "bind")) {
            char *text = kind == PJ_STRING ? pj_str_dup(pj_ws(value), NULL) : NULL;
            struct in_addr a4;
            struct in6_addr a6;
            int ok = text && strlen(text) < sizeof c->bind &&
                     (inet_pton(AF_INET, text, &a4) == 1 || inet_pton(AF_INET6, text, &a6) == 1);
            if (ok) snprintf(c->bind, sizeof c->bind, "%s", text);
            free(text);
            if (!ok)
                return failf(why, why_size, "inspector: \"bind\" must be an IPv4 or IPv6 address as a string "
                             "(\"127.0.0.1\", \"::1\", \"0.0.0.0\")");
        } else if (pj_str_eq(key, "read_only")) {
            if (kind != PJ_TRUE && kind != PJ_FALSE)
                return failf(why, why_size, "inspector: \"read_only\" must be true or false, not %s", pj_kind_name(kind));
            c->read_only = kind == PJ_TRUE;
        } else if (pj_str_eq(key, "token")) {
            char *text = kind == PJ_STRING ? pj_str_dup(pj_ws(value), NULL) : NULL;
            size_t n = text ? strlen(text) : 0;
            int ok = n >= 16 && n < sizeof c->token;
            for (size_t i = 0; ok && i < n; i++)
                ok = (text[i] >= 'a' && text[i] <= 'z') || (text[i] >= 'A' && text[i] <= 'Z') ||
                     (text[i] >= '0' && text[i] <= '9') || text[i] == '-' || text[i] == '_';
            if (ok) snprintf(c->token, sizeof c->token, "%s", text);
            free(text);
            if (!ok)
                return failf(why, why_size, "inspector: \"token\" must be a string of 16 to 128 letters, digits, '-' "
                             "or '_' (leave it out for a random one)");
        } else if (pj_str_eq(key, "hosts")) {
            if (kind != PJ_ARRAY)
                return failf(why, why_size, "inspector: \"hosts\" must be an array of \"name:port\" strings, not %s",
                             pj_kind_name(kind));
            hosts = value;
        } else {
            char name[64];
            pj_str_show(key, name, sizeof name);
            return failf(why, why_size, "inspector: unknown config field \"%s\" (known: port, history, bind, read_only, "
                         "token, hosts)", name);
        }
    }
    if (more < 0) return failf(why, why_size, "inspector: the config is not a valid JSON object");
    c->port = (unsigned)port;
    c->history = (size_t)history;
    struct in6_addr a6;
    c->ipv6 = inet_pton(AF_INET6, c->bind, &a6) == 1;
    c->loopback = c->ipv6 ? IN6_IS_ADDR_LOOPBACK(&a6) : strncmp(c->bind, "127.", 4) == 0;
    if (hosts) {
        pj_iter ht;
        pj_begin(&ht, hosts, '[');
        while (pj_next_element(&ht, &value) == 1) {
            char *text = pj_kind_of(value) == PJ_STRING ? pj_str_dup(pj_ws(value), NULL) : NULL;
            int good = text && *text && strchr(text, ':') && c->extra_count + automatic_hosts(c) < CONFIG_HOST_SLOTS;
            if (!good) {
                free(text);
                return failf(why, why_size, "inspector: each of \"hosts\" must be a \"name:port\" string (at most %d)",
                             CONFIG_MAX_HOSTS);
            }
            c->extra[c->extra_count++] = text;
        }
    }
    if (c->token[0] == '\0') {
        unsigned char bytes[16];
        if (getrandom(bytes, sizeof bytes, 0) != (ssize_t)sizeof bytes)
            return failf(why, why_size, "inspector: no random bytes for a token: %s", strerror(errno));
        for (size_t i = 0; i < sizeof bytes; i++) snprintf(c->token + 2 * i, 3, "%02x", bytes[i]);
    }
    return 0;
}

static int add_host(inspector_config *c, const char *format, ...) {
    char text[300];
    va_list ap;
    va_start(ap, format);
    vsnprintf(text, sizeof text, format, ap);
    va_end(ap);
    if (c->host_count >= CONFIG_HOST_SLOTS) return 0;
    c->hosts[c->host_count] = strdup(text);
    if (c->hosts[c->host_count] == NULL) return 0;
    c->host_count++;
    return 1;
}

int config_bound(inspector_config *c, unsigned port) {
    int ok = 1;
    c->port = port;
    if (c->loopback) {
        ok &= add_host(c, "127.0.0.1:%u", port);
        ok &= add_host(c, "localhost:%u", port);
        ok &= add_host(c, "[::1]:%u", port);
    }
    ok &= c->ipv6 ? add_host(c, "[%s]:%u", c->bind, port) : add_host(c, "%s:%u", c->bind, port);
    for (size_t i = 0; ok && i < c->extra_count; i++) ok &= add_host(c, "%s", c->extra[i]);
    return ok ? 0 : -1;
}

void config_free(inspector_config *c) {
    for (size_t i = 0; i < c->extra_count; i++) free(c->extra[i]);
    for (size_t i = 0; i < c->host_count; i++) free(c->hosts[i]);
    c->extra_count = c->host_count = 0;
}
