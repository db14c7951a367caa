import Foundation
import Glibc
import RedisQueue

/// A Sentinel-managed Redis on loopback: a master, one replica (`--replicaof`) and three `redis-sentinel`
/// processes (quorum 2, down after 1 s, short failover timeout) watching it as `masterName`. Everything is
/// started and stopped by pid; every wait has a deadline.
public final class SentinelSet: @unchecked Sendable {
    public let masterName: String
    public let master: RedisServer
    public let replica: RedisServer
    public let sentinelPorts: [Int]
    public let directory: String
    private var sentinels: [ChildProcess] = []

    public init(masterName: String = "herald", sentinelCount: Int = 3) throws {
        guard let sentinelBinary = which("redis-sentinel") ?? which("redis-server") else {
            throw TestSupportError("redis-sentinel is not installed (run scripts/setup)")
        }
        self.masterName = masterName
        directory = makeTemporaryDirectory("herald-sentinel")
        // No 5 s wait for more replicas before a diskless full sync (a promoted replica syncs the old master too).
        let sync = ["--repl-diskless-sync-delay", "0"]
        master = try RedisServer(extraArguments: sync)
        replica = try RedisServer(extraArguments: sync + ["--replicaof", "127.0.0.1", String(master.port)])
        sentinelPorts = (0..<sentinelCount).map { _ in freeLoopbackPort() }
        try waitForReplication()
        for port in sentinelPorts {
            // Sentinel rewrites its configuration file: each gets its own, in the set's directory.
            let file = "\(directory)/sentinel-\(port).conf"
            let config = """
                port \(port)
                bind 127.0.0.1
                daemonize no
                dir \(directory)
                sentinel monitor \(masterName) 127.0.0.1 \(master.port) 2
                sentinel down-after-milliseconds \(masterName) 1000
                sentinel failover-timeout \(masterName) 4000
                sentinel parallel-syncs \(masterName) 1

                """
            try config.write(toFile: file, atomically: true, encoding: .utf8)
            var arguments = [file]
            if !sentinelBinary.hasSuffix("redis-sentinel") { arguments.append("--sentinel") }
            sentinels.append(try ChildProcess(name: "sentinel-\(port)", executable: sentinelBinary, arguments: arguments))
        }
        // Ready: every sentinel answers and sees the replica and the other sentinels (so it can fail over).
        let ready = waitUntil(seconds: 20, interval: 0.1) {
            sentinelPorts.allSatisfy { port in
                guard let info = try? self.sentinelCommand(port: port, ["SENTINEL", "MASTER", masterName]).array else { return false }
                let fields = Self.pairs(info)
                return fields["num-slaves"] == "1" && fields["num-other-sentinels"] == String(sentinelCount - 1)
            }
        }
        if !ready { throw TestSupportError("sentinels did not come up:\n\(sentinels.map { $0.output.suffix(800) }.joined(separator: "\n"))") }
    }

    deinit { stop() }

    public var sentinelAddresses: [String] { sentinelPorts.map { "127.0.0.1:\($0)" } }
    public var masterURL: String { master.url }

    /// The port the sentinels name as master now (asked of the first that answers).
    public func currentMasterPort() -> Int? {
        for port in sentinelPorts {
            if let reply = try? sentinelCommand(port: port, ["SENTINEL", "get-master-addr-by-name", masterName]).array,
               reply.count == 2, let masterPort = reply[1].int { return Int(masterPort) }
        }
        return nil
    }

    /// Waits until the replica has synced with its master (`master_link_status:up`).
    public func waitForReplication(seconds: Double = 15) throws {
        let synced = waitUntil(seconds: seconds, interval: 0.05) {
            guard let client = try? BlockingRedis(url: RedisURL(parsing: replica.url), connectTimeoutMilliseconds: 500, commandTimeoutMilliseconds: 1000),
                  let info = try? client.command(["INFO", "replication"]).string else { return false }
            return info.contains("master_link_status:up")
        }
        if !synced { throw TestSupportError("replica on \(replica.port) did not sync with the master on \(master.port)") }
    }

    /// Waits until every sentinel names `port` as the master.
    @discardableResult
    public func waitForMaster(port: Int, seconds: Double = 30) -> Bool {
        waitUntil(seconds: seconds, interval: 0.1) {
            sentinelPorts.allSatisfy { sentinel in
                (try? self.sentinelCommand(port: sentinel, ["SENTINEL", "get-master-addr-by-name", masterName]).array?[1].int) == Int64(port)
            }
        }
    }

    /// One command to one sentinel.
    public func sentinelCommand(port: Int, _ args: [String]) throws -> RESPValue {
        let client = try BlockingRedis(url: RedisURL(parsing: "redis://127.0.0.1:\(port)"), connectTimeoutMilliseconds: 1000, commandTimeoutMilliseconds: 5000)
        defer { client.close() }
        return try client.command(args)
    }

    public func stop() {
        for sentinel in sentinels { sentinel.stop(grace: 5) }
        replica.stop()
        master.stop()
    }

    public func removeFiles() { try? FileManager.default.removeItem(atPath: directory) }

    /// A flat `[k1, v1, k2, v2...]` reply as a dictionary.
    public static func pairs(_ flat: [RESPValue]) -> [String: String] {
        var out: [String: String] = [:]
        var index = 0
        while index + 1 < flat.count {
            out[flat[index].string ?? ""] = flat[index + 1].string ?? ""
            index += 2
        }
        return out
    }
}
