import CSuiteDefaults

/// CRC-32C (Castagnoli), the checksum of every record and file header.
enum CRC32C {
    /// The checksum of `bytes`; pass a previous result as `crc` to continue it.
    static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress else { return crc }
        return sd_crc32c(crc, base, bytes.count)
    }
}

/// The same CRC-32C for the tools: `suite-sync` checksums its state log's records with it.
@_spi(Tools) public enum SuiteChecksum {
    /// The CRC-32C of `bytes`; pass a previous result as `crc` to continue it.
    public static func crc32c(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        CRC32C.checksum(bytes, continuing: crc)
    }
}
