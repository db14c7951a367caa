/// A problem found while loading or checking the configuration; `check-config` lists them all.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    public let problems: [String]
    public init(_ problems: [String]) { self.problems = problems }
    public var description: String { problems.joined(separator: "\n") }
}
