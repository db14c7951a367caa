import Foundation
import Glibc
import HeraldTestSupport
import RedisQueue
import Testing

extension EndToEnd {
    /// The least-privilege ACL line of docs/redis.md, run as written on a real redis-server: a worker, the
    /// tools and the scheduler/reaper work as that user, and what the line leaves out is refused. Also
    /// measures the memory per queued job and per result entry that docs/redis.md quotes.
    @Suite struct RedisACLTests {
        /// The `ACL SETUSER herald ...` line from docs/redis.md, split into arguments, with `password`.
        static func documentedACL(password: String) throws -> [String] {
            let text = try String(contentsOfFile: DeployFiles.path("docs/redis.md"), encoding: .utf8)
            let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("ACL SETUSER herald ") }, "no ACL line in docs/redis.md")
            return line.split(separator: " ").map { $0 == ">CHANGE-ME" ? ">\(password)" : String($0) }
        }

        static func usedMemory(_ redis: BlockingRedis) throws -> Int {
            let info = try redis.command(["INFO", "memory"]).string ?? ""
            let line = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("used_memory:") } ?? ""
            return Int(line.dropFirst("used_memory:".count)) ?? -1
        }

        /// A script that starts calling a new command must grow the documented line too (ACL checks inside scripts).
        @Test func everyCommandTheScriptsCallIsInTheDocumentedACL() throws {
            let granted = Set(try Self.documentedACL(password: "x").filter { $0.hasPrefix("+") }.map { $0.dropFirst().lowercased() })
            let pattern = try Regex(#"redis\.p?call\(['"]([A-Za-z]+)['"]"#)
            // The queue's scripts, the device registry's and the campaigns'.
            for directory in ["Sources/Queue/RedisQueue", "Sources/Registry/DeviceRegistry", "Sources/Registry/DeviceRegistry/Campaigns"].map(DeployFiles.path) {
                var called: Set<String> = []
                for file in try FileManager.default.contentsOfDirectory(atPath: directory) where file.hasSuffix(".swift") {
                    let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
                    for match in text.matches(of: pattern) { if let name = match.output[1].substring { called.insert(name.lowercased()) } }
                }
                #expect(called.count > 8, "found only \(called.sorted()) in \(directory)")
                #expect(called.subtracting(granted).isEmpty, "called by the scripts of \(directory) but not in docs/redis.md's ACL line: \(called.subtracting(granted).sorted())")
            }
        }

        @Test(.timeLimit(.minutes(2)))
        func theDocumentedACLUserRunsAWorkerTheToolsAndTheReaperAndNothingElse() throws {
            let world = try EndToEndWorld()
            defer { world.shutdown(); world.removeFiles() }
            let admin = try world.connectRedis()
            let acl = try Self.documentedACL(password: "acl-test-secret")
            #expect(try admin.command(acl.map { Array($0.utf8) }).string == "OK")
            let url = "redis://herald:acl-test-secret@127.0.0.1:\(world.redis.port)/0"
            let limited = try BlockingRedis(url: try RedisURL(parsing: url))

            // What the line leaves out: other commands, other keys.
            #expect(throws: RedisError.server("NOPERM this user has no permissions to run the 'flushall' command")) { try limited.command(["FLUSHALL"]) }
            for command in [["GET", "other:key"], ["KEYS", "*"]] {
                do throws(RedisError) {
                    _ = try limited.command(command)
                    Issue.record("\(command) was not refused")
                } catch {
                    #expect(error.description.contains("NOPERM"), "\(error)")
                }
            }

            // Sizing: the queue before any worker runs.
            let total = 5_000
            let before = try Self.usedMemory(admin)
            try world.push((0..<total).map { jobBytes(id: "acl-\($0)", token: deviceToken(prefix: "00", index: $0)) })
            let queueBytes = Int(try admin.command(["MEMORY", "USAGE", "herald:queue", "SAMPLES", "0"]).int ?? -1)
            let pushedBytes = try Self.usedMemory(admin) - before
            let jobSize = jobBytes(id: "acl-1000", token: deviceToken(prefix: "00", index: 1000)).count

            // enqueue as the ACL user: LPUSH.
            let file = world.directory + "/more.jsonl"
            try (String(decoding: jobBytes(id: "acl-extra", token: deviceToken(prefix: "00", index: 99_999)), as: UTF8.self) + "\n")
                .write(toFile: file, atomically: true, encoding: .utf8)
            let enqueue = try world.runHerald(["enqueue", "--redis", url, "--file", file])
            #expect(enqueue.status == 0, "\(enqueue.output)")

            // A worker as the ACL user: claims, completions, heartbeats, its scheduler and reaper.
            let config = try world.writeConfig(redis: ["url": url])
            let worker = try world.startWorker(id: "acl-worker", config: config)
            let finished = waitUntil(seconds: 60) { (try? admin.command(["XLEN", "herald:results"]).int) == Int64(total + 1) || !worker.isRunning }
            #expect(finished && worker.isRunning, "\(world.workerLogs())")
            let resultCount = Int(try admin.command(["XLEN", "herald:results"]).int ?? 0)
            let resultBytes = Int(try admin.command(["MEMORY", "USAGE", "herald:results", "SAMPLES", "0"]).int ?? -1)
            worker.signal(SIGTERM)
            #expect(worker.waitForExit(seconds: 15) == 0, "\(world.workerLogs())")
            #expect(!worker.output.contains("NOPERM"), "\(world.workerLogs(lastLines: 40))")

            // The scheduler and reaper as the ACL user: a dead worker's lease comes back, a due retry moves.
            var short = JobQueueOptions()
            short.leaseMilliseconds = 100
            _ = try limited.command(["LPUSH", "herald:queue", String(decoding: jobBytes(id: "acl-doomed", token: deviceToken(prefix: "00", index: 7)), as: UTF8.self)])
            let doomed = try BlockingJobQueue(redis: limited, keys: try QueueKeys(), workerID: "doomed", options: short)
            #expect(try doomed.claim(max: 1).count == 1)
            let dueAt = Int64(Date().timeIntervalSince1970 * 1000) - 1_000
            _ = try admin.command([Array("ZADD".utf8), Array("herald:retry".utf8), Array(String(dueAt).utf8),
                                   JobEnvelope.wrap(job: jobBytes(id: "acl-retry", token: deviceToken(prefix: "00", index: 8)), attempt: 2,
                                                    id: "acl-retry", queue: "herald:queue")])
            // A campaign through Redis: the scheduler creates it (ZLEXCOUNT), fans it out and tallies the results.
            _ = try limited.command(["LPUSH", "herald:campaigns:new",
                                     #"{"id": "acl-campaign", "app": "main", "audience": {"topic": "none"}, "notification": {"title": "x"}}"#])
            // An app audience too: ZSCAN, and INFO for the scan's run_id.
            _ = try limited.command(["LPUSH", "herald:campaigns:new",
                                     #"{"id": "acl-app", "app": "main", "audience": {"app": "main"}, "notification": {"title": "x"}}"#])
            usleep(300_000)
            let scheduler = try world.runHerald(["scheduler", "--redis", url, "--once"], seconds: 15)
            #expect(try admin.command(["HGET", "herald:campaign:acl-campaign", "state"]).string == "done", "\(scheduler.output)")
            #expect(try admin.command(["HGET", "herald:campaign:acl-app", "state"]).string == "done", "\(scheduler.output)")
            #expect(scheduler.status == 0 && scheduler.output.contains("\"moved\":1") && scheduler.output.contains("\"reaped\":1"),
                    "\(scheduler.output)")
            #expect(try admin.command(["LLEN", "herald:queue"]).int == 2)

            let stats = try world.runHerald(["stats", "--redis", url, "--json"], seconds: 15)
            #expect(stats.status == 0 && stats.output.contains("\"results_length\":\(resultCount)"), "\(stats.output)")
            let tail = try world.runHerald(["tail", "--redis", url, "--json", "--count", "2", "--from-start"], seconds: 15)
            #expect(tail.status == 0 && tail.output.split(separator: "\n").filter { $0.hasPrefix("{") }.count == 2, "\(tail.output)")
            // herald dead: a dead letter listed and requeued with the same user.
            _ = try admin.command(["LPUSH", "herald:dead", String(decoding: DeadLetterEntry.encode(reason: "unknown_app: acl", at: 1, id: "acl-dead",
                                                                                                job: Array(#"{"id":"acl-dead"}"#.utf8)), as: UTF8.self)])
            let deadList = try world.runHerald(["dead", "list", "--redis", url], seconds: 15)
            #expect(deadList.status == 0 && deadList.output.contains("id=acl-dead"), "\(deadList.output)")
            let requeue = try world.runHerald(["dead", "requeue", "--redis", url, "--id", "acl-dead"], seconds: 15)
            #expect(requeue.status == 0 && requeue.output.contains("1 dead letter(s) requeued"), "\(requeue.output)")

            print("sizing: \(total) queued jobs of \(jobSize) bytes: MEMORY USAGE herald:queue \(queueBytes) bytes = \(queueBytes / total) per job;"
                  + " INFO used_memory +\(pushedBytes) = \(pushedBytes / total) per job; \(resultCount) results: MEMORY USAGE herald:results"
                  + " \(resultBytes) bytes = \(resultBytes / max(1, resultCount)) per entry")
        }
    }
}
