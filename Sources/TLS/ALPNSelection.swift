import COpenSSL
import Glibc

/// ALPN for a server: `h2` when the client offers it, else `http/1.1`; a client offering neither gets no protocol
/// (HTTP/1.1 then). Shared by the simulators and `herald api` (`TLSServerContext.chooseH2OrHTTP1`).
public let selectH2OrHTTP1: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
                                             UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?) -> Int32 = { _, out, outLength, input, inputLength, _ in
    selectALPN(out, outLength, input, inputLength, allowingH2: true)
}

/// A push service's ALPN choice, changed on the simulator's loop (the handshakes run there too).
final class WebPushALPNChoice {
    /// Never `h2`: a service that speaks only HTTP/1.1.
    let http1Only: Bool
    /// Every handshake fails (a fatal ALPN alert): a service that is down, until it is back.
    var refusing = false
    init(http1Only: Bool) { self.http1Only = http1Only }
}

/// ALPN of the Web Push simulator, by its `WebPushALPNChoice` (the callback's argument).
let selectForWebPush: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
                                      UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?) -> Int32 = { _, out, outLength, input, inputLength, arg in
    guard let arg else { return SSL_TLSEXT_ERR_NOACK }
    let choice = Unmanaged<WebPushALPNChoice>.fromOpaque(arg).takeUnretainedValue()
    if choice.refusing { return SSL_TLSEXT_ERR_ALERT_FATAL }
    return selectALPN(out, outLength, input, inputLength, allowingH2: !choice.http1Only)
}

private func selectALPN(_ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, _ outLength: UnsafeMutablePointer<UInt8>?,
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
