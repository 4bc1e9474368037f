#include "suite_defaults_internal.h"

#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

int sd_event_make(void) {
    return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

void sd_event_signal(int descriptor) {
    uint64_t one = 1;
    // Fails only when the count would overflow (it stays readable then) or the
    // descriptor is bad; neither leaves it unreadable with entries waiting.
    (void)!write(descriptor, &one, sizeof one);
}

void sd_event_reset(int descriptor) {
    uint64_t count;
    // Non-blocking: reads the count and sets it to 0, or finds it 0 already (EAGAIN).
    (void)!read(descriptor, &count, sizeof count);
}
