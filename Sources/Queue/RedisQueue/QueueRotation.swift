/// Fair share between queues: the order in which one claim visits the queue keys, by smooth weighted round robin
/// (each turn every queue earns its weight, the richest goes first and pays the sum of the weights). Over N
/// claims a queue goes first in weight/total of them, spread out rather than in runs; the claim script falls
/// through to the next queue when the first is empty, so empty queues cost their share nothing and the
/// non-empty ones split the claims in proportion to their weights. Loop-confined state of one claimant.
public struct QueueRotation: Sendable {
    public let keys: [String]
    public let weights: [Int]
    private var credit: [Int]
    private let total: Int

    /// `weights[i]` belongs to `keys[i]`; a missing or non-positive weight counts as 1.
    public init(keys: [String], weights: [Int]) {
        self.keys = keys
        self.weights = keys.indices.map { $0 < weights.count ? max(1, weights[$0]) : 1 }
        credit = Array(repeating: 0, count: keys.count)
        total = self.weights.reduce(0, +)
    }

    /// Every queue key, the one whose turn it is first, the rest by credit (ties in configured order).
    public mutating func next() -> [String] {
        guard keys.count > 1 else { return keys }
        for i in credit.indices { credit[i] += weights[i] }
        let order = credit.indices.sorted { credit[$0] != credit[$1] ? credit[$0] > credit[$1] : $0 < $1 }
        credit[order[0]] -= total
        return order.map { keys[$0] }
    }
}
