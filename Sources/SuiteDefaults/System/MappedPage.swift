import CSuiteDefaults
import Glibc

/// The first page of a file, mapped `MAP_SHARED`, and guarded against the file
/// being cut short under it: a SIGBUS on the page replaces it with a private zero
/// page instead of killing the process, and `wasCutShort` says so from then on.
final class MappedPage: @unchecked Sendable {
    static let size = 4096
    let base: UnsafeMutableRawPointer
    let isWritable: Bool
    private let guardRegistration: Int32

    /// Maps the first page of `descriptor`'s file.
    init(_ descriptor: FileDescriptor, writable: Bool) throws {
        let protection = writable ? PROT_READ | PROT_WRITE : PROT_READ
        guard let address = mmap(nil, Self.size, protection, MAP_SHARED, descriptor.rawValue, 0),
              address != MAP_FAILED
        else { throw SystemCallError(call: "mmap", errno: errno) }
        base = address
        isWritable = writable
        // Guarded before its first access.
        guardRegistration = sd_bus_guard_add(address)
    }

    /// Whether the file was cut short under the page, so the page no longer shows it.
    var wasCutShort: Bool { sd_bus_guard_tripped(guardRegistration) != 0 }

    deinit {
        sd_bus_guard_remove(guardRegistration)
        munmap(base, Self.size)
    }
}
