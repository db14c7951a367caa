import COpenSSL
import TLS

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
