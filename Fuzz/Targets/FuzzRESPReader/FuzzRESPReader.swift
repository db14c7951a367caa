import FuzzSupport
@testable import RedisClient

/// Redis replies as hiredis reads them: bytes fed in random pieces give the same replies as fed whole.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRESPReader(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = fuzzInput(data, size)
    let whole = read([input])
    var random = FuzzRandom(seed: input)
    let pieces = read(random.chunks(of: input))
    fuzzCheck(whole == pieces, "whole: \(whole), in pieces: \(pieces)")
    for value in whole.replies { touch(value) }
    return 0
}

private struct Outcome: Equatable {
    var replies: [RESPValue] = []
    var failed = false
}

private func read(_ pieces: [[UInt8]]) -> Outcome {
    let reader = RESPReader()
    var outcome = Outcome()
    do {
        for piece in pieces {
            try reader.feed(piece)
            while let reply = try reader.next() { outcome.replies.append(reply) }
        }
    } catch {
        outcome.failed = true
    }
    return outcome
}

/// The accessors the queue code uses on replies never trap.
private func touch(_ value: RESPValue) {
    _ = value.string
    _ = value.bytes
    _ = value.int
    _ = value.isNil
    _ = value.errorMessage
    for item in value.array ?? [] { touch(item) }
}
