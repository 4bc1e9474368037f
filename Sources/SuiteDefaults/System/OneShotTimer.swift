import CSuiteDefaults

/// A timer on the monotonic clock that a thread waits for, armed and disarmed by
/// another (`timerfd`): arming it costs one system call and wakes nobody.
struct OneShotTimer: Sendable {
    let descriptor: CInt

    /// A new timer; nil when none can be made (no descriptor left).
    init?() {
        descriptor = sd_timer_open()
        guard descriptor >= 0 else { return nil }
    }

    /// Expires once, `after` from now.
    func arm(after: Duration) {
        _ = sd_timer_arm(descriptor, max(1, after.wholeNanoseconds))
    }

    /// Will not expire, and an expiry not waited for yet is forgotten.
    func disarm() {
        _ = sd_timer_arm(descriptor, 0)
    }

    /// Blocks until the timer expires; false when it cannot be waited for (its
    /// descriptor was closed).
    func wait() -> Bool {
        sd_timer_wait(descriptor) == 0
    }
}
