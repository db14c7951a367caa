import RedisQueue

extension DeviceRegistry {
    /// Registers many devices with pipelined script calls (`herald devices import`, bulk registrations, the tests'
    /// and the bench's fills): one round trip per `chunk` instead of one per device. Each call is the very
    /// `register` of one device; a reply that is an error (the script not cached on that node, a wrong-typed key) is
    /// retried alone, so its error is the one `register` throws. Returns each device's event, in order.
    public func register(many devices: [(DeviceID, DeviceAttributes)], chunk: Int = 1_000) throws(RedisError) -> [String] {
        guard let first = devices.first else { return [] }
        var events = [try register(first.0, first.1)]
        var start = 1
        while start < devices.count {
            let part = devices[start..<min(start + chunk, devices.count)]
            let now = clock()
            let commands: [[[UInt8]]] = part.map { id, attributes in
                let call = calls.register(id, attributes, now: now)
                return [Array("EVALSHA".utf8), Array(call.script.sha1.utf8), Array(String(call.keys.count).utf8)] + call.keys + call.args
            }
            let replies = try redis.pipeline(rawCommands: commands)
            for (offset, reply) in zip(part.indices, replies) {
                if reply.errorMessage == nil {
                    events.append(DeviceCalls.registered(reply))
                } else {
                    events.append(try register(devices[offset].0, devices[offset].1))
                }
            }
            start += part.count
        }
        return events
    }
}
