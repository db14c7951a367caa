/// Exponential reconnect back-off: failures in a row since the last healthy connection, and the delay they
/// earn, doubling from the minimum to the maximum. The delay is drawn from the upper half of the ceiling
/// (jitter), so pools that failed together do not all reconnect at the same moment.
struct ReconnectBackoff {
    let minimumMilliseconds: Int
    let maximumMilliseconds: Int
    private(set) var consecutiveFailures = 0

    init(minimumMilliseconds: Int, maximumMilliseconds: Int) {
        self.minimumMilliseconds = minimumMilliseconds
        self.maximumMilliseconds = maximumMilliseconds
    }

    mutating func succeeded() { consecutiveFailures = 0 }

    /// Counts a failure; returns the range the next delay (milliseconds) is drawn from.
    mutating func failed() -> ClosedRange<Int> {
        consecutiveFailures += 1
        let exponent = min(consecutiveFailures - 1, 16)
        let ceiling = min(maximumMilliseconds, minimumMilliseconds << exponent)
        return max(1, ceiling / 2)...max(1, ceiling)
    }
}
