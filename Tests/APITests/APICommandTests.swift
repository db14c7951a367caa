import Foundation
import Glibc
import HeraldTestSupport
import RedisQueue
import Testing

/// `herald api` as producers see it: a real redis-server, the herald binary, curl and Python `requests`.
@Suite(.serialized) struct APICommandTests {
    @Test func acceptedJobsAreQueuedBeforeThe202AndRefusedOnesNeverReachRedis() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url)
        let body = "{\"jobs\":[\(APIProcess.job(id: "good-1")), {\"token\":\"zz\"}, 5, \(APIProcess.job())]}"
        let (status, text) = try curl(["-H", "Content-Type: application/json", "--data-binary", body, api.url + "v1/jobs"])
        #expect(status == 202)
        let answer = jsonObject(text)
        let accepted = answer["accepted"] as? [[String: Any]] ?? []
        let refused = answer["refused"] as? [[String: Any]] ?? []
        #expect(accepted.map { $0["index"] as? Int } == [0, 3])
        #expect(accepted.first?["id"] as? String == "good-1")
        let givenID = accepted.last?["id"] as? String ?? ""
        #expect(givenID.hasPrefix("api-"))
        #expect(refused.map { $0["index"] as? Int } == [1, 2])
        // The reasons a worker's `rejected` result would carry.
        #expect(refused.first?["reason"] as? String == "bad_token: \"token\" is not a non-empty, even-length hexadecimal string")
        #expect(refused.last?["reason"] as? String == "not_object: job is not a JSON object")
        let queued = try listElements(redis.url, "herald:queue")
        #expect(Set(queued.compactMap(jobID)) == ["good-1", givenID])
        #expect(queued.count == 2)
    }

    @Test func validateOnlyRunsEveryCheckAndQueuesNothing() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url)
        let body = "{\"jobs\":[\(APIProcess.job(id: "v-1")), {\"app\":\"nope\",\"token\":\"\(APIProcess.token)\",\"payload\":{}}]}"
        let (status, text) = try curl(["--data-binary", body, api.url + "v1/jobs?validate_only=true"])
        #expect(status == 200)
        let answer = jsonObject(text)
        #expect((answer["valid"] as? [[String: Any]])?.map { $0["id"] as? String } == ["v-1"])
        #expect((answer["refused"] as? [[String: Any]])?.first?["reason"] as? String == "UnknownApp: unknown app 'nope'")
        #expect(answer["accepted"] == nil)
        #expect(try listElements(redis.url, "herald:queue").isEmpty)
    }

    @Test func aRequestWhoseJobsAreAllRefusedIs422AndQueuesNothing() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url)
        let (status, text) = try curl(["--data-binary", "{\"app\":\"nope\",\"token\":\"\(APIProcess.token)\",\"payload\":{}}", api.url + "v1/jobs"])
        #expect(status == 422)
        let refused = jsonObject(text)["refused"] as? [[String: Any]] ?? []
        #expect(refused.first?["reason"] as? String == "UnknownApp: unknown app 'nope'")
        #expect(try listElements(redis.url, "herald:queue").isEmpty)
    }

    @Test func anIdempotencyKeyBecomesTheJobIdAndTheShardFollowsCRC32OfIt() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url, redisExtra: ",\"shards\": 3")
        var expected: [String: Int] = [:]
        for n in 0..<12 {
            let key = "order-\(n)"
            let (status, text) = try curl(["-H", "Idempotency-Key: \(key)", "--data-binary", APIProcess.job(), api.url + "v1/jobs"])
            #expect(status == 202)
            let accepted = jsonObject(text)["accepted"] as? [[String: Any]] ?? []
            #expect(accepted.first?["id"] as? String == key)
            // The documented producer recipe, computed by someone else's CRC-32.
            let (shard, _) = try run("python3", ["-c", "import zlib,sys; print(zlib.crc32(sys.argv[1].encode()) % 3)", key])
            expected[key] = Int(shard.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(accepted.first?["queue"] as? String == "{herald:\(expected[key]!)}:queue")
        }
        for shard in 0..<3 {
            let ids = try listElements(redis.url, "{herald:\(shard)}:queue").compactMap(jobID)
            #expect(Set(ids) == Set(expected.filter { $0.value == shard }.keys))
        }
        // In a batch each job gets the key with its index.
        let (_, text) = try curl(["-H", "Idempotency-Key: batch", "--data-binary", "{\"jobs\":[\(APIProcess.job()),\(APIProcess.job())]}", api.url + "v1/jobs"])
        #expect((jsonObject(text)["accepted"] as? [[String: Any]] ?? []).map { $0["id"] as? String } == ["batch.0", "batch.1"])
    }

    @Test func oneKeepAliveConnectionCarriesManyRequestsFromPythonRequests() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url)
        let script = """
            import requests, sys, logging
            # urllib3 logs each new connection it opens: count them.
            opened = []
            class Count(logging.Handler):
                def emit(self, record):
                    if record.getMessage().startswith("Starting new HTTP connection"): opened.append(1)
            log = logging.getLogger("urllib3.connectionpool")
            log.setLevel(logging.DEBUG)
            log.addHandler(Count())
            s = requests.Session()
            for i in range(50):
                r = s.post(sys.argv[1] + "v1/jobs", data=sys.argv[2].replace("ID", "k%d" % i), headers={"Content-Type": "application/json"})
                assert r.status_code == 202, (r.status_code, r.text)
            print(len(opened))
            """
        let (output, status) = try run("python3", ["-c", script, api.url, APIProcess.job(id: "ID")])
        #expect(status == 0)
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        #expect(try listElements(redis.url, "herald:queue").count == 50)
    }

    @Test func oversizedBodiesTooManyJobsAndUnknownRoutesGetClearJSONErrors() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url, api: #"{"max_body_bytes": 2000, "max_jobs_per_request": 2}"#)
        let big = "{\"jobs\":[" + Array(repeating: APIProcess.job(), count: 30).joined(separator: ",") + "]}"
        let (tooBig, bigText) = try curl(["--data-binary", big, api.url + "v1/jobs"])
        #expect(tooBig == 413)
        #expect((jsonObject(bigText)["error"] as? [String: Any])?["message"] as? String == "request body larger than 2000 bytes")
        let three = "{\"jobs\":[" + Array(repeating: APIProcess.job(), count: 3).joined(separator: ",") + "]}"
        let (tooMany, manyText) = try curl(["--data-binary", three, api.url + "v1/jobs"])
        #expect(tooMany == 413)
        #expect(manyText.contains("more than 2 jobs"))
        let (missing, _) = try curl([api.url + "v2/nothing"])
        #expect(missing == 404)
        let (wrongMethod, _) = try curl([api.url + "v1/jobs"])
        #expect(wrongMethod == 405)
        #expect(try listElements(redis.url, "herald:queue").isEmpty)
    }

    @Test func connectionsPastTheLimitGet503AndSilentOnesAreClosedAtTheirTimeout() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url, api: #"{"max_connections": 2, "request_timeout_ms": 500, "idle_timeout_ms": 1000}"#)
        let port = UInt16(api.url.split(separator: ":").last!.filter(\.isNumber))!
        let first = connectLoopback(port)
        let second = connectLoopback(port)
        defer { close(first); close(second) }
        // Both slots held by half-sent requests (not silent: nothing may close them for a newcomer): a third
        // client's job is answered 503 at once, but the probes are still answered from a slot kept for them (issue
        // 51: /healthz answered 503 too; this test expected it).
        _ = write(first, "POST /v1/jobs HTTP/1.1\r\nContent-", 32)
        _ = write(second, "POST /v1/jobs HTTP/1.1\r\nContent-", 32)
        Thread.sleep(forTimeInterval: 0.2)
        let (refused, _) = try curl(["--data-binary", APIProcess.job(), api.url + "v1/jobs"])
        #expect(refused == 503)
        #expect(try curl([api.url + "healthz"]).status == 200)
        #expect(try curl([api.url + "readyz"]).status == 200)
        // Half a request is closed after the request timeout: then curl gets in.
        #expect(waitUntil(seconds: 5) { isClosedByPeer(first) })
        #expect(waitUntil(seconds: 5) { isClosedByPeer(second) })
        let (ok, _) = try curl([api.url + "healthz"])
        #expect(ok == 200)
    }

    /// Issue 51, item 3: sockets that send nothing hold no slot against a newcomer. With every slot taken by them,
    /// a producer's job is answered 202 at once (the socket silent longest is closed to make room), not 503 for
    /// the request timeout.
    @Test func silentSocketsMakeRoomForANewcomerOldestFirst() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url, api: #"{"max_connections": 2, "request_timeout_ms": 60000}"#)
        let port = UInt16(api.url.split(separator: ":").last!.filter(\.isNumber))!
        let oldest = connectLoopback(port)
        Thread.sleep(forTimeInterval: 0.05)
        let newer = connectLoopback(port)
        defer { close(oldest); close(newer) }
        Thread.sleep(forTimeInterval: 0.5)  // silent long enough to be taken for silent (HTTP1Server.silentEnoughNanoseconds)
        #expect(try curl(["--data-binary", APIProcess.job(), api.url + "v1/jobs"]).status == 202)
        #expect(waitUntil(seconds: 5) { isClosedByPeer(oldest) })
        #expect(!isClosedByPeer(newer))
        #expect(try listElements(redis.url, "herald:queue").count == 1)
    }

    /// Issue 51, item 3 in part: a connection that sends nothing is closed at the request timeout, not held for the
    /// idle timeout (60 s here) that only a connection which has had an answer waits for.
    @Test func aSilentConnectionIsClosedAtTheRequestTimeoutNotTheIdleOne() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url, api: #"{"request_timeout_ms": 500, "idle_timeout_ms": 60000}"#)
        let port = UInt16(api.url.split(separator: ":").last!.filter(\.isNumber))!
        let silent = connectLoopback(port)
        defer { close(silent) }
        #expect(waitUntil(seconds: 10) { isClosedByPeer(silent) })
        #expect(try curl([api.url + "healthz"]).status == 200)
    }

    /// Issue 51, item 3 in part: under an open-file limit too small for `max_connections`, herald api says so and
    /// takes only the connections that fit, answering 503 past them (it spun at 100 % CPU answering nothing), and
    /// check-config warns about it.
    @Test func tooFewOpenFilesForMaxConnectionsIsSaidAndTheAPIAnswers503PastWhatFits() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url, api: #"{"max_connections": 1024}"#, openFiles: 80)
        #expect(api.child.output.contains("too few open files for api.max_connections"), "\(api.child.output)")
        let port = UInt16(api.url.split(separator: ":").last!.filter(\.isNumber))!
        // 80 - 64 - 8 (the probes' slots) = 8 connections fit: 8 half-sent requests take them, the next job is
        // answered 503 (the probes still get theirs).
        var held = (0..<8).map { _ in connectLoopback(port) }
        for fd in held { _ = write(fd, "POST /v1/jobs HTTP/1.1\r\nContent-", 32) }
        defer { held.forEach { close($0) } }
        #expect(waitUntil(seconds: 10) { (try? curl(["--data-binary", APIProcess.job(), api.url + "v1/jobs"]).status) == 503 })
        #expect(try curl([api.url + "healthz"]).status == 200)
        held.forEach { close($0) }
        held = []
        #expect(waitUntil(seconds: 10) { (try? curl(["--data-binary", APIProcess.job(), api.url + "v1/jobs"]).status) == 202 })
        let check = try runProgram("/usr/bin/prlimit", ["--nofile=80:80", "--", heraldExecutable()!, "check-config", "--skip-redis", "--config", api.configPath])
        #expect(check.output.contains("warn open files here: api.max_connections 1024 needs about 1096 open files, and the limit is 80"), "\(check.output)")
    }

    @Test func metricsCountRequestsByRouteAndStatusAndJobsByOutcomeAndReason() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url)
        _ = try curl(["--data-binary", "{\"jobs\":[\(APIProcess.job()), {\"token\":\"zz\"}]}", api.url + "v1/jobs"])
        _ = try curl(["--data-binary", "{\"token\":\"zz\"}", api.url + "v1/jobs"])
        _ = try curl([api.url + "nowhere"])
        let (status, text) = try curl([api.url + "metrics"])
        #expect(status == 200)
        let lines = Set(text.split(separator: "\n").map(String.init))
        #expect(lines.contains(#"herald_api_requests_total{route="/v1/jobs",status="202"} 1"#))
        #expect(lines.contains(#"herald_api_requests_total{route="/v1/jobs",status="422"} 1"#))
        #expect(lines.contains(#"herald_api_requests_total{route="other",status="404"} 1"#))
        #expect(lines.contains(#"herald_api_jobs_total{outcome="accepted"} 1"#))
        #expect(lines.contains(#"herald_api_jobs_total{outcome="refused",reason="bad_token"} 2"#))
        #expect(lines.contains(#"herald_api_request_duration_seconds_count{route="/v1/jobs"} 2"#))
        #expect(lines.contains("herald_api_redis_up 1"))
        #expect(lines.contains("herald_api_open_connections 1"))
        #expect(lines.contains { $0.hasPrefix("process_resident_memory_bytes ") } && lines.contains { $0.hasPrefix("herald_build_info{version=") })
    }

    @Test func aClientThatHalfClosesAfterItsRequestStillGetsItsAnswerAndPipelinedOnesComeInOrder() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url)
        let script = """
            import socket, sys
            host, port = sys.argv[1].split("//")[1].rstrip("/").split(":")
            body = sys.argv[2].encode()
            one = b"POST /v1/jobs HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: %d\\r\\n\\r\\n%s" % (len(body), body)
            s = socket.create_connection((host, int(port)), timeout=10)
            s.sendall(one.replace(b"ID", b"p1") + one.replace(b"ID", b"p2") + b"GET /healthz HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n")
            s.shutdown(socket.SHUT_WR)
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk: break
                data += chunk
            print(data.count(b"HTTP/1.1 202"), data.count(b"HTTP/1.1 200"), data.index(b'"p1"') < data.index(b'"p2"'))
            """
        let (output, status) = try run("python3", ["-c", script, api.url, APIProcess.job(id: "ID")])
        #expect(status == 0)
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == "2 1 True")
        #expect(Set(try listElements(redis.url, "herald:queue").compactMap(jobID)) == ["p1", "p2"])
    }

    @Test func withRedisDownAPostIs503NamingTheJobsNotQueuedAndReadyzSaysSo() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url, redisExtra: #", "command_timeout_ms": 500, "connect_timeout_ms": 200"#)
        #expect(try curl([api.url + "readyz"]).status == 200)
        redis.crash()
        let (status, text) = try curl(["--data-binary", "{\"jobs\":[\(APIProcess.job(id: "lost-1")), {\"token\":\"zz\"}]}", api.url + "v1/jobs"])
        #expect(status == 503)
        let answer = jsonObject(text)
        #expect((answer["failed"] as? [[String: Any]])?.map { $0["id"] as? String } == ["lost-1"])
        #expect((answer["refused"] as? [[String: Any]])?.count == 1)
        #expect((answer["accepted"] as? [Any])?.isEmpty == true)
        #expect(waitUntil(seconds: 10) { (try? curl([api.url + "readyz"]).status) == 503 })
        #expect(api.child.output.contains("redis unreachable"))
        // Back: the same request goes through.
        try redis.start()
        #expect(waitUntil(seconds: 15) { (try? curl([api.url + "readyz"]).status) == 200 })
        #expect(try curl(["--data-binary", APIProcess.job(id: "lost-1"), api.url + "v1/jobs"]).status == 202)
    }

    /// Issue 51, item 6: a push Redis took but did not answer in time (frozen past `command_timeout_ms`) is answered
    /// 503 "in doubt", never "not pushed": once Redis runs again the job is there. Redis unreachable before the push
    /// (nothing sent) is "not pushed".
    @Test func aPushWithoutAnAnswerIsInDoubtAndOneNeverSentIsNotPushed() throws {
        let redis = try RedisServer()
        let api = try APIProcess(redisURL: redis.url, redisExtra: #", "command_timeout_ms": 500, "connect_timeout_ms": 200"#)
        #expect(try curl([api.url + "readyz"]).status == 200)
        redis.pause()
        var paused = true
        defer { if paused { redis.resume() } }
        let (status, text) = try curl(["--data-binary", APIProcess.job(id: "doubt-1"), api.url + "v1/jobs"])
        redis.resume()
        paused = false
        let failed = (jsonObject(text)["failed"] as? [[String: Any]])?.first ?? [:]
        #expect(status == 503 && failed["id"] as? String == "doubt-1" && failed["in_doubt"] as? Bool == true, "\(text)")
        #expect((failed["reason"] as? String ?? "").hasPrefix("in doubt:"), "\(text)")
        // It was queued after all: what "not pushed" would have hidden.
        #expect(waitUntil(seconds: 10) { ((try? listElements(redis.url, "herald:queue")) ?? []).compactMap(jobID) == ["doubt-1"] })
        redis.crash()
        #expect(waitUntil(seconds: 10) { (try? curl([api.url + "readyz"]).status) == 503 })
        let (down, downText) = try curl(["--data-binary", APIProcess.job(id: "never-sent"), api.url + "v1/jobs"])
        let notSent = (jsonObject(downText)["failed"] as? [[String: Any]])?.first ?? [:]
        #expect(down == 503 && notSent["in_doubt"] as? Bool == false && (notSent["reason"] as? String ?? "").hasPrefix("not pushed:"), "\(downText)")
    }

    /// `GET /v1/jobs/<id>` by itself (the worker's side is `EndToEnd/JobStatus`): the id percent-decoded with `+`
    /// as itself, entries oldest first, an index key of another type or none a JSON 404, the index off said so, only
    /// GET, and counted under its own route.
    @Test func jobStatusReadsTheIndexByTheDecodedIdAndAnswersJSONErrors() throws {
        let redis = try RedisServer()
        let off = try APIProcess(redisURL: redis.url)
        let (offStatus, offBody) = try curl([off.url + "v1/jobs/x"])
        #expect(offStatus == 404 && offBody.contains("results.index_ttl_seconds is 0"), "\(offBody)")
        let api = try APIProcess(redisURL: redis.url, sections: #""results": {"index_ttl_seconds": 60}"#)
        let client = try BlockingRedis(url: try RedisURL(parsing: redis.url))
        defer { client.close() }
        let newer = #"{"stream_id":"20-0","queue":"herald:queue","id":"a+b/c","outcome":"delivered","status":"200","token":"t2","attempt":"1","worker":"w"}"#
        let older = #"{"stream_id":"3-1","queue":"herald:queue","id":"a+b/c","outcome":"retrying","status":"500","token":"t1","attempt":"1","worker":"w"}"#
        _ = try client.command(["HSET", "herald:result:a+b/c", "t2", newer, "t1", older])
        _ = try client.command(["SET", "herald:result:wrong", "x"])
        for path in ["v1/jobs/a+b%2Fc", "v1/jobs/a%2Bb%2Fc"] {
            let (status, body) = try curl([api.url + path])
            #expect(status == 200, "\(path): \(body)")
            let results = jsonObject(body)["results"] as? [[String: String]] ?? []
            #expect(results.map { $0["stream_id"] } == ["3-1", "20-0"], "oldest first by stream id: \(body)")
            #expect(jsonObject(body)["id"] as? String == "a+b/c")
        }
        for path in ["v1/jobs/a%20b", "v1/jobs/wrong", "v1/jobs/"] {
            let (status, body) = try curl([api.url + path])
            #expect(status == 404 && (jsonObject(body)["error"] as? [String: Any])?["code"] as? String == "not_found", "\(path): \(body)")
        }
        let (deleteStatus, deleteBody) = try curl(["-X", "DELETE", api.url + "v1/jobs/a"])
        #expect(deleteStatus == 405 && deleteBody.contains("method_not_allowed"))
        let (_, metrics) = try curl([api.url + "metrics"])
        #expect(metrics.contains(#"herald_api_requests_total{route="/v1/jobs/{id}",status="200"} 2"#), "\(metrics)")
    }

    /// The guarantee: SIGKILL under load loses no job answered 202 and lets no refused job into Redis.
    @Test func aSIGKILLUnderLoadLosesNoAcknowledgedJobAndQueuesNoRefusedOne() throws {
        let redis = try RedisServer(appendOnly: true)
        let api = try APIProcess(redisURL: redis.url)
        let acknowledged = makeTemporaryDirectory("herald-api-load") + "/acked.txt"
        let loader = JobSchemaTests.root + "/Tests/APITests/Fixtures/api_load.py"
        let load = try ChildProcess(name: "api-load", executable: which("python3")!, arguments: [loader, api.url + "v1/jobs", acknowledged, "shop"])
        defer { _ = load.stop(grace: 2) }
        func acked() -> [String] {
            ((try? String(contentsOfFile: acknowledged, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        #expect(waitUntil(seconds: 30) { acked().count >= 1000 })
        api.child.signal(SIGKILL)
        #expect(waitUntil(seconds: 30) { !load.isRunning }, "the load stops once the API is gone: \(load.output)")
        let ids = try listElements(redis.url, "herald:queue").compactMap(jobID)
        let answered = acked()
        #expect(answered.count >= 1000)
        #expect(Set(answered).subtracting(ids).isEmpty, "acknowledged but not in Redis: \(Set(answered).subtracting(ids).prefix(5))")
        #expect(!ids.contains { $0.hasPrefix("bad-") })
        #expect(answered.allSatisfy { $0.hasPrefix("k") })
    }
}

func connectLoopback(_ port: UInt16) -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    return fd
}

/// True once the peer closed: a read returns 0 (or a reset) without waiting.
func isClosedByPeer(_ fd: Int32) -> Bool {
    var byte: UInt8 = 0
    let n = recv(fd, &byte, 1, Int32(MSG_DONTWAIT))
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
}
