@testable import WebPush
import PushCore
import FuzzSupport

/// Web Push's outside input, both directions: a subscription comes from a browser through the producer, an
/// answer from a push service. Parsing either never traps; a subscription that parses is what the rules say,
/// and an answer keeps a bounded reason and lands in a class.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebPushInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = fuzzInput(data, size)
    // The first byte picks the parser: even a subscription, odd an answer.
    guard let selector = input.first else { return 0 }
    let rest = Array(input.dropFirst())
    if selector & 1 == 0 {
        if let subscription = try? PushSubscription.parse(rest) {
            fuzzCheck(subscription.p256dh.count == 65 && subscription.auth.count == 16, "key lengths")
            fuzzCheck(subscription.endpoint.url.lowercased().hasPrefix("https://"), "not https")
            fuzzCheck(subscription.endpoint.path.hasPrefix("/"), "a path without /")
            fuzzCheck((try? PushSubscription.parse(Array(subscription.json.utf8))) == subscription, "toJSON round trip")
            _ = try? PushServicePolicy().check(subscription.endpoint)
        }
        return 0
    }
    let status = rest.count >= 2 ? 100 + (Int(rest[0]) << 8 | Int(rest[1])) % 500 : 201
    let body = rest.count >= 2 ? Array(rest.dropFirst(2)) : rest
    let response = WebPushResponse.decode(status: status, body: body, location: nil, retryAfter: nil)
    fuzzCheck(response.status == status, "status changed")
    fuzzCheck((response.serviceReason?.utf8.count ?? 0) <= WebPushResponse.maxTextBytes, "an unbounded reason")
    fuzzCheck(!response.reasonName.isEmpty, "an empty reason name")
    let decision = OutcomePolicy(random: { 0.5 }).decide(.answer(response), attempt: 1, expiration: nil, nowSeconds: 1_700_000_000)
    if status == 201 { fuzzCheck(decision == .delivered, "a 201 was not delivered: \(decision)") }
    return 0
}
