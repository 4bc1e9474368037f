#include "CSuiteDefaults.h"
#include <errno.h>
#include <stdint.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

// A one-shot timer as a descriptor (timerfd): Swift's Glibc module does not bring
// <sys/timerfd.h>.

int sd_timer_open(void) {
    return timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
}

int sd_timer_arm(int descriptor, int64_t nanoseconds) {
    struct itimerspec when = {{0, 0}, {nanoseconds / 1000000000, nanoseconds % 1000000000}};
    return timerfd_settime(descriptor, 0, &when, NULL);
}

int sd_timer_wait(int descriptor) {
    uint64_t expirations;
    ssize_t count;
    do {
        count = read(descriptor, &expirations, sizeof expirations);
    } while (count < 0 && errno == EINTR);
    return count == sizeof expirations ? 0 : -1;
}
