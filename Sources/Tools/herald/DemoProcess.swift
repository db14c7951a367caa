import Foundation
import Glibc
import Reactor

/// A process the demo started: stopped by its pid with a deadline, never by name.
final class DemoProcess {
    let process = Process()
    let logFile: String

    init(executable: String, arguments: [String], logFile: String, environment: [String: String] = [:]) throws {
        self.logFile = logFile
        _ = FileManager.default.createFile(atPath: logFile, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: logFile))
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try spawnWithDefaultSignals(process)
    }

    var isRunning: Bool { process.isRunning }

    /// SIGTERM, wait up to `grace` seconds, then SIGKILL.
    @discardableResult
    func stop(grace: Double) -> Int32? {
        guard process.isRunning else { return process.terminationStatus }
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(grace)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            let hard = Date().addingTimeInterval(5)
            while process.isRunning && Date() < hard { usleep(20_000) }
        }
        return process.isRunning ? nil : process.terminationStatus
    }
}

/// Starts `process` with SIGTERM, SIGINT and SIGHUP unblocked: herald blocks them in every thread (see
/// main.swift) and a child inherits the spawning thread's mask, so a redis-server started by the demo would
/// otherwise ignore the SIGTERM that stops it.
func spawnWithDefaultSignals(_ process: Process) throws {
    var handled = sigset_t()
    sigemptyset(&handled)
    for sig in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&handled, sig) }
    var previous = sigset_t()
    pthread_sigmask(SIG_UNBLOCK, &handled, &previous)
    defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
    try process.run()
}

/// The executable running now, for starting more of itself.
func currentExecutable() -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard n > 0 else { return CommandLine.arguments[0] }
    return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// A program on PATH.
func findProgram(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for directory in path.split(separator: ":") + ["/usr/bin", "/usr/sbin", "/bin"] {
        let candidate = "\(directory)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// A free TCP port on loopback, picked by the kernel (the Reactor's own listen/localPort helpers).
func freePort() throws -> Int {
    let fd = try Sockets.listen(host: "127.0.0.1", port: 0)
    defer { close(fd) }
    return Sockets.localPort(fd)
}
