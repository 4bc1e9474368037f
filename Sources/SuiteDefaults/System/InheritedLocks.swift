import CSuiteDefaults

/// Lock files that a forked child must not keep locked for its parent: the
/// child's fork handler puts /dev/null over each registered descriptor, since an
/// inherited descriptor keeps the parent's `flock` alive after the parent dies.
enum InheritedLocks {
    /// Registers `descriptor`; returns the registration to pass to `remove`.
    static func add(_ descriptor: FileDescriptor) -> Int32 {
        sd_lock_descriptor_add(descriptor.rawValue)
    }

    /// Forgets a registration; do it before closing the descriptor, so that a fork
    /// cannot replace another file that takes its number.
    static func remove(_ registration: Int32) {
        sd_lock_descriptor_remove(registration)
    }
}
