#!/usr/bin/env python3
"""The distance widget in Python, with ctypes from the standard library only.

It shows the last run in the user's units, as Examples/distance-widget does in Swift
and Examples/c-widget in C, and redraws the moment the unit preference or the workout
log changes, in any process: a select.poll loop on sd_watch_fd.

    widget.py [--dir DIR] [--once] [--timestamps] [--library PATH]

The library: --library PATH, else $SUITEDEFAULTS_LIBRARY, else an installed
libsuitedefaults.so.1 (Scripts/make-pkgconfig --install), else the package's
.build/debug/libsuitedefaults.so.
"""
import argparse
import ctypes
import ctypes.util
import json
import locale
import os
import select
import signal
import sys
import time

SUITE = b"group.com.example.fitness"
UNITS_KEY = b"units.system"
WORKOUTS_KEY = b"fitness.workouts"

SD_OK, SD_ABSENT, SD_NO_CHANGE = 0, 1, 2


class Change(ctypes.Structure):
    """sd_change, field for field."""
    _fields_ = [
        ("key", ctypes.c_char_p),
        ("old_json", ctypes.c_char_p),
        ("new_json", ctypes.c_char_p),
        ("sequence", ctypes.c_uint64),
        ("pid", ctypes.c_int32),
        ("kind", ctypes.c_int32),
        ("from_this_process", ctypes.c_bool),
    ]


def load_library(path):
    """Loads libsuitedefaults and declares the functions this widget calls."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [path, os.environ.get("SUITEDEFAULTS_LIBRARY"), ctypes.util.find_library("suitedefaults"),
                  os.path.join(here, "..", "..", ".build", "debug", "libsuitedefaults.so")]
    for candidate in candidates:
        if candidate and (os.sep not in candidate or os.path.exists(candidate)):
            lib = ctypes.CDLL(candidate)
            break
    else:
        sys.exit("python-widget: libsuitedefaults not found; pass --library PATH or build with `swift build`")
    status, handle, text = ctypes.c_int32, ctypes.c_void_p, ctypes.c_char_p
    signatures = {
        "sd_suite_open": (status, [text, text, ctypes.c_uint32, ctypes.POINTER(handle)]),
        "sd_suite_close": (status, [handle]),
        "sd_get_json_alloc": (status, [handle, text, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]),
        "sd_set_if_absent_string": (status, [handle, text, text, ctypes.POINTER(ctypes.c_void_p)]),
        "sd_watch_open": (status, [handle, ctypes.POINTER(text), ctypes.c_size_t, ctypes.POINTER(handle)]),
        "sd_watch_fd": (ctypes.c_int, [handle]),
        "sd_watch_next": (status, [handle, ctypes.POINTER(Change)]),
        "sd_watch_close": (status, [handle]),
        "sd_last_error_message": (text, []),
        "sd_free": (None, [ctypes.c_void_p]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    return lib


def is_workout(value):
    """Whether value reads as the Swift app's Workout: a kind, a number amount and date."""
    def number(field):
        return isinstance(field, (int, float)) and not isinstance(field, bool)
    return (isinstance(value, dict) and value.get("kind") in ("run", "lift")
            and number(value.get("amount")) and number(value.get("date")))


class Widget:
    def __init__(self, lib, directory, timestamps):
        self.lib = lib
        self.timestamps = timestamps
        self.suite = ctypes.c_void_p()
        if lib.sd_suite_open(SUITE, directory.encode() if directory else None, 0, ctypes.byref(self.suite)) != SD_OK:
            self.fail("cannot open the shared preferences")

    def fail(self, what):
        sys.exit(f"python-widget: {what}: {self.lib.sd_last_error_message().decode()}")

    def take_string(self, pointer):
        """A string the library allocated, freed once read."""
        try:
            return ctypes.string_at(pointer.value).decode() if pointer.value else None
        finally:
            self.lib.sd_free(pointer)

    def json(self, key):
        """The value of `key` as the typed JSON sd_get_json gives, parsed; None when absent."""
        pointer = ctypes.c_void_p()
        status = self.lib.sd_get_json_alloc(self.suite, key, ctypes.byref(pointer), None)
        if status == SD_ABSENT:
            return None
        if status != SD_OK:
            print(f"python-widget: cannot read {key.decode()}: {self.lib.sd_last_error_message().decode()}", file=sys.stderr)
            return None
        return json.loads(self.take_string(pointer))

    def units(self):
        """The stored preference; when there is none, the locale's, stored for every
        process of the family (as UnitSystem.current(in:) does in Swift)."""
        stored = ctypes.c_void_p()
        if self.lib.sd_set_if_absent_string(self.suite, UNITS_KEY, units_from_locale().encode(), ctypes.byref(stored)) != SD_OK:
            print(f"python-widget: cannot read the unit preference: {self.lib.sd_last_error_message().decode()}", file=sys.stderr)
            return "metric"
        return self.take_string(stored)

    def line(self):
        log = self.json(WORKOUTS_KEY)
        # A Codable value comes as {"$json": <its JSON>}: the log, oldest first. A log of
        # which any workout does not read as the Swift app's Workout is no log, as it is
        # to the Swift widgets, which then show none.
        workouts = log.get("$json") if isinstance(log, dict) else None
        if not isinstance(workouts, list) or not all(map(is_workout, workouts)):
            workouts = []
        runs = [workout for workout in workouts if workout["kind"] == "run"]
        if not runs:
            return "Last run: none"
        metres = float(runs[-1]["amount"])
        # One decimal, with the decimal point of the user's LC_NUMERIC, as in Swift and C.
        if self.units() == "imperial":
            return f"Last run: {locale.format_string('%.1f', metres / 1609.344)} mi"
        return f"Last run: {locale.format_string('%.1f', metres / 1000)} km"

    def render(self):
        line = self.line()
        if self.timestamps:
            line = f"{time.clock_gettime_ns(time.CLOCK_MONOTONIC)} {line}"
        print(line, flush=True)

    def run(self):
        # Watch first, then render: a change in between renders again, none is missed.
        keys = (ctypes.c_char_p * 2)(UNITS_KEY, WORKOUTS_KEY)
        watch = ctypes.c_void_p()
        if self.lib.sd_watch_open(self.suite, keys, 2, ctypes.byref(watch)) != SD_OK:
            self.fail("cannot watch for changes")
        self.render()
        poller = select.poll()
        poller.register(self.lib.sd_watch_fd(watch), select.POLLIN)
        change = Change()
        try:
            while True:
                poller.poll()
                changed = False
                while (status := self.lib.sd_watch_next(watch, ctypes.byref(change))) != SD_NO_CHANGE:
                    if status == SD_OK:
                        changed = True
                    else:
                        print(f"python-widget: not receiving changes: {self.lib.sd_last_error_message().decode()}",
                              file=sys.stderr)
                if changed:
                    self.render()
        finally:
            self.lib.sd_watch_close(watch)


def units_from_locale():
    """Imperial for a measurement locale (LC_ALL, LC_MEASUREMENT, LANG) of region US,
    LR or MM; metric otherwise, as the Swift family decides."""
    for name in ("LC_ALL", "LC_MEASUREMENT", "LANG"):
        value = os.environ.get(name)
        if value:
            region = value.partition("_")[2][:2]
            return "imperial" if region in ("US", "LR", "MM") else "metric"
    return "metric"


def main():
    parser = argparse.ArgumentParser(description="The distance widget, in Python.")
    parser.add_argument("--dir", help="the suite directory (default: the library's)")
    parser.add_argument("--once", action="store_true", help="render once and exit")
    parser.add_argument("--timestamps", action="store_true", help="start each line with CLOCK_MONOTONIC nanoseconds")
    parser.add_argument("--library", help="the path of libsuitedefaults.so")
    arguments = parser.parse_args()
    try:
        locale.setlocale(locale.LC_NUMERIC, "")
    except locale.Error:
        pass  # a locale the system does not have: the C locale's point

    def stop(_signal, _frame):
        raise SystemExit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    widget = Widget(load_library(arguments.library), arguments.dir, arguments.timestamps)
    try:
        if arguments.once:
            widget.render()
        else:
            widget.run()
    finally:
        widget.lib.sd_suite_close(widget.suite)


if __name__ == "__main__":
    main()
