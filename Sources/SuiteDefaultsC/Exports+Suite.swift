import Foundation
@_spi(Tools) import SuiteDefaults

// Opening and closing suites, the atomic writes that read first, and transactions.

/// The flags of `sd_suite_open`.
private enum OpenFlags {
    static let durable: UInt32 = 1 << 0
    static let group: UInt32 = 1 << 1
    static let all = durable | group
}

@_cdecl("sd_suite_open")
public func sd_suite_open(_ name: UnsafePointer<CChar>?, _ directory: UnsafePointer<CChar>?, _ flags: UInt32,
                          _ suite: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    perform {
        let out = try CInput.required(suite, "the suite handle")
        let name = try CInput.text(name, "the suite name", invalid: Status.invalidSuiteName)
        let directory = try directory.map { _ in
            let path = try CInput.text(directory, "the directory", invalid: Status.invalidArgument)
            // An empty path would be the current directory, which no caller means by it.
            guard !path.isEmpty else { throw Refusal(Status.invalidArgument, "The directory is empty; pass NULL for the default one.") }
            return URL(fileURLWithPath: path, isDirectory: true)
        }
        guard flags & ~OpenFlags.all == 0 else {
            throw Refusal(Status.invalidArgument, "The flags 0x\(String(flags & ~OpenFlags.all, radix: 16)) are unknown; "
                          + "the flags are SD_OPEN_DURABLE and SD_OPEN_GROUP.")
        }
        let options = Suite.Options(durability: flags & OpenFlags.durable != 0 ? .durable : .standard,
                                    sharing: flags & OpenFlags.group != 0 ? .group : .private)
        out.pointee = Handles.suites.add(try Suite(named: name, directory: directory, options: options))
        return Status.ok
    }
}

@_cdecl("sd_suite_close")
public func sd_suite_close(_ suite: OpaquePointer?) -> Int32 {
    perform {
        _ = try Handles.suites.close(suite)
        return Status.ok
    }
}

// MARK: Set if absent, compare and set

/// `sd_set_if_absent_*`: the library's `setIfAbsent`, with the value stored after the
/// call handed to `deliver` (which writes the caller's out-parameter, if any).
private func setIfAbsent<T: SuiteStorable>(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: () throws -> T,
                                           _ deliver: (T) throws -> Void) -> Int32 {
    perform {
        let suite = try Target.suite(suite)
        let key = try CInput.key(key)
        let value = try value()
        try deliver(try suite.setIfAbsent(value, forKey: key))
        return Status.ok
    }
}

@_cdecl("sd_set_if_absent_string")
public func sd_set_if_absent_string(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?,
                                    _ stored: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    setIfAbsent(suite, key, { try CInput.text(value, "the string", invalid: Status.invalidValue) }) { result in
        if let stored { stored.pointee = try COutput.allocated(result) }
    }
}

@_cdecl("sd_set_if_absent_int64")
public func sd_set_if_absent_int64(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: Int64,
                                   _ stored: UnsafeMutablePointer<Int64>?) -> Int32 {
    setIfAbsent(suite, key, { value }) { stored?.pointee = $0 }
}

@_cdecl("sd_set_if_absent_double")
public func sd_set_if_absent_double(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: Double,
                                    _ stored: UnsafeMutablePointer<Double>?) -> Int32 {
    setIfAbsent(suite, key, { value }) { stored?.pointee = $0 }
}

@_cdecl("sd_set_if_absent_bool")
public func sd_set_if_absent_bool(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: Bool,
                                  _ stored: UnsafeMutablePointer<Bool>?) -> Int32 {
    setIfAbsent(suite, key, { value }) { stored?.pointee = $0 }
}

@_cdecl("sd_set_if_absent_data")
public func sd_set_if_absent_data(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ bytes: UnsafeRawPointer?, _ length: UInt,
                                  _ stored: UnsafeMutablePointer<UnsafeMutableRawPointer?>?,
                                  _ storedLength: UnsafeMutablePointer<UInt>?) -> Int32 {
    setIfAbsent(suite, key, {
        try CInput.data(bytes, length, maximumValueSize: try Target.suite(suite).options.maximumValueSize)
    }) { (result: Data) in
        if let stored { stored.pointee = try COutput.allocated(result, terminated: false) }
        storedLength?.pointee = UInt(result.count)
    }
}

@_cdecl("sd_set_if_absent_json")
public func sd_set_if_absent_json(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ json: UnsafePointer<CChar>?,
                                  _ stored: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    setIfAbsent(suite, key, { try CInput.json(json) }) { (result: SuiteValue) in
        if let stored { stored.pointee = try COutput.allocated(result.jsonText(style: .typed)) }
    }
}

@_cdecl("sd_compare_and_set")
public func sd_compare_and_set(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ expected: UnsafePointer<CChar>?,
                               _ new: UnsafePointer<CChar>?, _ replaced: UnsafeMutablePointer<Bool>?) -> Int32 {
    perform {
        let suite = try Target.suite(suite)
        let key = try CInput.key(key)
        let expected = try expected.map { _ in try CInput.json(expected, "the expected JSON text") }
        let new = try new.map { _ in try CInput.json(new, "the new JSON text") }
        let result = try suite.compareAndSet(expected: expected, new: new, forKey: key)
        replaced?.pointee = result
        return Status.ok
    }
}

// MARK: Transactions

@_cdecl("sd_update")
public func sd_update(_ suite: OpaquePointer?, _ callback: (@convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32)?,
                      _ context: UnsafeMutableRawPointer?) -> Int32 {
    perform {
        let suite = try Target.suite(suite)
        guard let callback else { throw Refusal(Status.invalidArgument, "The update callback is NULL.") }
        try suite.update { transaction in
            // The handle lives exactly as long as the callback runs.
            let handle = Handles.transactions.add(TransactionHandle(transaction, maximumValueSize: suite.options.maximumValueSize))
            defer { Handles.transactions.remove(handle) }
            let status = callback(handle, context)
            if status != Status.ok { throw QuietStatus(status: status) }
        }
        return Status.ok
    }
}
