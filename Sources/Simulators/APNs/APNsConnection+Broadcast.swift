import Foundation

/// Broadcast sends (`POST /4/broadcasts/apps/<bundle>`) and channel management (`/1/apps/<bundle>/...`), checked in
/// the order Apple documents: path and method, authentication, the app (push-type suffix, broadcast capability),
/// then the request's headers and body, then the channel itself.
extension APNsConnection {
    func processBroadcast(_ request: IncomingRequest, path: String) {
        request.usesRequestID = true
        let bundleID: String
        switch BroadcastRules.broadcastBundleID(method: request.method, path: path) {
        case .failure(let rejection): return reject(request, rejection)
        case .success(let value): bundleID = value
        }
        if let rejection = appRefusal(request, bundleID: bundleID) { return reject(request, rejection) }
        if let rejection = BroadcastRules.checkChannelID(request.channelID) { return reject(request, rejection) }
        let channelID = request.channelID ?? ""
        if let rejection = headerRefusal(request) { return reject(request, rejection) }
        guard let pushType = request.pushType else { return reject(request, Rejection(status: 400, reason: "MissingPushType")) }
        // "The only allowed value is LiveActivity": compared without case, as Herald sends `liveactivity`.
        guard pushType.lowercased() == "liveactivity" else { return reject(request, Rejection(status: 400, reason: "InvalidPushType")) }
        if let priority = request.priority, priority != "10" && priority != "5" && priority != "1" {
            return reject(request, Rejection(status: 400, reason: "BadPriority"))
        }
        var expiration: Int64 = 0
        if let text = request.expiration {
            guard !text.isEmpty, text.utf8.count <= 12, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int64(text) else {
                return reject(request, Rejection(status: 400, reason: "BadExpirationDate"))
            }
            expiration = value
        }
        if request.body.isEmpty && !request.bodyTruncated { return reject(request, Rejection(status: 400, reason: "PayloadEmpty")) }
        if request.bodyTruncated || request.body.count > BroadcastRules.maxPayloadBytes {
            return reject(request, Rejection(status: 413, reason: "PayloadTooLarge"))
        }
        if !JSONShape.isObject(request.body) { return reject(request, Rejection(status: 400, reason: "BadRequestPayload")) }
        guard let channel = core.channels.find(channelID, bundleID: bundleID) else {
            return reject(request, Rejection(status: 400, reason: "ChannelNotRegistered"))
        }
        if channel.storagePolicy == 0 && expiration != 0 {
            return reject(request, Rejection(status: 400, reason: "BadExpirationDate"))
        }
        applyFaults(request, token: channelID, topic: bundleID) { [unowned self] in
            // Faults may have waited: the channel can be gone by now.
            guard self.core.channels.find(channelID, bundleID: bundleID) != nil else {
                return self.reject(request, Rejection(status: 400, reason: "ChannelNotRegistered"))
            }
            let requestID = request.requestID ?? self.core.makeUUID()
            self.core.recordBroadcast(request, channel: channelID, bundleID: bundleID, requestID: requestID, connection: self.id)
            self.respond(request, status: 200, headers: [("apns-request-id", requestID)], body: nil)
            self.core.answered(status: 200, reason: nil)
        }
    }

    func processManagement(_ request: IncomingRequest, path: String) {
        request.usesRequestID = true
        let bundleID: String
        let call: BroadcastRules.ManagementCall
        switch BroadcastRules.managementCall(method: request.method, path: path) {
        case .failure(let rejection): return reject(request, rejection)
        case .success(let value): (bundleID, call) = value
        }
        if let rejection = appRefusal(request, bundleID: bundleID) { return reject(request, rejection) }
        if let rejection = headerRefusal(request) { return reject(request, rejection) }
        let requestID = request.requestID ?? core.makeUUID()
        switch call {
        case .create:
            let policy: Int
            switch BroadcastRules.storagePolicy(createBody: request.body) {
            case .failure(let rejection): return reject(request, rejection)
            case .success(let value): policy = value
            }
            guard let channel = core.channels.create(bundleID: bundleID, policy: policy, random: &core.random) else {
                return reject(request, Rejection(status: 400, reason: "CannotCreateChannelConfig"))
            }
            core.stats.channelsCreated += 1
            answer(request, status: 201, headers: [("apns-request-id", requestID), ("apns-channel-id", channel.id)], json: nil)
        case .read, .delete:
            if let rejection = BroadcastRules.checkChannelID(request.channelID) { return reject(request, rejection) }
            let channelID = request.channelID ?? ""
            guard let channel = core.channels.find(channelID, bundleID: bundleID) else {
                return reject(request, Rejection(status: 400, reason: "ChannelNotRegistered"))
            }
            if call == .read {
                answer(request, status: 200, headers: [("apns-request-id", requestID)],
                       json: ["message-storage-policy": channel.storagePolicy, "push-type": "LiveActivity"])
            } else {
                core.channels.delete(channelID, bundleID: bundleID)
                core.stats.channelsDeleted += 1
                answer(request, status: 204, headers: [("apns-request-id", requestID)], json: nil)
            }
        case .list:
            answer(request, status: 200, headers: [("apns-request-id", requestID)], json: ["channels": core.channels.list(bundleID: bundleID)])
        }
    }

    /// Authentication, then the bundle ID: allowed for the key or certificate, bare (no push-type suffix), and with
    /// the broadcast capability.
    private func appRefusal(_ request: IncomingRequest, bundleID: String) -> Rejection? {
        let key: MockProviderKey?
        switch authenticate(request) {
        case .failure(let rejection): return rejection
        case .success(let value): key = value
        }
        if BroadcastRules.hasPushTypeSuffix(bundleID) { return Rejection(status: 400, reason: "TopicDisallowed") }
        if let rejection = topicRefusal(key, topic: bundleID) { return rejection }
        if let enabled = core.configuration.broadcastBundleIDs, !enabled.contains(bundleID) {
            return Rejection(status: 400, reason: "FeatureNotEnabled")
        }
        return nil
    }

    /// DuplicateHeaders, and BadMessageId for an `apns-request-id` (or `apns-id`) that is not a UUID.
    private func headerRefusal(_ request: IncomingRequest) -> Rejection? {
        if request.duplicateHeader { return Rejection(status: 400, reason: "DuplicateHeaders") }
        for id in [request.requestID, request.apnsID] {
            if let id, !RequestRules.isUUID(id) { return Rejection(status: 400, reason: "BadMessageId") }
        }
        return nil
    }

    private func answer(_ request: IncomingRequest, status: Int, headers: [(String, String)], json: [String: Any]?) {
        var all = headers
        var body: [UInt8]? = nil
        if let json, let data = try? JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]) {
            body = [UInt8](data)
            all.append(("content-type", "application/json"))
        }
        respond(request, status: status, headers: all, body: body)
        core.answered(status: status, reason: nil)
    }
}
