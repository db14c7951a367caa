/// An array-backed queue with O(1) amortised pop: `removeFirst` on an Array is O(n), which a queue of
/// thousands of waiting requests cannot afford.
struct FIFO<Element> {
    private var items: [Element?] = []
    private var head = 0

    var count: Int { items.count - head }
    var isEmpty: Bool { head == items.count }
    var first: Element? { isEmpty ? nil : items[head] }

    mutating func append(_ element: Element) { items.append(element) }

    mutating func popFirst() -> Element? {
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

    func forEach(_ body: (Element) -> Void) {
        for index in head..<items.count { if let element = items[index] { body(element) } }
    }

    mutating func removeAll() -> [Element] {
        let all = items[head...].compactMap { $0 }
        items.removeAll()
        head = 0
        return all
    }
}
