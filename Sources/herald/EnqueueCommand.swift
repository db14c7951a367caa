import APNs
import Foundation
import RedisQueue

/// `herald enqueue`: JSON lines in, validated, LPUSHed in pipelined batches.
enum EnqueueCommand {
    static let spec = CommandSpec(
        name: "enqueue", abstract: "Validate JSON-lines jobs and push them onto the queue.",
        discussion: "Reads one job per line from --file or standard input. Refused lines are listed with their line number and reason on stderr; the rest are pushed. Exits 0 when every line was pushed, 65 when some were refused.",
        options: redisOptions + [
            .value("file", "path", "Read jobs from this file instead of standard input."),
            .value("queue", "key", "Queue key (default: the first configured queue, <prefix>:queue)."),
            .value("batch", "n", "Jobs per pipelined batch (default 1000)."),
            .flag("quiet", "Print only the summary."),
        ],
        run: run)

    /// What `enqueue` checks before pushing: what the worker would reject without asking APNs.
    static func validate(_ line: [UInt8]) -> String? {
        let spec: JobSpec
        do { spec = try JobParser.parse(line) } catch { return "\(error.code): \(error.description)" }
        if let topic = spec.topic {
            let notification = spec.notification(topic: topic, environment: spec.environment ?? .production)
            if let failure = NotificationValidator.validate(notification, bundleID: nil) {
                return "\(failure.reason.rawValue): \(failure.message)"
            }
        } else if spec.payload.count > spec.pushType.maxPayloadBytes {
            return "PayloadTooLarge: payload is \(spec.payload.count) bytes, the limit is \(spec.pushType.maxPayloadBytes)"
        }
        return nil
    }

    static func run(_ args: ParsedArguments) throws -> Int32 {
        let settings = try redisSettings(args)
        let queueKey = args.value("queue") ?? settings.queues[0]
        let batch = try args.int("batch") ?? 1000
        let handle: FileHandle
        if let path = args.value("file") {
            guard let file = FileHandle(forReadingAtPath: path) else { throw UsageError("cannot read \(path)") }
            handle = file
        } else {
            handle = FileHandle.standardInput
        }
        let redis = try BlockingRedis(url: settings.url)
        let report = try Enqueuer.enqueue(lines: LineReader(handle: handle), redis: redis, queueKey: queueKey, validate: validate, batchSize: batch)
        if !args.flag("quiet") {
            for refusal in report.refused { printError("line \(refusal.line): \(refusal.reason)") }
        }
        print("{\"pushed\":\(report.pushed),\"refused\":\(report.refused.count),\"queue\":\"\(queueKey)\"}")
        return report.refused.isEmpty ? ExitCode.success : ExitCode.dataError
    }
}

/// Lines of a file as bytes, read in 64 KB chunks: a multi-gigabyte file never sits in memory whole.
struct LineReader: Sequence, IteratorProtocol {
    let handle: FileHandle
    private var buffer: [UInt8] = []
    private var start = 0
    private var finished = false

    init(handle: FileHandle) { self.handle = handle }

    mutating func next() -> [UInt8]? {
        while true {
            if let newline = buffer[start...].firstIndex(of: 10) {
                var line = Array(buffer[start..<newline])
                start = newline + 1
                if line.last == 13 { line.removeLast() }
                return line
            }
            if finished {
                guard start < buffer.count else { return nil }
                let line = Array(buffer[start...])
                start = buffer.count
                return line
            }
            let chunk = handle.readData(ofLength: 65536)
            if chunk.isEmpty { finished = true; continue }
            if start > 0 {
                buffer.removeFirst(start)
                start = 0
            }
            buffer.append(contentsOf: chunk)
        }
    }
}
