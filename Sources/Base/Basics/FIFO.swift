/// An array-backed first-in first-out queue with O(1) amortised push and pop: `removeFirst` on an Array is
/// O(n), which a queue of thousands of waiting requests or Redis replies cannot afford. No Deque package.
/// Inlinable, so each user gets it specialized for its element: unspecialized, every pop went through type
/// metadata lookups (about a thousand instructions per Redis reply).
public struct FIFO<Element> {
    @usableFromInline var items: [Element?] = []
    @usableFromInline var head = 0

    @inlinable public init() {}

    @inlinable public var count: Int { items.count - head }
    @inlinable public var isEmpty: Bool { head == items.count }
    @inlinable public var first: Element? { isEmpty ? nil : items[head] }

    @inlinable public mutating func append(_ element: Element) { items.append(element) }

    @inlinable public mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        // Moved out, not copied and then released.
        var element: Element? = nil
        swap(&element, &items[head])
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

    @inlinable public func forEach(_ body: (Element) -> Void) {
        for index in head..<items.count { if let element = items[index] { body(element) } }
    }

    /// Empties the queue and returns what it held, oldest first.
    @inlinable public mutating func removeAll() -> [Element] {
        let all = items[head...].compactMap { $0 }
        items.removeAll(keepingCapacity: true)
        head = 0
        return all
    }
}

extension FIFO: Sendable where Element: Sendable {}
