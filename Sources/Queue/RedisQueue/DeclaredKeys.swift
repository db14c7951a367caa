/// How the queue scripts get every key they touch in KEYS (Redis Cluster routes a script by its KEYS and
/// refuses any other key): keys the caller knows are listed once each (`DeclaredKeys`); keys only the data
/// names (a lease's queue, an envelope's queue, another worker's lease hash) come back in the reply's `needs`
/// and the call goes again declaring them (`KeyRounds`).

/// A script's KEYS: its fixed keys, then further keys each once; ARGV refers to them by 1-based position.
struct DeclaredKeys {
    private(set) var keys: [[UInt8]]
    private var positions: [String: Int] = [:]

    init(_ fixed: [String]) { keys = fixed.map { Array($0.utf8) } }

    /// The key's position in KEYS (Lua's `KEYS[i]`), added on first use; one hash lookup either way.
    mutating func index(of key: String) -> Int {
        let next = keys.count + 1
        let position = Self.claim(&positions[key, default: 0], next)
        if position == next { keys.append(Array(key.utf8)) }
        return position
    }

    /// Room for `count` more keys without regrowing (a batch whose every job may bring one).
    mutating func reserveCapacity(_ count: Int) {
        keys.reserveCapacity(keys.count + count)
        positions.reserveCapacity(positions.count + count)
    }

    /// The slot's position, `next` when it had none yet.
    private static func claim(_ slot: inout Int, _ next: Int) -> Int {
        if slot == 0 { slot = next }
        return slot
    }
}

/// The calls of one script whose keys come from data: each reply names the undeclared keys it met (`needs`,
/// having touched nothing that needs them); the next call declares them too. Bounded: the keys needed change
/// only when the data changes between two calls, so running out of rounds means something keeps changing it.
struct KeyRounds {
    static let limit = 4
    /// The keys learnt so far, to declare after the ones the caller knows.
    private(set) var learnt: [[UInt8]] = []
    private var calls = 0
    private let script: String

    init(script: String) { self.script = script }

    /// After a reply: true to call again (declaring `learnt`), false when it needed nothing more.
    mutating func again(needs: [[UInt8]]) throws(RedisError) -> Bool {
        calls += 1
        guard !needs.isEmpty else { return false }
        guard calls < Self.limit else {
            throw .protocolError("\(script): still needs undeclared keys after \(calls) calls: "
                                 + needs.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ", "))
        }
        for key in needs where !learnt.contains(key) { learnt.append(key) }
        return true
    }

    /// A reply's `needs` list: key names.
    static func parse(_ reply: RESPValue?) throws(RedisError) -> [[UInt8]] {
        guard let reply else { throw .protocolError("script reply without its needs list") }
        // An empty Lua table comes back as an empty array.
        guard let items = reply.array else { throw .protocolError("needs list: \(reply)") }
        var keys: [[UInt8]] = []
        for item in items {
            guard let key = item.bytes else { throw .protocolError("needs element: \(item)") }
            keys.append(key)
        }
        return keys
    }
}
