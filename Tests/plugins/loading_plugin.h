/*
 * loading_plugin.h - what the test plugin loading_plugin.c records and
 * test_loading.c reads (through dlsym on "lp_report"): one definition, so
 * that the two agree on its layout.
 */
#ifndef TS_TESTS_LOADING_PLUGIN_H
#define TS_TESTS_LOADING_PLUGIN_H

#define LP_SEEN 16

typedef struct lp_seen {
    char type[48];
    char name[48];
    int status;
} lp_seen;

typedef struct lp_counters {
    int create_status;
    char create_name[48];
    int null_status;
    int count;
    lp_seen seen[LP_SEEN];
} lp_counters;

#endif
