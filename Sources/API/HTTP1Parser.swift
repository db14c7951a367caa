/// One HTTP/1.1 request read from the front of a connection's bytes (RFC 9112): request line, header fields,
/// and a body framed by `Content-Length` or `Transfer-Encoding: chunked`. Pure (no I/O), so the fuzz target
/// and the tests feed it anything; every size it reads is bounded by `Limits` before it is trusted.
///
/// Strict where leniency invites request smuggling: CRLF line ends only, no whitespace before a field's colon,
/// no obsolete line folding, `Content-Length` and `Transfer-Encoding` never together, one length only.
public enum HTTP1Parser {
    public struct Limits: Sendable {
        /// Request line and header fields, up to and including the blank line.
        public var maxHeadBytes = 16 * 1024
        public var maxHeaderFields = 100
        public var maxBodyBytes = 8 * 1024 * 1024
        public init() {}
    }

    public struct Request: Sendable, Equatable {
        public var method: String
        /// The path without its query string.
        public var path: String
        public var query: String
        /// 0 for HTTP/1.0, 1 for HTTP/1.1.
        public var minorVersion: Int
        /// Field names lower-cased, in arrival order.
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

        /// HTTP/1.1 keeps the connection unless told `close`; HTTP/1.0 closes unless told `keep-alive`.
        public var keepAlive: Bool {
            let tokens = headers.filter { $0.name == "connection" }.flatMap { $0.value.lowercased().split(separator: ",").map { $0.trimmingWhitespace() } }
            return minorVersion >= 1 ? !tokens.contains("close") : tokens.contains("keep-alive")
        }

        public static func == (a: Request, b: Request) -> Bool {
            a.method == b.method && a.path == b.path && a.query == b.query && a.minorVersion == b.minorVersion
                && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value) && a.body == b.body
        }
    }

    /// A request the parser refuses, with the status to answer before closing the connection.
    public struct Failure: Error, Sendable, Equatable {
        public var status: Int
        public var message: String
    }

    public enum Outcome: Sendable, Equatable {
        /// More bytes are needed. `expectsContinue`: the head is complete and asks for `100 Continue`.
        case incomplete(expectsContinue: Bool)
        /// A whole request, and where the next one starts.
        case request(Request, end: Int)
        case failure(Failure)
    }

    public static func parse(_ bytes: ArraySlice<UInt8>, limits: Limits = Limits()) -> Outcome {
        let start = bytes.startIndex
        guard let headEnd = findHeadEnd(bytes, limit: limits.maxHeadBytes) else {
            if bytes.count > limits.maxHeadBytes { return .failure(Failure(status: 431, message: "request head larger than \(limits.maxHeadBytes) bytes")) }
            return .incomplete(expectsContinue: false)
        }
        var request: Request
        var framing: Framing
        do {
            (request, framing) = try parseHead(bytes[start..<(headEnd - 4)], limits: limits)
        } catch {
            return .failure(error)
        }
        let expectsContinue = request.minorVersion >= 1 && request.header("expect")?.lowercased() == "100-continue"
        switch framing {
        case .none:
            return .request(request, end: headEnd)
        case .length(let length):
            guard bytes.endIndex - headEnd >= length else { return .incomplete(expectsContinue: expectsContinue) }
            request.body = Array(bytes[headEnd..<(headEnd + length)])
            return .request(request, end: headEnd + length)
        case .chunked:
            switch dechunk(bytes[headEnd...], limits: limits) {
            case .incomplete: return .incomplete(expectsContinue: expectsContinue)
            case .failure(let failure): return .failure(failure)
            case .body(let body, let end):
                request.body = body
                return .request(request, end: end)
            }
        }
    }

    enum Framing: Equatable {
        case none
        case length(Int)
        case chunked
    }

    /// The index just past the CRLF CRLF ending the head, looked for only within `limit` bytes.
    static func findHeadEnd(_ bytes: ArraySlice<UInt8>, limit: Int) -> Int? {
        let count = min(bytes.count, limit)
        guard count >= 4 else { return nil }
        let found: Int? = bytes.withUnsafeBufferPointer { buffer in
            var i = 0
            while i + 3 < count {
                // Most bytes are not CR: step past them without reading the other three.
                if buffer[i + 3] != 10 { i += buffer[i + 3] == 13 ? 1 : 4; continue }
                if buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 { return i + 4 }
                i += 1
            }
            return nil
        }
        return found.map { bytes.startIndex + $0 }
    }

    static func parseHead(_ head: ArraySlice<UInt8>, limits: Limits) throws(Failure) -> (Request, Framing) {
        let parsed: Result<(Request, Framing), Failure> = head.withUnsafeBufferPointer { buffer in
            do throws(Failure) { return .success(try parseHead(buffer, limits: limits)) } catch { return .failure(error) }
        }
        return try parsed.get()
    }

    /// The head without its final CRLF CRLF, read in place: lines are found as they are read and only the fields'
    /// names and values become strings (names lower-cased byte by byte, as field names are ASCII tokens).
    private static func parseHead(_ head: UnsafeBufferPointer<UInt8>, limits: Limits) throws(Failure) -> (Request, Framing) {
        // Every CR ends a line with its LF; a bare CR or LF or a NUL anywhere refuses the head before anything else.
        var lineCount = 1
        var i = 0
        while i < head.count {
            switch head[i] {
            case 13:
                guard i + 1 < head.count, head[i + 1] == 10 else { throw bad("a bare CR in the request head") }
                lineCount += 1
                i += 2
            case 10: throw bad("a bare LF in the request head (lines end with CRLF)")
            case 0: throw bad("a NUL byte in the request head")
            default: i += 1
            }
        }
        /// The end of the line starting at `from` (the index of its CR, or the head's end).
        func lineEnd(_ from: Int) -> Int {
            var j = from
            while j < head.count && head[j] != 13 { j += 1 }
            return j
        }
        func text(_ from: Int, _ to: Int) -> String { String(decoding: UnsafeBufferPointer(rebasing: head[from..<to]), as: UTF8.self) }

        let requestEnd = lineEnd(0)
        var firstSpace = -1, secondSpace = -1, moreSpaces = false
        for j in 0..<requestEnd where head[j] == 32 {
            if firstSpace < 0 { firstSpace = j } else if secondSpace < 0 { secondSpace = j } else { moreSpaces = true; break }
        }
        guard secondSpace >= 0, !moreSpaces else { throw bad("the request line is not METHOD SP target SP HTTP/1.x") }
        let methodEnd = firstSpace, targetStart = firstSpace + 1, targetEnd = secondSpace, versionStart = secondSpace + 1
        guard methodEnd > 0, methodEnd <= 16, (0..<methodEnd).allSatisfy({ isTokenByte(head[$0]) }) else { throw bad("bad method") }
        let version = UnsafeBufferPointer(rebasing: head[versionStart..<requestEnd])
        guard version.count == 8, version.starts(with: "HTTP/1.".utf8), let minor = version.last, minor == 48 || minor == 49 else {
            throw Failure(status: 505, message: "only HTTP/1.0 and HTTP/1.1 are served on this connection")
        }
        guard targetEnd > targetStart, head[targetStart] == UInt8(ascii: "/"), (targetStart..<targetEnd).allSatisfy({ head[$0] > 32 && head[$0] < 127 }) else {
            throw bad("the request target must be an absolute path")
        }
        let mark = (targetStart..<targetEnd).first { head[$0] == UInt8(ascii: "?") }
        var request = Request(method: text(0, methodEnd), path: text(targetStart, mark ?? targetEnd),
                              query: mark.map { text($0 + 1, targetEnd) } ?? "", minorVersion: Int(minor - 48), headers: [], body: [])
        guard lineCount - 1 <= limits.maxHeaderFields else {
            throw Failure(status: 431, message: "more than \(limits.maxHeaderFields) header fields")
        }
        request.headers.reserveCapacity(lineCount - 1)
        var contentLength: Int? = nil
        var chunked = false
        var sawTransferEncoding = false
        var lineStart = requestEnd + 2
        while lineStart <= head.count && requestEnd < head.count {
            let end = lineEnd(lineStart)
            defer { lineStart = end + 2 }
            guard let colon = (lineStart..<end).first(where: { head[$0] == 58 }) else { throw bad("a header field without a colon") }
            // A name ending in whitespace, or a line starting with it (obsolete folding), is refused: proxies disagree on them.
            guard colon > lineStart, (lineStart..<colon).allSatisfy({ isTokenByte(head[$0]) }) else { throw bad("bad header field name") }
            var valueStart = colon + 1, valueEnd = end
            while valueStart < valueEnd, head[valueStart] == 32 || head[valueStart] == 9 { valueStart += 1 }
            while valueEnd > valueStart, head[valueEnd - 1] == 32 || head[valueEnd - 1] == 9 { valueEnd -= 1 }
            guard (valueStart..<valueEnd).allSatisfy({ head[$0] == 9 || (head[$0] >= 32 && head[$0] != 127) }) else {
                throw bad("a control character in a header field value")
            }
            let lowered = String(unsafeUninitializedCapacity: colon - lineStart) { out in
                for k in 0..<(colon - lineStart) {
                    let b = head[lineStart + k]
                    out[k] = b >= 65 && b <= 90 ? b + 32 : b
                }
                return colon - lineStart
            }
            let value = text(valueStart, valueEnd)
            request.headers.append((lowered, value))
            switch lowered {
            case "content-length":
                guard !value.isEmpty, value.utf8.count <= 18, value.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let n = Int(value) else {
                    throw bad("Content-Length is not a decimal number")
                }
                if let earlier = contentLength, earlier != n { throw bad("two different Content-Length fields") }
                contentLength = n
            case "transfer-encoding":
                sawTransferEncoding = true
                let codings = value.lowercased().split(separator: ",").map { $0.trimmingWhitespace() }
                guard codings == ["chunked"] else {
                    throw Failure(status: 501, message: "Transfer-Encoding \(value.debugDescription) is not supported (only chunked)")
                }
                chunked = true
            default: break
            }
        }
        if sawTransferEncoding && contentLength != nil { throw bad("both Content-Length and Transfer-Encoding") }
        if request.minorVersion == 0 && chunked { throw bad("chunked framing is HTTP/1.1") }
        if let contentLength {
            guard contentLength <= limits.maxBodyBytes else { throw tooLarge(limits) }
            return (request, contentLength == 0 ? .none : .length(contentLength))
        }
        return (request, chunked ? .chunked : .none)
    }

    enum Dechunked {
        case incomplete
        case failure(Failure)
        case body([UInt8], end: Int)
    }

    /// The most chunks one body may have: a connection re-reads an incomplete body's chunk headers on every
    /// read, so their number (not their bytes) bounds that work.
    static let maxChunks = 4096

    /// A chunked body: `size[;ext] CRLF data CRLF` ... `0 CRLF [trailer fields CRLF] CRLF`; trailers are read and
    /// dropped. The data is copied only once the body is complete.
    static func dechunk(_ bytes: ArraySlice<UInt8>, limits: Limits) -> Dechunked {
        var pieces: [Range<Int>] = []
        var total = 0
        var i = bytes.startIndex
        while true {
            guard let lineEnd = crlf(bytes, from: i, within: 1024) else {
                return bytes.endIndex - i > 1024 ? .failure(bad("a chunk size line longer than 1024 bytes")) : .incomplete
            }
            var size = 0
            var digits = 0
            var j = i
            while j < lineEnd, let digit = hexDigit(bytes[j]) {
                digits += 1
                guard digits <= 8 else { return .failure(tooLarge(limits)) }
                size = size * 16 + Int(digit)
                j += 1
            }
            guard digits > 0, j == lineEnd || bytes[j] == 59 || bytes[j] == 32 || bytes[j] == 9 else { return .failure(bad("a bad chunk size")) }
            guard total + size <= limits.maxBodyBytes else { return .failure(tooLarge(limits)) }
            i = lineEnd + 2
            if size == 0 {
                // Trailer fields until an empty line.
                var fields = 0
                while true {
                    guard let end = crlf(bytes, from: i, within: limits.maxHeadBytes) else {
                        return bytes.endIndex - i > limits.maxHeadBytes ? .failure(bad("chunked trailer too large")) : .incomplete
                    }
                    if end == i {
                        var body: [UInt8] = []
                        body.reserveCapacity(total)
                        for piece in pieces { body.append(contentsOf: bytes[piece]) }
                        return .body(body, end: end + 2)
                    }
                    fields += 1
                    guard fields <= limits.maxHeaderFields else { return .failure(bad("too many trailer fields")) }
                    i = end + 2
                }
            }
            guard pieces.count < maxChunks else { return .failure(Failure(status: 413, message: "a chunked body of more than \(maxChunks) chunks")) }
            guard bytes.endIndex - i >= size + 2 else { return .incomplete }
            guard bytes[i + size] == 13, bytes[i + size + 1] == 10 else { return .failure(bad("chunk data not followed by CRLF")) }
            pieces.append(i..<(i + size))
            total += size
            i += size + 2
        }
    }

    /// The index of the next CRLF at or after `from`, searched for within `within` bytes.
    private static func crlf(_ bytes: ArraySlice<UInt8>, from: Int, within: Int) -> Int? {
        var k = from
        let end = min(bytes.endIndex, from + within + 2)
        while k + 1 < end {
            if bytes[k] == 13 && bytes[k + 1] == 10 { return k }
            k += 1
        }
        return nil
    }

    private static func hexDigit(_ b: UInt8) -> UInt8? {
        switch b {
        case 48...57: b - 48
        case 65...70: b - 55
        case 97...102: b - 87
        default: nil
        }
    }

    /// RFC 9110's `tchar` (`!#$%&'*+-.^_\`|~`, digits, letters) as two bit masks, one test per byte.
    @inline(__always) static func isTokenByte(_ b: UInt8) -> Bool {
        b < 64 ? (0x03FF_6CFA_0000_0000 as UInt64) >> b & 1 == 1 : b < 128 && (0x57FF_FFFF_C7FF_FFFE as UInt64) >> (b - 64) & 1 == 1
    }

    private static func bad(_ message: String) -> Failure { Failure(status: 400, message: message) }
    private static func tooLarge(_ limits: Limits) -> Failure {
        Failure(status: 413, message: "request body larger than \(limits.maxBodyBytes) bytes")
    }
}

extension Substring {
    func trimmingWhitespace() -> Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return s
    }
}
