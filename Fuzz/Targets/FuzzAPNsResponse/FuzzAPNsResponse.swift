import APNs
import FuzzSupport
import PushCore

/// APNs answers (and GOAWAY debug data) come from the network: decoding never fails and never traps.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAPNsResponse(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = fuzzInput(data, size)
    // The first two bytes pick a status so the classification sees every class of answer.
    let status = input.count >= 2 ? 100 + (Int(input[0]) << 8 | Int(input[1])) % 500 : 200
    let body = input.count >= 2 ? Array(input.dropFirst(2)) : input
    let response = APNsResponse.decode(status: status, apnsID: nil, apnsUniqueID: nil, body: body)
    fuzzCheck(response.status == status, "status changed")
    if let reason = response.reason {
        fuzzCheck(JSONScanner.isObject(body), "a reason from a body that is not a JSON object")
        fuzzCheck(APNsReason(reason.rawValue) == reason, "reason \(reason.rawValue) does not survive a round trip")
    }
    fuzzCheck((APNsResponse.decodeBody(body) != nil) == JSONScanner.isObject(body), "decodeBody disagrees with the scanner")
    // What the worker decides from it must not trap either, whatever the attempt count.
    let attempt = input.isEmpty ? 1 : Int(input[input.count - 1])
    let decision = OutcomePolicy(random: { 0.5 }).decide(.response(response), attempt: attempt, expiration: response.timestamp, nowSeconds: 1_700_000_000)
    if status == 200 { fuzzCheck(decision == .delivered, "a 200 was not delivered: \(decision)") }
    return 0
}
