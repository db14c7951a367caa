import COpenSSL
import Glibc

/// ALPN for a server: `h2` when the client offers it, else `http/1.1`; a client offering neither gets no protocol
/// (HTTP/1.1 then). Shared by the simulators and `herald api` (`TLSServerContext.chooseH2OrHTTP1`).
public let selectH2OrHTTP1: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
                                             UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?) -> Int32 = { _, out, outLength, input, inputLength, _ in
    selectALPN(out, outLength, input, inputLength, allowingH2: true)
}

/// Picks `h2` (when `allowingH2` and offered), else `http/1.1` (when offered), else no protocol: the one ALPN rule
/// of Herald's servers, for callbacks that decide per handshake whether h2 is allowed.
public func selectALPN(_ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, _ outLength: UnsafeMutablePointer<UInt8>?,
                        _ input: UnsafePointer<UInt8>?, _ inputLength: UInt32, allowingH2: Bool) -> Int32 {
    guard let out, let outLength, let input else { return SSL_TLSEXT_ERR_NOACK }
    var http1: (UnsafePointer<UInt8>, UInt8)?
    var index = 0
    let count = Int(inputLength)
    while index < count {
        let length = Int(input[index])
        guard index + 1 + length <= count else { break }
        let name = input + index + 1
        if allowingH2 && length == 2 && name[0] == UInt8(ascii: "h") && name[1] == UInt8(ascii: "2") {
            out.pointee = name
            outLength.pointee = 2
            return SSL_TLSEXT_ERR_OK
        }
        if length == 8 && memcmp(name, "http/1.1", 8) == 0 { http1 = (name, 8) }
        index += 1 + length
    }
    if let http1 {
        out.pointee = http1.0
        outLength.pointee = http1.1
        return SSL_TLSEXT_ERR_OK
    }
    return SSL_TLSEXT_ERR_NOACK
}
