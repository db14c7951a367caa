import Basics
import DeviceRegistry
import Foundation
import HTTP1
import PushCore
import RedisQueue

/// `/v1/devices/...` (docs/api.md, "Devices"): register, refresh, read, list and unregister an app's devices in
/// the registry (`DeviceRegistryLoop`), on the loop like every route. A key limited to apps may touch only their
/// devices. Answered 404 while `registry.enabled` is off.
extension FrontDoor {
    static let devicesPathPrefix = "/v1/devices/"
    /// The most devices one bulk import, or one answer by owner or topic, holds when `api.max_jobs_per_request` is
    /// larger.
    static let maxDevicesPerRequest = 1000

    /// A devices path: `<app>` alone, or `<app>/<platform>/<token>` (the token the rest of the path: a Web Push
    /// endpoint must come percent-encoded, or its `?` and `%xx` are the URL's), each part percent-decoded with a
    /// path's `+` as itself.
    struct DevicePath {
        var app: String
        var device: (platform: String, token: String)?

        init?(_ path: String) {
            guard path.hasPrefix(FrontDoor.devicesPathPrefix) else { return nil }
            let parts = path.dropFirst(FrontDoor.devicesPathPrefix.count).split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
            func decoded(_ part: Substring) -> String { FrontDoor.percentDecoded(Substring(part.replacingOccurrences(of: "+", with: "%2B"))) }
            switch parts.count {
            case 1: app = decoded(parts[0])
            case 3: (app, device) = (decoded(parts[0]), (decoded(parts[1]), decoded(parts[2])))
            default: return nil
            }
        }
    }

    /// The key, the registry and the key's apps: what every devices route checks first (from the head too, for the
    /// routes that read a body). The path's app is checked here; its device by the route.
    func deviceAccess(_ request: HTTP1Parser.Request) -> Result<(path: DevicePath, registry: DeviceRegistryLoop), Refusal> {
        let key: APIAccess.Key?
        switch authenticated(request) {
        case .success(let presented): key = presented
        case .failure(let refusal): return .failure(refusal)
        }
        guard let registry = deviceRegistry else {
            return .failure(Refusal(Self.error(404, "not_found", "the device registry is off: set registry.enabled (see docs/devices.md)")))
        }
        guard let path = DevicePath(request.path), !path.app.isEmpty else {
            return .failure(Refusal(Self.error(404, "not_found", "no route \(request.method) \(request.path): use /v1/devices/<app> or /v1/devices/<app>/<platform>/<token>")))
        }
        guard appNames.contains(path.app) else {
            return .failure(Refusal(Self.error(404, "unknown_app", "app '\(path.app)' is not configured: devices are registered for the configuration's apps")))
        }
        if let key, !key.apps.isEmpty, !key.apps.contains(path.app) {
            return .failure(Refusal(Self.error(403, "forbidden", "key '\(key.name)' may not manage devices of app '\(path.app)' (its apps: \(key.apps.joined(separator: ", ")))")))
        }
        return .success((path, registry))
    }

    func devices(_ request: HTTP1Parser.Request, respond: @escaping (HTTP1Server.Response) -> Void) {
        let (path, registry): (DevicePath, DeviceRegistryLoop)
        switch deviceAccess(request) {
        case .success(let allowed): (path, registry) = allowed
        case .failure(let refusal): return respond(refusal.response)
        }
        guard let address = path.device else {
            switch request.method {
            case "GET": return list(request, app: path.app, registry: registry, respond: respond)
            case "POST": return importDevices(request, app: path.app, registry: registry, respond: respond)
            default: return respond(Self.error(405, "method_not_allowed", "use GET or POST", headers: [("Allow", "GET, POST")]))
            }
        }
        let id: DeviceID
        do {
            id = try DeviceID.parse(app: path.app, platform: address.platform, token: address.token, platforms: platforms)
        } catch {
            return respond(Self.error(400, error.code, error.description))
        }
        switch request.method {
        case "PUT": register(request, id, registry: registry, respond: respond)
        case "GET":
            registry.device(id) { result in
                switch result {
                case .failure(let error): respond(Self.redisFailed(error))
                case .success(nil): respond(Self.error(404, "not_found", "device \(id) is not registered"))
                case .success(let device?): respond(Self.jsonObject(200, device.json))
                }
            }
        case "DELETE":
            // Read once the script has answered (not pipelined behind it: a script not yet cached is sent again after
            // its NOSCRIPT, so a read behind it could come first); a write between the two shows in the answer.
            registry.unregister(id) { removed in
                registry.device(id) { device in
                    switch (removed, device) {
                    case (.failure(let error), _), (_, .failure(let error)): respond(Self.redisFailed(error))
                    case (.success(false), _): respond(Self.error(404, "not_found", "device \(id) is not registered"))
                    case (.success(true), .success(let device)): respond(Self.jsonObject(200, ["removed": true, "device": device?.json ?? [:]]))
                    }
                }
            }
        default: respond(Self.error(405, "method_not_allowed", "use PUT, GET or DELETE", headers: [("Allow", "PUT, GET, DELETE")]))
        }
    }

    /// PUT: the body is the attributes (empty is none). 201 when the device is new (or was removed), else 200, with
    /// the event and the device as read once the script answered.
    private func register(_ request: HTTP1Parser.Request, _ id: DeviceID, registry: DeviceRegistryLoop, respond: @escaping (HTTP1Server.Response) -> Void) {
        let attributes: DeviceAttributes
        do throws(DeviceError) {
            let object = request.body.isEmpty ? [:] : try Self.bodyJSON(request.body)
            guard let object = object as? [String: Any] else { throw DeviceError("bad_request", "the body must be a JSON object of the device's members") }
            attributes = try DeviceAttributes.parse(object, for: id)
        } catch {
            return respond(Self.error(400, error.code, error.description))
        }
        registry.register(id, attributes) { event in
            registry.device(id) { device in
                switch (event, device) {
                case (.failure(let error), _), (_, .failure(let error)): respond(Self.redisFailed(error))
                case (.success(let event), .success(let device)):
                    respond(Self.jsonObject(event == "registered" ? 201 : 200, ["event": event, "device": device?.json ?? [:]]))
                }
            }
        }
    }

    /// GET `/v1/devices/<app>`: by `owner` or `topic` (at most `limit`, `truncated` when there are more), else a
    /// page of every device (`cursor`, `count`; `next_cursor` null at the end). `platform` narrows any of them.
    private func list(_ request: HTTP1Parser.Request, app: String, registry: DeviceRegistryLoop, respond: @escaping (HTTP1Server.Response) -> Void) {
        let query = Self.queryItems(request.query)
        var platform: Platform?
        if let name = query["platform"] {
            guard let known = Platform(rawValue: name), platforms.contains(known) else {
                return respond(Self.error(400, "bad_platform", "platform must be one of \(platforms.map(\.rawValue).joined(separator: ", "))"))
            }
            platform = known
        }
        let most = Self.maxDevicesPerRequest
        guard let limit = Int(query["limit"] ?? query["count"] ?? "100"), (1...most).contains(limit) else {
            return respond(Self.error(400, "bad_request", "limit (or count) must be 1 to \(most)"))
        }
        let answer: (Result<(devices: [Device], more: Bool), RedisError>) -> Void = { result in
            switch result {
            case .failure(let error): respond(Self.redisFailed(error))
            case .success(let found):
                respond(Self.jsonObject(200, ["devices": found.devices.map(\.json), "truncated": found.more]))
            }
        }
        if let owner = query["owner"] {
            registry.devices(app: app, owner: owner, platform: platform, limit: limit, done: answer)
        } else if let topic = query["topic"] {
            registry.devices(app: app, topic: topic, platform: platform, limit: limit, done: answer)
        } else {
            registry.page(app: app, platform: platform, cursor: query["cursor"] ?? "", count: limit) { result in
                switch result {
                case .failure(let error): respond(Self.redisFailed(error))
                case .success(let page): respond(Self.jsonObject(200, ["devices": page.devices.map(\.json), "next_cursor": page.next ?? NSNull()]))
                }
            }
        }
    }

    /// POST `/v1/devices/<app>`: a list of registrations (`[...]` or `{"devices": [...]}`), each checked and
    /// registered on its own, each answered (`results[i]`: its event, or its error). 200 when none failed in Redis
    /// and some were stored, 422 when every one was refused, 503 when Redis failed some.
    private func importDevices(_ request: HTTP1Parser.Request, app: String, registry: DeviceRegistryLoop, respond: @escaping (HTTP1Server.Response) -> Void) {
        let most = min(settings.maxJobsPerRequest, Self.maxDevicesPerRequest)
        let items: [Any]
        do throws(DeviceError) {
            let body = try Self.bodyJSON(request.body)
            guard let list = body as? [Any] ?? (body as? [String: Any]).flatMap({ $0.count == 1 ? $0["devices"] as? [Any] : nil }) else {
                throw DeviceError("bad_request", "the body must be a JSON array of devices, or {\"devices\": [...]}")
            }
            items = list
        } catch {
            return respond(Self.error(400, error.code, error.description))
        }
        guard !items.isEmpty else { return respond(Self.error(400, "bad_request", "no devices in the list")) }
        guard items.count <= most else {
            return respond(Self.error(413, "too_many_devices", "at most \(most) devices a request; these are \(items.count)"))
        }
        let pending = PendingImport(count: items.count)
        let finish = {
            let failed = pending.results.filter { $0["failed"] != nil }.count
            let refused = pending.results.filter { $0["error"] != nil }.count
            let status = failed > 0 ? 503 : refused == items.count ? 422 : 200
            respond(Self.jsonObject(status, ["results": pending.results]))
        }
        for (index, item) in items.enumerated() {
            do {
                let (id, attributes, history) = try DeviceRegistration.parse(item, app: app, platforms: platforms)
                pending.results[index] = ["index": index, "platform": id.platform.rawValue, "token": id.token]
                pending.remaining += 1
                registry.register(id, attributes, history: history) { result in
                    switch result {
                    case .success(let event): pending.results[index]["event"] = event
                    case .failure(let error): pending.results[index]["failed"] = "not registered: \(error)"
                    }
                    pending.remaining -= 1
                    if pending.remaining == 0 { finish() }
                }
            } catch {
                pending.results[index] = ["index": index, "error": ["code": error.code, "message": error.description]]
            }
        }
        if pending.remaining == 0 { finish() }
    }

    private final class PendingImport {
        var results: [[String: Any]]
        var remaining = 0
        init(count: Int) { results = Array(repeating: [:], count: count) }
    }

    /// A body as JSON (fragments allowed, so that a bare string is refused by its shape, not its syntax).
    static func bodyJSON(_ body: [UInt8]) throws(DeviceError) -> Any {
        do {
            return try JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed])
        } catch {
            throw DeviceError("bad_request", "the body is not JSON")
        }
    }

    static func jsonObject(_ status: Int, _ object: [String: Any]) -> HTTP1Server.Response {
        var body: [UInt8] = []
        body.reserveCapacity(512)
        appendJSON(object, to: &body)
        return HTTP1Server.Response(status: status, body: body)
    }

    /// The values the devices routes answer (strings, integers, booleans, null, lists and objects, as `Device.json`
    /// makes them), keys in byte order. By hand: JSONSerialization's sorted keys (ICU comparisons) were 40 % of
    /// the API's CPU per registration.
    static func appendJSON(_ value: Any, to out: inout [UInt8]) {
        switch value {
        case let text as String: appendJSONString(text, to: &out)
        // A JSON boolean JSONSerialization read (a subscription's) is an NSNumber that also casts to Int: told by its type.
        case let number as NSNumber where String(cString: number.objCType) == "c": out += Array((number.boolValue ? "true" : "false").utf8)
        case let number as Int: appendDecimal(number, to: &out)
        case let number as Int64: appendDecimal(number, to: &out)
        case let flag as Bool: out += Array((flag ? "true" : "false").utf8)
        case let number as NSNumber: out += Array("\(number.doubleValue)".utf8)
        case let list as [Any]:
            out.append(UInt8(ascii: "["))
            for (index, item) in list.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendJSON(item, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case let object as [String: Any]:
            out.append(UInt8(ascii: "{"))
            for (index, key) in object.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendJSONString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                appendJSON(object[key]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        default: out += Array("null".utf8)
        }
    }

    static func redisFailed(_ error: RedisError) -> HTTP1Server.Response {
        Self.error(503, "unavailable", "Redis did not answer: \(error)")
    }

    /// A device's path (`/v1/devices/<app>/<platform>/<token>`), every byte outside RFC 3986's unreserved set
    /// percent-encoded: a Web Push endpoint is one path segment.
    static func devicePath(app: String, platform: String, token: String) -> String {
        devicesPathPrefix + [app, platform, token].map(percentEncoded).joined(separator: "/")
    }

    static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
