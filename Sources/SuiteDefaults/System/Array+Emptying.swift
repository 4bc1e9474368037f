extension Array {
    /// Removes every element, keeping the storage: for the lists filled and emptied
    /// again at every change or commit (the change watcher's, the observers' queues',
    /// a transaction's writes). For the one or two elements they hold, cheaper than
    /// `removeAll(keepingCapacity: true)`, whose general replacement of a range costs
    /// a hundred instructions or more even for one.
    @inline(__always)
    mutating func removeAllKeepingStorage() {
        while !isEmpty { removeLast() }
    }
}
