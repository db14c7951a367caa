import APNs
import FuzzSupport
import PushCore
@testable import Simulators

/// The simulator's checks of one request: headers and body from the network must give an answer, never a trap.
/// Input: `name: value` lines, an empty line, then the body (like HTTP/1, so seeds are readable).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestRules(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = fuzzInput(data, size)
    let request = IncomingRequest(streamID: 1)
    var index = 0
    while index < input.count {
        let end = input[index...].firstIndex(of: UInt8(ascii: "\n")) ?? input.count
        defer { index = end + 1 }
        if end == index { break }  // the empty line: the body follows
        let line = Array(input[index..<end])
        let colon = line.dropFirst().firstIndex(of: UInt8(ascii: ":")) ?? line.count  // a leading ':' is a pseudo-header's
        let name = Array(line[..<colon])
        let value = Array(line[min(colon + 1, line.count)...].drop { $0 == UInt8(ascii: " ") })
        name.withUnsafeBufferPointer { n in value.withUnsafeBufferPointer { v in request.setHeader(name: n, value: v) } }
    }
    let body = index < input.count ? Array(input[index...]) : []
    var random = FuzzRandom(seed: input)
    for piece in random.chunks(of: body) { piece.withUnsafeBufferPointer { request.append(body: $0) } }

    if case .success(let token) = RequestRules.deviceToken(method: request.method, path: request.path) {
        fuzzCheck(isHexToken(token), "accepted device token \(token)")
    }
    let requirePushType = input.first.map { $0 & 1 == 1 } ?? false
    if let rejection = RequestRules.validate(request, topic: request.topic, requirePushType: requirePushType) {
        fuzzCheck([400, 404, 405, 413].contains(rejection.status), "status \(rejection.status)")
        fuzzCheck(APNsReason(rejection.reason).documentedStatus == rejection.status, "\(rejection.reason) answered with \(rejection.status)")
    } else {
        fuzzCheck(!request.bodyTruncated && request.body.count <= 5120, "accepted a \(request.body.count)-byte payload")
        fuzzCheck(JSONShape.isObject(request.body), "accepted a payload that is not an object")
    }
    // The simulator's quick shape check accepts every object the worker's strict scanner accepts
    // (below the simulator's smaller depth limit), or it would refuse payloads Herald sends.
    if JSONScanner.isObject(request.body, maxDepth: 62) {
        fuzzCheck(JSONShape.isObject(request.body), "the simulator refuses an object the scanner accepts")
    }
    return 0
}
