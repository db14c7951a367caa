/// A first-in first-out queue on an array with a moving head: O(1) amortised push and pop, no Deque package.
struct FIFO<Element> {
    private var items: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }
    var count: Int { items.count - head }
    var first: Element? { isEmpty ? nil : items[head] }

    mutating func push(_ item: Element) { items.append(item) }

    mutating func pop() -> Element? {
        guard head < items.count else { return nil }
        let item = items[head]
        head += 1
        if head > 1024 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        } else if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        }
        return item
    }

    mutating func removeAll() -> [Element] {
        let rest = Array(items[head...])
        items.removeAll(keepingCapacity: true)
        head = 0
        return rest
    }
}
