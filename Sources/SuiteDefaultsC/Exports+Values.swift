import Foundation
@_spi(Tools) import SuiteDefaults

// The getters and setters, of a suite (sd_get_*, sd_set_*) and of a transaction
// (sd_tx_get_*, sd_tx_set_*): one implementation, in `Target`, for both.
// The C types exactly: int64_t is `Int64`, and size_t `UInt`, so that a size the C
// side passes is never read as negative.

// MARK: Suite: reading

@_cdecl("sd_get_int64")
public func sd_get_int64(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafeMutablePointer<Int64>?) -> Int32 {
    perform { try Target(suite: suite).get(key, value, "an integer") }
}

@_cdecl("sd_get_double")
public func sd_get_double(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafeMutablePointer<Double>?) -> Int32 {
    perform { try Target(suite: suite).get(key, value, "a number") }
}

@_cdecl("sd_get_bool")
public func sd_get_bool(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafeMutablePointer<Bool>?) -> Int32 {
    perform { try Target(suite: suite).get(key, value, "a Boolean") }
}

@_cdecl("sd_get_string")
public func sd_get_string(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ buffer: UnsafeMutableRawPointer?,
                          _ capacity: UInt, _ length: UnsafeMutablePointer<UInt>?) -> Int32 {
    perform { try Target(suite: suite).get(.string, key, buffer: buffer, capacity: capacity, length: length) }
}

@_cdecl("sd_get_data")
public func sd_get_data(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ buffer: UnsafeMutableRawPointer?,
                        _ capacity: UInt, _ length: UnsafeMutablePointer<UInt>?) -> Int32 {
    perform { try Target(suite: suite).get(.data, key, buffer: buffer, capacity: capacity, length: length) }
}

@_cdecl("sd_get_json")
public func sd_get_json(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ buffer: UnsafeMutableRawPointer?,
                        _ capacity: UInt, _ length: UnsafeMutablePointer<UInt>?) -> Int32 {
    perform { try Target(suite: suite).get(.json, key, buffer: buffer, capacity: capacity, length: length) }
}

@_cdecl("sd_get_string_alloc")
public func sd_get_string_alloc(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?,
                                _ value: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ length: UnsafeMutablePointer<UInt>?) -> Int32 {
    perform { try Target(suite: suite).getAllocated(.string, key, value, length: length) }
}

@_cdecl("sd_get_data_alloc")
public func sd_get_data_alloc(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?,
                              _ value: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ length: UnsafeMutablePointer<UInt>?) -> Int32 {
    perform { try Target(suite: suite).getAllocated(.data, key, value, length: length) }
}

@_cdecl("sd_get_json_alloc")
public func sd_get_json_alloc(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?,
                              _ value: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ length: UnsafeMutablePointer<UInt>?) -> Int32 {
    perform { try Target(suite: suite).getAllocated(.json, key, value, length: length) }
}

// MARK: Suite: writing

@_cdecl("sd_set_string")
public func sd_set_string(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) -> Int32 {
    perform { try Target(suite: suite).setString(key, value) }
}

@_cdecl("sd_set_int64")
public func sd_set_int64(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: Int64) -> Int32 {
    perform { try Target(suite: suite).set(key) { value.suiteValue } }
}

@_cdecl("sd_set_double")
public func sd_set_double(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: Double) -> Int32 {
    perform { try Target(suite: suite).set(key) { .double(value) } }
}

@_cdecl("sd_set_bool")
public func sd_set_bool(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: Bool) -> Int32 {
    perform { try Target(suite: suite).set(key) { .bool(value) } }
}

@_cdecl("sd_set_data")
public func sd_set_data(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ bytes: UnsafeRawPointer?, _ length: UInt) -> Int32 {
    perform { try Target(suite: suite).setData(key, bytes, length) }
}

@_cdecl("sd_set_json")
public func sd_set_json(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ json: UnsafePointer<CChar>?) -> Int32 {
    perform { try Target(suite: suite).setJSON(key, json) }
}

@_cdecl("sd_remove")
public func sd_remove(_ suite: OpaquePointer?, _ key: UnsafePointer<CChar>?) -> Int32 {
    perform { try Target(suite: suite).set(key) { nil } }
}

// MARK: Transaction: reading

@_cdecl("sd_tx_get_int64")
public func sd_tx_get_int64(_ tx: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafeMutablePointer<Int64>?) -> Int32 {
    perform { try Target(transaction: tx).get(key, value, "an integer") }
}

@_cdecl("sd_tx_get_double")
public func sd_tx_get_double(_ tx: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafeMutablePointer<Double>?) -> Int32 {
    perform { try Target(transaction: tx).get(key, value, "a number") }
}

@_cdecl("sd_tx_get_bool")
public func sd_tx_get_bool(_ tx: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafeMutablePointer<Bool>?) -> Int32 {
    perform { try Target(transaction: tx).get(key, value, "a Boolean") }
}

@_cdecl("sd_tx_get_string")
public func sd_tx_get_string(_ tx: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ buffer: UnsafeMutableRawPointer?,
                             _ capacity: UInt, _ length: UnsafeMutablePointer<UInt>?) -> Int32 {
    perform { try Target(transaction: tx).get(.string, key, buffer: buffer, capacity: capacity, length: length) }
}

@_cdecl("sd_tx_get_data")
public func sd_tx_get_data(_ tx: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ buffer: UnsafeMutableRawPointer?,
                           _ capacity: UInt, _ length: UnsafeMutablePointer<UInt>?) -> Int32 {
    perform { try Target(transaction: tx).get(.data, key, buffer: buffer, capacity: capacity, length: length) }
}

@_cdecl("sd_tx_get_json")
public func sd_tx_get_json(_ tx: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ buffer: UnsafeMutableRawPointer?,
                           _ capacity: UInt, _ length: UnsafeMutablePointer<UInt>?) -> Int32 {
    perform { try Target(transaction: tx).get(.json, key, buffer: buffer, capacity: capacity, length: length) }
}

@_cdecl("sd_tx_get_string_alloc")
public func sd_tx_get_string_alloc(_ tx: OpaquePointer?, _ key: UnsafePointer<CChar>?,
                                   _ value: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ length: UnsafeMutablePointer<UInt>?) -> Int32 {
    perform { try Target(transaction: tx).getAllocated(.string, key, value, length: length) }
}

@_cdecl("sd_tx_get_data_alloc")
public func sd_tx_get_data_alloc(_ tx: OpaquePointer?, _ key: UnsafePointer<CChar>?,
                                 _ value: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ length: UnsafeMutablePointer<UInt>?) -> Int32 {
    perform { try Target(transaction: tx).getAllocated(.data, key, value, length: length) }
}

@_cdecl("sd_tx_get_json_alloc")
public func sd_tx_get_json_alloc(_ tx: OpaquePointer?, _ key: UnsafePointer<CChar>?,
                                 _ value: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ length: UnsafeMutablePointer<UInt>?) -> Int32 {
    perform { try Target(transaction: tx).getAllocated(.json, key, value, length: length) }
}

// MARK: Transaction: writing

@_cdecl("sd_tx_set_string")
public func sd_tx_set_string(_ tx: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) -> Int32 {
    perform { try Target(transaction: tx).setString(key, value) }
}

@_cdecl("sd_tx_set_int64")
public func sd_tx_set_int64(_ tx: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: Int64) -> Int32 {
    perform { try Target(transaction: tx).set(key) { value.suiteValue } }
}

@_cdecl("sd_tx_set_double")
public func sd_tx_set_double(_ tx: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: Double) -> Int32 {
    perform { try Target(transaction: tx).set(key) { .double(value) } }
}

@_cdecl("sd_tx_set_bool")
public func sd_tx_set_bool(_ tx: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: Bool) -> Int32 {
    perform { try Target(transaction: tx).set(key) { .bool(value) } }
}

@_cdecl("sd_tx_set_data")
public func sd_tx_set_data(_ tx: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ bytes: UnsafeRawPointer?, _ length: UInt) -> Int32 {
    perform { try Target(transaction: tx).setData(key, bytes, length) }
}

@_cdecl("sd_tx_set_json")
public func sd_tx_set_json(_ tx: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ json: UnsafePointer<CChar>?) -> Int32 {
    perform { try Target(transaction: tx).setJSON(key, json) }
}

@_cdecl("sd_tx_remove")
public func sd_tx_remove(_ tx: OpaquePointer?, _ key: UnsafePointer<CChar>?) -> Int32 {
    perform { try Target(transaction: tx).set(key) { nil } }
}
