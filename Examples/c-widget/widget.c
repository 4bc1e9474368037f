/*
 * widget.c: the distance widget in C. It shows the last run in the user's units, as
 * Examples/distance-widget does in Swift, and redraws the moment the unit preference
 * or the workout log changes, in any process: a poll loop on sd_watch_fd.
 *
 *     widget [--dir DIR] [--once] [--timestamps]
 *
 * Build: cc -std=c99 widget.c $(pkg-config --cflags --libs suitedefaults) -o c-widget
 * (PKG_CONFIG_PATH=$(Scripts/make-pkgconfig) for the library in the build directory).
 *
 * The keys, as the Swift app family writes them (Examples/FitnessShared):
 * - "units.system": the string "metric" or "imperial";
 * - "fitness.workouts": the workout log, a Codable [Workout] stored as JSON text,
 *   oldest first, each {"amount": metres or kilograms, "date": ..., "kind": "run" or
 *   "lift"}. sd_get_json returns it as {"$json": [...]}, read here with a small parser.
 */
#define _POSIX_C_SOURCE 200809L

#include <suite_defaults.h>

#include <errno.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const suite_name = "group.com.example.fitness";
static const char *const units_key = "units.system";
static const char *const workouts_key = "fitness.workouts";

/* MARK: Just enough JSON for the log */

typedef struct {
    const char *at;
} json_reader;

static void skip_space(json_reader *r) {
    while (*r->at == ' ' || *r->at == '\t' || *r->at == '\n' || *r->at == '\r') r->at++;
}

static int skip_value(json_reader *r);

/* Reads a string; its first `capacity - 1` bytes go to `out` (escapes other than \"
   and \\ are kept as they are: keys and kinds here are plain ASCII). */
static int read_string(json_reader *r, char *out, size_t capacity) {
    size_t length = 0;
    skip_space(r);
    if (*r->at != '"') return 0;
    r->at++;
    while (*r->at != '"') {
        char c = *r->at;
        if (c == '\0') return 0;
        if (c == '\\') {
            r->at++;
            if (*r->at == '\0') return 0;
            c = *r->at;
        }
        if (out != NULL && length + 1 < capacity) out[length++] = c;
        r->at++;
    }
    r->at++;
    if (out != NULL && capacity > 0) out[length] = '\0';
    return 1;
}

/* Reads "[" or "{" members one by one: returns 1 before each element (for an object
   with its key in `key`), 0 at the end, -1 on malformed text. */
static int next_member(json_reader *r, char close, int *first, char *key, size_t key_capacity) {
    skip_space(r);
    if (*r->at == close) {
        r->at++;
        return 0;
    }
    if (!*first) {
        if (*r->at != ',') return -1;
        r->at++;
    }
    *first = 0;
    if (close == '}') {
        if (!read_string(r, key, key_capacity)) return -1;
        skip_space(r);
        if (*r->at != ':') return -1;
        r->at++;
    }
    skip_space(r);
    return 1;
}

static int skip_value(json_reader *r) {
    skip_space(r);
    char open = *r->at;
    if (open == '"') return read_string(r, NULL, 0);
    if (open == '[' || open == '{') {
        int first = 1, step;
        r->at++;
        while ((step = next_member(r, open == '[' ? ']' : '}', &first, NULL, 0)) == 1) {
            if (!skip_value(r)) return 0;
        }
        return step == 0;
    }
    /* A number, true, false or null. */
    const char *start = r->at;
    while (*r->at != '\0' && strchr(",]} \t\r\n", *r->at) == NULL) r->at++;
    return r->at > start;
}

/* A number at r: its value in *value; 0 when there is none. */
static int read_number(json_reader *r, double *value) {
    char *end;
    *value = strtod(r->at, &end);
    if (end == r->at) return 0;
    r->at = end;
    return 1;
}

/* The amount of the last run in the log, as sd_get_json gives it: {"$json": [...]}.
   Returns 1 and sets *metres when there is one. A log of which any workout does not
   read as the Swift app's Workout (kind "run" or "lift", a number amount and date)
   is no log, as it is to the Swift widgets, which then show none. */
static int last_run(const char *json, double *metres) {
    json_reader r = {json};
    char key[16];
    int first = 1, found = 0;
    double last = 0;
    skip_space(&r);
    if (*r.at++ != '{' || next_member(&r, '}', &first, key, sizeof key) != 1 || strcmp(key, "$json") != 0) return 0;
    if (*r.at++ != '[') return 0;
    int first_workout = 1, step;
    while ((step = next_member(&r, ']', &first_workout, NULL, 0)) == 1) {
        if (*r.at++ != '{') return 0;
        char kind[16] = "";
        double amount = 0, date = 0;
        int has_amount = 0, has_date = 0, first_field = 1, field;
        while ((field = next_member(&r, '}', &first_field, key, sizeof key)) == 1) {
            if (strcmp(key, "kind") == 0) {
                if (!read_string(&r, kind, sizeof kind)) return 0;
            } else if (strcmp(key, "amount") == 0) {
                if (!read_number(&r, &amount)) return 0;
                has_amount = 1;
            } else if (strcmp(key, "date") == 0) {
                if (!read_number(&r, &date)) return 0;
                has_date = 1;
            } else if (!skip_value(&r)) {
                return 0;
            }
        }
        if (field < 0 || !has_amount || !has_date) return 0;
        if (strcmp(kind, "run") == 0) {
            last = amount;
            found = 1;
        } else if (strcmp(kind, "lift") != 0) {
            return 0;
        }
    }
    if (step < 0) return 0;
    if (found) *metres = last;
    return found;
}

/* MARK: The unit preference */

/* What the environment's locale calls for, as the Swift family decides it: the
   measurement locale (LC_ALL, then LC_MEASUREMENT, then LANG) of region US, LR or MM
   is imperial; anything else metric. */
static const char *units_from_locale(void) {
    const char *names[] = {"LC_ALL", "LC_MEASUREMENT", "LANG"};
    for (size_t i = 0; i < 3; i++) {
        const char *value = getenv(names[i]);
        if (value == NULL || *value == '\0') continue;
        const char *underscore = strchr(value, '_');
        if (underscore == NULL) return "metric";
        char region[3] = {0};
        strncpy(region, underscore + 1, 2);
        return strcmp(region, "US") == 0 || strcmp(region, "LR") == 0 || strcmp(region, "MM") == 0 ? "imperial" : "metric";
    }
    return "metric";
}

/* MARK: The widget */

static int timestamps = 0;

static void show(const char *line) {
    if (timestamps) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        printf("%llu ", (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec);
    }
    printf("%s\n", line);
    fflush(stdout);
}

static void render(sd_suite *suite) {
    char line[512]; /* room for the widest double %.1f prints */
    char *log = NULL;
    double metres = 0;
    sd_status status = sd_get_json_alloc(suite, workouts_key, &log, NULL);
    if (status != SD_OK && status != SD_ABSENT) {
        fprintf(stderr, "c-widget: cannot read the workout log: %s\n", sd_last_error_message());
    }
    if (status != SD_OK || !last_run(log, &metres)) {
        show("Last run: none");
        sd_free(log);
        return;
    }
    sd_free(log);

    /* The stored preference; when there is none, the locale's, stored for every
       process of the family (as UnitSystem.current(in:) does in Swift). */
    char *units = NULL;
    if (sd_set_if_absent_string(suite, units_key, units_from_locale(), &units) != SD_OK) {
        fprintf(stderr, "c-widget: cannot read the unit preference: %s\n", sd_last_error_message());
    }
    int imperial = units != NULL && strcmp(units, "imperial") == 0;
    sd_free(units);
    snprintf(line, sizeof line, "Last run: %.1f %s", imperial ? metres / 1609.344 : metres / 1000, imperial ? "mi" : "km");
    show(line);
}

static volatile sig_atomic_t stopping = 0;

static void stop(int signal) {
    (void)signal;
    stopping = 1;
}

int main(int argc, char **argv) {
    const char *directory = NULL;
    int once = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
            directory = argv[++i];
        } else if (strcmp(argv[i], "--once") == 0) {
            once = 1;
        } else if (strcmp(argv[i], "--timestamps") == 0) {
            timestamps = 1;
        } else {
            fprintf(stderr, "usage: %s [--dir DIR] [--once] [--timestamps]\n", argv[0]);
            return 2;
        }
    }
    setlocale(LC_NUMERIC, ""); /* the decimal point of the user's LC_NUMERIC */

    sd_suite *suite;
    if (sd_suite_open(suite_name, directory, 0, &suite) != SD_OK) {
        fprintf(stderr, "c-widget: cannot open the shared preferences: %s\n", sd_last_error_message());
        return 3;
    }
    if (once) {
        render(suite);
        sd_suite_close(suite);
        return 0;
    }

    /* Stop cleanly on SIGTERM and SIGINT: they interrupt poll (no SA_RESTART). */
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = stop;
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);

    /* Watch first, then render: a change in between renders again, none is missed. */
    const char *keys[] = {units_key, workouts_key};
    sd_watch *watch;
    if (sd_watch_open(suite, keys, 2, &watch) != SD_OK) {
        fprintf(stderr, "c-widget: cannot watch for changes: %s\n", sd_last_error_message());
        return 3;
    }
    render(suite);
    struct pollfd ready = {.fd = sd_watch_fd(watch), .events = POLLIN};
    while (!stopping) {
        if (poll(&ready, 1, -1) < 0) {
            if (errno == EINTR) continue;
            perror("c-widget: poll");
            break;
        }
        /* Take every waiting change, then redraw once. */
        sd_change change;
        sd_status status;
        int changed = 0;
        while ((status = sd_watch_next(watch, &change)) != SD_NO_CHANGE) {
            if (status == SD_OK) {
                changed = 1;
            } else {
                fprintf(stderr, "c-widget: not receiving changes: %s\n", sd_last_error_message());
            }
        }
        if (changed) render(suite);
    }
    sd_watch_close(watch);
    sd_suite_close(suite);
    return 0;
}
