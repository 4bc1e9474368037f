/// The part of a file being read front to back that is held in memory: the bytes from
/// `start`, as many as the largest piece asked for at once, else `preferredSize`. So
/// reading a suite of 10,000 keys holds its table and a window, not its table and its
/// whole file.
struct RecordWindow {
    /// Reads the file's bytes at an offset into a buffer, answering how many it read:
    /// fewer only where the file ends.
    typealias Read = (UnsafeMutableRawBufferPointer, Int) throws -> Int

    /// How many bytes a window holds unless asked for more; records up to this size
    /// are read whole, larger ones operation by operation.
    let preferredSize: Int
    /// Where the bytes to read end (the committed length of the file).
    let end: Int
    private let read: Read
    /// The bytes held are the first `count` of `storage`, whose size is the largest
    /// window needed so far (it never shrinks: the window lives for one reading).
    private var storage: [UInt8] = []
    private var count = 0
    /// The file offset of the first byte held.
    private(set) var start = 0

    init(end: Int, preferredSize: Int = 64 << 10, read: @escaping Read) {
        self.end = end
        self.preferredSize = max(preferredSize, 1)
        self.read = read
    }

    /// Holds the bytes `offset ..< offset + count` (fewer where `end` comes first),
    /// letting go of those before `offset`; false when the file ended before them (it
    /// was cut short after it was measured).
    mutating func hold(from offset: Int, count wanted: Int) throws -> Bool {
        guard offset <= end else { return false }
        let needed = min(wanted, end - offset)
        if offset >= start, offset + needed <= start + count { return true }
        let kept = offset >= start && offset < start + count ? start + count - offset : 0
        let size = min(max(needed, preferredSize), end - offset)
        if storage.count < size {
            // Made anew rather than grown: growing would copy what the shift below drops.
            var larger = [UInt8](repeating: 0, count: size)
            if kept > 0 {
                larger.withUnsafeMutableBytes { new in
                    storage.withUnsafeBytes { old in
                        new.copyMemory(from: UnsafeRawBufferPointer(rebasing: old[(offset - start)..<(offset - start + kept)]))
                    }
                }
            }
            storage = larger
        } else if kept > 0 {
            storage.withUnsafeMutableBytes { raw in
                // Overlapping: `copyMemory` is `memmove`.
                raw.baseAddress!.copyMemory(from: raw.baseAddress! + (offset - start), byteCount: kept)
            }
        }
        start = offset
        count = kept
        let got = try storage.withUnsafeMutableBytes { raw in
            try read(UnsafeMutableRawBufferPointer(rebasing: raw[kept..<size]), offset + kept)
        }
        count = kept + got
        return count >= needed
    }

    /// Runs `body` with the bytes held and the file offset of the first of them.
    func withBytes<Result>(_ body: (UnsafeRawBufferPointer, Int) -> Result) -> Result {
        storage.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[..<count]), start) }
    }
}
