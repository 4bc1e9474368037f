import CSuiteDefaults
import Glibc

/// Who this process is: its ID, and the user and groups it acts as.
package enum ProcessIdentity {
    /// `getpid()`, asked once and again after a fork (through the fork handler of
    /// `ForkEpoch`), since it is a system call and every commit needs it.
    package static var id: Int32 { sd_process_id() }

    /// The calling thread, as a number to compare.
    static var thread: UInt { UInt(bitPattern: Int(bitPattern: UInt(pthread_self()))) }

    /// `geteuid()`: the user whose files are "ours".
    static var effectiveUserID: UInt32 { geteuid() }

    /// `getegid()` and `getgroups()`: every group the process acts as.
    static func groupIDs() -> Set<UInt32> {
        var groups = Set([UInt32(getegid())])
        let count = getgroups(0, nil)
        if count > 0 {
            var list = [gid_t](repeating: 0, count: Int(count))
            let filled = getgroups(count, &list)
            if filled > 0 { groups.formUnion(list.prefix(Int(filled)).map { UInt32($0) }) }
        }
        return groups
    }

    /// The effective user's home directory in the user database (`getpwuid`); nil
    /// when it has no entry or the entry no directory. Not thread-safe in theory
    /// (`getpwuid` returns static storage), as before: only a fallback for `$HOME`.
    static func homeDirectoryFromUserDatabase() -> String? {
        guard let entry = getpwuid(geteuid()), let directory = entry.pointee.pw_dir else { return nil }
        return String(cString: directory)
    }
}
