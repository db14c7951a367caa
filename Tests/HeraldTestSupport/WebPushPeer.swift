import Foundation

/// scripts/webpush/webpush_peer.py (pywebpush, http_ece, py_vapid: a Web Push peer Herald's sender and the simulator
/// are both checked against) run by the first python3 that imports its PyPI packages (scripts/setup
/// installs them): one JSON object back per call.
public enum WebPushPeer {
    static var script: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/webpush/webpush_peer.py").path
    }

    static let python = findPython(running: "import http_ece, py_vapid, pywebpush")

    public struct Failure: Error, CustomStringConvertible { public let description: String }

    public static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> [String: Any] {
        guard let python else { throw Failure(description: "no python3 with http_ece, py_vapid and pywebpush: run scripts/setup") }
        let child = try ChildProcess(name: "webpush-peer", executable: python, arguments: [script] + arguments, environment: environment)
        guard let status = child.waitForExit(seconds: 60) else { throw Failure(description: "peer timed out") }
        let output = child.output
        guard status == 0, let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any] else {
            throw Failure(description: "peer exit \(status): \(output)")
        }
        return object
    }
}

/// The first python3 that runs `probe` (its imports): `HERALD_PYTHON`, then each python3 on PATH, then Debian's.
public func findPython(running probe: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
    var candidates = ProcessInfo.processInfo.environment["HERALD_PYTHON"].map { [$0] } ?? []
    candidates += path.split(separator: ":").map { "\($0)/python3" } + ["/usr/bin/python3"]
    for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
        guard let child = try? ChildProcess(name: "python-probe", executable: candidate, arguments: ["-c", probe]) else { continue }
        if child.waitForExit(seconds: 30) == 0 { return candidate }
    }
    return nil
}
