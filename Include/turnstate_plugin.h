/*
 * turnstate_plugin.h - the ABI of Turnstate middleware plugins.
 *
 * A plugin is a shared object that exports one function, ts_plugin_entry,
 * which returns a descriptor. A store loads it at run time
 * (ts_store_load_plugin / ts_store_load_plugins), makes one instance per
 * store with create(), puts run() in its middleware chain and calls
 * destroy() when the store is destroyed. Plugins are never unloaded.
 *
 * A plugin needs no link-time dependency on libturnstate: everything it
 * calls comes through the ts_store_api table and the next function it is
 * handed, which are plain C function pointers bound to its store. Build one
 * with nothing but the headers:
 *
 *     cc -shared -fPIC -o my-plugin.so my-plugin.c $(pkg-config --cflags turnstate)
 *
 * Rules for run(): call next at most once per action (not calling it
 * swallows the action); pass action->json to pass the action on unchanged, or
 * new tagged JSON text to change it; return next's status, or a negative
 * status to refuse the action (set the reason with store->fail). run() is
 * called on the dispatching thread, with the store held: calls on one store
 * are serialized, but the plugin may be called from different threads over
 * time. `next` is valid only during that run(): a second call returns
 * TS_E_MISUSE, and so does a kept one called outside the plugin's run(); a
 * kept one called during a later run() of the plugin on the same thread is
 * that run's `next` (see ts_next_fn in turnstate.h). The table stays valid
 * until destroy() returns, so a plugin may keep it and dispatch from its own
 * threads; stop them in destroy(). create() runs with the store held.
 *
 * Shutdown (ts_store_destroy in turnstate.h): the store first closes - the
 * dispatches under way finish, and from then on every call through the
 * table (from the plugin's threads, or from destroy() itself) returns
 * TS_E_STORE_GONE without reaching any middleware, reducer or listener.
 * Then destroy() runs, last loaded plugin first, on the destroying thread
 * with the store not held, so it may join threads that are dispatching.
 * run() is never called once destroy() has begun. After destroy() returns
 * the table is freed: no thread of the plugin may use it then.
 * destroy() can run on one of the plugin's own threads: when the store was
 * destroyed from inside a callback that thread's dispatch made (or, for a
 * typed Swift store, when that dispatch held the last reference), the store
 * goes when that dispatch returns. A thread cannot join itself: detach it
 * and let it free the instance on its way out (Plugins/delay/delay.c).
 *
 * Memory: the config text, the table, the action and next are the host's;
 * the instance (self) and anything it allocates are the plugin's. A message
 * returned from create() through *error_message is malloc'ed by the plugin
 * and freed by the host with free() (the C library's; see Memory in
 * turnstate.h).
 *
 * This header is C99, with compiler-specific attributes only through TS_API
 * (turnstate.h), which is empty for compilers that lack them.
 */
#ifndef TURNSTATE_PLUGIN_H
#define TURNSTATE_PLUGIN_H

#include "turnstate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The plugin ABI version this header describes. Version 1: the fields of
 * ts_plugin below; the ts_store_api table up to and including status_name. */
#define TS_PLUGIN_ABI_VERSION 1u

/* The name of the entry symbol, for dlsym. */
#define TS_PLUGIN_ENTRY_SYMBOL "ts_plugin_entry"

typedef struct ts_plugin {
    /* The ABI the plugin was built for: TS_PLUGIN_ABI_VERSION. A host refuses
     * a plugin whose ABI it does not speak (newer than its own, or 0). */
    uint32_t abi_version;
    /* sizeof(ts_plugin) as the plugin was compiled; the host refuses one
     * smaller than the descriptor of that ABI version. */
    uint32_t struct_size;
    /* A short name ("logger") for messages, and the plugin's own version. */
    const char *name;
    const char *version;
    /* Makes an instance for one store. `config_json` is JSON text ("{}" when
     * the plugin has no configuration) that the host has already checked:
     * strict RFC 8259, minified, UTF-8, and no object in it has a key twice
     * (at any depth), so a plugin need not handle repeated fields;
     * `store` is the instance's own table of the store (the same one run()
     * gets; its dispatch_after starts after this plugin in the chain), valid
     * until destroy() returns. On success set *self (any pointer, or NULL)
     * and return TS_OK. On failure return a negative status and, if you can,
     * set *error_message to a malloc'ed explanation, which the host frees.
     * create may dispatch through `store` (the plugin is not yet in the
     * chain) and replace the state. */
    ts_status (*create)(const char *config_json, const ts_store_api *store, void **self, char **error_message);
    /* The middleware itself: the ts_middleware_fn shape, with ctx = self. */
    ts_status (*run)(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self);
    /* Stops and frees an instance; called once when its store is destroyed,
     * after the store closed (see Shutdown above). May be NULL. */
    void (*destroy)(void *self);
} ts_plugin;

/* The entry function every plugin exports under the name ts_plugin_entry.
 * `host_abi_version` is the newest ABI the loading library speaks; return the
 * descriptor (static storage) for an ABI no newer than that, or NULL if the
 * plugin cannot work with it. */
typedef const ts_plugin *(*ts_plugin_entry_fn)(uint32_t host_abi_version);

/* Declared for plugins to define. TS_API keeps it exported from a plugin
 * built with -fvisibility=hidden. */
TS_API const ts_plugin *ts_plugin_entry(uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* TURNSTATE_PLUGIN_H */
