import Foundation
import Glibc
import RedisQueue

/// A redis-server of the test's own, on a free loopback port, for tests that kill or restart Redis, need its
/// settings (a password, a socket, a replica) or its whole keyspace. Stopped by its pid; every wait has a deadline.
/// Tests that only need a Redis use `sharedRedisURL` (started by scripts/test) with a unique key prefix.
public final class RedisServer: @unchecked Sendable {
    public let port: Int
    public let directory: String
    public let appendOnly: Bool
    /// More redis-server arguments (e.g. `--replicaof`).
    public let extraArguments: [String]
    private var child: ChildProcess?

    public init(appendOnly: Bool = false, extraArguments: [String] = []) throws {
        port = freeLoopbackPort()
        directory = makeTemporaryDirectory("herald-redis")
        self.appendOnly = appendOnly
        self.extraArguments = extraArguments
        try start()
    }

    public var url: String { "redis://127.0.0.1:\(port)/0" }
    /// `url` as the Redis client takes it.
    public var redisURL: RedisURL { RedisURL(endpoint: .tcp(host: "127.0.0.1", port: port)) }

    /// Starts (or restarts) the server on the same port and directory, so an AOF survives restarts.
    public func start() throws { try start(adding: []) }

    /// Starts (or restarts) it with `more` arguments after the usual ones (e.g. `--replicaof` for a restart).
    public func start(adding more: [String]) throws {
        guard let binary = which("redis-server") else { throw TestSupportError("redis-server is not installed (run scripts/setup)") }
        var arguments = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--dir", directory, "--daemonize", "no"]
        arguments += appendOnly ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"]
        arguments += extraArguments + more
        let process = try ChildProcess(name: "redis-\(port)", executable: binary, arguments: arguments)
        child = process
        let ready = waitUntil(seconds: 10) { Self.ping(port: port) }
        if !ready { throw TestSupportError("redis-server on port \(port) did not start: \(process.output)") }
    }

    /// Kills the server at once (SIGKILL), as a crash would.
    public func crash() {
        child?.signal(SIGKILL)
        _ = child?.waitForExit(seconds: 10)
    }

    public func stop() {
        _ = child?.stop(grace: 5)
    }

    /// Freezes the server (SIGSTOP): connections stay open and nothing is answered until `resume`.
    public func pause() { child?.signal(SIGSTOP) }

    public func resume() { child?.signal(SIGCONT) }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// True when something on `port` answers a RESP PING: +PONG, or -NOAUTH from a server with a password.
    public static func ping(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let rc = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0 else { return false }
        let ping = Array("PING\r\n".utf8)
        guard write(fd, ping, ping.count) == ping.count else { return false }
        var buffer = [UInt8](repeating: 0, count: 16)
        let n = read(fd, &buffer, buffer.count)
        return (n >= 5 && Array(buffer[0..<5]) == Array("+PONG".utf8)) || (n >= 7 && Array(buffer[0..<7]) == Array("-NOAUTH".utf8))
    }
}

/// The Redis that scripts/test started for the whole run, if any.
public var sharedRedisURL: String? { ProcessInfo.processInfo.environment["HERALD_TEST_REDIS_URL"] }

public struct TestSupportError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
