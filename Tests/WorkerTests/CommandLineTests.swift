import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEnd {
    /// The `herald` commands as a user runs them: exit codes, what they print, what they change in Redis.
    @Suite struct HeraldCommands {
        @Test func unknownWorkerFlagExits64WithHelp() throws {
            guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is missing: run `swift build` first") }
            let run = try HeraldRun.run(herald: herald, ["worker", "--bogus"])
            #expect(run.status == 64, "exit \(String(describing: run.status)): \(run.output)")
            #expect(run.output.contains("--bogus"), "the error names the flag: \(run.output)")
            #expect(run.output.contains("USAGE: herald worker") && run.output.contains("--config"), "help is printed: \(run.output)")
            let unknown = try HeraldRun.run(herald: herald, ["no-such-command"])
            #expect(unknown.status == 64)
        }

        @Test func checkConfigListsEveryProblemAndExits78() throws {
            guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is missing: run `swift build` first") }
            let directory = makeTemporaryDirectory("herald-cli")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let config = """
            {
              "redis": {"url": "http://127.0.0.1:6379", "colour": "blue"},
              "apns": {"connections_per_pool": 0},
              "apps": [{"name": "a", "token": {"team_id": "SHORT", "key_id": "KEY1234567", "key_file": "/nonexistent/AuthKey.p8"}}],
              "worker": {"lease_seconds": 1, "max_in_flight": "many"}
            }
            """
            let path = directory + "/bad.json"
            try config.write(toFile: path, atomically: true, encoding: .utf8)
            let run = try HeraldRun.run(herald: herald, ["check-config", "--config", path, "--skip-redis"])
            #expect(run.status == 78, "exit \(String(describing: run.status)): \(run.output)")
            for needle in ["redis.colour", "redis.url", "connections_per_pool", "bundle_id", "team_id", "lease_seconds", "max_in_flight"] {
                #expect(run.output.contains(needle), "problem '\(needle)' not reported:\n\(run.output)")
            }
            let failLines = run.output.split(separator: "\n").filter { $0.hasPrefix("FAIL") }
            #expect(failLines.count >= 7, "every problem on its own line:\n\(run.output)")

            // Issue 54: a setting's problem no longer hides a credential's: one run names both (the credential of
            // an app whose own settings are fine is proven as the worker would).
            let mixedPath = directory + "/mixed.json"
            try """
            {"worker": {"lease_seconds": 1},
             "apps": [{"name": "m", "bundle_id": "com.example.m", "token": {"team_id": "TEAMOK1234", "key_id": "KEY1234567", "key_file": "/nonexistent/AuthKey.p8"}}]}
            """.write(toFile: mixedPath, atomically: true, encoding: .utf8)
            let mixed = try HeraldRun.run(herald: herald, ["check-config", "--config", mixedPath, "--skip-redis"])
            #expect(mixed.status == 78 && mixed.output.contains("lease_seconds") && mixed.output.contains("FAIL app 'm': "), "\(mixed.output)")
            #expect(mixed.output.contains("/nonexistent/AuthKey.p8"), "the credential's own problem: \(mixed.output)")

            // A good file passes: the key signs a test token.
            let key = try MockProviderKey.generate(keyID: "KEYOK12345", teamID: "TEAMOK1234", directory: directory)
            let goodPath = directory + "/good.json"
            try """
            {"apps": [{"name": "ok", "bundle_id": "com.example.ok",
                       "token": {"team_id": "TEAMOK1234", "key_id": "KEYOK12345", "key_file": "\(key.privateKeyFile!)"}}]}
            """.write(toFile: goodPath, atomically: true, encoding: .utf8)
            let good = try HeraldRun.run(herald: herald, ["check-config", "--config", goodPath, "--skip-redis"])
            #expect(good.status == 0, "\(good.output)")
            #expect(good.output.contains("signed a test token"))

            // The same key readable by everyone: still usable, but a warning names the file and the fix.
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: key.privateKeyFile!)
            let loose = try HeraldRun.run(herald: herald, ["check-config", "--config", goodPath, "--skip-redis"])
            #expect(loose.status == 0, "\(loose.output)")
            #expect(loose.output.contains("warn") && loose.output.contains("readable by other users") && loose.output.contains("chmod 600"),
                    "\(loose.output)")
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key.privateKeyFile!)
            let tight = try HeraldRun.run(herald: herald, ["check-config", "--config", goodPath, "--skip-redis"])
            #expect(!tight.output.contains("readable by other users"), "\(tight.output)")
            // No key material ever appears in what it prints.
            let pem = try String(contentsOfFile: key.privateKeyFile!, encoding: .utf8)
            let body = pem.split(separator: "\n").dropFirst().first.map(String.init) ?? "unlikely"
            #expect(!loose.output.contains(body))
        }

        /// Issue 52: `enqueue --queue` to a queue no worker reads passed without a word. With the workers'
        /// configuration it is refused, as `dead requeue` refuses it; with only `--redis` it warns and pushes.
        @Test func enqueueToAQueueNoWorkerReadsIsRefusedOrWarnedAbout() throws {
            guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is missing: run `swift build` first") }
            let redis = try RedisServer()
            let directory = makeTemporaryDirectory("herald-cli")
            defer { redis.stop(); try? FileManager.default.removeItem(atPath: directory) }
            let file = directory + "/jobs.jsonl"
            try "{\"token\":\"\(deviceToken(prefix: "00", index: 1))\",\"payload\":{}}\n".write(toFile: file, atomically: true, encoding: .utf8)
            let config = directory + "/herald.json"
            try #"{"redis":{"url":"\#(redis.url)","queues":["herald:queue:high","herald:queue:low"]}}"#.write(toFile: config, atomically: true, encoding: .utf8)
            let refused = try HeraldRun.run(herald: herald, ["enqueue", "--config", config, "--queue", "herald:queue:hihg", "--file", file])
            #expect(refused.status == 64 && refused.output.contains("not one of the configured queues (herald:queue:high, herald:queue:low)"),
                    "\(refused.output)")
            let taken = try HeraldRun.run(herald: herald, ["enqueue", "--config", config, "--queue", "herald:queue:low", "--file", file])
            #expect(taken.status == 0 && !taken.output.contains("warning"), "\(taken.output)")
            let warned = try HeraldRun.run(herald: herald, ["enqueue", "--redis", redis.url, "--queue", "herald:queue:other", "--file", file])
            #expect(warned.status == 0 && warned.output.contains("warning: --queue herald:queue:other is not one of the configured queues"),
                    "\(warned.output)")
            let client = try BlockingRedis(url: try RedisURL(parsing: redis.url))
            #expect(try client.command(["LLEN", "herald:queue:hihg"]).int == 0)
            #expect(try client.command(["LLEN", "herald:queue:other"]).int == 1)
        }

        @Test func enqueuePushesValidLinesAndReportsRefusedOnes() throws {
            guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is missing: run `swift build` first") }
            let redis = try RedisServer()
            let directory = makeTemporaryDirectory("herald-cli")
            defer { redis.stop(); try? FileManager.default.removeItem(atPath: directory) }
            let token = deviceToken(prefix: "00", index: 1)
            let lines = [
                "{\"token\":\"\(token)\",\"payload\":{\"aps\":{\"alert\":\"one\"}}}",
                "not json at all",
                "{\"token\":\"\(token)\",\"payload\":{\"aps\":{\"alert\":\"three\"}}}",
                "{\"payload\":{\"aps\":{}}}",
                "{\"token\":\"\(token)\",\"topic\":\"com.example.app\",\"payload\":{\"aps\":{\"alert\":\"\(String(repeating: "z", count: 5000))\"}}}",
                "{\"token\":\"\(token)\",\"payload\":{\"aps\":{\"alert\":\"six\"}}}",
                // Multicast with a topic: checked as its first token's job (it once looked like a missing token).
                "{\"tokens\":[\"\(token)\",\"\(deviceToken(prefix: "00", index: 2))\"],\"topic\":\"com.example.app\",\"payload\":{\"aps\":{\"alert\":\"seven\"}}}",
                "{\"tokens\":[\"\(token)\"],\"topic\":\"com.example.app\",\"payload\":{\"aps\":{\"alert\":\"\(String(repeating: "z", count: 5000))\"}}}",
            ]
            let file = directory + "/jobs.jsonl"
            try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
            let run = try HeraldRun.run(herald: herald, ["enqueue", "--redis", redis.url, "--file", file])
            #expect(run.status == 65, "exit \(String(describing: run.status)): \(run.output)")
            for line in [2, 4, 5, 8] { #expect(run.output.contains("line \(line):"), "line \(line) not reported:\n\(run.output)") }
            for line in [1, 3, 6, 7] { #expect(!run.output.contains("line \(line):"), "line \(line) wrongly refused:\n\(run.output)") }
            #expect(run.output.contains("\"pushed\":4") && run.output.contains("\"refused\":4"), "\(run.output)")
            let client = try BlockingRedis(url: try RedisURL(parsing: redis.url))
            let queued = try client.command(["LRANGE", "herald:queue", "0", "-1"]).array ?? []
            #expect(queued.count == 4)
            // Oldest first at the consuming end: RPOP order is line 1, 3, 6, 7.
            let order = queued.compactMap(\.string).reversed().map { job in ["one", "three", "six", "seven"].first { job.contains("\"\($0)\"") } }
            #expect(order == ["one", "three", "six", "seven"])
        }

        @Test func sendToTheSimulatorPrintsStatus200() throws {
            guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is missing: run `swift build` first") }
            ignoreBrokenPipes()
            let directory = makeTemporaryDirectory("herald-cli")
            var configuration = MockAPNsConfiguration()
            configuration.tls = try MockTLSFiles.generate(in: directory + "/tls")
            let key = try MockProviderKey.generate(keyID: "KEYSEND123", teamID: "TEAMSEND12", directory: directory)
            configuration.keys = [key]
            configuration.recordAccepted = true
            let simulator = try MockAPNsServer(configuration: configuration)
            defer { simulator.stop(); try? FileManager.default.removeItem(atPath: directory) }
            let token = deviceToken(prefix: "00", index: 42)
            let run = try HeraldRun.run(herald: herald, [
                "send", "--key-file", key.privateKeyFile!, "--key-id", "KEYSEND123", "--team-id", "TEAMSEND12",
                "--topic", "com.example.send", "--token", token, "--payload", "{\"aps\":{\"alert\":\"hi\"}}",
                "--url", "https://127.0.0.1:\(simulator.port)", "--ca-file", configuration.tls!.caFile!,
            ])
            #expect(run.status == 0, "exit \(String(describing: run.status)): \(run.output)")
            let line = run.output.split(separator: "\n").first { $0.hasPrefix("{") }.map(String.init) ?? ""
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "no JSON line: \(run.output)")
            #expect((object["status"] as? Int) == 200)
            #expect((object["apns_id"] as? String)?.isEmpty == false)
            #expect(simulator.acceptedNotifications().map(\.token) == [token])

            // An unregistered token: exit 1, status 410 in the JSON.
            try simulator.replaceFaults(MockFaultScript(rules: [MockFaultRule(fate: .unregistered, tokenPrefix: "dead")]))
            let gone = try HeraldRun.run(herald: herald, [
                "send", "--key-file", key.privateKeyFile!, "--key-id", "KEYSEND123", "--team-id", "TEAMSEND12",
                "--topic", "com.example.send", "--token", deviceToken(prefix: "dead", index: 1), "--payload", "{\"aps\":{}}",
                "--url", "https://127.0.0.1:\(simulator.port)", "--ca-file", configuration.tls!.caFile!,
            ])
            #expect(gone.status == 1)
            #expect(gone.output.contains("\"status\":410") && gone.output.contains("Unregistered"), "\(gone.output)")
        }

        /// A configuration given that does not load would leave campaigns at UTC, without quiet hours or the apps'
        /// check: the scheduler drives none and says so once, and still moves due retries.
        @Test func aSchedulerWhoseConfigurationDoesNotLoadDrivesNoCampaignButMovesRetries() throws {
            guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is missing: run `swift build` first") }
            let redis = try RedisServer()
            let directory = makeTemporaryDirectory("herald-scheduler-config")
            defer { redis.stop(); try? FileManager.default.removeItem(atPath: directory) }
            let config = directory + "/herald.json"
            try Data(#"{"apps": "not a list"}"#.utf8).write(to: URL(fileURLWithPath: config))
            let client = try BlockingRedis(url: try RedisURL(parsing: redis.url))
            let document = #"{"id": "quiet", "app": "main", "audience": {"topic": "scores"}, "notification": {"title": "Goal"}}"#
            _ = try client.command(["LPUSH", "herald:campaigns:new", document])
            let job = "{\"token\":\"\(deviceToken(prefix: "00", index: 1))\",\"payload\":{\"aps\":{}}}"
            _ = try client.command(["ZADD", "herald:retry", String(Int64(Date().timeIntervalSince1970 * 1000) - 5000), job])
            let scheduler = try HeraldRun.run(herald: herald, ["scheduler", "--redis", redis.url, "--config", config, "--once"], seconds: 15)
            #expect(scheduler.status == 0 && scheduler.output.contains(#""moved":1"#), "\(scheduler.output)")
            let lines = scheduler.output.split(separator: "\n").filter { $0.contains("campaigns not driven: the configuration did not load") }
            #expect(lines.count == 1, "\(scheduler.output)")
            #expect(try client.command(["LRANGE", "herald:campaigns:new", "0", "-1"]).array?.compactMap(\.string) == [document], "not taken")
            #expect(try client.command(["EXISTS", "herald:campaign:quiet"]).int == 0)
        }

        @Test func tailStatsAndSchedulerWorkOnARealRedis() throws {
            guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is missing: run `swift build` first") }
            let redis = try RedisServer()
            defer { redis.stop() }
            let client = try BlockingRedis(url: try RedisURL(parsing: redis.url))
            for i in 0..<5 {
                _ = try client.command(["XADD", "herald:results", "*", "id", "t-\(i)", "outcome", i == 4 ? "failed" : "delivered",
                                        "status", i == 4 ? "400" : "200", "attempt", "1", "worker", "w"])
            }

            // tail --json --count 3 --from-start: three JSON lines, the oldest entries, fields typed.
            let tail = try HeraldRun.run(herald: herald, ["tail", "--redis", redis.url, "--json", "--count", "3", "--from-start"], seconds: 15)
            #expect(tail.status == 0, "\(tail.output)")
            let lines = tail.output.split(separator: "\n").filter { $0.hasPrefix("{") }
            #expect(lines.count == 3, "\(tail.output)")
            let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            #expect(objects.count == 3)
            #expect(objects.map { $0["id"] as? String ?? "" } == ["t-0", "t-1", "t-2"])
            #expect(objects.allSatisfy { ($0["status"] as? Int) == 200 && $0["stream_id"] != nil })
            let failedOnly = try HeraldRun.run(herald: herald, ["tail", "--redis", redis.url, "--json", "--count", "1", "--from-start", "--outcome", "failed"], seconds: 15)
            #expect(failedOnly.output.contains("\"t-4\""), "\(failedOnly.output)")

            // scheduler --once moves a due retry (and only that one) to the queue.
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let dueJob = "{\"token\":\"\(deviceToken(prefix: "00", index: 1))\",\"payload\":{\"aps\":{}}}"
            let laterJob = "{\"token\":\"\(deviceToken(prefix: "00", index: 2))\",\"payload\":{\"aps\":{}}}"
            _ = try client.command(["ZADD", "herald:retry", String(now - 5000), dueJob, String(now + 3_600_000), laterJob])
            let scheduler = try HeraldRun.run(herald: herald, ["scheduler", "--redis", redis.url, "--once"], seconds: 15)
            #expect(scheduler.status == 0, "\(scheduler.output)")
            #expect(scheduler.output.contains("\"moved\":1"), "\(scheduler.output)")
            #expect(try client.command(["LRANGE", "herald:queue", "0", "-1"]).array?.compactMap(\.string) == [dueJob])
            #expect(try client.command(["ZRANGE", "herald:retry", "0", "-1"]).array?.compactMap(\.string) == [laterJob])

            // stats --json parses and reports what is there.
            _ = try client.command(["LPUSH", "herald:dead", "{\"reason\":\"not_json\",\"at\":1,\"job\":\"x\"}"])
            let stats = try HeraldRun.run(herald: herald, ["stats", "--redis", redis.url, "--json"], seconds: 15)
            #expect(stats.status == 0, "\(stats.output)")
            let statsLine = stats.output.split(separator: "\n").first { $0.hasPrefix("{") }.map(String.init) ?? ""
            let object = try #require(try JSONSerialization.jsonObject(with: Data(statsLine.utf8)) as? [String: Any], "\(stats.output)")
            #expect((object["queues"] as? [String: Any])?["herald:queue"] as? Int == 1)
            #expect(object["dead_letters"] as? Int == 1)
            #expect(object["results_length"] as? Int == 5)
            let retry = object["retry"] as? [String: Any]
            #expect(retry?["next_hour"] as? Int == 1, "\(stats.output)")
            #expect(((object["outcomes_last_minute"] as? [String: Any])?["delivered"] as? Int) == 4, "\(stats.output)")
        }
    }
}

extension EndToEnd {
    /// `herald enqueue` on hostile input and signals (issue 18), and the help every command generates.
    @Suite struct EnqueueInputAndHelp {
        static let job = "{\"token\":\"\(deviceToken(prefix: "00", index: 7))\",\"payload\":{\"aps\":{\"alert\":\"hi\"}}}\n"

        /// A FIFO for herald's `--file`, and its write end opened once herald opened the read end (a blocking
        /// write then fails with EPIPE instead of hanging if herald is gone).
        static func makeFIFO(_ directory: String) throws -> String {
            let path = directory + "/jobs.fifo"
            guard mkfifo(path, 0o600) == 0 else { throw TestSupportError("mkfifo failed: errno \(errno)") }
            return path
        }

        static func openWriter(_ path: String) throws -> Int32 {
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                let fd = open(path, O_WRONLY | O_NONBLOCK)
                if fd >= 0 {
                    _ = fcntl(fd, F_SETFL, 0)
                    return fd
                }
                usleep(10_000)
            }
            throw TestSupportError("herald never opened \(path)")
        }

        @Test(.timeLimit(.minutes(1)), arguments: [(SIGINT, Int32(130), "SIGINT"), (SIGTERM, Int32(143), "SIGTERM")])
        func enqueueStopsOnASignalAfterPushingWhatItRead(signal: Int32, status: Int32, name: String) throws {
            guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is missing: run `swift build` first") }
            ignoreBrokenPipes()
            let redis = try RedisServer()
            let directory = makeTemporaryDirectory("herald-cli")
            defer { redis.stop(); try? FileManager.default.removeItem(atPath: directory) }
            let fifo = try Self.makeFIFO(directory)
            let process = try ChildProcess(name: "enqueue-signal", executable: herald,
                                           arguments: ["enqueue", "--redis", redis.url, "--file", fifo, "--batch", "1"])
            let writer = try Self.openWriter(fifo)
            defer { close(writer) }
            let lines = Array(String(repeating: Self.job, count: 3).utf8)
            #expect(lines.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) } == lines.count)
            let client = try BlockingRedis(url: try RedisURL(parsing: redis.url))
            #expect(waitUntil(seconds: 20) { (try? client.command(["LLEN", "herald:queue"]).int) == 3 }, "\(process.output)")
            // The input stays open: only the signal can end the run.
            process.signal(signal)
            let exit = process.waitForExit(seconds: 10)
            #expect(exit == status, "exit \(String(describing: exit)) after \(name):\n\(process.output)")
            #expect(process.output.contains("\"pushed\":3") && process.output.contains("\"stopped_by\":\"\(name)\""), "\(process.output)")
            #expect(try client.command(["LLEN", "herald:queue"]).int == 3)
        }

        @Test(.timeLimit(.minutes(2)))
        func enqueueRefusesALineOverTheMaximumByNumberAndPushesTheRest() throws {
            guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is missing: run `swift build` first") }
            let redis = try RedisServer()
            let directory = makeTemporaryDirectory("herald-cli")
            defer { redis.stop(); try? FileManager.default.removeItem(atPath: directory) }
            let maximum = 16 * 1024 * 1024
            // A job line of exactly the maximum is read and validated (its payload is too large for APNs); one byte
            // more is refused for its length, and its bytes never reach the queue.
            func jobLine(length: Int) -> String {
                let head = "{\"token\":\"\(deviceToken(prefix: "00", index: 8))\",\"payload\":{\"aps\":{},\"pad\":\""
                return head + String(repeating: "p", count: length - head.utf8.count - 3) + "\"}}"
            }
            let text = Self.job + jobLine(length: maximum) + "\n" + Self.job + jobLine(length: maximum + 1) + "\r\n" + Self.job
            let file = directory + "/jobs.jsonl"
            try text.write(toFile: file, atomically: false, encoding: .utf8)
            let run = try HeraldRun.run(herald: herald, ["enqueue", "--redis", redis.url, "--file", file], seconds: 90)
            #expect(run.status == 65, "exit \(String(describing: run.status)): \(run.output.prefix(2000))")
            #expect(run.output.contains("line 2: PayloadTooLarge"), "\(run.output.prefix(2000))")
            #expect(run.output.contains("line 4: line is \(maximum + 1) bytes, longer than the \(maximum)-byte maximum"), "\(run.output.prefix(2000))")
            #expect(run.output.contains("\"pushed\":3") && run.output.contains("\"refused\":2"), "\(run.output.prefix(2000))")
            let client = try BlockingRedis(url: try RedisURL(parsing: redis.url))
            let queued = try client.command(["LRANGE", "herald:queue", "0", "-1"]).array?.compactMap(\.string) ?? []
            #expect(queued == Array(repeating: String(Self.job.dropLast()), count: 3))
        }

        /// A 256 MiB line through a pipe: read once and skipped without being held, so the run ends in about a second
        /// with little memory. (Re-scanning the line per chunk, as before, takes minutes for this much.)
        @Test(.timeLimit(.minutes(2)))
        func enqueueSkipsAHugeLineWithoutRescanningIt() throws {
            guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is missing: run `swift build` first") }
            ignoreBrokenPipes()
            let redis = try RedisServer()
            let directory = makeTemporaryDirectory("herald-cli")
            defer { redis.stop(); try? FileManager.default.removeItem(atPath: directory) }
            let fifo = try Self.makeFIFO(directory)
            let process = try ChildProcess(name: "enqueue-huge", executable: herald, arguments: ["enqueue", "--redis", redis.url, "--file", fifo])
            let fd = try Self.openWriter(fifo)
            let writer = Thread {
                var bytes = Array(Self.job.utf8)
                _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                let block = [UInt8](repeating: UInt8(ascii: "x"), count: 1 << 20)
                for _ in 0..<256 where block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == block.count {}
                bytes = Array(("\n" + Self.job).utf8)
                _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                close(fd)
            }
            writer.start()
            let status = process.waitForExit(seconds: 60)
            #expect(status == 65, "exit \(String(describing: status)) (nil: still reading after 60 s):\n\(process.output.prefix(2000))")
            #expect(process.output.contains("line 2: line is \(256 << 20) bytes"), "\(process.output.prefix(2000))")
            #expect(process.output.contains("\"pushed\":2"), "\(process.output.prefix(2000))")
            process.stop(grace: 2)
        }

        @Test func enqueueRefusesADirectoryOrAMissingFileWithExit66() throws {
            guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is missing: run `swift build` first") }
            let directory = makeTemporaryDirectory("herald-cli")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            // No Redis is needed: the input is checked first.
            let folder = try HeraldRun.run(herald: herald, ["enqueue", "--redis", "redis://127.0.0.1:1/0", "--file", directory])
            #expect(folder.status == 66, "exit \(String(describing: folder.status)): \(folder.output)")
            #expect(folder.output.contains("cannot read \(directory): it is a directory"), "\(folder.output)")
            let missing = try HeraldRun.run(herald: herald, ["enqueue", "--redis", "redis://127.0.0.1:1/0", "--file", directory + "/none.jsonl"])
            #expect(missing.status == 66 && missing.output.contains("No such file"), "\(missing.output)")
            if geteuid() != 0 {
                let locked = directory + "/locked.jsonl"
                try Self.job.write(toFile: locked, atomically: false, encoding: .utf8)
                try FileManager.default.setAttributes([.posixPermissions: 0], ofItemAtPath: locked)
                let denied = try HeraldRun.run(herald: herald, ["enqueue", "--redis", "redis://127.0.0.1:1/0", "--file", locked])
                #expect(denied.status == 66 && denied.output.contains("Permission denied"), "\(denied.output)")
            }
        }

        @Test func everyHelpUsesTheOneFormatAndNamesWhatIsNew() throws {
            guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is missing: run `swift build` first") }
            let top = try HeraldRun.run(herald: herald, ["--help"])
            #expect(top.status == 0 && top.output.contains("--version"), "\(top.output)")
            let version = try HeraldRun.run(herald: herald, ["--version"])
            #expect(version.status == 0 && version.output.hasPrefix("herald "), "\(version.output)")
            for command in ["worker", "enqueue", "mock-apns", "tail"] {
                let help = try HeraldRun.run(herald: herald, [command, "--help"])
                #expect(help.status == 0, "\(command): \(help.output)")
                #expect(help.output.hasPrefix("OVERVIEW: ") && help.output.contains("USAGE: herald \(command) [options]")
                        && help.output.contains("\nOPTIONS:\n  --"), "\(command) --help:\n\(help.output)")
            }
            let worker = try HeraldRun.run(herald: herald, ["worker", "--help"])
            for needle in ["--redis <url>", "--prefix <prefix>", "ENVIRONMENT:", "HERALD_CONFIG", "HERALD_REDIS_URL", "HERALD_WORKER_ID"] {
                #expect(worker.output.contains(needle), "worker --help lacks \(needle):\n\(worker.output)")
            }
            let mock = try HeraldRun.run(herald: herald, ["mock-apns", "--bogus"])
            #expect(mock.status == 64 && mock.output.contains("herald mock-apns: unknown option '--bogus'") && mock.output.contains("USAGE: herald mock-apns"),
                    "\(mock.output)")
        }
    }
}
