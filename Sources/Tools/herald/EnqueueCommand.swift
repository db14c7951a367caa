import APNs
import Basics
import Foundation
import Glibc
import HeraldProviders
import PushCore
import RedisQueue

/// `herald enqueue`: JSON lines in, validated, LPUSHed in pipelined batches.
enum EnqueueCommand {
    static let command = Command(
        name: "enqueue", abstract: "Validate JSON-lines jobs and push them onto the queue.",
        discussion: "Reads one job per line from --file or standard input. Refused lines (invalid, or longer than 16 MiB) are listed with their line number and reason on stderr; the rest are pushed. SIGINT or SIGTERM stops reading: the batch in progress is pushed, the summary printed, and the exit status is 130 or 143. Exits 0 when every line was pushed, 65 when some were refused, 1 when Redis refused some (each listed with its line number and the key; every other valid line was pushed), 69 when the connection to Redis was lost part way (the lines pushed, those in doubt and the first line not pushed are named; the input after that is not read), 66 when --file cannot be read (missing, unreadable, a directory), 74 when reading failed part way.",
        options: redisOptions + [
            .value("file", "path", "Read jobs from this file instead of standard input."),
            .value("queue", "key", "Queue key (default: the first configured queue, <prefix>:queue)."),
            .value("batch", "n", "Jobs per pipelined batch (default 1000)."),
            .flag("quiet", "Print only the summary."),
        ],
        run: run)

    /// What `enqueue` checks before pushing: what the worker would reject without asking APNs.
    static func validate(_ line: [UInt8]) -> String? { check(line).problem }

    /// Every provider's job members, for the parser.
    private static let members = heraldProviders.jobMembers

    /// Why the worker would reject the job (nil: it would not), and the producer's job id if it names one
    /// (which picks its shard).
    static func check(_ line: [UInt8]) -> (problem: String?, id: String?) {
        let spec: JobSpec
        do { spec = try heraldProviders.read(line, table: members) } catch { return ("\(error.code): \(error.description)", nil) }
        guard spec.platform == APNsProvider.platform, let read = try? APNsProvider.readJob(line, spec: spec) else { return (nil, spec.id) }
        return (problem(spec, read), spec.id)
    }

    /// Apple's rules that need no configuration, for an APNs job.
    private static func problem(_ spec: JobSpec, _ read: APNsJob) -> String? {
        if read.channel != nil {
            // A broadcast: its bundle ID comes from the worker's configuration, which enqueue does not read; a
            // stand-in bare one lets the validator check the rest (channel ID, push type, expiration, 5120 bytes).
            let notification = read.notification(spec, topic: "", environment: read.environment ?? .production, bundleID: "app.bundle.id")
            if let failure = NotificationValidator.validate(notification) { return "\(failure.reason.rawValue): \(failure.message)" }
        } else if let topic = spec.topic {
            // A multicast job is checked as the first of the jobs it fans out to (the parser checked every token;
            // the rest of the notification is the same for all).
            var single = spec
            if let first = spec.tokens?.first { single.token = first }
            let notification = read.notification(single, topic: topic, environment: read.environment ?? .production)
            if let failure = NotificationValidator.validate(notification, bundleID: nil) {
                return "\(failure.reason.rawValue): \(failure.message)"
            }
        } else if spec.payload.count > read.pushType.maxPayloadBytes {
            return "PayloadTooLarge: payload is \(spec.payload.count) bytes, the limit is \(read.pushType.maxPayloadBytes)"
        }
        return nil
    }

    /// The longest line (job) accepted: the size up to which the worker keeps a failed job whole in its
    /// dead letter (`DeadLetterEntry.defaultMaxJobBytes`, 16 MiB).
    static let maxLineBytes = DeadLetterEntry.defaultMaxJobBytes

    static func run(_ args: ParsedArguments) throws -> Int32 {
        let settings = try redisSettings(args)
        let shards = settings.shards
        let queueKey = args.value("queue") ?? shards.configuredQueues[0]
        var router: ShardRouter
        do { router = try ShardRouter(shards: shards, queue: queueKey) } catch { throw UsageError("--\(error.description)") }
        if !shards.configuredQueues.contains(queueKey) {
            // Issue 52: jobs pushed where no worker reads wait for ever. With the workers' configuration this is
            // refused, as `dead requeue`, `replay` and the API refuse it; without one the queues are not known.
            let problem = "--queue \(queueKey) is not one of the configured queues (\(shards.configuredQueues.joined(separator: ", ")))"
            if settings.configured { throw UsageError(problem + ": no worker would read it") }
            printError("herald enqueue: warning: \(problem); give --config to check it against the workers' queues")
        }
        let shardQueues = router.shardQueues
        let admit: ([UInt8]) -> Enqueuer.Admission = { line in
            let (problem, id) = check(line)
            if let problem { return .refuse(problem) }
            return .push(queueKey: router.queueKey(forJobID: id))
        }
        let batch = try args.integer("batch", as: Int.self, in: 1...1_000_000) ?? 1000
        let fd: Int32
        if let path = args.value("file") {
            switch openForReading(path) {
            case .success(let opened): fd = opened
            case .failure(let problem):
                printError("herald enqueue: \(problem.message)")
                return ExitCode.noInput
            }
        } else {
            fd = STDIN_FILENO
        }
        defer { if fd != STDIN_FILENO { close(fd) } }
        let redis = try settings.connect()
        // SIGINT/SIGTERM: stop reading, push the batch in progress, report, exit 130/143; a second one exits at once.
        let stop = StopRequest()
        let watcher = SignalWatcher(onSignal: { stop.request(signal: $0) }, onSecond: { exit(128 + $0) })
        let reader = LineReader(fd: fd, maxLineBytes: maxLineBytes, stop: stop)
        let report = Enqueuer.enqueue(lines: reader, redis: redis, batchSize: batch, admit: admit)
        withExtendedLifetime(watcher) {}
        let refusals = (report.refused.map { ($0.line, $0.reason) } + report.notPushed.map { ($0.line, $0.reason) }
            + reader.overlong.map { ($0.line, "line is \($0.bytes) bytes, longer than the \(maxLineBytes)-byte maximum for a job; not pushed") })
            .sorted { $0.0 < $1.0 }
        if !args.flag("quiet") {
            for (line, reason) in refusals { printError("line \(line): \(reason)") }
        }
        var summary = "{\"pushed\":\(report.pushed),\"refused\":\(refusals.count - report.notPushed.count),\"queue\":\(jsonEscaped(queueKey))"
        if !report.notPushed.isEmpty { summary += ",\"not_pushed\":\(report.notPushed.count)" }
        if shardQueues.count > 1 { summary += ",\"shards\":[" + shardQueues.map { String(report.pushedByQueue[$0] ?? 0) }.joined(separator: ",") + "]" }
        if let signal = stop.signal { summary += ",\"stopped_by\":\(jsonEscaped(signal == SIGINT ? "SIGINT" : "SIGTERM"))" }
        if let lost = report.interruption {
            summary += ",\"pushed_lines\":\(jsonEscaped(lineRanges(report.pushedLines)))"
            summary += ",\"in_doubt_lines\":\(jsonEscaped(lineRanges([lost.inDoubt]))),\"not_pushed_from_line\":\(lost.notPushedFrom)"
            summary += ",\"redis_error\":\(jsonEscaped(lost.error.description))"
        }
        print(summary + "}")
        if let lost = report.interruption {
            printError("herald enqueue: lost Redis part way (\(lost.error)): lines pushed: \(lineRanges(report.pushedLines)); "
                       + "in doubt (sent as Redis went, each may or may not be queued): \(lineRanges([lost.inDoubt])); "
                       + "not pushed: line \(lost.notPushedFrom) to the end of the input. A re-run from line \(lost.notPushedFrom) "
                       + "(tail -n +\(lost.notPushedFrom)) sends nothing twice; check the lines in doubt by their ids before pushing them again")
            return ExitCode.unavailable
        }
        if let signal = stop.signal {
            printError("herald enqueue: stopped by \(signal == SIGINT ? "SIGINT" : "SIGTERM") after pushing \(report.pushed) jobs; the rest of the input was not read")
            return 128 + signal
        }
        if !report.notPushed.isEmpty {
            printError("herald enqueue: Redis refused \(report.notPushed.count) line(s), listed above with the key; "
                       + "every other valid line was pushed: fix the key and push only those lines again")
            return ExitCode.failure
        }
        if let problem = reader.readError {
            printError("herald enqueue: reading stopped early: \(problem); \(report.pushed) jobs pushed")
            return ExitCode.ioError
        }
        return refusals.isEmpty ? ExitCode.success : ExitCode.dataError
    }

    /// "1-4000,4002-5000", or "none".
    static func lineRanges(_ ranges: [ClosedRange<Int>]) -> String {
        ranges.isEmpty ? "none" : ranges.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound)" }.joined(separator: ",")
    }

    struct OpenProblem: Error { let message: String }

    /// Opens a regular file (or pipe, FIFO, device) for reading; a directory or an unreadable path is a clear
    /// error instead of a crash inside FileHandle.
    static func openForReading(_ path: String) -> Result<Int32, OpenProblem> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(OpenProblem(message: "cannot read \(path): \(String(cString: strerror(errno)))")) }
        var status = stat()
        if fstat(fd, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR {
            close(fd)
            return .failure(OpenProblem(message: "cannot read \(path): it is a directory"))
        }
        return .success(fd)
    }
}
