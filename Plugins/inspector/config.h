/*
 * config.h - the inspector's configuration: the JSON object given to
 * create(), checked field by field, and the Host values the server accepts.
 *
 * Locking: none. create() fills the config (config_parse, then
 * config_bound once the port is known) before the server's threads start;
 * after that it is only read, from any thread, until destroy() has stopped
 * them.
 */
#ifndef TS_INSPECTOR_CONFIG_H
#define TS_INSPECTOR_CONFIG_H

#include <netinet/in.h>
#include <stddef.h>

#define INSPECTOR_VERSION "1.0.0"

#define CONFIG_MAX_HOSTS 16      /* entries of "hosts" (with the automatic ones, CONFIG_HOST_SLOTS at most) */
#define CONFIG_HOST_SLOTS (CONFIG_MAX_HOSTS + 4)

typedef struct inspector_config {
    unsigned port;                /* 0: any free port; after config_bound, the port listened on */
    size_t history;               /* the records the ring keeps */
    char bind[INET6_ADDRSTRLEN];  /* the address to listen on */
    int ipv6, loopback;           /* what kind of address bind is */
    int read_only;                /* refuse what changes the store */
    char token[129];              /* the access token: given, or 32 random hex digits */
    char *extra[CONFIG_HOST_SLOTS]; /* "hosts": Host values to accept besides the automatic ones */
    size_t extra_count;
    char *hosts[CONFIG_HOST_SLOTS]; /* every Host value accepted (config_bound) */
    size_t host_count;
} inspector_config;

/* Reads {"port", "history", "bind", "read_only", "token", "hosts"} (every
 * field optional) into *c, and draws a token when none is given. 0, or -1
 * with the reason in why ("inspector: ..."), naming the field. */
int config_parse(inspector_config *c, const char *json, char *why, size_t why_size);

/* Sets the port listened on and the Host values a browser sends for it:
 * 127.0.0.1, localhost and [::1] on loopback, the bind address, then
 * "hosts". 0, or -1 when out of memory. */
int config_bound(inspector_config *c, unsigned port);

/* Frees what config_parse and config_bound allocated. */
void config_free(inspector_config *c);

#endif /* TS_INSPECTOR_CONFIG_H */
