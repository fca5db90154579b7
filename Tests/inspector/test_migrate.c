/*
 * test_migrate.c - versioned state through the inspector's export and import
 * (docs/migrations.md): a store at state version 1 exports a session that
 * starts with its version record; a store at version 3 with the migrations
 * 1->2 and 2->3 imports a session of version 1 (its snapshot migrated, its
 * actions replayed through version 3's reducers); a store at version 1 is
 * refused a session of version 3 (a downgrade), and a store whose migration
 * 2->3 fails is refused with the step named; a refused import changes
 * nothing. On the one C harness (Tests/harness/ts_test.h); option
 * --plugin INSPECTOR.so (make test-inspector).
 */
#define _POSIX_C_SOURCE 200809L
#include "ts_test.h"
#include "turnstate.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../Plugins/common/record.h"
#include "../plugins/todo_versions.h"

#define TOKEN "0123456789abcdef0123456789abcdef"

static const char *plugin;

/* A named check: `what` says what is checked, `detail` shows what was found. */
#define check(ok, what, detail) \
    ts_test_reportf((ok) ? 1 : 0, __FILE__, __LINE__, (what), "%.400s", (detail) ? (detail) : "")

static int free_port(void) {
    struct sockaddr_in a;
    socklen_t length = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &length) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

/* One request; the status code (0 when the connection failed) and the body
 * (malloc'ed) in *body. */
static int request(int port, const char *method, const char *path, const char *payload, char **body) {
    struct sockaddr_in a;
    char head[512], *response = NULL;
    size_t size = 0, capacity = 0;
    int fd = socket(AF_INET, SOCK_STREAM, 0), status = 0;
    *body = NULL;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0) close(fd);
        return 0;
    }
    snprintf(head, sizeof head,
             "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Turnstate-Token: " TOKEN "\r\nConnection: close\r\n"
             "Content-Type: text/plain\r\nContent-Length: %zu\r\n\r\n",
             method, path, port, payload ? strlen(payload) : (size_t)0);
    if (write(fd, head, strlen(head)) < 0 || (payload && write(fd, payload, strlen(payload)) < 0)) {
        close(fd);
        return 0;
    }
    for (;;) {
        ssize_t n;
        if (size + 4096 + 1 > capacity) {
            capacity = (capacity + 4096) * 2;
            response = realloc(response, capacity);
        }
        n = read(fd, response + size, 4096);
        if (n <= 0) break;
        size += (size_t)n;
    }
    close(fd);
    if (response == NULL) return 0;
    response[size] = '\0';
    sscanf(response, "HTTP/1.1 %d", &status);
    {
        char *start = strstr(response, "\r\n\r\n");
        *body = strdup(start ? start + 4 : "");
    }
    free(response);
    return status;
}

/* A store of the todo program at `version` with the inspector on a free port. */
static ts_store *with_inspector(const char *plugin, uint32_t version, const char *steps, int *port) {
    char config[200];
    ts_store *store = program(version, steps);
    *port = free_port();
    snprintf(config, sizeof config, "{\"port\":%d,\"token\":\"" TOKEN "\"}", *port);
    check(ts_store_load_plugin(store, plugin, config) == TS_OK, "the inspector loads", ts_last_error());
    return store;
}

static void append_record(char *out, size_t size, char letter, const char *json) {
    char header[TS_RECORD_HEADER_MAX + 1];
    size_t used = strlen(out);
    ts_record_header(header, letter, json, strlen(json));
    snprintf(out + used, size - used, "%s%s\n", header, json);
}

static void check_state(ts_store *store, const char *want, const char *what) {
    char *state = NULL;
    check(ts_store_get_state(store, "", &state) == TS_OK && strcmp(state, want) == 0, what, state);
    ts_free(state);
}

static char session_v1[1024], session_v3[1024];

int ts_test_suite_option(int argc, char **argv, int i) {
    if (strcmp(argv[i], "--plugin") != 0 || i + 1 >= argc) return 0;
    plugin = argv[i + 1];
    return 2;
}

void ts_test_suite_setup(void) {
    if (plugin == NULL) {
        fprintf(stderr, "usage: %s --plugin INSPECTOR.so\n", ts_test_program);
        exit(2);
    }
    append_record(session_v1, sizeof session_v1, 'V', "{\"version\":1}");
    append_record(session_v1, sizeof session_v1, 'S', "{\"todos\":[\"a\",\"b\"]}");
    append_record(session_v1, sizeof session_v1, 'A', "{\"type\":\"add\",\"payload\":\"c\"}");
    append_record(session_v3, sizeof session_v3, 'V', "{\"version\":3}");
    append_record(session_v3, sizeof session_v3, 'S', "{\"todos\":{\"items\":[]}}");
}

void test_migrate__anExportOfAVersionedStoreSaysItsVersionAndANewerImportIsRefused(void) {
    char *body;
    int port, status;
    ts_store *store = with_inspector(plugin, 1, "", &port);
    check(ts_store_dispatch(store, "{\"type\":\"add\",\"payload\":\"a\"}") == TS_OK, "add a", ts_last_error());
    status = request(port, "GET", "/api/export", NULL, &body);
    check(status == 200 && body && strncmp(body, "V 13 ", 5) == 0 && strstr(body, " {\"version\":1}\nS ") != NULL,
          "an export at version 1 starts with its version record", body);
    free(body);
    status = request(port, "POST", "/api/import", session_v3, &body);
    check(status == 409 && body && strstr(body, "newer than this program's version 1: a downgrade is refused"),
          "a version 3 session is refused at version 1", body);
    free(body);
    check_state(store, "{\"todos\":[\"a\"]}", "the refused import changed nothing");
    ts_store_destroy(store);
}

void test_migrate__anOlderSessionIsMigratedThenReplayed(void) {
    char *body;
    int port, status;
    ts_store *store = with_inspector(plugin, 3, "12 23", &port);
    status = request(port, "POST", "/api/import", session_v1, &body);
    check(status == 200, "a version 1 session imports at version 3", body);
    free(body);
    check_state(store, v3_abc, "its snapshot (a, b) migrated 1->2->3, then c replayed by version 3's reducer");
    ts_store_destroy(store);
}

void test_migrate__aFailingMigrationRefusesTheImportNamingTheStep(void) {
    char *body;
    int port, status;
    ts_store *store = with_inspector(plugin, 3, "12 2x", &port);
    status = request(port, "POST", "/api/import", session_v1, &body);
    check(status == 409 && body && strstr(body, "migration 2->3 failed: a todo has no title"),
          "a failing migration refuses the import, naming the step", body);
    free(body);
    check_state(store, "{\"todos\":{\"items\":[]}}", "the refused import changed nothing");
    ts_store_destroy(store);
}
