import Foundation
import Glibc

/// A throwaway Redis Cluster on loopback: `masters` masters and `replicasPerMaster` replicas each, every node
/// a `redis-server --cluster-enabled yes` child on a free port with its own directory, joined by
/// `redis-cli --cluster create`. Stopped by pid (`stop()`, or `deinit`); every wait has a deadline.
/// Talks to the nodes with `redis-cli` (this target does not link the Redis client under test).
public final class RedisClusterFixture: @unchecked Sendable {
    public struct Node: Sendable {
        public let port: Int
        /// The cluster bus port: its own free port, as port + 10000 can pass 65535 for a kernel-chosen port.
        public let busPort: Int
        public let directory: String
    }

    public let nodes: [Node]
    private var children: [Int: ChildProcess] = [:]
    private let redisCLI: String

    public init(masters: Int = 3, replicasPerMaster: Int = 1, nodeTimeoutMilliseconds: Int = 1000) throws {
        guard let server = which("redis-server"), let cli = which("redis-cli") else {
            throw TestSupportError("redis-server/redis-cli are not installed (run scripts/setup)")
        }
        redisCLI = cli
        var ports = Set<Int>()
        let count = masters * (1 + replicasPerMaster)
        while ports.count < count * 2 { ports.insert(freeLoopbackPort()) }
        let chosen = Array(ports)
        nodes = (0..<count).map { Node(port: chosen[$0], busPort: chosen[count + $0], directory: makeTemporaryDirectory("herald-cluster-\(chosen[$0])")) }
        for node in nodes {
            let arguments = ["--port", String(node.port), "--cluster-port", String(node.busPort), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                             "--cluster-config-file", node.directory + "/nodes.conf",
                             "--cluster-node-timeout", String(nodeTimeoutMilliseconds), "--dir", node.directory,
                             "--save", "", "--appendonly", "no", "--daemonize", "no"]
            children[node.port] = try ChildProcess(name: "cluster-\(node.port)", executable: server, arguments: arguments)
        }
        for node in nodes where !waitUntil(seconds: 10, { RedisServer.ping(port: node.port) }) {
            stop()
            throw TestSupportError("cluster node on port \(node.port) did not start: \(children[node.port]?.output ?? "")")
        }
        let create = try run(["--cluster", "create"] + nodes.map { "127.0.0.1:\($0.port)" }
                             + ["--cluster-replicas", String(replicasPerMaster), "--cluster-yes"], seconds: 30)
        guard create.status == 0 else {
            stop()
            throw TestSupportError("redis-cli --cluster create failed: \(create.output)")
        }
        guard waitUntilHealthy(seconds: 30, masters: masters) else {
            stop()
            throw TestSupportError("the cluster did not reach cluster_state:ok with every slot served")
        }
    }

    public var ports: [Int] { nodes.map(\.port) }
    public var seedURL: String { "redis://127.0.0.1:\(nodes[0].port)" }

    /// Runs `redis-cli` with `arguments` (deadline `seconds`); stdout and stderr together.
    @discardableResult
    public func run(_ arguments: [String], seconds: Double = 10) throws -> (status: Int32, output: String) {
        let result = try runProgram(redisCLI, arguments, seconds: seconds)
        return (result.status, result.output)
    }

    /// One command on the node at `port`; the reply as redis-cli prints it (raw, one line per element).
    public func cli(_ port: Int, _ arguments: [String]) throws -> String {
        try run(["-p", String(port), "--raw"] + arguments).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    public func isRunning(port: Int) -> Bool { children[port]?.isRunning == true }

    /// The ports of the running masters, from each running node's own `ROLE`.
    public func masterPorts() throws -> [Int] {
        try nodes.filter { isRunning(port: $0.port) }.compactMap { node in
            try cli(node.port, ["ROLE"]).hasPrefix("master") ? node.port : nil
        }
    }

    /// The port of the master serving `slot`, as the node at `askingPort` (default: the first running) sees it.
    public func ownerPort(ofSlot slot: Int, askingPort: Int? = nil) throws -> Int? {
        guard let port = askingPort ?? nodes.first(where: { isRunning(port: $0.port) })?.port else { return nil }
        // CLUSTER NODES: `id host:port@bus flags master ping pong epoch link slot-range...` per node.
        for line in try cli(port, ["CLUSTER", "NODES"]).split(separator: "\n") {
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count > 8, fields[2].contains("master"), !fields[2].contains("fail"),
                  let address = fields[1].split(separator: "@").first, let colon = address.lastIndex(of: ":"),
                  let owner = Int(address[address.index(after: colon)...]) else { continue }
            for range in fields[8...] where !range.hasPrefix("[") {
                let bounds = range.split(separator: "-").compactMap { Int($0) }
                if let low = bounds.first, let high = bounds.last, (low...high).contains(slot) { return owner }
            }
        }
        return nil
    }

    /// The slot of `key`, as Redis computes it.
    public func keySlot(_ key: String) throws -> Int {
        guard let port = nodes.first(where: { isRunning(port: $0.port) })?.port,
              let slot = Int(try cli(port, ["CLUSTER", "KEYSLOT", key])) else { throw TestSupportError("CLUSTER KEYSLOT \(key) failed") }
        return slot
    }

    /// The node ID of the node at `port`.
    public func nodeID(port: Int) throws -> String { try cli(port, ["CLUSTER", "MYID"]) }

    /// The running replicas of the master at `masterPort`.
    public func replicaPorts(of masterPort: Int) throws -> [Int] {
        let id = try nodeID(port: masterPort)
        return try nodes.filter { isRunning(port: $0.port) && $0.port != masterPort }.compactMap { node in
            let info = try cli(node.port, ["CLUSTER", "NODES"]).split(separator: "\n")
            let me = info.first { $0.contains("myself") } ?? ""
            return me.split(separator: " ").count > 3 && me.split(separator: " ")[3] == id ? node.port : nil
        }
    }

    /// Kills the node at `port` at once (SIGKILL, by its pid), as a crash would.
    public func kill(port: Int) {
        children[port]?.signal(SIGKILL)
        _ = children[port]?.waitForExit(seconds: 10)
    }

    /// `CLUSTER FAILOVER` on the replica at `port`, then waits until it reports itself master.
    public func failover(replicaPort port: Int, seconds: Double = 20) throws {
        let answer = try cli(port, ["CLUSTER", "FAILOVER"])
        guard answer == "OK" else { throw TestSupportError("CLUSTER FAILOVER on \(port): \(answer)") }
        guard waitUntil(seconds: seconds, interval: 0.05, { ((try? cli(port, ["ROLE"])) ?? "").hasPrefix("master") }) else {
            throw TestSupportError("replica \(port) did not become master within \(seconds) s")
        }
    }

    /// Until every running node says `cluster_state:ok` and `masters` masters serve all 16384 slots.
    public func waitUntilHealthy(seconds: Double, masters: Int? = nil) -> Bool {
        waitUntil(seconds: seconds, interval: 0.1) {
            for node in nodes where isRunning(port: node.port) {
                guard let info = try? cli(node.port, ["CLUSTER", "INFO"]), info.contains("cluster_state:ok"),
                      info.contains("cluster_slots_assigned:16384"), info.contains("cluster_slots_ok:16384") else { return false }
                if let masters, !info.contains("cluster_size:\(masters)") { return false }
            }
            return true
        }
    }

    /// Stops every node by its pid and removes their directories.
    public func stop() {
        for child in children.values { child.signal(SIGKILL) }
        for child in children.values { _ = child.waitForExit(seconds: 10) }
        children = [:]
        for node in nodes { try? FileManager.default.removeItem(atPath: node.directory) }
    }

    deinit { stop() }
}
