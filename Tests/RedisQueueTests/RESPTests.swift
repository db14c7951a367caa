import Testing
@testable import RedisClient
@testable import RedisQueue

@Suite struct RESPTests {
    private func decode(_ text: String, byteByByte: Bool = false) throws -> [RESPValue] {
        let reader = RESPReader()
        var replies: [RESPValue] = []
        if byteByByte {
            for byte in Array(text.utf8) {
                try reader.feed([byte])
                while let reply = try reader.next() { replies.append(reply) }
            }
        } else {
            try reader.feed(Array(text.utf8))
            while let reply = try reader.next() { replies.append(reply) }
        }
        return replies
    }

    @Test func decodesEveryType() throws {
        let text = "+OK\r\n-ERR bad thing\r\n:-42\r\n$5\r\nhe\r\no\r\n$-1\r\n$0\r\n\r\n*-1\r\n*0\r\n*3\r\n:1\r\n*2\r\n$1\r\na\r\n$-1\r\n+x\r\n"
        let expected: [RESPValue] = [
            .simple("OK"), .error("ERR bad thing"), .integer(-42), .bulk(bytes("he\r\no")), .bulk(nil), .bulk([]),
            .bulk(nil), // hiredis reports a nil array as nil, which we surface as a nil bulk
            .array([]), .array([.integer(1), .array([.bulk(bytes("a")), .bulk(nil)]), .simple("x")]),
        ]
        #expect(try decode(text) == expected)
        #expect(try decode(text, byteByByte: true) == expected)
    }

    @Test func binaryBulkKeepsEveryByte() throws {
        let payload: [UInt8] = [0, 255, 13, 10, 0xC3, 0x28]
        let reader = RESPReader()
        try reader.feed(RESPEncoder.encode([payload, [], bytes("x")]))
        let reply = try #require(try reader.next())
        #expect(reply == .array([.bulk(payload), .bulk([]), .bulk(bytes("x"))]))
    }

    @Test func garbageIsAProtocolError() throws {
        let reader = RESPReader()
        try reader.feed(bytes("?what\r\n"))
        #expect(throws: RedisError.self) { try reader.next() }
    }

    /// Found by fuzzing: hiredis 0.14 allocates a pointer per announced element up front, so a 12-byte header
    /// made it reserve 3.2 GB. The reader refuses it as a protocol error before anything is allocated.
    @Test func arrayHeaderAboveTheElementLimitIsAProtocolError() throws {
        for text in ["*400000000\r\n", "*2\r\n:1\r\n*400000000\r\n"] {
            let reader = RESPReader()
            try reader.feed(bytes(text))
            do {
                _ = try reader.next()
                Issue.record("\(text.debugDescription) was accepted")
            } catch {
                guard case .protocolError(let message) = error else { Issue.record("\(error)"); continue }
                #expect(message.contains("400000000") && message.contains("limit"), "\(message)")
            }
        }
        #expect(try decode("*2\r\n:1\r\n*1\r\n:2\r\n") == [.array([.integer(1), .array([.integer(2)])])])
    }

    @Test func helpers() {
        #expect(RESPValue.bulk(bytes("12")).int == 12)
        #expect(RESPValue.integer(7).string == "7")
        #expect(RESPValue.simple("PONG").string == "PONG")
        #expect(RESPValue.bulk(nil).isNil)
        #expect(RESPValue.error("NOSCRIPT x").errorMessage == "NOSCRIPT x")
        #expect(RESPValue.array([.integer(1)]).array == [.integer(1)])
    }

    @Test func sha1MatchesKnownVectors() {
        #expect(SHA1.hex(bytes("abc")) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(SHA1.hex([]) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(SHA1.hex(Array(repeating: UInt8(ascii: "a"), count: 1_000)) == "291e9a6c66994949b57ba5e650361e98fc36b1ba")
    }

    @Test func urlParsing() throws {
        let plain = try RedisURL(parsing: "redis://127.0.0.1:6390/2")
        #expect(plain.endpoint == .tcp(host: "127.0.0.1", port: 6390))
        #expect(plain.database == 2)
        #expect(plain.user == nil && plain.password == nil)
        let acl = try RedisURL(parsing: "redis://herald:s%40cret@redis.example:6380")
        #expect(acl.user == "herald" && acl.password == "s@cret" && acl.database == 0)
        #expect(acl.handshake == [[bytes("AUTH"), bytes("herald"), bytes("s@cret")]])
        #expect(!acl.description.contains("cret"))
        let passwordOnly = try RedisURL(parsing: "redis://:pw@localhost/3")
        #expect(passwordOnly.user == nil && passwordOnly.password == "pw")
        #expect(passwordOnly.handshake == [[bytes("AUTH"), bytes("pw")], [bytes("SELECT"), bytes("3")]])
        #expect(try RedisURL(parsing: "redis://localhost").endpoint == .tcp(host: "localhost", port: 6379))
        #expect(try RedisURL(parsing: "redis://[::1]:7000/1").endpoint == .tcp(host: "::1", port: 7000))
        let unix = try RedisURL(parsing: "unix:///run/redis/redis.sock?db=4")
        #expect(unix.endpoint == .unix(path: "/run/redis/redis.sock") && unix.database == 4)
        let secure = try RedisURL(parsing: "rediss://app:pw@redis.example.com:6380/2")
        #expect(secure.tls && secure.endpoint == .tcp(host: "redis.example.com", port: 6380) && secure.database == 2)
        #expect(secure.description == "rediss://app:***@redis.example.com:6380/2")
        #expect(!(try RedisURL(parsing: "redis://h:6379")).tls)
        for bad in ["localhost:6379", "http://x", "redis://", "redis://h:70000", "redis://h/abc", "unix://relative",
                    "rediss://", "unix:///x?db=-1"] {
            #expect(throws: RedisURL.ParseError.self, "\(bad)") { try RedisURL(parsing: bad) }
        }
    }
}
