/*
 * store_api.h - whether the host's ts_store_api table has a member. The
 * table grows by appending members, and a plugin may run on a library
 * older than its header: a member exists when the table's struct_size
 * covers it (turnstate_plugin.h). One macro, so that every plugin asks the
 * same way; a member's function may still be NULL where the header says so.
 * Header-only, C99; a helper for plugins, not part of libturnstate.
 */
#ifndef TS_PLUGINS_STORE_API_H
#define TS_PLUGINS_STORE_API_H

#include "turnstate_plugin.h"

#include <stddef.h>

/* 1 when the table `api` (const ts_store_api *) holds `member`. */
#define TS_API_HAS(api, member) ((api)->struct_size >= offsetof(ts_store_api, member) + sizeof (api)->member)

#endif
