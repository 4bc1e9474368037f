extension Array {
    /// Removes every element, keeping the storage: for the lists that the change
    /// watcher and the observers' queues fill and empty again at every change. For the
    /// one or two elements they hold, cheaper than `removeAll(keepingCapacity: true)`,
    /// whose general replacement of a range costs a few hundred instructions even for one.
    @inline(__always)
    mutating func removeAllKeepingStorage() {
        while !isEmpty { removeLast() }
    }
}
