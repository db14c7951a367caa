/// What a send-API simulator's rule does (FCM's, Push Kit's): one of the fates every such simulator has, which
/// act on the request or its connection whatever the provider, or one of the provider's own answers (`Own`: its
/// error codes, worded as it words them). A fault file names each by its `rawValue` (`"fate": "drop"`,
/// `"fate": "unregistered"`), so a new send-API simulator brings only its own answers.
public enum SendAPIFate<Own: SendAPIOwnFate>: Sendable, Hashable {
    /// Checked and answered as usual, even if a later rule would match (use it to exempt tokens or an app).
    case accept
    /// Answer `status` (default 500) with the provider's error for it: the rule's code, else the provider's for
    /// that status.
    case error
    /// The first `count` attempts of each matching token get `status` (default 503) as `error` words it, then it
    /// passes on.
    case failFirst
    /// The provider's rate-limit answer once a token had `limit` sends within `windowSeconds` (default: the
    /// provider's, `SendAPIRule.defaultThrottleWindow`).
    case throttle
    /// Never answer the request (the stream, or the HTTP/1.1 connection, stays open).
    case silence
    /// Close the TCP connection abruptly, without answering.
    case drop
    /// HTTP/2: answer nothing and send GOAWAY, later streams refused. HTTP/1.1: close the connection without answering.
    case goaway
    /// Add `latencyMs` and keep evaluating later rules.
    case delay
    /// One of the provider's own answers.
    case own(Own)
}

/// A send-API provider's own fates: the answers only it gives, each named in a fault file by its raw value.
public protocol SendAPIOwnFate: RawRepresentable<String>, CaseIterable, Sendable, Hashable {}

extension SendAPIFate: CaseIterable, RawRepresentable {
    /// The fates every send-API simulator has, in the order the docs and messages list them.
    public static var shared: [SendAPIFate] { [.accept, .error, .failFirst, .throttle, .silence, .drop, .goaway, .delay] }

    /// The shared fates, then the provider's own.
    public static var allCases: [SendAPIFate] { shared + Own.allCases.map { .own($0) } }

    /// Its name in a fault file.
    public var rawValue: String {
        switch self {
        case .accept: "accept"
        case .error: "error"
        case .failFirst: "failFirst"
        case .throttle: "throttle"
        case .silence: "silence"
        case .drop: "drop"
        case .goaway: "goaway"
        case .delay: "delay"
        case .own(let own): own.rawValue
        }
    }

    public init?(rawValue: String) {
        guard let fate = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = fate
    }
}

extension SendAPIFate: Encodable {
    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
