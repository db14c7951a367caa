import Foundation
import Glibc

/// A process a test started. It is stopped by its pid (never by name), and every wait has a deadline,
/// so a test that goes wrong fails instead of hanging. `deinit` kills it if the test forgot.
public final class ChildProcess: @unchecked Sendable {
    public let process = Process()
    public let name: String
    public let outputFile: String
    /// stderr's own file, when the caller keeps it apart from stdout (`errorsApart`).
    public let errorFile: String?
    private let inputFile: String?

    /// Starts `executable` with its stdout and stderr going to a temporary log file (stderr to a second one with
    /// `errorsApart`), in `directory` when given. `input`, when given, is its stdin (from a file: no pipe to block on).
    public init(name: String, executable: String, arguments: [String], environment: [String: String] = [:],
                directory: String? = nil, input: String? = nil, errorsApart: Bool = false) throws {
        self.name = name
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(name)-\(UUID().uuidString.prefix(8))").path
        outputFile = base + ".log"
        errorFile = errorsApart ? base + ".err" : nil
        inputFile = input == nil ? nil : base + ".in"
        _ = FileManager.default.createFile(atPath: outputFile, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: outputFile))
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        process.standardOutput = handle
        if let errorFile {
            _ = FileManager.default.createFile(atPath: errorFile, contents: nil)
            process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorFile))
        } else {
            process.standardError = handle
        }
        if let inputFile, let input {
            _ = FileManager.default.createFile(atPath: inputFile, contents: Data(input.utf8))
            process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: inputFile))
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        // Test-runner threads may block SIGTERM/SIGINT, and a spawned child inherits that mask: it would then
        // ignore the SIGTERM that stops it. Unblock them on this thread for the spawn, then restore the mask.
        var wanted = sigset_t()
        sigemptyset(&wanted)
        sigaddset(&wanted, SIGTERM)
        sigaddset(&wanted, SIGINT)
        var previous = sigset_t()
        pthread_sigmask(SIG_UNBLOCK, &wanted, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        try process.run()
    }

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }

    /// What the process printed so far (stdout, and stderr unless kept apart).
    public var output: String {
        (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? ""
    }

    /// What it printed on stderr so far, when kept apart ("" otherwise).
    public var errorOutput: String {
        errorFile.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? ""
    }

    public func signal(_ sig: Int32) {
        if process.isRunning { kill(pid, sig) }
    }

    /// Waits for the process to exit; returns its status, or nil if the deadline passed. Asks /proc as well as
    /// Foundation, whose `isRunning` learns of an exit late.
    @discardableResult
    public func waitForExit(seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && processIsAlive(pid) && Date() < deadline { usleep(5_000) }
        if process.isRunning && processIsAlive(pid) { return nil }
        // Gone (or a zombie): Foundation's own reaping is at most a moment away.
        while process.isRunning && Date() < deadline.addingTimeInterval(5) { usleep(2_000) }
        // Foundation can miss a child's SIGCHLD when many exit at once (seen under ThreadSanitizer): a zombie it has
        // not reaped has still ended, and the kernel keeps its status.
        if process.isRunning { return zombieExitStatus(pid) }
        return process.terminationStatus
    }

    /// SIGTERM, then SIGKILL if it has not gone within `grace` seconds.
    @discardableResult
    public func stop(grace: Double = 5) -> Int32? {
        guard process.isRunning else { return process.terminationStatus }
        signal(SIGTERM)
        if let status = waitForExit(seconds: grace) { return status }
        signal(SIGKILL)
        return waitForExit(seconds: 5)
    }

    deinit {
        if process.isRunning {
            kill(pid, SIGKILL)
            _ = waitForExit(seconds: 5)
        }
        for file in [outputFile, errorFile, inputFile].compactMap({ $0 }) { try? FileManager.default.removeItem(atPath: file) }
    }
}

/// True while `pid` runs; a zombie counts as gone. /proc knows at once, Foundation's `isRunning` later.
public func processIsAlive(_ pid: Int32) -> Bool {
    guard pid > 0, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return false }
    let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first
    return state != "Z" && state != "X"
}

/// A zombie's status as `Process.terminationStatus` gives it (the exit code, or the signal that ended it), from
/// /proc/<pid>/stat's `exit_code` (field 52), without reaping it; nil for a process that is not a zombie.
public func zombieExitStatus(_ pid: Int32) -> Int32? {
    guard pid > 0, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return nil }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    // After the command: field 3 (state) is fields[0], so field 52 is fields[49].
    guard fields.first == "Z", fields.count > 49, let code = Int32(fields[49].trimmingCharacters(in: .whitespacesAndNewlines)) else { return nil }
    return code & 0x7f == 0 ? (code >> 8) & 0xff : code & 0x7f
}

/// What a program run to its end printed, and how it ended.
public struct ProgramRun: Sendable {
    public let status: Int32
    /// stdout, with stderr in it unless the run kept it apart.
    public let output: String
    /// stderr, when the run kept it apart ("" otherwise).
    public let errorOutput: String
}

/// A program that was still running at its deadline (and was stopped by its pid), with what it printed.
public struct ProgramTimeout: Error, CustomStringConvertible {
    public let program: String
    public let seconds: Double
    public let output: String
    public var description: String { "\(program) did not finish within \(seconds) s: \(output.suffix(2000))" }
}

/// Runs `program` (a path, or a name looked up on PATH) to its end with a deadline: the one way the tests run a
/// tool or a `herald` command. Output goes to files, so a chatty program never blocks on a full pipe; one still
/// running at the deadline is stopped by its pid (SIGTERM, then SIGKILL) and `ProgramTimeout` is thrown.
public func runProgram(_ program: String, _ arguments: [String], environment: [String: String] = [:], directory: String? = nil,
                       input: String? = nil, errorsApart: Bool = false, seconds: Double = 30) throws -> ProgramRun {
    let executable: String
    if program.contains("/") {
        executable = program
    } else if let found = which(program) {
        executable = found
    } else {
        throw TestSupportError("\(program) is not installed (run scripts/setup)")
    }
    let name = URL(fileURLWithPath: program).lastPathComponent
    let child = try ChildProcess(name: name, executable: executable, arguments: arguments, environment: environment,
                                 directory: directory, input: input, errorsApart: errorsApart)
    guard let status = child.waitForExit(seconds: seconds) else {
        child.stop(grace: 2)
        throw ProgramTimeout(program: "\(name) \(arguments.prefix(3).joined(separator: " "))", seconds: seconds, output: child.output + child.errorOutput)
    }
    return ProgramRun(status: status, output: child.output, errorOutput: child.errorOutput)
}

/// Polls `condition` until it holds or `seconds` pass; returns whether it held.
public func waitUntil(seconds: Double, interval: Double = 0.02, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(useconds_t(interval * 1_000_000))
    }
    return try condition()
}

/// A free TCP port on loopback, chosen by the kernel.
public func freeLoopbackPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// True when a TCP connect to 127.0.0.1:`port` succeeds (something listens there).
public func loopbackAccepts(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}

/// Finds a program on PATH (for redis-server, nghttpd, h2load, curl).
public func which(_ program: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for directory in path.split(separator: ":") + ["/usr/bin", "/usr/sbin", "/bin"] {
        let candidate = "\(directory)/\(program)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// The running executable: the test bundle itself (a test can run it again as a child process).
public func currentExecutable() -> String? {
    var buffer = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard n > 0 else { return nil }
    return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The `herald` executable built beside the test bundle (swift build puts products in one folder), or the one
/// `HERALD_TEST_EXECUTABLE` names: to run the end-to-end tests against another build (an older release, to show
/// a test fails on the behaviour it guards against).
public func heraldExecutable() -> String? {
    if let given = ProcessInfo.processInfo.environment["HERALD_TEST_EXECUTABLE"], !given.isEmpty {
        return FileManager.default.isExecutableFile(atPath: given) ? given : nil
    }
    guard let executable = currentExecutable() else { return nil }
    var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("herald").path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        directory = directory.deletingLastPathComponent()
    }
    return nil
}

/// A fresh temporary directory, removed by the caller.
public func makeTemporaryDirectory(_ label: String = "herald-test") -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString.prefix(8))").path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Writes `json` as herald.json in a fresh temporary directory; returns its path.
public func writeConfigurationFile(_ json: String) throws -> String {
    let path = makeTemporaryDirectory("herald-config") + "/herald.json"
    try Data(json.utf8).write(to: URL(fileURLWithPath: path))
    return path
}
