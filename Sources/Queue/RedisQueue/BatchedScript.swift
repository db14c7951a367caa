/// Runs one of the tools' batch scripts (`replay`) over many items, 200 to a call:
/// each batch's keys and arguments come from `build`, and the script answers `{codes, problems}`, one code per
/// item and the queue keys it found of another type. The loop of `herald replay`.
enum BatchedScript {
    static let batchSize = 200

    /// `count`: called with each item's code (nil when not an integer). Returns every batch's problems.
    static func run<Item>(_ script: RedisScript, _ items: [Item], redis: any BlockingRedisCommands, what: String,
                          build: (ArraySlice<Item>) -> (keys: [[UInt8]], args: [[UInt8]]),
                          count: (Int?) -> Void) throws(RedisError) -> [QueueKeyProblem] {
        var problems: [QueueKeyProblem] = []
        var start = 0
        while start < items.count {
            let batch = items[start..<min(items.count, start + batchSize)]
            start += batch.count
            let (keys, args) = build(batch)
            let reply: RESPValue
            do {
                reply = try redis.evalScript(script, keys: keys, args: args)
            } catch {
                throw error.refined()
            }
            guard let parts = reply.array, parts.count == 2, let codes = parts[0].array, codes.count == batch.count else {
                throw .protocolError("\(what) script reply: \(reply)")
            }
            for code in codes { count(code.int.map(Int.init)) }
            problems += try QueueKeyProblem.parse(parts[1])
        }
        return problems
    }
}
