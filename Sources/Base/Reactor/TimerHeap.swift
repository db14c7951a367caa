/// A scheduled callback. `cancel()` is lazy: the heap drops cancelled entries when they reach the top,
/// which keeps per-request timeouts O(log n) to add and O(1) to cancel. Loop-confined like its loop: `cancel`
/// and `isCancelled` check that they run on the loop's thread.
public final class LoopTimer {
    let deadline: UInt64
    let sequence: UInt64
    private let owner: LoopThread
    var callback: (() -> Void)?

    init(deadline: UInt64, sequence: UInt64, owner: LoopThread, callback: @escaping () -> Void) {
        self.deadline = deadline
        self.sequence = sequence
        self.owner = owner
        self.callback = callback
    }

    public var isCancelled: Bool {
        owner.precondition(#function)
        return callback == nil
    }

    public func cancel() {
        owner.precondition(#function)
        callback = nil
    }
}

/// Binary min-heap of timers ordered by deadline, then by insertion order (FIFO for equal deadlines).
struct TimerHeap {
    private var items: [LoopTimer] = []

    var isEmpty: Bool { items.isEmpty }
    var count: Int { items.count }
    var top: LoopTimer? { items.first }

    private static func less(_ a: LoopTimer, _ b: LoopTimer) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.sequence < b.sequence
    }

    mutating func push(_ timer: LoopTimer) {
        items.append(timer)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            if !Self.less(items[child], items[parent]) { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> LoopTimer? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let result = items.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count && Self.less(items[left], items[smallest]) { smallest = left }
            if right < items.count && Self.less(items[right], items[smallest]) { smallest = right }
            if smallest == parent { break }
            items.swapAt(parent, smallest)
            parent = smallest
        }
        return result
    }
}
