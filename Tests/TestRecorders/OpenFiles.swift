import Foundation

/// What this process holds open that a suite opened in `directory` can hold: its
/// inotify watches (of every instance), and its descriptors of files under
/// `directory` and of inotify instances. (Every descriptor would count pipes of
/// workers that other tests start beside.) Counted from `/proc/self`.
public func watchesAndDescriptors(under directory: String) -> (watches: Int, descriptors: Int) {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    let prefix = URL(fileURLWithPath: directory).resolvingSymlinksInPath().path + "/"
    var watches = 0, descriptors = 0
    for name in names {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name) else { continue }
        if target.hasPrefix(prefix) { descriptors += 1 }
        guard target == "anon_inode:inotify" else { continue }
        descriptors += 1
        let info = (try? String(contentsOfFile: "/proc/self/fdinfo/" + name, encoding: .utf8)) ?? ""
        watches += info.split(separator: "\n").filter { $0.hasPrefix("inotify wd:") }.count
    }
    return (watches, descriptors)
}
