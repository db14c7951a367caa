import Reactor

/// Which resolved address a pool's next connection tries first. Apple asks for connections spread over many
/// APNs hosts: each new connection resolves afresh and starts at the next address of the set in turn (round
/// robin), and addresses no open connection of the pool uses come before the ones in use, so while unused
/// ones remain no two connections share a host. The rest stay in the list as fallbacks, tried in order when
/// a connect fails.
struct AddressRotation {
    private var cursor = 0

    /// `addresses` (duplicates dropped) rotated to the cursor, those in `inUse` (by `ip:port`) moved last.
    mutating func order(_ addresses: [SocketAddress], inUse: Set<String>) -> [SocketAddress] {
        var seen = Set<String>()
        let distinct = addresses.filter { seen.insert($0.description).inserted }
        guard !distinct.isEmpty else { return distinct }
        let start = cursor % distinct.count
        cursor &+= 1
        let rotated = Array(distinct[start...] + distinct[..<start])
        return rotated.filter { !inUse.contains($0.description) } + rotated.filter { inUse.contains($0.description) }
    }
}
