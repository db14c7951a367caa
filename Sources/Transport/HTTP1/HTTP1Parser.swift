import Glibc

/// One HTTP/1.1 request read from the front of a connection's bytes (RFC 9112): request line, header fields,
/// and a body framed by `Content-Length` or `Transfer-Encoding: chunked`. Pure (no I/O), so the fuzz target
/// and the tests feed it anything; every size it reads is bounded by `Limits` before it is trusted. The one
/// request parser of `herald api` and the worker's metrics listener.
///
/// Strict where leniency invites request smuggling: CRLF line ends only, no whitespace before a field's colon,
/// no obsolete line folding, `Content-Length` and `Transfer-Encoding` never together, one length only.
public enum HTTP1Parser {
    public struct Limits: Sendable {
        /// Request line and header fields, up to and including the blank line.
        public var maxHeadBytes = 16 * 1024
        public var maxHeaderFields = 100
        public var maxBodyBytes = 8 * 1024 * 1024
        /// An HTTP/1.1 request without a `Host` field is refused (RFC 9112 3.2: a server MUST answer it 400). On for
        /// `herald api`; the metrics listener and the simulators take what they always took.
        public var requireHost = false
        public init() {}
    }

    public struct Request: Sendable, Equatable {
        public var method: String
        /// The path without its query string.
        public var path: String
        public var query: String
        /// 0 for HTTP/1.0, 1 for HTTP/1.1.
        public var minorVersion: Int
        /// The header fields' names (lower-cased) and values back to back, one span per field in arrival order:
        /// one buffer per request instead of two strings per field, read through `header(_:)` or `headers`.
        @usableFromInline var fieldBytes: [UInt8]
        @usableFromInline var fieldSpans: [FieldSpan]
        public var body: [UInt8]

        /// A field within `fieldBytes`: its name is `nameStart..<valueStart`, its value `valueStart..<valueEnd`.
        @usableFromInline struct FieldSpan: Sendable, Equatable {
            @usableFromInline var nameStart: Int
            @usableFromInline var valueStart: Int
            @usableFromInline var valueEnd: Int
        }

        /// `headers`: names lower-cased, in arrival order.
        public init(method: String, path: String, query: String, minorVersion: Int, headers: [(name: String, value: String)], body: [UInt8]) {
            var bytes: [UInt8] = []
            var spans: [FieldSpan] = []
            for (name, value) in headers {
                let start = bytes.count
                bytes.append(contentsOf: name.utf8)
                let valueStart = bytes.count
                bytes.append(contentsOf: value.utf8)
                spans.append(FieldSpan(nameStart: start, valueStart: valueStart, valueEnd: bytes.count))
            }
            self.init(method: method, path: path, query: query, minorVersion: minorVersion, fieldBytes: bytes, fieldSpans: spans)
            self.body = body
        }

        init(method: String, path: String, query: String, minorVersion: Int, fieldBytes: [UInt8], fieldSpans: [FieldSpan]) {
            self.method = method
            self.path = path
            self.query = query
            self.minorVersion = minorVersion
            self.fieldBytes = fieldBytes
            self.fieldSpans = fieldSpans
            body = []
        }

        /// Field names lower-cased, in arrival order.
        public var headers: [(name: String, value: String)] {
            fieldSpans.map { (text(nameStart: $0.nameStart, end: $0.valueStart), text(nameStart: $0.valueStart, end: $0.valueEnd)) }
        }

        /// The value of the first field called `name` (lower-case).
        public func header(_ name: String) -> String? {
            guard let span = firstSpan(named: name) else { return nil }
            return text(nameStart: span.valueStart, end: span.valueEnd)
        }

        /// `body` over the bytes of the first field called `name` (lower-case), nil when there is none: for checks
        /// that need no string of their own. Inlinable so the API's key check is specialised, as it was in-module.
        @inlinable package func withValue<R>(of name: String, _ body: (UnsafeBufferPointer<UInt8>?) -> R) -> R {
            guard let span = firstSpan(named: name) else { return body(nil) }
            return fieldBytes.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[span.valueStart..<span.valueEnd])) }
        }

        func values(named name: String) -> [String] {
            fieldSpans.filter { matches($0, name) }.map { text(nameStart: $0.valueStart, end: $0.valueEnd) }
        }

        @usableFromInline func firstSpan(named name: String) -> FieldSpan? { fieldSpans.first { matches($0, name) } }

        private func matches(_ span: FieldSpan, _ name: String) -> Bool {
            var name = name
            let count = span.valueStart - span.nameStart
            return name.withUTF8 { wanted in
                wanted.count == count && fieldBytes.withUnsafeBufferPointer { memcmp($0.baseAddress! + span.nameStart, wanted.baseAddress!, count) == 0 }
            }
        }

        private func text(nameStart start: Int, end: Int) -> String {
            fieldBytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[start..<end]), as: UTF8.self) }
        }

        /// HTTP/1.1 keeps the connection unless told `close`; HTTP/1.0 closes unless told `keep-alive`.
        public var keepAlive: Bool {
            guard fieldSpans.contains(where: { matches($0, "connection") }) else { return minorVersion >= 1 }
            let tokens = values(named: "connection").flatMap { $0.lowercased().split(separator: ",").map { $0.trimmingWhitespace() } }
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

        public init(status: Int, message: String) {
            self.status = status
            self.message = message
        }
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
            // A head whose lines end in bare LFs never has its CRLF CRLF: refused now, not left to time out.
            if hasBareLF(bytes) { return .failure(bad("a bare LF in the request head (lines end with CRLF)")) }
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

    /// The request's head (no body) once the head is whole and good, however much of the body has come; nil
    /// before that, or when the head is refused (`parse` says why). For deciding on a request before its body.
    public static func head(_ bytes: ArraySlice<UInt8>, limits: Limits = Limits()) -> Request? {
        guard let headEnd = findHeadEnd(bytes, limit: limits.maxHeadBytes) else { return nil }
        return try? parseHead(bytes[bytes.startIndex..<(headEnd - 4)], limits: limits).0
    }

    enum Framing: Equatable {
        case none
        case length(Int)
        case chunked
    }

    /// An LF not right after a CR among `bytes` (all head: its end is not there yet).
    static func hasBareLF(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return false }
            var at = 0
            while at < buffer.count, let found = memchr(base + at, 10, buffer.count - at) {
                let i = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                if i == 0 || buffer[i - 1] != 13 { return true }
                at = i + 1
            }
            return false
        }
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
            // Eight bytes at a time past stretches holding none of CR, LF and NUL (most of a head).
            if i + 8 <= head.count, !Self.holdsCRLFOrNUL(UnsafeRawPointer(head.baseAddress! + i).loadUnaligned(as: UInt64.self)) {
                i += 8
                continue
            }
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
            // The head holds no bare LF or NUL now, so a word without CR, LF or NUL holds no line end.
            while j + 8 <= head.count, !Self.holdsCRLFOrNUL(UnsafeRawPointer(head.baseAddress! + j).loadUnaligned(as: UInt64.self)) { j += 8 }
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
        guard lineCount - 1 <= limits.maxHeaderFields else {
            throw Failure(status: 431, message: "more than \(limits.maxHeaderFields) header fields")
        }
        var spans: [Request.FieldSpan] = []
        spans.reserveCapacity(lineCount - 1)
        var contentLength: Int? = nil
        var chunked = false
        var sawTransferEncoding = false
        var hosts = 0, authorizations = 0
        var failure: Failure? = nil
        // One pass per field line: the name checked and lower-cased and the value checked, each copied once into
        // the request's field bytes (never longer than the head).
        let fieldBytes = Self.loweredTokenBytes.withUnsafeBufferPointer { loweredToken in
            [UInt8](unsafeUninitializedCapacity: max(1, head.count)) { out, written in
                var o = 0
                defer { written = o }
                var lineStart = requestEnd + 2
                while lineStart <= head.count && requestEnd < head.count {
                    var j = lineStart
                    let nameStart = o
                    while j < head.count {
                        let lowered = loweredToken[Int(head[j])]
                        if lowered == 0 { break }
                        out[o] = lowered
                        o += 1
                        j += 1
                    }
                    guard j < head.count, head[j] == 58, j > lineStart else {
                        // A name ending in whitespace, or a line starting with it (obsolete folding), is refused: proxies disagree on them.
                        let end = lineEnd(j)
                        failure = (j..<end).contains(where: { head[$0] == 58 }) ? bad("bad header field name") : bad("a header field without a colon")
                        return
                    }
                    j += 1
                    while j < head.count, head[j] == 32 || head[j] == 9 { j += 1 }
                    let valueStart = o
                    // No LF or NUL is left in the head (checked above), so the value runs to the line's CR. Eight bytes
                    // at a time while none is a control character (a tab takes the byte-wise way).
                    while j + 8 <= head.count {
                        let word = UnsafeRawPointer(head.baseAddress! + j).loadUnaligned(as: UInt64.self)
                        guard !Self.holdsControlByte(word) else { break }
                        UnsafeMutableRawPointer(out.baseAddress! + o).storeBytes(of: word, as: UInt64.self)
                        o += 8
                        j += 8
                    }
                    while j < head.count, head[j] != 13 {
                        let b = head[j]
                        guard b == 9 || (b >= 32 && b != 127) else {
                            failure = bad("a control character in a header field value")
                            return
                        }
                        out[o] = b
                        o += 1
                        j += 1
                    }
                    while o > valueStart, out[o - 1] == 32 || out[o - 1] == 9 { o -= 1 }
                    lineStart = j + 2
                    spans.append(Request.FieldSpan(nameStart: nameStart, valueStart: valueStart, valueEnd: o))
                    let name = UnsafeBufferPointer(rebasing: out[nameStart..<valueStart])
                    if Self.equals(name, "content-length") {
                        let value = UnsafeBufferPointer(rebasing: out[valueStart..<o])
                        guard !value.isEmpty, value.count <= 18, value.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                            failure = bad("Content-Length is not a decimal number")
                            return
                        }
                        let n = value.reduce(0) { $0 * 10 + Int($1 - 48) }
                        if let earlier = contentLength, earlier != n {
                            failure = bad("two different Content-Length fields")
                            return
                        }
                        contentLength = n
                    } else if Self.equals(name, "transfer-encoding") {
                        sawTransferEncoding = true
                        let value = String(decoding: UnsafeBufferPointer(rebasing: out[valueStart..<o]), as: UTF8.self)
                        guard value.lowercased().split(separator: ",").map({ $0.trimmingWhitespace() }) == ["chunked"] else {
                            failure = Failure(status: 501, message: "Transfer-Encoding \(value.debugDescription) is not supported (only chunked)")
                            return
                        }
                        // RFC 9112 6.1: chunked is applied once; a second field naming it again is not a framing to guess at.
                        guard !chunked else {
                            failure = bad("Transfer-Encoding: chunked twice")
                            return
                        }
                        chunked = true
                    } else if Self.equals(name, "host") {
                        hosts += 1
                    } else if Self.equals(name, "authorization") {
                        authorizations += 1
                    }
                }
            }
        }
        if let failure { throw failure }
        // RFC 9112 3.2: one Host at most (exactly one in HTTP/1.1 where required); one set of credentials.
        if hosts > 1 { throw bad("more than one Host field") }
        if hosts == 0 && minor == 49 && limits.requireHost { throw bad("an HTTP/1.1 request without a Host field") }
        if authorizations > 1 { throw bad("more than one Authorization field") }
        let request = Request(method: text(0, methodEnd), path: text(targetStart, mark ?? targetEnd),
                              query: mark.map { text($0 + 1, targetEnd) } ?? "", minorVersion: Int(minor - 48),
                              fieldBytes: fieldBytes, fieldSpans: spans)
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

    /// Whether any of the eight bytes of `word` is CR, LF or NUL: a zero byte of `word`, `word ^ 0x0a..` or
    /// `word ^ 0x0d..`, by the borrow trick (its result is nonzero exactly when some byte is zero).
    @inline(__always) static func holdsCRLFOrNUL(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func zeroByte(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & highs }
        return zeroByte(word) | zeroByte(word ^ (ones &* 10)) | zeroByte(word ^ (ones &* 13)) != 0
    }

    /// Whether any of the eight bytes of `word` is below 0x20 or is 0x7f (DEL): a byte below 0x20 by the borrow
    /// trick for "less than", DEL as a zero byte of `word ^ 0x7f..` (each nonzero exactly when such a byte is there).
    @inline(__always) static func holdsControlByte(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let below = (word &- ones &* 0x20) & ~word & highs
        let del = word ^ (ones &* 0x7f)
        return below | ((del &- ones) & ~del & highs) != 0
    }

    /// Per byte: the byte lower-cased when it is an RFC 9110 `tchar`, else 0 (no `tchar` is 0).
    static let loweredTokenBytes: [UInt8] = (0..<256).map { b in
        let byte = UInt8(b)
        return isTokenByte(byte) ? (byte >= 65 && byte <= 90 ? byte + 32 : byte) : 0
    }

    /// `bytes` equal to the ASCII `text`.
    @inline(__always) static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        bytes.count == text.utf8CodeUnitCount && (bytes.isEmpty || memcmp(bytes.baseAddress!, text.utf8Start, bytes.count) == 0)
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
