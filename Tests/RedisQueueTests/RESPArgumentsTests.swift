import Testing
@testable import RedisClient
@testable import RedisQueue

@Suite struct RESPArgumentsTests {
    @Test func encodesBulkStringsThatDecodeBackExactly() {
        var args = RESPArguments()
        args.append("EVALSHA")
        args.append([UInt8]([0, 13, 10, 255]))
        args.append(Int64(-1234567890123))
        args.append(0)
        args.append("")
        args.append("héllo")
        #expect(args.count == 6)
        #expect(args.decoded == [Array("EVALSHA".utf8), [0, 13, 10, 255], Array("-1234567890123".utf8), Array("0".utf8), [], Array("héllo".utf8)])
        let command = args.command(prefix: [Array("A".utf8)])
        #expect(command == RESPEncoder.encode([Array("A".utf8)] + args.decoded))
    }

    /// Values of every length around the header's digit counts and the storage's growth encode as RESP, and a
    /// copy written to after the copying leaves the original as it was (the bytes are shared until then).
    @Test func valuesOfEveryLengthEncodeAsRESPAndACopyKeepsItsOwnBytes() {
        var args = RESPArguments(capacity: 8)
        var values: [[UInt8]] = []
        for length in [0, 1, 9, 10, 63, 64, 99, 100, 101, 999, 1_000, 5_000, 70_000] {
            let value = (0..<length).map { UInt8(97 + $0 % 26) }
            values.append(value)
            if length % 2 == 0 { args.append(value) } else { args.append(String(decoding: value, as: UTF8.self)) }
        }
        for number: Int64 in [0, 7, -7, 1_234_567, Int64.max, Int64.min] {
            args.append(number)
            values.append(Array(String(number).utf8))
        }
        #expect(args.count == values.count)
        #expect(args.command(prefix: []) == RESPEncoder.encode(values))

        let before = args.bytes
        var copy = args
        copy.append("more")
        var joined = RESPArguments()
        joined.append(contentsOf: args)
        joined.append(contentsOf: copy)
        #expect(args.bytes == before && args.count == values.count)
        #expect(copy.decoded == values + [Array("more".utf8)])
        #expect(joined.decoded == values + values + [Array("more".utf8)])
    }

    @Test func resultFieldsWrittenInPlaceMatchTheFieldList() {
        var full = ResultEntry(id: "j1", outcome: .retrying, status: 503, reason: "ServiceUnavailable", token: "ab", topic: "t",
                               environment: "sandbox", app: "a", apnsID: "x", apnsUniqueID: "u", attempt: 3, retryAt: 99,
                               invalidSince: 7, latencyMilliseconds: 12, worker: "w")
        full.messageID = "x"
        let sparse = ResultEntry(id: "j2", outcome: .rejected, worker: "w")
        for entry in [full, sparse] {
            var args = RESPArguments()
            entry.appendFields(to: &args)
            let expected = entry.fields.flatMap { [Array($0.0.utf8), Array($0.1.utf8)] }
            #expect(args.decoded == expected)
            #expect(entry.fieldCount == entry.fields.count)
        }
    }
}
