import Testing
@testable import SuiteDefaults

/// Naming the holder of a lock from /proc/locks, for a `.lockTimeout` error.
@Suite("Lock holders from /proc/locks")
struct LockHoldersTests {
    /// A line read twice (the list changed between two reads of the file, as it does
    /// under load: a CI run once reported "process 23324, 23324 holds") names its
    /// holder once; waiters, other files and POSIX locks are not holders of this one.
    @Test func eachHolderOnceAndOnlyTheHoldersOfTheFile() {
        let text = """
        1: FLOCK  ADVISORY  WRITE 23324 fd:01:4242 0 EOF
        1: -> FLOCK  ADVISORY  WRITE 777 fd:01:4242 0 EOF
        2: FLOCK  ADVISORY  READ 99 fd:01:4242 0 EOF
        3: POSIX  ADVISORY  WRITE 55 fd:01:4242 0 EOF
        4: FLOCK  ADVISORY  WRITE 66 fd:01:4243 0 EOF
        1: FLOCK  ADVISORY  WRITE 23324 fd:01:4242 0 EOF
        """
        #expect(LockHolders.pids(in: text, holding: "fd:01:4242") == [23324, 99])
    }
}
