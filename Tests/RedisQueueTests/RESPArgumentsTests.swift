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

    @Test func resultFieldsWrittenInPlaceMatchTheFieldList() {
        let full = ResultEntry(id: "j1", outcome: .retrying, status: 503, reason: "ServiceUnavailable", token: "ab", topic: "t",
                               environment: "sandbox", app: "a", apnsID: "x", apnsUniqueID: "u", attempt: 3, retryAt: 99,
                               invalidSince: 7, latencyMilliseconds: 12, worker: "w")
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
