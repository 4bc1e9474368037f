/*
 * sd-test: the C side of Tests/CInterfaceTests, run as a real process.
 *
 *     sd-test increment DIR SUITE KEY COUNT   COUNT sd_update increments of KEY; "done COUNT"
 *     sd-test watch DIR SUITE KEY COUNT       "ready" once watching, then one line per change of
 *                                             KEY: "change SEQ PID KIND OLD NEW" (JSON, or "-"
 *                                             when absent), until COUNT; "done"
 *     sd-test api DIR                         every call, well and badly used: "ok NAME" per
 *                                             check, "FAIL NAME: ..." for one that failed (exit 1)
 *     sd-test status-names                    "NUMBER NAME" for statuses 0 to 63
 */
#define _POSIX_C_SOURCE 200809L

#include <suite_defaults.h>

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures = 0;

static void check(const char *name, int passed, const char *detail) {
    if (passed) {
        printf("ok %s\n", name);
    } else {
        printf("FAIL %s: %s\n", name, detail);
        failures++;
    }
}

/* Checks that `status` is `expected`, and that a failure left a message. */
static void expect(const char *name, sd_status status, sd_status expected) {
    char detail[1400];
    snprintf(detail, sizeof detail, "expected %s, got %s (%s)", sd_status_name(expected), sd_status_name(status),
             sd_last_error_message());
    int passed = status == expected;
    if (passed && expected > SD_NO_CHANGE && sd_last_error_message()[0] == '\0') {
        passed = 0;
        snprintf(detail, sizeof detail, "%s without a message", sd_status_name(status));
    }
    check(name, passed, detail);
}

static sd_suite *open_or_die(const char *name, const char *directory) {
    sd_suite *suite;
    if (sd_suite_open(name, directory, 0, &suite) != SD_OK) {
        fprintf(stderr, "sd-test: cannot open %s: %s\n", name, sd_last_error_message());
        exit(3);
    }
    return suite;
}

/* MARK: increment */

static sd_status increment(sd_tx *tx, void *context) {
    const char *key = context;
    int64_t count = 0;
    sd_status status = sd_tx_get_int64(tx, key, &count);
    if (status != SD_OK && status != SD_ABSENT) return status;
    return sd_tx_set_int64(tx, key, count + 1);
}

static int run_increment(const char *directory, const char *name, const char *key, long count) {
    sd_suite *suite = open_or_die(name, directory);
    for (long i = 0; i < count; i++) {
        sd_status status = sd_update(suite, increment, (void *)key);
        if (status != SD_OK) {
            fprintf(stderr, "sd-test: increment %ld: %s: %s\n", i, sd_status_name(status), sd_last_error_message());
            return 1;
        }
    }
    sd_suite_close(suite);
    printf("done %ld\n", count);
    return 0;
}

/* MARK: watch */

static int run_watch(const char *directory, const char *name, const char *key, long count) {
    sd_suite *suite = open_or_die(name, directory);
    sd_watch *watch;
    if (sd_watch_open(suite, &key, 1, &watch) != SD_OK) {
        fprintf(stderr, "sd-test: cannot watch: %s\n", sd_last_error_message());
        return 3;
    }
    printf("ready\n");
    fflush(stdout);
    struct pollfd ready = {.fd = sd_watch_fd(watch), .events = POLLIN};
    long received = 0;
    while (received < count) {
        if (poll(&ready, 1, 60000) <= 0) {
            fprintf(stderr, "sd-test: no change for 60 s after %ld\n", received);
            return 1;
        }
        sd_change change;
        sd_status status;
        while ((status = sd_watch_next(watch, &change)) != SD_NO_CHANGE) {
            if (status != SD_OK) {
                fprintf(stderr, "sd-test: %s: %s\n", sd_status_name(status), sd_last_error_message());
                return 1;
            }
            printf("change %llu %d %d %s %s\n", (unsigned long long)change.sequence, change.pid, change.kind,
                   change.old_json ? change.old_json : "-", change.new_json ? change.new_json : "-");
            received++;
        }
        fflush(stdout);
    }
    /* Nothing is readable once everything was taken. */
    if (poll(&ready, 1, 0) != 0) {
        fprintf(stderr, "sd-test: the descriptor is readable with no change waiting\n");
        return 1;
    }
    sd_watch_close(watch);
    sd_suite_close(suite);
    printf("done\n");
    return 0;
}

/* MARK: api */

typedef struct {
    sd_suite *suite;
    sd_suite *same; /* another handle of the same suite */
    sd_watch *watch; /* a watch of it */
    const char *directory;
    sd_tx *kept;
    sd_status inside[8];
} probe;

/* An update callback that uses what it must not, and keeps its handle. */
static sd_status misuse(sd_tx *tx, void *context) {
    probe *p = context;
    int64_t value;
    p->kept = tx;
    p->inside[0] = sd_get_int64(p->suite, "n", &value);
    p->inside[1] = sd_set_int64(p->suite, "n", 1);
    p->inside[2] = sd_update(p->suite, increment, "n");
    sd_watch *watch;
    p->inside[3] = sd_watch_open(p->suite, NULL, 0, &watch);
    p->inside[4] = sd_get_int64(p->same, "n", &value);
    p->inside[6] = sd_watch_close(p->watch);
    sd_suite *again;
    p->inside[7] = sd_suite_open("api", p->directory, 0, &again);
    if (p->inside[7] == SD_OK) sd_suite_close(again);
    p->inside[5] = sd_tx_set_int64(tx, "tx.n", 7);
    return SD_OK;
}

static sd_status declines(sd_tx *tx, void *context) {
    (void)context;
    sd_tx_set_string(tx, "declined", "never");
    return SD_TYPE_MISMATCH;
}

static sd_status other_thread_status;

static void *use_from_other_thread(void *tx) {
    other_thread_status = sd_tx_set_int64(tx, "x", 1);
    /* This thread's message is its own. */
    sd_set_int64(NULL, "k", 1);
    return NULL;
}

static sd_status use_on_thread(sd_tx *tx, void *context) {
    (void)context;
    pthread_t thread;
    pthread_create(&thread, NULL, use_from_other_thread, tx);
    pthread_join(thread, NULL);
    return SD_OK;
}

static sd_status reads_own_writes(sd_tx *tx, void *context) {
    int64_t *seen = context;
    sd_tx_set_int64(tx, "tx.a", 41);
    sd_tx_get_int64(tx, "tx.a", seen);
    char *json = NULL;
    sd_status status = sd_tx_get_json_alloc(tx, "tx.a", &json, NULL);
    int same = status == SD_OK && strcmp(json, "41") == 0;
    sd_free(json);
    return same ? sd_tx_set_int64(tx, "tx.a", *seen + 1) : SD_IO_FAILURE;
}

static int run_api(const char *directory) {
    sd_suite *suite;
    sd_status status;
    int64_t integer;
    double number;
    bool flag;
    char buffer[64];
    size_t length;

    /* Opening. */
    expect("open", sd_suite_open("api", directory, 0, &suite), SD_OK);
    sd_suite *other;
    expect("open: NULL name", sd_suite_open(NULL, directory, 0, &other), SD_INVALID_ARGUMENT);
    expect("open: NULL out", sd_suite_open("api", directory, 0, NULL), SD_INVALID_ARGUMENT);
    expect("open: empty name", sd_suite_open("", directory, 0, &other), SD_INVALID_SUITE_NAME);
    expect("open: name with /", sd_suite_open("a/b", directory, 0, &other), SD_INVALID_SUITE_NAME);
    expect("open: name ..", sd_suite_open("..", directory, 0, &other), SD_INVALID_SUITE_NAME);
    expect("open: name .hidden", sd_suite_open(".hidden", directory, 0, &other), SD_INVALID_SUITE_NAME);
    expect("open: control character", sd_suite_open("a\tb", directory, 0, &other), SD_INVALID_SUITE_NAME);
    expect("open: name not UTF-8", sd_suite_open("caf\xe9", directory, 0, &other), SD_INVALID_SUITE_NAME);
    char long_name[300];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    expect("open: name of 299 bytes", sd_suite_open(long_name, directory, 0, &other), SD_INVALID_SUITE_NAME);
    expect("open: unknown flag", sd_suite_open("api", directory, 1u << 7, &other), SD_INVALID_ARGUMENT);
    expect("open: directory not UTF-8", sd_suite_open("api", "/tmp/\xff", 0, &other), SD_INVALID_ARGUMENT);
    expect("open: empty directory", sd_suite_open("api", "", 0, &other), SD_INVALID_ARGUMENT);
    expect("open: durable, group", sd_suite_open("api.durable", directory, SD_OPEN_DURABLE | SD_OPEN_GROUP, &other), SD_OK);
    expect("durable write", sd_set_bool(other, "b", true), SD_OK);
    expect("close", sd_suite_close(other), SD_OK);
    expect("close: twice", sd_suite_close(other), SD_INVALID_HANDLE);
    expect("close: NULL", sd_suite_close(NULL), SD_OK);
    expect("closed handle", sd_set_bool(other, "b", true), SD_INVALID_HANDLE);
    expect("made-up handle", sd_get_int64((sd_suite *)(uintptr_t)0x1234, "k", &integer), SD_INVALID_HANDLE);

    /* Each type, round trip. */
    expect("set string", sd_set_string(suite, "s", "caf\xc3\xa9 \xe2\x98\x95"), SD_OK);
    expect("get string", sd_get_string(suite, "s", buffer, sizeof buffer, &length), SD_OK);
    check("string read back", strcmp(buffer, "caf\xc3\xa9 \xe2\x98\x95") == 0 && length == 9, buffer);
    expect("set int64", sd_set_int64(suite, "i", INT64_MIN), SD_OK);
    expect("get int64", sd_get_int64(suite, "i", &integer), SD_OK);
    check("int64 read back", integer == INT64_MIN, "INT64_MIN");
    expect("set double", sd_set_double(suite, "d", 2.5), SD_OK);
    expect("get double", sd_get_double(suite, "d", &number), SD_OK);
    check("double read back", number == 2.5, "2.5");
    expect("get double from int64", sd_get_double(suite, "i", &number), SD_OK);
    expect("set double 3.0", sd_set_double(suite, "d3", 3.0), SD_OK);
    expect("get int64 from exact double", sd_get_int64(suite, "d3", &integer), SD_OK);
    check("exact double as int64", integer == 3, "3");
    expect("get int64 from 2.5", sd_get_int64(suite, "d", &integer), SD_TYPE_MISMATCH);
    expect("set bool", sd_set_bool(suite, "b", true), SD_OK);
    expect("get bool", sd_get_bool(suite, "b", &flag), SD_OK);
    check("bool read back", flag, "true");
    const unsigned char bytes[] = {0, 1, 2, 255};
    expect("set data", sd_set_data(suite, "data", bytes, sizeof bytes), SD_OK);
    unsigned char read_bytes[8];
    expect("get data", sd_get_data(suite, "data", read_bytes, sizeof read_bytes, &length), SD_OK);
    check("data read back", length == 4 && memcmp(read_bytes, bytes, 4) == 0, "bytes");
    expect("get data: exact fit", sd_get_data(suite, "data", read_bytes, 4, &length), SD_OK);
    expect("set empty data", sd_set_data(suite, "empty", NULL, 0), SD_OK);
    void *allocated = NULL;
    expect("get empty data, allocated", sd_get_data_alloc(suite, "empty", &allocated, &length), SD_OK);
    check("empty data is a pointer", allocated != NULL && length == 0, "NULL or length");
    length = 99;
    expect("get empty data into no buffer", sd_get_data(suite, "empty", NULL, 0, &length), SD_OK);
    check("empty data into no buffer: length 0", length == 0, "length");
    sd_free(allocated);
    expect("set json", sd_set_json(suite, "j", "{\"list\": [1, 2.0, \"x\", {\"$data\": \"AP8=\"}], \"on\": true}"), SD_OK);
    char *json = NULL;
    expect("get json, allocated", sd_get_json_alloc(suite, "j", &json, &length), SD_OK);
    check("json read back", json && strcmp(json, "{\"list\":[1,2.0,\"x\",{\"$data\":\"AP8=\"}],\"on\":true}") == 0, json ? json : "NULL");
    check("json length", json && length == strlen(json), "length");
    sd_free(json);
    expect("get json of a string", sd_get_json(suite, "s", buffer, sizeof buffer, NULL), SD_OK);
    check("a string as json", strcmp(buffer, "\"caf\xc3\xa9 \xe2\x98\x95\"") == 0, buffer);
    expect("get json of data", sd_get_json(suite, "data", buffer, sizeof buffer, NULL), SD_OK);
    check("data as json", strcmp(buffer, "{\"$data\":\"AAEC/w==\"}") == 0, buffer);
    char *string = NULL;
    expect("get string, allocated", sd_get_string_alloc(suite, "s", &string, NULL), SD_OK);
    check("allocated string", string && strcmp(string, "caf\xc3\xa9 \xe2\x98\x95") == 0, "string");
    sd_free(string);
    sd_free(NULL);

    /* Absent keys and other types. */
    expect("get absent", sd_get_int64(suite, "nothing", &integer), SD_ABSENT);
    expect("get string absent", sd_get_string(suite, "nothing", buffer, sizeof buffer, &length), SD_ABSENT);
    expect("get int64 of a string", sd_get_int64(suite, "s", &integer), SD_TYPE_MISMATCH);
    expect("get bool of an int64", sd_get_bool(suite, "i", &flag), SD_TYPE_MISMATCH);
    expect("get string of data", sd_get_string(suite, "data", buffer, sizeof buffer, NULL), SD_TYPE_MISMATCH);
    expect("get data of a string", sd_get_data(suite, "s", buffer, sizeof buffer, NULL), SD_TYPE_MISMATCH);

    /* Buffers. */
    strcpy(buffer, "unchanged");
    expect("buffer too small", sd_get_string(suite, "s", buffer, 9, &length), SD_BUFFER_TOO_SMALL);
    check("too small: the length needed", length == 9, "length");
    check("too small: an empty string", buffer[0] == '\0', buffer);
    expect("length only", sd_get_string(suite, "s", NULL, 0, &length), SD_BUFFER_TOO_SMALL);
    check("length only: the length", length == 9, "length");
    expect("NULL buffer with a capacity", sd_get_string(suite, "s", NULL, 10, &length), SD_INVALID_ARGUMENT);
    expect("NULL length is fine", sd_get_string(suite, "s", buffer, sizeof buffer, NULL), SD_OK);
    expect("NULL out", sd_get_int64(suite, "i", NULL), SD_INVALID_ARGUMENT);
    expect("NULL alloc out", sd_get_json_alloc(suite, "i", NULL, NULL), SD_INVALID_ARGUMENT);

    /* Bad keys, values and sizes. */
    expect("empty key", sd_set_int64(suite, "", 1), SD_INVALID_KEY);
    expect("NULL key", sd_set_int64(suite, NULL, 1), SD_INVALID_ARGUMENT);
    expect("NULL key, get", sd_get_int64(suite, NULL, &integer), SD_INVALID_ARGUMENT);
    expect("NULL suite", sd_set_int64(NULL, "k", 1), SD_INVALID_ARGUMENT);
    expect("key not UTF-8", sd_set_int64(suite, "k\xc3", 1), SD_INVALID_KEY);
    expect("key not UTF-8, get", sd_get_int64(suite, "\xff", &integer), SD_INVALID_KEY);
    char *long_key = malloc(1026);
    memset(long_key, 'k', 1025);
    long_key[1025] = '\0';
    expect("key of 1025 bytes", sd_set_int64(suite, long_key, 1), SD_INVALID_KEY);
    long_key[1024] = '\0';
    expect("key of 1024 bytes", sd_set_int64(suite, long_key, 1), SD_OK);
    free(long_key);
    expect("NULL string", sd_set_string(suite, "k", NULL), SD_INVALID_ARGUMENT);
    expect("string not UTF-8", sd_set_string(suite, "k", "\xc0\xaf"), SD_INVALID_VALUE);
    expect("NaN", sd_set_double(suite, "k", NAN), SD_INVALID_VALUE);
    expect("infinity", sd_set_double(suite, "k", INFINITY), SD_INVALID_VALUE);
    expect("NULL bytes with a length", sd_set_data(suite, "k", NULL, 4), SD_INVALID_ARGUMENT);
    size_t big = 5u << 20;
    unsigned char *large = calloc(big, 1);
    expect("data of 5 MiB", sd_set_data(suite, "k", large, big), SD_VALUE_TOO_LARGE);
    free(large);
    expect("a length of SIZE_MAX", sd_set_data(suite, "k", bytes, SIZE_MAX), SD_VALUE_TOO_LARGE);
    expect("json not JSON", sd_set_json(suite, "k", "{oops"), SD_INVALID_VALUE);
    expect("json null", sd_set_json(suite, "k", "null"), SD_INVALID_VALUE);
    expect("json unknown tag", sd_set_json(suite, "k", "{\"$nope\": 1}"), SD_INVALID_VALUE);
    expect("json integer beyond 64 bits", sd_set_json(suite, "k", "123456789012345678901234567890"), SD_INVALID_VALUE);
    expect("json not UTF-8", sd_set_json(suite, "k", "\"\xff\""), SD_INVALID_VALUE);
    size_t depth = 1000000;
    char *deep = malloc(2 * depth + 1);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[2 * depth] = '\0';
    expect("json nested a million deep", sd_set_json(suite, "k", deep), SD_INVALID_VALUE);
    free(deep);
    expect("nothing written by refusals", sd_get_int64(suite, "k", &integer), SD_ABSENT);
    expect("remove", sd_remove(suite, "b"), SD_OK);
    expect("removed", sd_get_bool(suite, "b", &flag), SD_ABSENT);
    expect("remove absent", sd_remove(suite, "b"), SD_OK);

    /* Set if absent, compare and set. */
    int64_t stored = 0;
    expect("set if absent", sd_set_if_absent_int64(suite, "once", 5, &stored), SD_OK);
    check("set if absent: stored", stored == 5, "5");
    expect("set if absent again", sd_set_if_absent_int64(suite, "once", 6, &stored), SD_OK);
    check("set if absent: the first stays", stored == 5, "5");
    char *stored_text = NULL;
    expect("set if absent: another type", sd_set_if_absent_string(suite, "once", "x", &stored_text), SD_TYPE_MISMATCH);
    check("set if absent: nothing allocated", stored_text == NULL, "NULL");
    expect("set if absent string", sd_set_if_absent_string(suite, "units", "metric", &stored_text), SD_OK);
    check("set if absent string: stored", stored_text && strcmp(stored_text, "metric") == 0, "metric");
    sd_free(stored_text);
    expect("set if absent: NULL out is fine", sd_set_if_absent_bool(suite, "flag", true, NULL), SD_OK);
    void *stored_bytes = NULL;
    size_t stored_length = 0;
    expect("set if absent data", sd_set_if_absent_data(suite, "blob", bytes, 4, &stored_bytes, &stored_length), SD_OK);
    check("set if absent data: stored", stored_length == 4 && memcmp(stored_bytes, bytes, 4) == 0, "bytes");
    sd_free(stored_bytes);
    expect("set if absent json", sd_set_if_absent_json(suite, "tags", "[\"a\"]", &stored_text), SD_OK);
    check("set if absent json: stored", strcmp(stored_text, "[\"a\"]") == 0, stored_text);
    sd_free(stored_text);
    expect("set if absent double: NaN", sd_set_if_absent_double(suite, "nan", NAN, &number), SD_INVALID_VALUE);
    bool replaced = true;
    expect("compare and set: wrong expectation", sd_compare_and_set(suite, "once", "6", "7", &replaced), SD_OK);
    check("compare and set: not replaced", !replaced, "replaced");
    expect("compare and set: 5.0 is not 5", sd_compare_and_set(suite, "once", "5.0", "7", &replaced), SD_OK);
    check("compare and set: types compare", !replaced, "replaced");
    expect("compare and set", sd_compare_and_set(suite, "once", "5", "7", &replaced), SD_OK);
    check("compare and set: replaced", replaced, "not replaced");
    expect("compare and set: from absent", sd_compare_and_set(suite, "fresh", NULL, "\"new\"", &replaced), SD_OK);
    check("compare and set: from absent replaced", replaced, "not replaced");
    expect("compare and set: to absent", sd_compare_and_set(suite, "fresh", "\"new\"", NULL, &replaced), SD_OK);
    expect("compare and set: removed", sd_get_string(suite, "fresh", buffer, sizeof buffer, NULL), SD_ABSENT);
    expect("compare and set: bad JSON", sd_compare_and_set(suite, "once", "{", "1", &replaced), SD_INVALID_VALUE);

    /* Transactions. */
    int64_t seen = 0;
    expect("update", sd_update(suite, reads_own_writes, &seen), SD_OK);
    check("update reads its own writes", seen == 41, "41");
    expect("update committed", sd_get_int64(suite, "tx.a", &integer), SD_OK);
    check("update's value", integer == 42, "42");
    expect("update: NULL callback", sd_update(suite, NULL, NULL), SD_INVALID_ARGUMENT);
    expect("update: a callback's status passes through", sd_update(suite, declines, NULL), SD_TYPE_MISMATCH);
    expect("update: a declined callback commits nothing", sd_get_string(suite, "declined", buffer, sizeof buffer, NULL), SD_ABSENT);
    probe p = {.suite = suite, .directory = directory};
    expect("another handle", sd_suite_open("api", directory, 0, &p.same), SD_OK);
    expect("a watch", sd_watch_open(suite, NULL, 0, &p.watch), SD_OK);
    expect("update with misuse", sd_update(suite, misuse, &p), SD_OK);
    expect("inside: read the suite", p.inside[0], SD_INVALID_ARGUMENT);
    expect("inside: write the suite", p.inside[1], SD_INVALID_ARGUMENT);
    expect("inside: nested update", p.inside[2], SD_INVALID_ARGUMENT);
    expect("inside: watch the suite", p.inside[3], SD_INVALID_ARGUMENT);
    expect("inside: another handle of the suite", p.inside[4], SD_INVALID_ARGUMENT);
    expect("inside: the transaction works", p.inside[5], SD_OK);
    expect("inside: close a watch of the suite", p.inside[6], SD_INVALID_ARGUMENT);
    expect("inside: open the suite again", p.inside[7], SD_OK);
    expect("the watch closes after", sd_watch_close(p.watch), SD_OK);
    expect("another handle, outside", sd_get_int64(p.same, "tx.n", &integer), SD_OK);
    sd_suite_close(p.same);
    expect("the transaction committed", sd_get_int64(suite, "tx.n", &integer), SD_OK);
    expect("transaction after its callback", sd_tx_set_int64(p.kept, "late", 1), SD_INVALID_HANDLE);
    expect("transaction after its callback, read", sd_tx_get_int64(p.kept, "tx.n", &integer), SD_INVALID_HANDLE);
    expect("transaction: NULL", sd_tx_set_int64(NULL, "k", 1), SD_INVALID_ARGUMENT);
    expect("suite handle as a transaction", sd_tx_set_int64((sd_tx *)suite, "k", 1), SD_INVALID_HANDLE);
    expect("update on a thread", sd_update(suite, use_on_thread, NULL), SD_OK);
    expect("transaction on another thread", other_thread_status, SD_INVALID_HANDLE);
    check("messages are per thread", strstr(sd_last_error_message(), "NULL") == NULL, sd_last_error_message());

    /* Watches. */
    sd_watch *watch;
    const char *keys[] = {"w.a", "w.b"};
    expect("watch: NULL keys with a count", sd_watch_open(suite, NULL, 2, &watch), SD_INVALID_ARGUMENT);
    expect("watch: keys with a count of 0", sd_watch_open(suite, keys, 0, &watch), SD_INVALID_ARGUMENT);
    const char *bad_keys[] = {"ok", "\xff"};
    expect("watch: a key not UTF-8", sd_watch_open(suite, bad_keys, 2, &watch), SD_INVALID_KEY);
    const char *null_keys[] = {"ok", NULL};
    expect("watch: a NULL key", sd_watch_open(suite, null_keys, 2, &watch), SD_INVALID_ARGUMENT);
    expect("watch: NULL out", sd_watch_open(suite, keys, 2, NULL), SD_INVALID_ARGUMENT);
    check("watch_fd: bad handle", sd_watch_fd((sd_watch *)suite) == -1, "not -1");
    sd_change change;
    expect("watch_next: bad handle", sd_watch_next((sd_watch *)suite, &change), SD_INVALID_HANDLE);
    expect("watch", sd_watch_open(suite, keys, 2, &watch), SD_OK);
    expect("watch_next: NULL change", sd_watch_next(watch, NULL), SD_INVALID_ARGUMENT);
    expect("watch_next: nothing yet", sd_watch_next(watch, &change), SD_NO_CHANGE);
    struct pollfd ready = {.fd = sd_watch_fd(watch), .events = POLLIN};
    check("watch_fd: not readable yet", poll(&ready, 1, 0) == 0, "readable");
    sd_set_int64(suite, "w.other", 1);
    sd_set_int64(suite, "w.a", 1);
    sd_set_string(suite, "w.b", "x");
    sd_remove(suite, "w.a");
    check("watch_fd: readable", poll(&ready, 1, 10000) == 1, "not readable in 10 s");
    int changes = 0;
    char seen_lines[4][96];
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (changes < 3) {
        status = sd_watch_next(watch, &change);
        if (status == SD_NO_CHANGE) {
            poll(&ready, 1, 1000);
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec - start.tv_sec > 10) break;
            continue;
        }
        if (status != SD_OK) break;
        snprintf(seen_lines[changes++], sizeof seen_lines[0], "%s %s %s %d %d", change.key,
                 change.old_json ? change.old_json : "-", change.new_json ? change.new_json : "-", change.kind,
                 change.from_this_process);
    }
    check("watch: three changes", changes == 3, "fewer");
    check("watch: first", changes > 0 && strcmp(seen_lines[0], "w.a - 1 0 1") == 0, seen_lines[0]);
    check("watch: second", changes > 1 && strcmp(seen_lines[1], "w.b - \"x\" 0 1") == 0, seen_lines[1]);
    check("watch: third", changes > 2 && strcmp(seen_lines[2], "w.a 1 - 0 1") == 0, seen_lines[2]);
    expect("watch: drained", sd_watch_next(watch, &change), SD_NO_CHANGE);
    check("watch_fd: not readable when drained", poll(&ready, 1, 0) == 0, "readable");
    expect("watch: close", sd_watch_close(watch), SD_OK);
    expect("watch: close twice", sd_watch_close(watch), SD_INVALID_HANDLE);
    expect("watch: close NULL", sd_watch_close(NULL), SD_OK);
    const char *empty_key[] = {""};
    sd_watch *refused;
    expect("watch: an empty key", sd_watch_open(suite, empty_key, 1, &refused), SD_INVALID_KEY);

    /* A forked child may not use its parent's watch: draining its copy of the queue
       would leave the parent's descriptor unreadable with changes queued. */
    expect("watch: before fork", sd_watch_open(suite, NULL, 0, &watch), SD_OK);
    expect("watch: a change before fork", sd_set_int64(suite, "f.a", 1), SD_OK);
    ready.fd = sd_watch_fd(watch);
    check("watch: readable before fork", poll(&ready, 1, 10000) == 1, "not readable");
    pid_t child = fork();
    if (child == 0) _exit(sd_watch_next(watch, &change) == SD_INVALID_HANDLE && sd_watch_fd(watch) == -1 ? 0 : 1);
    int child_status = -1;
    waitpid(child, &child_status, 0);
    check("watch: refused in a forked child", WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0, "used");
    expect("watch: a change after fork", sd_set_int64(suite, "f.b", 2), SD_OK);
    int after = 0;
    for (int tries = 0; after < 2 && tries < 100; tries++) {
        if (poll(&ready, 1, 10000) != 1) break;
        while (sd_watch_next(watch, &change) == SD_OK) after++;
    }
    check("watch: the parent's descriptor still tells", after == 2, "changes lost to the child");
    expect("watch: close after fork", sd_watch_close(watch), SD_OK);

    expect("watch: all keys", sd_watch_open(suite, NULL, 0, &watch), SD_OK);
    expect("suite closed before its watch", sd_suite_close(suite), SD_OK);
    expect("watch: close after the suite", sd_watch_close(watch), SD_OK);

    check("status names", strcmp(sd_status_name(SD_OK), "SD_OK") == 0 && strcmp(sd_status_name(999), "SD_UNKNOWN") == 0,
          sd_status_name(999));
    printf("%d failed\n", failures);
    return failures == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc == 6 && strcmp(argv[1], "increment") == 0) return run_increment(argv[2], argv[3], argv[4], atol(argv[5]));
    if (argc == 6 && strcmp(argv[1], "watch") == 0) return run_watch(argv[2], argv[3], argv[4], atol(argv[5]));
    if (argc == 3 && strcmp(argv[1], "api") == 0) return run_api(argv[2]);
    if (argc == 2 && strcmp(argv[1], "status-names") == 0) {
        for (int status = 0; status < 64; status++) printf("%d %s\n", status, sd_status_name(status));
        return 0;
    }
    fprintf(stderr, "usage: sd-test increment DIR SUITE KEY COUNT | watch DIR SUITE KEY COUNT | api DIR | status-names\n");
    return 2;
}
