import Foundation
import PushCore

/// One registration as a list carries it (`POST /v1/devices/<app>`'s items, `herald devices import`'s lines): the
/// device's address and its attributes in one object, `{"app", "platform", "token", ...attributes}`.
public enum DeviceRegistration {
    /// The members `Device.json` writes that a registration neither gives nor carries as history (what the registry
    /// learnt since): `herald devices import` passes over them so that it reads its own exports back.
    public static let storedMembers: Set<String> = ["last_delivered_at", "reason", "answer", "removed_at"]

    /// Reads one item: `app` is the path's when given (an item naming another app is refused), else the item's own.
    /// `created_at`, `last_seen_at` (ms since the epoch) and `state` (`active` or `stale`) are its history (an export's
    /// line carries them); every other member is an attribute (checked by `DeviceAttributes.parse`), except
    /// `ignoring`'s.
    public static func parse(_ item: Any, app: String?, platforms: [Platform], ignoring: Set<String> = [])
        throws(DeviceError) -> (id: DeviceID, attributes: DeviceAttributes, history: DeviceHistory) {
        guard var object = item as? [String: Any] else {
            throw DeviceError("bad_request", "a device must be a JSON object {\"platform\", \"token\", ...}")
        }
        let named = object.removeValue(forKey: "app")
        if let app, let named, named as? String != app {
            throw DeviceError("bad_app", "app must be the path's (\(app)) or left out")
        }
        guard let appName = app ?? named as? String else { throw DeviceError("bad_app", "app is missing (a string)") }
        guard let platform = object.removeValue(forKey: "platform") as? String else {
            throw DeviceError("bad_platform", "platform is missing (a string)")
        }
        guard let token = object.removeValue(forKey: "token") as? String else { throw DeviceError("bad_token", "token is missing (a string)") }
        var history = DeviceHistory()
        for (member, path) in [("created_at", \DeviceHistory.created), ("last_seen_at", \DeviceHistory.seen)] {
            guard let value = object.removeValue(forKey: member), !(value is NSNull) else { continue }
            guard let number = value as? NSNumber, String(cString: number.objCType) != "c", number.doubleValue == number.doubleValue.rounded(),
                  number.doubleValue > 0, number.doubleValue < 1e15 else {
                throw DeviceError("bad_history", "\(member) must be a time in milliseconds since the epoch")
            }
            history[keyPath: path] = number.int64Value
        }
        if let state = object.removeValue(forKey: "state"), !(state is NSNull) {
            guard let text = state as? String, text == "active" || text == "stale" else {
                throw DeviceError("bad_history", "state must be active or stale (a removed device is not imported)")
            }
            history.stale = text == "stale"
        }
        for member in ignoring { object.removeValue(forKey: member) }
        let id = try DeviceID.parse(app: appName, platform: platform, token: token, platforms: platforms)
        return (id, try DeviceAttributes.parse(object, for: id), history)
    }
}
