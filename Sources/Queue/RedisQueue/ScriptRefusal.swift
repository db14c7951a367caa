/// How Herald's scripts say they refused to write (see `QueueScripts`' type checks): the queue's reading of a
/// server error reply, kept here because the client knows nothing of Herald's scripts.
extension RedisError {
    /// The reply prefix of a script's refusal: `HERALD_WRONGTYPE <found> <expected> <key>` (the key last, as
    /// it may contain spaces).
    static let wrongTypePrefix = "HERALD_WRONGTYPE "

    /// `.server` replies of a script's refusal become `.wrongType`; every other error is kept.
    func refined() -> RedisError {
        guard case .server(let message) = self, message.hasPrefix(Self.wrongTypePrefix) else { return self }
        let parts = message.dropFirst(Self.wrongTypePrefix.count).split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return self }
        return .wrongType(key: String(parts[2]), found: String(parts[0]), expected: String(parts[1]))
    }
}
