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
}

/// A command-line mistake: printed with the command's help, exit 64.
public struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ message: String) { description = message }
}
