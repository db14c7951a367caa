/// An array-backed first-in first-out queue with O(1) amortised push and pop: `removeFirst` on an Array is
/// O(n), which a queue of thousands of waiting requests or Redis replies cannot afford. No Deque package.
public struct FIFO<Element> {
    private var items: [Element?] = []
    private var head = 0

    public init() {}

    public var count: Int { items.count - head }
    public var isEmpty: Bool { head == items.count }
    public var first: Element? { isEmpty ? nil : items[head] }

    public mutating func append(_ element: Element) { items.append(element) }

    public mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        let element = items[head]
        items[head] = nil
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return element
    }

    public func forEach(_ body: (Element) -> Void) {
        for index in head..<items.count { if let element = items[index] { body(element) } }
    }

    /// Empties the queue and returns what it held, oldest first.
    public mutating func removeAll() -> [Element] {
        let all = items[head...].compactMap { $0 }
        items.removeAll(keepingCapacity: true)
        head = 0
        return all
    }
}
