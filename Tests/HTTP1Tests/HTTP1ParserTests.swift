import Foundation
import Testing
@testable import HTTP1

@Suite struct HTTP1ParserTests {
    private func parse(_ text: String, limits: HTTP1Parser.Limits = HTTP1Parser.Limits()) -> HTTP1Parser.Outcome {
        HTTP1Parser.parse(Array(text.utf8)[...], limits: limits)
    }

    @Test func readsARequestWithAContentLengthBodyAndWhereTheNextOneStarts() {
        let text = "POST /v1/jobs?validate_only=true HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}GET /healthz HTTP/1.1\r\n\r\n"
        guard case .request(let request, let end) = parse(text) else { Issue.record("no request"); return }
        #expect(request.method == "POST")
        #expect(request.path == "/v1/jobs")
        #expect(request.query == "validate_only=true")
        #expect(request.body == Array("{}".utf8))
        #expect(request.header("host") == "x")
        #expect(request.keepAlive)
        let bytes = Array(text.utf8)
        guard case .request(let next, _) = HTTP1Parser.parse(bytes[end...]) else { Issue.record("no second request"); return }
        #expect(next.path == "/healthz")
    }

    /// The head's end is found at any alignment and after runs of CRs and LFs that are not it; names are lower-cased,
    /// values trimmed, the request line split at exactly two spaces.
    @Test func findsTheHeadsEndAnywhereAndReadsItsFieldsExactly() {
        for pad in 0..<9 {
            let filler = String(repeating: "a", count: pad)
            let text = "GET /\(filler)?q=\(filler) HTTP/1.1\r\nX-Odd: \r\r\nHost:  \t h\(filler) \t\r\nAuthorization: Bearer k\r\n\r\nNEXT"
            let bytes = Array(text.utf8)
            // The bare CR inside X-Odd refuses the head, wherever it falls.
            guard case .failure(let failure) = HTTP1Parser.parse(bytes[...]) else { Issue.record("pad \(pad): a bare CR passed"); continue }
            #expect(failure.message == "a bare CR in the request head")
            let clean = text.replacingOccurrences(of: "X-Odd: \r\r\n", with: "X-ODD: \r\n")
            guard case .request(let request, let end) = HTTP1Parser.parse(Array(clean.utf8)[...]) else { Issue.record("pad \(pad): no request"); continue }
            #expect(end == clean.utf8.count - 4, "pad \(pad)")
            #expect(request.method == "GET" && request.path == "/\(filler)" && request.query == "q=\(filler)" && request.minorVersion == 1)
            #expect(request.headers.map(\.name) == ["x-odd", "host", "authorization"])
            #expect(request.headers.map(\.value) == ["", "h\(filler)", "Bearer k"])
        }
        #expect(parse("GET / HTTP/1.1\r\nA: b\r\n\r") == .incomplete(expectsContinue: false))
        #expect(parse("GET / HTTP/1.1\r\n\n\r\n\r\n") != .incomplete(expectsContinue: false))
        for line in ["GET  / HTTP/1.1", "GET / HTTP/1.1 ", " GET / HTTP/1.1", "GET /"] {
            guard case .failure(let failure) = parse(line + "\r\n\r\n") else { Issue.record("\(line) passed"); continue }
            #expect(failure.status == 400, "\(line)")
        }
    }

    /// `tchar` of RFC 9110, byte for byte over all 256.
    @Test func tokenBytesAreRFC9110sTchar() {
        let tchar = Set(Array("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8))
        for byte in 0...255 { #expect(HTTP1Parser.isTokenByte(UInt8(byte)) == tchar.contains(UInt8(byte)), "byte \(byte)") }
    }

    @Test func waitsForTheRestOfAHeadOrBodyAndAsksForContinueOnlyWhenTold() {
        #expect(parse("POST /v1/jobs HTTP/1.1\r\nContent-Le") == .incomplete(expectsContinue: false))
        #expect(parse("POST /v1/jobs HTTP/1.1\r\nContent-Length: 5\r\n\r\n{}") == .incomplete(expectsContinue: false))
        #expect(parse("POST /v1/jobs HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n") == .incomplete(expectsContinue: true))
    }

    @Test func decodesAChunkedBodyWithExtensionsAndTrailers() {
        let text = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n"
        guard case .request(let request, let end) = parse(text) else { Issue.record("no request"); return }
        #expect(request.body == Array("abcde".utf8))
        #expect(end == text.utf8.count)
        #expect(parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab") == .incomplete(expectsContinue: false))
    }

    @Test func refusesWhatInvitesRequestSmuggling() {
        func status(_ text: String) -> Int? {
            if case .failure(let failure) = parse(text) { return failure.status }
            return nil
        }
        #expect(status("POST / HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n") == 400)
        #expect(status("POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n") == 400)
        #expect(status("POST / HTTP/1.1\r\nContent-Length : 2\r\n\r\n") == 400)
        #expect(status("POST / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n") == 400)
        #expect(status("POST / HTTP/1.1\nHost: x\r\n\r\n") == 400)
        #expect(status("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n") == 400)
        #expect(status("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n") == 501)
        #expect(status("GET / HTTP/2.0\r\n\r\n") == 505)
        #expect(status("GET http://x/ HTTP/1.1\r\n\r\n") == 400)
    }

    /// Issue 51, item 5: what RFC 9112 makes a 400 and the parser took: `chunked` twice, two `Host` fields, two
    /// `Authorization` fields, (where required, as `herald api` does) an HTTP/1.1 request without `Host`, and a
    /// head whose lines end in bare LFs.
    @Test func refusesRepeatedChunkedHostAndAuthorizationAndAMissingHostWhereRequired() {
        func refusal(_ text: String, requireHost: Bool = false) -> String? {
            var limits = HTTP1Parser.Limits()
            limits.requireHost = requireHost
            if case .failure(let failure) = parse(text, limits: limits) { return "\(failure.status) \(failure.message)" }
            return nil
        }
        #expect(refusal("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") == "400 Transfer-Encoding: chunked twice")
        #expect(refusal("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n") == "400 more than one Host field")
        #expect(refusal("GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n") == "400 more than one Host field")
        #expect(refusal("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer k\r\nauthorization: Bearer k\r\n\r\n") == "400 more than one Authorization field")
        #expect(refusal("GET / HTTP/1.1\r\n\r\n", requireHost: true) == "400 an HTTP/1.1 request without a Host field")
        // A head of bare LFs is refused as soon as one is there (it never had its CRLF CRLF: no answer, then a timeout).
        #expect(refusal("GET / HTTP/1.1\nHost: a\n\n") == "400 a bare LF in the request head (lines end with CRLF)")
        #expect(refusal("GET / HTTP/1.1\n") == "400 a bare LF in the request head (lines end with CRLF)")
        #expect(refusal("\n") == "400 a bare LF in the request head (lines end with CRLF)")
        #expect(parse("GET / HTTP/1.1\r\nHost: a\r") == .incomplete(expectsContinue: false))
        // HTTP/1.0 has no Host requirement; with one Host, one Authorization and one chunked all is as before.
        #expect(refusal("GET / HTTP/1.0\r\n\r\n", requireHost: true) == nil)
        #expect(refusal("GET / HTTP/1.1\r\n\r\n") == nil)
        #expect(refusal("POST / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer k\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", requireHost: true) == nil)
    }

    @Test func boundsTheHeadTheFieldCountAndTheBody() {
        var limits = HTTP1Parser.Limits()
        limits.maxHeadBytes = 64
        limits.maxHeaderFields = 2
        limits.maxBodyBytes = 4
        func status(_ text: String) -> Int? {
            if case .failure(let failure) = parse(text, limits: limits) { return failure.status }
            return nil
        }
        #expect(status("GET / HTTP/1.1\r\nX: " + String(repeating: "a", count: 80)) == 431)
        #expect(status("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n") == 431)
        #expect(status("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\n") == 413)
        #expect(status("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n0\r\n\r\n") == 413)
        // The number of chunks is bounded too (each read walks them again while the body is incomplete).
        let many = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + String(repeating: "1\r\na\r\n", count: HTTP1Parser.maxChunks + 1)
        guard case .failure(let failure) = parse(many) else { Issue.record("4097 chunks were not refused"); return }
        #expect(failure.status == 413)
    }

    @Test func keepsHTTP11ConnectionsUnlessToldToCloseAndHTTP10OnlyWhenAsked() {
        func keepAlive(_ text: String) -> Bool? {
            if case .request(let request, _) = parse(text) { return request.keepAlive }
            return nil
        }
        #expect(keepAlive("GET / HTTP/1.1\r\nConnection: close\r\n\r\n") == false)
        #expect(keepAlive("GET / HTTP/1.0\r\n\r\n") == false)
        #expect(keepAlive("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n") == true)
    }
}

/// The word-at-a-time checks the parser skips ahead with, against their byte-wise definitions.
@Suite struct HTTP1WordCheckTests {
    /// Every byte value at every position of a word (over two backgrounds, so borrows from below are exercised).
    @Test func aWordHoldsALineEndOrAControlByteExactlyWhenOneOfItsBytesIs() {
        for background: UInt8 in [0x41, 0xff] {
            for position in 0..<8 {
                for value in 0...255 {
                    var bytes = [UInt8](repeating: background, count: 8)
                    bytes[position] = UInt8(value)
                    if position > 0 { bytes[position - 1] = UInt8(truncatingIfNeeded: value &+ 1) }
                    let word = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
                    #expect(HTTP1Parser.holdsCRLFOrNUL(word) == bytes.contains { $0 == 0 || $0 == 10 || $0 == 13 }, "\(bytes)")
                    #expect(HTTP1Parser.holdsControlByte(word) == bytes.contains { $0 < 32 || $0 == 127 }, "\(bytes)")
                }
            }
        }
    }

    /// Field values of every length around the word size, with a tab or DEL at every place: read whole, or refused.
    @Test func valuesOfEveryLengthAreReadWholeAndAControlByteAnywhereRefusesThem() {
        for length in 0..<20 {
            let value = String((0..<length).map { Character(UnicodeScalar(UInt8(97 + $0 % 26))) })
            let text = "GET / HTTP/1.1\r\nA: \(value)\r\nB-Second: \(value)x\r\n\r\n"
            guard case .request(let request, _) = HTTP1Parser.parse(Array(text.utf8)[...]) else { Issue.record("length \(length)"); continue }
            #expect(request.header("a") == value && request.header("b-second") == value + "x")
            for place in 0..<length {
                var tabbed = Array(value.utf8)
                tabbed[place] = 9
                let withTab = "GET / HTTP/1.1\r\nA: " + String(decoding: tabbed, as: UTF8.self) + "\r\n\r\n"
                guard case .request(let tabRequest, _) = HTTP1Parser.parse(Array(withTab.utf8)[...]) else { Issue.record("tab at \(place)"); continue }
                // A tab at either end is whitespace around the value, inside it it is kept.
                var trimmed = tabbed[...]
                while trimmed.first == 9 { trimmed = trimmed.dropFirst() }
                while trimmed.last == 9 { trimmed = trimmed.dropLast() }
                #expect(tabRequest.header("a") == String(decoding: trimmed, as: UTF8.self))
                tabbed[place] = 127
                let withDEL = Array("GET / HTTP/1.1\r\nA: ".utf8) + tabbed + Array("\r\n\r\n".utf8)
                #expect(HTTP1Parser.parse(withDEL[...]) == .failure(HTTP1Parser.Failure(status: 400, message: "a control character in a header field value")))
            }
        }
    }

    @Test func headersAreLookedUpByTheirLowerCasedNameAndTheFirstOneWins() {
        let text = "GET / HTTP/1.1\r\nX-Key: one\r\nx-key: two\r\nAuthorization: Bearer k\r\n\r\n"
        guard case .request(let request, _) = HTTP1Parser.parse(Array(text.utf8)[...]) else { Issue.record("no request"); return }
        #expect(request.header("x-key") == "one")
        #expect(request.header("X-Key") == nil)
        #expect(request.header("x-ke") == nil && request.header("x-keys") == nil)
        #expect(request.values(named: "x-key") == ["one", "two"])
        let built = HTTP1Parser.Request(method: "GET", path: "/", query: "", minorVersion: 1, headers: request.headers, body: [])
        #expect(built == HTTP1Parser.Request(method: "GET", path: "/", query: "", minorVersion: 1, headers: [("x-key", "one"), ("x-key", "two"), ("authorization", "Bearer k")], body: []))
        #expect(built.header("authorization") == "Bearer k")
    }
}
