import PushCore

extension PushProvider {
    /// The job of `notification` for `device`, as every provider's `render` makes it: `members` (the provider's
    /// rendering of the notification chosen for the device's locale) replacing the envelope members of the same
    /// name the device passes through, then the platform's override merged over them (a JSON Merge Patch, RFC 7396), then what no override
    /// moves: `address` (where the provider keeps the device's token or subscription), `platform`, and the device's
    /// `app` and `id` when given. Written with sorted keys, so one notification and device always give the same bytes.
    public static func renderedJob(_ notification: NeutralNotification, for device: RenderDevice, address: [([String], JSONValue)],
                                   members: (NeutralNotification) throws(NotificationError) -> [String: JSONValue]) throws(NotificationError) -> [UInt8] {
        var job = JSONValue.object(device.envelope.merging(try members(notification.localized(for: device.locale))) { $1 })
        if let patch = notification.overrides[platform] { job = job.merged(with: patch) }
        var fixed = address
        fixed.append((["platform"], .string(platform.rawValue)))
        if let app = device.app { fixed.append((["app"], .string(app))) }
        if let id = device.id { fixed.append((["id"], .string(id))) }
        for (path, value) in fixed { job = job.setting(value, at: path[...]) }
        return job.bytes
    }
}

extension RenderDevice {
    /// Its token, which a provider that addresses devices by token needs.
    public func requiredToken(for platform: Platform) throws(NotificationError) -> String {
        guard let token, !token.isEmpty else {
            throw NotificationError(code: "missing_address", "\(platform.displayName): the device needs its token")
        }
        return token
    }
}
