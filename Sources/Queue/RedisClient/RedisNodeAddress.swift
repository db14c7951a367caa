/// One Redis server's `host:port`: a sentinel, the master a sentinel names, a cluster node from the slot map or a
/// redirect. One type for all, so the parsing and the `[v6]:port` form are written once.
public struct RedisNodeAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `host:port` or `[v6]:port`; nil when it is neither.
    public init?(parsing text: String) {
        var hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portPart = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            if hostPart.contains(":") { return nil }
        }
        hostPart = hostPart.drop { $0 == " " }
        guard !hostPart.isEmpty, let port = Int(portPart), (1...65535).contains(port) else { return nil }
        self.init(host: String(hostPart), port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    var endpoint: RedisURL.Endpoint { .tcp(host: host, port: port) }
}
