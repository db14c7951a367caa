import Foundation

/// A latency in milliseconds: a fixed value (`20`) or a uniform random range (`[5, 50]`) in JSON.
public struct MockLatency: Codable, Sendable, Equatable {
    public var minMilliseconds: Int
    public var maxMilliseconds: Int

    public init(milliseconds: Int) { self.init(min: milliseconds, max: milliseconds) }
    public init(min: Int, max: Int) {
        minMilliseconds = Swift.max(0, Swift.min(min, max))
        maxMilliseconds = Swift.max(0, Swift.max(min, max))
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let fixed = try? container.decode(Int.self) {
            self.init(milliseconds: fixed)
        } else {
            let pair = try container.decode([Int].self)
            guard pair.count == 2 else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "latency is a number or [min, max]")
            }
            self.init(min: pair[0], max: pair[1])
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        if minMilliseconds == maxMilliseconds { try container.encode(minMilliseconds) } else { try container.encode([minMilliseconds, maxMilliseconds]) }
    }
}
