/// A read command's error reply with the key it was about (`WRONGTYPE` for a stray key of another type): the
/// read-only tools (`herald stats`, the dashboard) report it by name and go on with the other keys and shards,
/// where one such reply used to fail the whole read with an error that named no key.
public struct KeyReplyError: Sendable, Equatable, CustomStringConvertible {
    public let key: String
    public let message: String

    public init(key: String, message: String) {
        self.key = key
        self.message = message
    }

    public var description: String { "Redis key \(key.debugDescription): \(message)" }

    /// The error replies among `replies` to `commands` (each `[NAME, key, ...]`), in order.
    public static func collect(_ commands: [[String]], _ replies: [RESPValue]) -> [KeyReplyError] {
        zip(commands, replies).compactMap { command, reply in
            guard case .error(let message) = reply, command.count > 1 else { return nil }
            return KeyReplyError(key: command[1], message: message)
        }
    }
}
