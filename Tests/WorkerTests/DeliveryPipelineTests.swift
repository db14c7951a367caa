import APNs
import Dispatch
import HeraldProviders
import PushCore
import Reactor
import RedisQueue
import Synchronization
import Testing
@testable import Worker

/// An in-memory queue: claims pop, batches are applied (each lease once), `returnAll` puts unrecorded jobs back.
/// Loop-confined like the real one; the test reads its state on the loop.
final class MemoryJobSource: JobSource {
    var queued: [Lease]
    var held: [String: Lease] = [:]
    var applied: [String: ResultEntry] = [:]
    var appliedTwice = 0
    var returnAllCalls = 0
    /// The next this-many record calls fail as "connection lost".
    var failRecords = 0
    let loop: EventLoop

    init(jobs: [Lease], loop: EventLoop) {
        queued = jobs
        self.loop = loop
    }

    func claim(max: Int, completion: @escaping (Result<[Lease], JobSourceFailure>) -> Void) {
        let taken = Array(queued.prefix(max))
        queued.removeFirst(taken.count)
        for lease in taken { held[lease.id] = lease }
        loop.schedule(afterMilliseconds: 0) { completion(.success(taken)) }
    }

    func record(_ batch: [JobCompletion], isRepeat: Bool, completion: @escaping (Result<CompletionReport, JobSourceFailure>) -> Void) {
        if failRecords > 0 {
            failRecords -= 1
            loop.schedule(afterMilliseconds: 0) { completion(.failure(JobSourceFailure("connection lost", maybeApplied: false))) }
            return
        }
        var report = CompletionReport()
        for item in batch {
            guard held.removeValue(forKey: item.lease.id) != nil else {
                report.leasesLost.append(item.lease.id)
                continue
            }
            if let result = item.result {
                if applied[result.id] != nil { appliedTwice += 1 }
                applied[result.id] = result
            }
            report.applied += 1
        }
        let answer = report
        loop.schedule(afterMilliseconds: 0) { completion(.success(answer)) }
    }

    /// Ids seen by the idempotency check: the first copy claims, later ones are duplicates.
    var onceSeen: Set<String> = []

    func claimOnce(_ jobs: [(lease: Lease, jobID: String)], windowMilliseconds: Int64,
                   completion: @escaping (Result<[OnceVerdict], JobSourceFailure>) -> Void) {
        let verdicts = jobs.map { onceSeen.insert($0.jobID).inserted ? OnceVerdict.claimed : .duplicate }
        loop.schedule(afterMilliseconds: 0) { completion(.success(verdicts)) }
    }

    /// The pipeline tests run with every budget off, when the core never asks (budgets live in Redis: BudgetCheckTests).
    func checkBudgets(_ jobs: [(lease: Lease, limits: [BudgetLimit])],
                      completion: @escaping (Result<[BudgetVerdict], JobSourceFailure>) -> Void) {
        preconditionFailure("MemoryJobSource keeps no budgets")
    }

    func returnAll(completion: @escaping (Result<Int, JobSourceFailure>) -> Void) {
        returnAllCalls += 1
        let count = held.count
        queued.insert(contentsOf: held.values, at: 0)
        held.removeAll()
        loop.schedule(afterMilliseconds: 0) { completion(.success(count)) }
    }
}

/// Answers 200 for every send, some at once inside `send` (as the APNs client does for a signing failure),
/// most later on the loop; pushes back now and then like a full pool.
final class ScriptedSender: PushSender {
    let loop: EventLoop
    var calls = 0
    var sent = 0
    var refusals = 0
    var closed = false
    init(loop: EventLoop) { self.loop = loop }

    /// No pools to report.
    func addMetrics(to metrics: inout ProviderMetrics) {}

    func send(_ notification: PushNotification, to destination: Destination, afterConnection: Int,
              completion: @escaping (PushOutcome) -> Void) -> SendAdmission {
        loop.preconditionInLoop()
        if closed { return .refused }
        calls += 1
        if calls % 13 == 0 {
            refusals += 1
            return .refused
        }
        sent += 1
        let outcome = PushOutcome(result: .response(APNsResponse(status: 200)), connectionID: 1)
        if sent % 5 == 0 {
            completion(outcome)
        } else {
            loop.schedule(afterMilliseconds: Int(sent % 3)) { completion(outcome) }
        }
        return .accepted
    }

    func reloadCredentials(app: Int) -> String? { nil }
    func closeAll() { closed = true }
}

@Suite struct DeliveryPipelineTests {
    /// The driver against in-memory fakes on a real loop: every job ends delivered exactly once through
    /// re-entrant answers, push-back and a failed batch, and shutdown returns nothing because nothing is left.
    @Test(.timeLimit(.minutes(1)))
    func everyJobEndsOnceThroughPushBackReentrantAnswersAndAFailedBatch() throws {
        let loop = try EventLoop.startThread(name: "pipeline-test")
        defer { loop.stop(); loop.waitUntilStopped() }
        let apps = [Configuration.AppSettings(name: "shop", bundleID: "com.example.shop")]
        let count = 2000
        let leases = (0..<count).map { i in
            let token = String(repeating: "a", count: 56) + String(format: "%08x", i)
            return Lease(id: "l\(i)", queueKey: "q", raw: Array(#"{"id":"j\#(i)","token":"\#(token)","payload":{"aps":{"alert":"x"}}}"#.utf8))
        }
        let done = DispatchSemaphore(value: 0)
        let state = Mutex<(applied: Int, twice: Int, returns: Int, refusals: Int, counters: PipelineCounters)?>(nil)
        loop.execute {
            let source = MemoryJobSource(jobs: leases, loop: loop)
            source.failRecords = 2
            let sender = ScriptedSender(loop: loop)
            var settings = DeliverySettings(workerID: "w")
            settings.providers = heraldProviders
            settings.maxInFlight = 300
            settings.claimBatch = 64
            let core = DeliveryCore(settings: settings, apps: apps, clock: SystemDeliveryClock())
            let pipeline = DeliveryPipeline(core: core, source: source, sender: sender, loop: loop, logger: Logger(component: "test", minimumLevel: .error))
            pipeline.start()
            func waitForAll() {
                if source.applied.count == count {
                    pipeline.shutdown(deadlineSeconds: 5) {
                        state.withLock { $0 = (source.applied.count, source.appliedTwice, source.returnAllCalls, sender.refusals, pipeline.counters) }
                        withExtendedLifetime(pipeline) {}
                        done.signal()
                    }
                } else {
                    loop.schedule(afterMilliseconds: 5) { waitForAll() }
                }
            }
            waitForAll()
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        let result = try #require(state.withLock { $0 })
        #expect(result.applied == count)
        #expect(result.twice == 0)
        #expect(result.returns == 2, "leases returned at start (a predecessor's) and at the end")
        #expect(result.refusals > 0, "the sender pushed back at least once")
        #expect(result.counters.delivered == count)
        #expect(result.counters.claimed == count)
    }
}
