/// A job whose provider answered a ticket (a second phase, docs/queue-design.md "Receipts"): written into the
/// receipts set by the script that releases its lease, so the job is never both leased and waiting, nor neither.
/// A class: `JobCompletion` holds it as one pointer, so every other provider's completion stays the size it was.
public final class PendingReceipt: Sendable {
    /// Its member in `<p>:receipts` and field in `<p>:receipts:jobs`: `<platform>:<ticket id>`.
    public let member: String
    /// When its receipt is first asked for (ms since the epoch): the zset's score.
    public let dueAt: Int64
    /// The job's `accepted` entry as JSON (`ResultEntry.indexJSON`), with `sent_at` (ms) first: what the terminal
    /// entry is made from, and when the bound runs out.
    public let record: String

    public init(platform: String, ticket: String, dueAt: Int64, sentAt: Int64, entry: ResultEntry, queue: String) {
        member = platform + ":" + ticket
        self.dueAt = dueAt
        record = "{\"sent_at\":\"\(sentAt)\"," + entry.indexJSON(queue: queue).dropFirst()
    }
}
