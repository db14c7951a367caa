import FuzzSupport
import HTTP1

/// `herald api` parses requests from whatever producers send: the parser never traps, honours its limits, and
/// reaches the same answer however the bytes arrive (a connection hands it every longer prefix in turn).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP1Parser(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = fuzzInput(data, size)
    guard let first = input.first else { return 0 }
    // The first byte picks small limits, so inputs of a few hundred bytes reach every bound.
    var limits = HTTP1Parser.Limits()
    limits.maxHeadBytes = 32 + Int(first & 0x3F) * 8
    limits.maxHeaderFields = 1 + Int(first >> 6) * 4
    limits.maxBodyBytes = Int(first) * 2
    let bytes = Array(input.dropFirst())
    let whole = HTTP1Parser.parse(bytes[...], limits: limits)
    var random = FuzzRandom(seed: input)
    switch whole {
    case .request(let request, let end):
        fuzzCheck(end > 0 && end <= bytes.count, "end \(end) outside the input")
        fuzzCheck(request.path.hasPrefix("/") && !request.path.contains("?"), "path \(request.path.debugDescription)")
        fuzzCheck(request.body.count <= limits.maxBodyBytes, "a body of \(request.body.count) bytes past the limit")
        fuzzCheck(request.headers.count <= limits.maxHeaderFields, "more fields than the limit")
        fuzzCheck(request.headers.allSatisfy { $0.name == $0.name.lowercased() && !$0.name.isEmpty }, "a field name not lower-cased")
        // Any shorter prefix is only incomplete; any longer one gives the same request at the same end.
        let short = random.next(below: end)
        if case .incomplete = HTTP1Parser.parse(bytes[..<short], limits: limits) {} else {
            fuzzCheck(false, "a prefix of \(short) bytes of a request ending at \(end) was not incomplete")
        }
        let long = end + random.next(below: bytes.count - end + 1)
        fuzzCheck(HTTP1Parser.parse(bytes[..<long], limits: limits) == whole, "a longer prefix gave another request")
        // The next request starts where this one ended: parsing from there never traps either.
        _ = HTTP1Parser.parse(bytes[end...], limits: limits)
    case .failure(let failure):
        fuzzCheck([400, 413, 431, 501, 505].contains(failure.status), "status \(failure.status)")
        fuzzCheck(!failure.message.isEmpty, "a refusal without a message")
    case .incomplete:
        // Nothing complete: no prefix is complete either.
        let short = random.next(below: bytes.count + 1)
        if case .request = HTTP1Parser.parse(bytes[..<short], limits: limits) {
            fuzzCheck(false, "a prefix of an incomplete request parsed as a request")
        }
    }
    return 0
}
