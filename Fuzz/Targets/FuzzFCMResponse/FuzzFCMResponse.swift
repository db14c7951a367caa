@testable import FCM
import PushCore
import FuzzSupport

/// FCM's answers come from the network (or a proxy in between): decoding never fails and never traps, and
/// what it keeps is bounded.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFCMResponse(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = fuzzInput(data, size)
    // The first two bytes pick a status; up to a NUL byte the rest is the Retry-After header, then the body.
    let status = input.count >= 2 ? 100 + (Int(input[0]) << 8 | Int(input[1])) % 500 : 200
    let rest = input.count >= 2 ? Array(input.dropFirst(2)) : input
    var retryAfter: String? = nil
    var body = rest
    if let nul = rest.firstIndex(of: 0) {
        retryAfter = String(decoding: rest[..<nul], as: UTF8.self)
        body = Array(rest[(nul + 1)...])
    }
    let response = FCMResponse.decode(status: status, body: body, retryAfter: retryAfter)
    fuzzCheck(response.status == status, "status changed")
    let texts = [response.name, response.rpcStatus, response.errorCode, response.message].compactMap { $0 }
    if !texts.isEmpty || !response.fieldViolations.isEmpty {
        fuzzCheck(JSONScanner.isObject(body), "error fields from a body that is not a JSON object")
    }
    for text in texts { fuzzCheck(text.utf8.count <= FCMResponse.maxTextBytes, "a text of \(text.utf8.count) bytes kept") }
    if let seconds = response.retryAfterSeconds { fuzzCheck(seconds >= 0 && seconds <= 999_999_999, "Retry-After \(seconds)") }
    if retryAfter == nil { fuzzCheck(response.retryAfterSeconds == nil, "a Retry-After without the header") }
    fuzzCheck(!response.reasonName.isEmpty, "an empty reason name")
    // What the worker decides from it must not trap either, whatever the attempt count.
    let attempt = input.isEmpty ? 1 : Int(input[input.count - 1])
    let decision = OutcomePolicy(random: { 0.5 }).decide(.answer(response), attempt: attempt, expiration: nil, nowSeconds: 1_700_000_000)
    if status == 200 { fuzzCheck(decision == .delivered, "a 200 was not delivered: \(decision)") }
    return 0
}
