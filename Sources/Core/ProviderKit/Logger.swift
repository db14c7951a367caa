import Basics
import Foundation
import Glibc
import Synchronization

/// Log severity, lowest first.
public enum LogLevel: Int, Comparable, Sendable, CaseIterable {
    case debug, info, warning, error

    public var name: String {
        switch self {
        case .debug: "debug"
        case .info: "info"
        case .warning: "warning"
        case .error: "error"
        }
    }

    public init?(name: String) {
        guard let level = LogLevel.allCases.first(where: { $0.name == name.lowercased() }) else {
            if name.lowercased() == "warn" { self = .warning; return }
            return nil
        }
        self = level
    }

    @inlinable public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }
}

/// Writes one JSON object per line to stderr, so log shippers need no parsing rules.
/// Each line goes out in a single write(2), which keeps lines whole when several threads log at once.
/// Secrets never reach it: callers log key IDs and file paths, never keys, tokens or passwords.
public struct Logger: Sendable {
    public let minimumLevel: LogLevel
    public let component: String
    private let fd: Int32

    public init(component: String, minimumLevel: LogLevel = .info, fd: Int32 = 2) {
        self.component = component
        self.minimumLevel = minimumLevel
        self.fd = fd
    }

    public func with(component: String) -> Logger {
        Logger(component: component, minimumLevel: minimumLevel, fd: fd)
    }

    @inlinable public func debug(_ message: @autoclosure () -> String, _ fields: @autoclosure () -> [String: LogValue] = [:]) {
        if .debug >= minimumLevel { log(.debug, message(), fields()) }
    }
    @inlinable public func info(_ message: @autoclosure () -> String, _ fields: @autoclosure () -> [String: LogValue] = [:]) {
        if .info >= minimumLevel { log(.info, message(), fields()) }
    }
    @inlinable public func warning(_ message: @autoclosure () -> String, _ fields: @autoclosure () -> [String: LogValue] = [:]) {
        if .warning >= minimumLevel { log(.warning, message(), fields()) }
    }
    @inlinable public func error(_ message: @autoclosure () -> String, _ fields: @autoclosure () -> [String: LogValue] = [:]) {
        if .error >= minimumLevel { log(.error, message(), fields()) }
    }

    public func log(_ level: LogLevel, _ message: String, _ fields: [String: LogValue]) {
        guard level >= minimumLevel else { return }
        var line: [UInt8] = []
        line.reserveCapacity(256)
        line += Array("{\"ts\":\"\(Logger.timestamp())\",\"level\":\"\(level.name)\",\"component\":".utf8)
        appendJSONString(component, to: &line)
        line += Array(",\"msg\":".utf8)
        appendJSONString(message, to: &line)
        for key in fields.keys.sorted() {
            line.append(UInt8(ascii: ","))
            appendJSONString(key, to: &line)
            line.append(UInt8(ascii: ":"))
            switch fields[key]! {
            case .string(let s): appendJSONString(s, to: &line)
            case .int(let i): appendDecimal(i, to: &line)
            case .double(let d): line += Array((d.isFinite ? String(d) : "null").utf8)
            case .bool(let b): line += Array((b ? "true" : "false").utf8)
            }
        }
        line += Array("}\n".utf8)
        _ = line.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }

    static func timestamp() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var tmValue = tm()
        var seconds = ts.tv_sec
        gmtime_r(&seconds, &tmValue)
        let ms = ts.tv_nsec / 1_000_000
        func pad(_ v: Int32, _ n: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, n - s.count)) + s
        }
        return "\(tmValue.tm_year + 1900)-\(pad(tmValue.tm_mon + 1, 2))-\(pad(tmValue.tm_mday, 2))T"
            + "\(pad(tmValue.tm_hour, 2)):\(pad(tmValue.tm_min, 2)):\(pad(tmValue.tm_sec, 2)).\(pad(Int32(ms), 3))Z"
    }
}

/// A structured log field value.
public enum LogValue: Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
