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
        /// Valid lines Redis refused (a queue key of the wrong type, say), the key named in each reason: every
        /// other valid line was pushed, so a re-run of only these sends nothing twice.
        public var notPushed: [Refusal] = []
        /// Lines skipped because they were empty (or only whitespace).
        public var blank = 0
        /// Pushed jobs by queue key.
        public var pushedByQueue: [String: Int] = [:]
        /// The pushed lines (1-based numbers), as ranges in input order.
        public var pushedLines: [ClosedRange<Int>] = []
        /// Set when the connection to Redis was lost part way: the run stopped there.
        public var interruption: Interruption?

        mutating func pushed(line: Int) {
            if let last = pushedLines.last, last.upperBound == line - 1 {
                pushedLines[pushedLines.count - 1] = last.lowerBound...line
            } else {
                pushedLines.append(line...line)
            }
        }
    }

    /// Where a run that lost Redis stopped: a re-run of the input from `notPushedFrom` on sends nothing twice.
    public struct Interruption: Sendable, Equatable {
        public var error: RedisError
        /// The lines whose LPUSH was on its way when the connection went: each may or may not be in its queue
        /// (Redis applies a pipeline in order, but its replies were lost). Their ids tell (`herald stats`,
        /// the idempotency window).
        public var inDoubt: ClosedRange<Int>
        /// No line from this one on was pushed (nor read: the run stopped).
        public var notPushedFrom: Int
    }

    /// What to do with one line: push it onto a queue key, or refuse it with a reason.
    public enum Admission: Sendable, Equatable {
        case push(queueKey: String)
        case refuse(String)
    }

    /// `validate` returns nil for a good job, else why it is refused. Lines may end with "\n" or "\r\n" (stripped).
    /// An error reply to a line's LPUSH lists it in `notPushed` and the run goes on; a lost connection stops the
    /// run, and the report's `interruption` says which lines were in doubt and from which line on none was pushed.
    public static func enqueue(lines: some Sequence<[UInt8]>, redis: any BlockingRedisCommands, queueKey: String,
                               validate: ([UInt8]) -> String?, batchSize: Int = 1000) -> EnqueueReport {
        enqueue(lines: lines, redis: redis, batchSize: batchSize) { line in validate(line).map { .refuse($0) } ?? .push(queueKey: queueKey) }
    }

    /// Each good line goes to the queue key `admit` names (a shard's queue, say); `pushedByQueue` counts them.
    public static func enqueue(lines: some Sequence<[UInt8]>, redis: any BlockingRedisCommands, batchSize: Int = 1000,
                               admit: ([UInt8]) -> Admission) -> EnqueueReport {
        var report = EnqueueReport()
        var batch: [[[UInt8]]] = []
        var batchKeys: [String] = []
        var batchLines: [Int] = []
        let lpush = Array("LPUSH".utf8)
        let size = max(1, batchSize)
        func flush() throws(RedisError) {
            guard !batch.isEmpty else { return }
            // One LPUSH per element keeps a refused element from taking its neighbours with it and stays far
            // below Redis's argument limits; the batch still goes out in one write.
            let replies = try redis.pipeline(rawCommands: batch)
            for (index, reply) in replies.enumerated() {
                let key = batchKeys[index]
                if case .error(let message) = reply {
                    report.notPushed.append(Refusal(line: batchLines[index], reason: "not pushed: Redis refused LPUSH to \(key.debugDescription): \(message)"))
                } else {
                    report.pushed += 1
                    report.pushedByQueue[key, default: 0] += 1
                    report.pushed(line: batchLines[index])
                }
            }
            batch.removeAll(keepingCapacity: true)
            batchKeys.removeAll(keepingCapacity: true)
            batchLines.removeAll(keepingCapacity: true)
        }
        /// Pushes the batch; false (the run stops) when the connection was lost with it.
        func pushBatch() -> Bool {
            do throws(RedisError) {
                try flush()
                return true
            } catch {
                let lines = (batchLines.first ?? number)...(batchLines.last ?? number)
                report.interruption = Interruption(error: error, inDoubt: lines, notPushedFrom: lines.upperBound + 1)
                return false
            }
        }
        var number = 0
        for var line in lines {
            number += 1
            while let last = line.last, last == 10 || last == 13 { line.removeLast() }
            if line.allSatisfy({ $0 == 32 || $0 == 9 }) {
                report.blank += 1
                continue
            }
            switch admit(line) {
            case .refuse(let reason):
                report.refused.append(Refusal(line: number, reason: reason))
                continue
            case .push(let key):
                batch.append([lpush, Array(key.utf8), line])
                batchKeys.append(key)
                batchLines.append(number)
            }
            if batch.count >= size, !pushBatch() { return report }
        }
        _ = pushBatch()
        return report
    }
}
