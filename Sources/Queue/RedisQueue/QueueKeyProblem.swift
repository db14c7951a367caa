/// A key the queue scripts passed over because it holds the wrong type (someone `SET` a queue key, say): the
/// other queues went on, and whatever belonged in that key stayed where it was (in the queue, a lease hash or
/// the retry set) until the key is fixed. Reported through `JobQueue.onKeyProblem`; log it, rate-limited, since
/// every pass that meets the key reports it again.
public struct QueueKeyProblem: Sendable, Equatable, CustomStringConvertible {
    public let key: String
    /// Redis's `TYPE` of the key (e.g. `string`), or `malformed lease <id>` for a lease value without a queue.
    public let found: String
    /// The type the script needed (`list` for a queue key, `hash` for a lease hash).
    public let expected: String

    /// True for a job id's idempotency key (`QueueKeys.once`): its job went out without the check, which a key
    /// Herald cannot read must not block (the job would wait for ever), yet must not go unnoticed either.
    public let sentUnchecked: Bool

    public init(key: String, found: String, expected: String, sentUnchecked: Bool = false) {
        self.key = key
        self.found = found
        self.expected = expected
        self.sentUnchecked = sentUnchecked
    }

    /// A budget frontier that held no usable time (`QueueScripts.budgetCheck` names it `budget time`): the script
    /// reset it, so its budget starts afresh.
    public var wasReset: Bool { expected == "budget time" }

    public var description: String {
        "Redis key \(key.debugDescription) holds \(found), expected a \(expected): "
            + (sentUnchecked ? "its job was sent without the idempotency check"
               : wasReset ? "reset, its budget starts afresh" : "skipped, nothing taken from or put there")
    }

    /// The scripts' flat `{key, found, expected, ...}` list.
    static func parse(_ reply: RESPValue?) throws(RedisError) -> [QueueKeyProblem] {
        guard let reply else { return [] }
        guard let items = reply.array, items.count % 3 == 0 else { throw .protocolError("key problems: \(reply)") }
        var problems: [QueueKeyProblem] = []
        var index = 0
        while index < items.count {
            guard let key = items[index].string, let found = items[index + 1].string, let expected = items[index + 2].string else {
                throw .protocolError("key problem element")
            }
            problems.append(QueueKeyProblem(key: key, found: found, expected: expected))
            index += 3
        }
        return problems
    }
}
