import Glibc

/// How an executable is linked, read from its ELF headers: whether a dynamic loader runs,
/// whether the executable is position-independent, and the shared libraries it loads. It
/// names the build that spawn_to_first_read measured as "static build".
struct ELFLinkage: CustomStringConvertible {
    /// No PT_INTERP: no dynamic loader runs (-static-executable).
    var fullyStatic: Bool
    /// ET_DYN: the loader relocates the executable at every start.
    var positionIndependent: Bool
    /// DT_NEEDED, in order.
    var needed: [String]

    init?(path: String) {
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        func read(_ offset: UInt64, _ count: Int) -> [UInt8]? {
            var bytes = [UInt8](repeating: 0, count: count)
            let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
            return got == count ? bytes : nil
        }
        func integer(_ bytes: [UInt8], _ at: Int, _ size: Int) -> UInt64 {
            (0..<size).reduce(0) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) }
        }
        // 64-bit little-endian ELF only (what this tool runs on).
        guard let header = read(0, 64), header[0..<4] == [0x7F, 0x45, 0x4C, 0x46], header[4] == 2, header[5] == 1 else { return nil }
        let type = integer(header, 16, 2), programHeaders = integer(header, 32, 8)
        let entrySize = Int(integer(header, 54, 2)), entries = Int(integer(header, 56, 2))
        guard type == 2 || type == 3, entrySize >= 56, entries < 256,
              let table = read(programHeaders, entrySize * entries) else { return nil }
        var loads: [(address: UInt64, offset: UInt64, size: UInt64)] = []
        var dynamic: (offset: UInt64, size: UInt64)?
        var interpreter = false
        for index in 0..<entries {
            let base = index * entrySize
            switch integer(table, base, 4) {
            case 1: loads.append((integer(table, base + 16, 8), integer(table, base + 8, 8), integer(table, base + 32, 8)))
            case 2: dynamic = (integer(table, base + 8, 8), integer(table, base + 32, 8))
            case 3: interpreter = true
            default: break
            }
        }
        fullyStatic = !interpreter
        positionIndependent = type == 3
        needed = []
        guard let dynamic, dynamic.size < 1 << 20, let section = read(dynamic.offset, Int(dynamic.size)) else { return }
        var names: [UInt64] = [], strings: UInt64?
        for base in stride(from: 0, to: section.count - 15, by: 16) {
            let tag = integer(section, base, 8), value = integer(section, base + 8, 8)
            if tag == 0 { break }
            if tag == 1 { names.append(value) }
            if tag == 5 { strings = value }
        }
        // DT_STRTAB is an address: the segment that holds it gives its place in the file.
        guard let strings, let load = loads.first(where: { strings >= $0.address && strings < $0.address + $0.size }) else { return }
        let table0 = strings - load.address + load.offset
        needed = names.compactMap { name in
            guard let bytes = read(table0 + name, 64), let end = bytes.firstIndex(of: 0) else { return nil }
            return String(decoding: bytes[..<end], as: UTF8.self)
        }
    }

    var description: String {
        if fullyStatic { return "fully static (-static-executable): no dynamic loader runs" }
        let runtime = needed.contains { $0.hasPrefix("libswiftCore") } ? "Swift runtime loaded dynamically" : "Swift runtime linked in"
        let cxx = needed.contains { $0.hasPrefix("libstdc++") } ? "" : ", libstdc++ linked in"
        return "\(runtime)\(cxx), \(positionIndependent ? "PIE" : "non-PIE (-no-pie)"); loads \(needed.isEmpty ? "nothing" : needed.joined(separator: ", "))"
    }
}
