/// Exit statuses shared by every executable: sysexits(3) for errors, 128 + signal for a stop by signal.
public enum ExitCode {
    public static let success: Int32 = 0
    public static let failure: Int32 = 1
    public static let usage: Int32 = 64
    public static let dataError: Int32 = 65
    public static let noInput: Int32 = 66
    public static let unavailable: Int32 = 69
    public static let cannotCreate: Int32 = 73
    public static let ioError: Int32 = 74
    public static let configuration: Int32 = 78
    /// Stopped by SIGINT (128 + 2), as a shell reports it.
    public static let interrupted: Int32 = 130
    /// Stopped by SIGTERM (128 + 15).
    public static let terminated: Int32 = 143

    /// Every code a Herald tool exits with and what it means: the one table (docs/operations.md, "Exit codes",
    /// is checked against it).
    public static let table: [(code: Int32, meaning: String)] = [
        (success, "done"),
        (failure, "the operation failed, or did only part of its work (what was left is reported)"),
        (usage, "a usage error: an unknown command or option, a bad value"),
        (dataError, "input refused: `enqueue` lines that are not valid jobs (the rest was pushed)"),
        (noInput, "an input file cannot be read"),
        (unavailable, "a service cannot be reached: Redis (a connect that failed, a connection lost or timed out), or a simulator cannot start"),
        (cannotCreate, "an output file cannot be written (a ready file, a PID file)"),
        (ioError, "reading or writing failed part way"),
        (configuration, "the configuration is invalid or a credential does not load (`check-config` says which)"),
        (interrupted, "stopped by SIGINT, after the step in progress (a second one stops at once)"),
        (terminated, "stopped by SIGTERM, after the step in progress"),
    ]
}

/// A command-line mistake: printed with the command's help, exit 64.
public struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ message: String) { description = message }
}
