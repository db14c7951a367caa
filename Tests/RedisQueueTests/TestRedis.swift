import Foundation
import Glibc
import Reactor
@testable import RedisQueue

/// The shared throwaway Redis from scripts/test (HERALD_TEST_REDIS_URL), or one started for this test process.
enum TestRedis {
    static let url: RedisURL = {
        if let text = ProcessInfo.processInfo.environment["HERALD_TEST_REDIS_URL"], let url = try? RedisURL(parsing: text) {
            return url
        }
        // No scripts/test around: start our own for the whole test process (stopped at exit by pid).
        let server = try! RedisServer.start()
        atexit { RedisServer.shared?.stop() }
        RedisServer.shared = server
        return server.url
    }()

    static func keys(_ name: String = #function) -> QueueKeys {
        let clean = name.filter { $0.isLetter || $0.isNumber }
        return try! QueueKeys(prefix: "t-\(clean)-\(UInt32.random(in: 0...UInt32.max))")
    }

    /// A client whose scripts run key-checked (`KeyCheck`): every test through it also shows that the scripts
    /// touch only the keys they declare.
    static func blocking(_ url: RedisURL = TestRedis.url) throws -> KeyCheckedRedis { KeyCheckedRedis(try BlockingRedis(url: url)) }
}

/// A redis-server of a test's own, on a free port, stopped by pid.
final class RedisServer: @unchecked Sendable {
    nonisolated(unsafe) static var shared: RedisServer?
    let port: Int
    let directory: String
    let appendOnly: Bool
    let extraArguments: [String]
    private(set) var process: Process?

    var url: RedisURL { RedisURL(endpoint: .tcp(host: "127.0.0.1", port: port)) }

    static func freePort() throws -> Int {
        let fd = try Sockets.listen(host: "127.0.0.1", port: 0)
        defer { close(fd) }
        return Sockets.localPort(fd)
    }

    static func start(appendOnly: Bool = false, extraArguments: [String] = []) throws -> RedisServer {
        let directory = NSTemporaryDirectory() + "herald-redis-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let server = RedisServer(port: try freePort(), directory: directory, appendOnly: appendOnly, extraArguments: extraArguments)
        try server.launch()
        return server
    }

    private init(port: Int, directory: String, appendOnly: Bool, extraArguments: [String]) {
        self.extraArguments = extraArguments
        self.port = port
        self.directory = directory
        self.appendOnly = appendOnly
    }

    func launch() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        var args = ["--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--dir", directory, "--daemonize", "no",
                    "--logfile", directory + "/redis.log"]
        args += appendOnly ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"]
        process.arguments = args + extraArguments
        try process.run()
        self.process = process
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let redis = try? BlockingRedis(url: url, connectTimeoutMilliseconds: 200),
               let reply = try? redis.pipeline([["PING"]]).first, reply == .simple("PONG") || reply.errorMessage?.hasPrefix("NOAUTH") == true { return }
            usleep(50_000)
        }
        stop()
        throw RedisError.connectFailed("test redis-server did not start on port \(port)")
    }

    /// Sends `signal` and waits (deadline 10 s) for the pid to go, then SIGKILLs. SIGKILL by default: a child
    /// started by Foundation's `Process` from a test thread inherits that thread's signal mask, in which SIGTERM
    /// is blocked, so redis-server would ignore SIGTERM (nothing of a throwaway server needs a clean exit).
    func stop(kill signal: Int32 = SIGKILL) {
        guard let process, process.isRunning else { return }
        let pid = process.processIdentifier
        Glibc.kill(pid, signal)
        let deadline = Date().addingTimeInterval(10)
        while Self.isAlive(pid) && Date() < deadline { usleep(20_000) }
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        self.process = nil
    }

    /// Foundation's `isRunning` can lag behind; /proc says at once (a zombie counts as gone).
    static func isAlive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first
        return state != "Z" && state != "X"
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Waits for `condition` with a deadline; false if it never held.
func waitUntil(seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(5_000)
    }
    return try condition()
}

final class Box<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
