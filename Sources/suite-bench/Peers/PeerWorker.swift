import Foundation
import Glibc
import ToolSupport

/// The peers' worker roles, `sqlite-ROLE` and `lmdb-ROLE`: cold, contend, watch, memory.
enum PeerWorker {
    static let jobs = ["cold", "contend", "watch", "memory"]

    static func isPeerRole(_ role: String) -> Bool {
        guard let dash = role.firstIndex(of: "-"), Peer(rawValue: String(role[..<dash])) != nil else { return false }
        return jobs.contains(String(role[role.index(after: dash)...]))
    }

    static func run(_ role: String, directory: URL, name: String, count: Int, idleMilliseconds: Int) -> Never {
        let dash = role.firstIndex(of: "-")!
        let peer = Peer(rawValue: String(role[..<dash]))!
        // Loading the library is part of a process's start, as for a program linked to it.
        guard peer.isInstalled else {
            Output.line("not installed")
            exit(4)
        }
        let path = peer.path(name, in: directory)
        do {
            switch String(role[role.index(after: dash)...]) {
            case "cold":
                // The library's part: from just before opening the store to the first value read.
                let started = monotonicNanoseconds()
                let store = try peer.open(path, setUp: false)
                let value = try store.string(forKey: "key.7")
                let read = monotonicNanoseconds()
                Output.line("cold \(started) \(read) \(value == "value 7")")
            case "contend":
                let store = try peer.open(path)
                Output.line("ready")
                BenchWorker.waitForStart()
                for _ in 0..<count { try store.increment("counter") }
                Output.line("done \(count)")
            case "watch":
                try watch(peer.open(path), count: count, idleMilliseconds: idleMilliseconds)
            case "memory":
                let before = BenchWorker.residentKiB("VmRSS")
                let store = try peer.open(path, setUp: false)
                let keys = try store.readAll()
                Output.line("memory \(before) \(BenchWorker.residentKiB("VmHWM")) \(keys)")
                withExtendedLifetime(store) {}
            default:
                Output.line("unknown role")
                exit(2)
            }
        } catch {
            FileHandle.standardError.write(Data("suite-bench worker \(role): \(error)\n".utf8))
            exit(3)
        }
        exit(0)
    }

    /// Polls the store's change stamp every 1 ms. First, with nothing changing, for
    /// `idleMilliseconds`, reporting the CPU that costs ("idle CPU-ns wall-ns"); then
    /// reports when each change of "t" was seen ("got VALUE TIME"), until the last,
    /// and the CPU that took ("cpu CPU-ns").
    private static func watch(_ store: any PeerStore, count: Int, idleMilliseconds: Int) throws {
        var last = try store.changeStamp()
        let idleStart = monotonicNanoseconds(), cpuStart = processCPUNanoseconds()
        while monotonicNanoseconds() - idleStart < UInt64(idleMilliseconds) * 1_000_000 {
            usleep(1_000)
            if try store.changeStamp() != last { throw PeerError("the store changed while idle") }
        }
        Output.line("idle \(processCPUNanoseconds() - cpuStart) \(monotonicNanoseconds() - idleStart)")
        Output.line("ready")
        let watching = processCPUNanoseconds()
        while true {
            usleep(1_000)
            let stamp = try store.changeStamp()
            guard stamp != last else { continue }
            last = stamp
            guard let value = try store.integer(forKey: "t") else { continue }
            Output.line("got \(value) \(monotonicNanoseconds())")
            if value >= count - 1 {
                Output.line("cpu \(processCPUNanoseconds() - watching)")
                return
            }
        }
    }
}
