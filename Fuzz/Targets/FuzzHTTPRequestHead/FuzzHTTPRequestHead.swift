import FuzzSupport
@testable import Worker

/// The metrics listener reads request heads from whatever connects to its port: finding the head's end and
/// parsing its request line never trap, and agree with each other however the bytes arrive.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPRequestHead(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = fuzzInput(data, size)
    let end = HTTPRequestHead.end(of: input)
    if let end {
        fuzzCheck(end >= 2 && end <= input.count && input[end - 1] == 10, "head end \(end) is not just past a line feed")
        // The listener reads in pieces: the end is found at the same place in any prefix that holds it, and in none shorter.
        var random = FuzzRandom(seed: input)
        let cut = end + random.next(below: input.count - end + 1)
        fuzzCheck(HTTPRequestHead.end(of: Array(input[..<cut])) == end, "the end moved in a prefix that holds the whole head")
        fuzzCheck(HTTPRequestHead.end(of: Array(input[..<(end - 1)])) == nil, "an end found before the blank line")
        if let request = HTTPRequestHead.parse(input[..<end]) {
            fuzzCheck(request.path.hasPrefix("/"), "a path \(request.path.debugDescription) without its slash")
            fuzzCheck(!request.method.isEmpty && request.method.utf8.allSatisfy { $0 >= 65 && $0 <= 90 }, "method \(request.method.debugDescription)")
            fuzzCheck(!request.path.contains("?"), "the query left in the path")
        }
    }
    // A parse of any bytes (the listener only passes whole heads, but a head is whatever the peer sent).
    _ = HTTPRequestHead.parse(input[...])
    let status = input.isEmpty ? 200 : [200, 400, 404, 405, 431, 500, 503, Int(input[0])][Int(input[0]) % 8]
    let response = HTTPListener.Response(status: status, body: String(decoding: input.prefix(64), as: UTF8.self))
    let bytes = HTTPRequestHead.serialize(response, omitBody: input.count % 2 == 0)
    fuzzCheck(HTTPRequestHead.end(of: bytes) != nil, "a response head without its end")
    return 0
}
