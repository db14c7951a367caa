/// `herald enqueue`: validates job lines and LPUSHes the good ones in pipelined batches.
public enum Enqueuer {
    public struct Refusal: Sendable, Equatable {
        /// 1-based line number in the input.
        public var line: Int
        public var reason: String
    }

    public struct EnqueueReport: Sendable, Equatable {
        public var pushed = 0
        public var refused: [Refusal] = []
        /// Lines skipped because they were empty (or only whitespace).
        public var blank = 0
    }

    /// `validate` returns nil for a good job, else why it is refused. Lines may end with "\n" or "\r\n" (stripped).
    /// A Redis error stops the run (throws); lines already pushed stay pushed.
    public static func enqueue(lines: some Sequence<[UInt8]>, redis: any BlockingRedisCommands, queueKey: String,
                               validate: ([UInt8]) -> String?, batchSize: Int = 1000) throws(RedisError) -> EnqueueReport {
        var report = EnqueueReport()
        var batch: [[UInt8]] = []
        let key = Array(queueKey.utf8)
        let size = max(1, batchSize)
        func flush() throws(RedisError) {
            guard !batch.isEmpty else { return }
            // One LPUSH per element keeps a refused element from taking its neighbours with it and stays far
            // below Redis's argument limits; the batch still goes out in one write.
            let replies = try redis.pipeline(rawCommands: batch.map { [Array("LPUSH".utf8), key, $0] })
            for reply in replies { if case .error(let message) = reply { throw .server(message) } }
            report.pushed += batch.count
            batch.removeAll(keepingCapacity: true)
        }
        var number = 0
        for var line in lines {
            number += 1
            while let last = line.last, last == 10 || last == 13 { line.removeLast() }
            if line.allSatisfy({ $0 == 32 || $0 == 9 }) {
                report.blank += 1
                continue
            }
            if let reason = validate(line) {
                report.refused.append(Refusal(line: number, reason: reason))
                continue
            }
            batch.append(line)
            if batch.count >= size { try flush() }
        }
        try flush()
        return report
    }
}
