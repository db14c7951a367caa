/// Which argument of a command names the key it is routed by in a cluster (the first key; Redis refuses a
/// command whose keys span slots with CROSSSLOT), or nil for commands that may go to any node.
/// Covers what Herald and its tools send; any other command is taken to have its key right after its name.
enum CommandKey {
    static func of(_ args: [[UInt8]]) -> [UInt8]? {
        guard let first = args.first else { return nil }
        let name = String(decoding: first, as: UTF8.self).uppercased()
        if keyless.contains(name) { return nil }
        switch name {
        case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO":
            guard args.count > 3, let count = Int(String(decoding: args[2], as: UTF8.self)), count > 0 else { return nil }
            return args[3]
        case "XREAD", "XREADGROUP":
            guard let streams = args.firstIndex(where: { String(decoding: $0, as: UTF8.self).uppercased() == "STREAMS" }),
                  streams + 1 < args.count else { return nil }
            return args[streams + 1]
        case "XINFO", "XGROUP", "OBJECT", "MEMORY":
            return args.count > 2 ? args[2] : nil
        default:
            return args.count > 1 ? args[1] : nil
        }
    }

    private static let keyless: Set<String> = [
        "PING", "ECHO", "INFO", "TIME", "CLUSTER", "SCRIPT", "FUNCTION", "DBSIZE", "FLUSHALL", "FLUSHDB", "CONFIG",
        "CLIENT", "COMMAND", "HELLO", "AUTH", "SELECT", "ROLE", "READONLY", "READWRITE", "ASKING", "WAIT", "SLOWLOG",
        "LATENCY", "MULTI", "EXEC", "DISCARD", "KEYS", "SCAN", "RANDOMKEY", "ACL", "LASTSAVE", "DEBUG", "PUBLISH",
    ]

    /// The slot of a script's keys, or a CROSSSLOT error (before anything is sent) when they do not share one.
    static func scriptSlot(_ keys: [[UInt8]]) -> Result<Int?, RedisError> {
        guard let first = keys.first else { return .success(nil) }
        let slot = ClusterSlot.of(first)
        for key in keys.dropFirst() where ClusterSlot.of(key) != slot {
            return .failure(.server("CROSSSLOT script keys \(String(decoding: first, as: UTF8.self).debugDescription) (slot \(slot)) and "
                + "\(String(decoding: key, as: UTF8.self).debugDescription) (slot \(ClusterSlot.of(key))) are in different slots; "
                + "Redis Cluster runs a script only when all its keys share one: give them one hash tag, e.g. prefix {herald}"))
        }
        return .success(slot)
    }
}
