/*
 * main.c - the C suite's program (build/tests/test_store): tests of the C API
 * of Turnstate (Include/turnstate.h), one file per topic (test_*.c), sharing
 * the harness of check.h.
 *
 * Every rule and error path of the header has its own test function. Run
 * with no argument for the full run, or with --quick (the valgrind run) for
 * smaller loop counts. Prints one line "N passed, M failed" at the end and
 * exits non-zero if anything failed; each failure is reported on stderr with
 * file:line, the rule (test function), the expression, the status name and
 * ts_last_error().
 */
#include "check.h"

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else {
            fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
            return 2;
        }
    }
    /* Before anything failed on this thread. */
    current_test = "initial last error";
    CHECK_STR(ts_last_error(), "");

    run_basics_tests();
    run_reducers_tests();
    run_dispatch_tests();
    run_state_tests();
    run_subscribe_tests();
    run_middleware_tests();
    run_threads_tests();
    run_errors_tests();
    run_big_tests();
    run_replace_tests();
    run_filters_tests();
    run_patch_tests();
    run_getters_tests();
    run_slice_ids_tests();

    printf("%d passed, %d failed\n", passed, failed);
    return failed > 0 ? 1 : 0;
}
