import Foundation

/// `https://host[:port]` split into its parts; port defaults to 443.
public struct HTTPSURL: Sendable, Equatable {
    public let host: String
    public let port: Int

    public init?(_ text: String) {
        guard let components = URLComponents(string: text), components.scheme == "https",
              let host = components.host, !host.isEmpty else { return nil }
        let port = components.port ?? 443
        guard (1...65535).contains(port) else { return nil }
        self.host = host
        self.port = port
    }
}

/// The name from before the type moved below the providers, which every provider's hosts use.
public typealias APNsURL = HTTPSURL
