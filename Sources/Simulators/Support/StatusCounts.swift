/// Answers by HTTP status, kept by number on the hot path and turned into the stats' strings on a snapshot.
struct StatusCounts {
    private var counts: [Int: Int] = [:]

    mutating func count(_ status: Int) { counts[status, default: 0] += 1 }

    /// `{"200": n, "410": m, ...}`, as the stats report them.
    var byStatus: [String: Int] {
        var out: [String: Int] = [:]
        for (status, count) in counts { out[String(status)] = count }
        return out
    }
}
