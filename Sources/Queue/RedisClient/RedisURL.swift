import Foundation

/// Where Redis is and how to log in: `redis://[user:password@]host:port/db`, `rediss://...` (the same over TLS)
/// or `unix:///path?db=N`
/// (password: `unix://:secret@/path`... is not supported; use `unix:///path?db=N&password=...&user=...`).
public struct RedisURL: Sendable, Equatable, CustomStringConvertible {
    public enum Endpoint: Sendable, Equatable {
        case tcp(host: String, port: Int)
        case unix(path: String)
    }

    public var endpoint: Endpoint
    public var user: String?
    public var password: String?
    public var database: Int
    /// `rediss://`: the bytes go through TLS (see `RedisTransport`).
    public var tls: Bool

    public init(endpoint: Endpoint, user: String? = nil, password: String? = nil, database: Int = 0, tls: Bool = false) {
        self.endpoint = endpoint
        self.tls = tls
        self.user = user
        self.password = password
        self.database = database
    }

    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public let url: String
        public let reason: String
        public var description: String { "bad Redis URL \(url.debugDescription): \(reason)" }
    }

    public init(parsing text: String) throws(ParseError) {
        func fail(_ reason: String) -> ParseError { ParseError(url: Self.redacted(text), reason: reason) }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            throw fail("not a URL (expected redis://host:port/db, rediss://host:port/db or unix:///path)")
        }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        user = components.user.flatMap { $0.isEmpty ? nil : $0.removingPercentEncoding ?? $0 }
        password = components.password.flatMap { $0.removingPercentEncoding ?? $0 }
        if let queryPassword = query["password"] { password = queryPassword }
        if let queryUser = query["user"] { user = queryUser }
        tls = scheme == "rediss"
        switch scheme {
        case "redis", "rediss":
            guard let host = components.host, !host.isEmpty else { throw fail("missing host") }
            let port = components.port ?? 6379
            guard (1...65535).contains(port) else { throw fail("port \(port) out of range") }
            endpoint = .tcp(host: host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host, port: port)
            let path = components.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            if path.isEmpty {
                database = 0
            } else {
                guard let db = Int(path), db >= 0 else { throw fail("database \(path.debugDescription) is not a number >= 0") }
                database = db
            }
            if let dbText = query["db"] {
                guard let db = Int(dbText), db >= 0 else { throw fail("db \(dbText.debugDescription) is not a number >= 0") }
                database = db
            }
        case "unix", "redis+unix":
            let path = components.path
            guard path.hasPrefix("/") else { throw fail("unix socket path must be absolute (unix:///path)") }
            guard path.utf8.count < 108 else { throw fail("unix socket path longer than 107 bytes") }
            endpoint = .unix(path: path)
            database = 0
            if let dbText = query["db"] {
                guard let db = Int(dbText), db >= 0 else { throw fail("db \(dbText.debugDescription) is not a number >= 0") }
                database = db
            }
        default:
            throw fail("unknown scheme \(scheme.debugDescription) (expected redis, rediss or unix)")
        }
        if user != nil && password == nil { throw fail("a user needs a password") }
    }

    /// The URL without its password, for logs.
    public var description: String {
        let auth = user.map { "\($0):***@" } ?? (password != nil ? ":***@" : "")
        switch endpoint {
        case .tcp(let host, let port):
            let shownHost = host.contains(":") ? "[\(host)]" : host
            return "\(tls ? "rediss" : "redis")://\(auth)\(shownHost):\(port)/\(database)"
        case .unix(let path):
            return "unix://\(path)?db=\(database)\(password != nil ? "&password=***" : "")"
        }
    }

    static func redacted(_ text: String) -> String {
        guard var components = URLComponents(string: text) else { return text }
        if components.password != nil { components.password = "***" }
        return components.string ?? text
    }

    /// The AUTH and SELECT commands every (re)connect starts with.
    var handshake: [[[UInt8]]] {
        var commands: [[[UInt8]]] = []
        if let password {
            if let user { commands.append([Array("AUTH".utf8), Array(user.utf8), Array(password.utf8)]) }
            else { commands.append([Array("AUTH".utf8), Array(password.utf8)]) }
        }
        if database != 0 { commands.append([Array("SELECT".utf8), Array(String(database).utf8)]) }
        return commands
    }
}
