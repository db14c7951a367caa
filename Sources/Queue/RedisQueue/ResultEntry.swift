import Basics

/// One entry of `<prefix>:results`: the outcome of one attempt of one job (see docs/results.md).
///
/// Text fields are capped when written (`fields`, `appendFields`): `reason` at `maxReasonBytes`, the others at
/// `maxTextBytes`, cut on a UTF-8 boundary and marked `…(truncated, N bytes)`, so a peer's or a producer's
/// megabyte never lands in every entry.
public struct ResultEntry: Sendable, Equatable {
    /// Room for Herald's own reasons (`MaxAttempts:<APNs reason>`, `bad_token: <detail>`).
    public static let maxReasonBytes = 1024
    public static let maxTextBytes = 4096
    public enum Outcome: String, Sendable, CaseIterable {
        case delivered, retrying
        case tokenDropped = "token_dropped"
        /// A broadcast whose channel APNs does not know (ChannelNotRegistered): also on `<prefix>:dropped-channels`.
        case channelDropped = "channel_dropped"
        case failed, rejected
        /// Idempotency: another copy of this job id was already sent (or is being sent) within the window.
        case duplicate
        /// `herald replay` put an archived job back on its queue: its new outcomes follow (a replay is a new run).
        case replayed
        /// `herald scheduled cancel` took the job out of the retry set before it was sent again (a `deliver_at`
        /// job before its time, a retry before its next attempt): terminal.
        case cancelled
        /// A `validate_only` job passed every check (and, for FCM, FCM's own dry run) and was not sent: terminal.
        case validated
        /// The provider took it and answered a ticket (its id in `message_id`); the receipt asked for later writes
        /// the terminal outcome (docs/results.md, "Receipts"): not terminal.
        case accepted

        /// Every job ends with exactly one terminal outcome per run; `retrying` and `accepted` entries come before
        /// it, and a `replayed` entry starts another run.
        public var isTerminal: Bool { self != .retrying && self != .replayed && self != .accepted }
    }

    public var id: String
    public var outcome: Outcome
    /// HTTP status from the provider, 0 when there was none (rejected before sending, connection failure).
    public var status: Int
    public var reason: String?
    public var token: String?
    /// The broadcast channel ID (a broadcast has no `token`).
    public var channel: String?
    public var topic: String?
    public var environment: String?
    public var app: String?
    public var apnsID: String?
    public var apnsUniqueID: String?
    /// 1-based.
    public var attempt: Int
    /// Due time in ms since the epoch, for `retrying`.
    public var retryAt: Int64?
    /// ms since the epoch, for 410.
    public var invalidSince: Int64?
    /// The environment first tried when environment fallback sent the job to the other one (see
    /// docs/results.md); `environment` then names the one that answered last.
    public var fallbackFrom: String?
    public var latencyMilliseconds: Int?
    public var worker: String
    /// The job's `Platform` raw value, for jobs the worker read (nil on entries made elsewhere).
    public var platform: String?
    /// Deprecated for `messageID`, still written: the message id of a delivered job of a provider other than APNs
    /// (FCM's `projects/<project>/messages/<id>`, Web Push's, Push Kit's `requestId`).
    public var fcmName: String?
    /// The producer's W3C `traceparent`, when its job carried a valid one.
    public var traceparent: String?
    /// The provider's id of the message, whichever provider: APNs' `apns-id` (as `apnsID`), FCM's message name,
    /// Web Push's `Location` id, Push Kit's `requestId`.
    public var messageID: String?

    public init(id: String, outcome: Outcome, status: Int = 0, reason: String? = nil, token: String? = nil,
                topic: String? = nil, environment: String? = nil, app: String? = nil, apnsID: String? = nil,
                apnsUniqueID: String? = nil, attempt: Int = 1, retryAt: Int64? = nil, invalidSince: Int64? = nil,
                latencyMilliseconds: Int? = nil, worker: String) {
        self.id = id
        self.outcome = outcome
        self.status = status
        self.reason = reason
        self.token = token
        self.topic = topic
        self.environment = environment
        self.app = app
        self.apnsID = apnsID
        self.apnsUniqueID = apnsUniqueID
        self.attempt = attempt
        self.retryAt = retryAt
        self.invalidSince = invalidSince
        self.latencyMilliseconds = latencyMilliseconds
        self.worker = worker
    }

    static func text(_ value: String) -> String { BoundedText.truncate(value, maxBytes: maxTextBytes) }
    static func reason(_ value: String) -> String { BoundedText.truncate(value, maxBytes: maxReasonBytes) }

    /// Stream field/value pairs (text capped); absent optionals are left out.
    public var fields: [(String, String)] {
        var out: [(String, String)] = [("id", Self.text(id)), ("outcome", outcome.rawValue), ("status", String(status))]
        if let reason { out.append(("reason", Self.reason(reason))) }
        if let token { out.append(("token", Self.text(token))) }
        if let channel { out.append(("channel", Self.text(channel))) }
        if let topic { out.append(("topic", Self.text(topic))) }
        if let environment { out.append(("environment", Self.text(environment))) }
        if let app { out.append(("app", Self.text(app))) }
        if let apnsID { out.append(("apns_id", Self.text(apnsID))) }
        if let apnsUniqueID { out.append(("apns_unique_id", Self.text(apnsUniqueID))) }
        out.append(("attempt", String(attempt)))
        if let retryAt { out.append(("retry_at", String(retryAt))) }
        if let invalidSince { out.append(("invalid_since", String(invalidSince))) }
        if let fallbackFrom { out.append(("fallback_from", Self.text(fallbackFrom))) }
        if let latencyMilliseconds { out.append(("latency_ms", String(latencyMilliseconds))) }
        out.append(("worker", Self.text(worker)))
        if let platform { out.append(("platform", Self.text(platform))) }
        if let fcmName { out.append(("fcm_name", Self.text(fcmName))) }
        if let traceparent { out.append(("traceparent", Self.text(traceparent))) }
        if let messageID { out.append(("message_id", Self.text(messageID))) }
        return out
    }

    /// How many field/value pairs `appendFields` writes (the same as `fields.count`).
    public var fieldCount: Int {
        var n = 5
        if reason != nil { n += 1 }
        if token != nil { n += 1 }
        if channel != nil { n += 1 }
        if topic != nil { n += 1 }
        if environment != nil { n += 1 }
        if app != nil { n += 1 }
        if apnsID != nil { n += 1 }
        if apnsUniqueID != nil { n += 1 }
        if retryAt != nil { n += 1 }
        if invalidSince != nil { n += 1 }
        if fallbackFrom != nil { n += 1 }
        if latencyMilliseconds != nil { n += 1 }
        if platform != nil { n += 1 }
        if fcmName != nil { n += 1 }
        if traceparent != nil { n += 1 }
        if messageID != nil { n += 1 }
        return n
    }

    /// Writes the same pairs as `fields`, in the same order, straight into encoded arguments (the hot path).
    public func appendFields(to args: inout RESPArguments) {
        args.append("id"); args.append(Self.text(id))
        args.append("outcome"); args.append(outcome.rawValue)
        args.append("status"); args.append(status)
        if let reason { args.append("reason"); args.append(Self.reason(reason)) }
        if let token { args.append("token"); args.append(Self.text(token)) }
        if let channel { args.append("channel"); args.append(Self.text(channel)) }
        if let topic { args.append("topic"); args.append(Self.text(topic)) }
        if let environment { args.append("environment"); args.append(Self.text(environment)) }
        if let app { args.append("app"); args.append(Self.text(app)) }
        if let apnsID { args.append("apns_id"); args.append(Self.text(apnsID)) }
        if let apnsUniqueID { args.append("apns_unique_id"); args.append(Self.text(apnsUniqueID)) }
        args.append("attempt"); args.append(attempt)
        if let retryAt { args.append("retry_at"); args.append(retryAt) }
        if let invalidSince { args.append("invalid_since"); args.append(invalidSince) }
        if let fallbackFrom { args.append("fallback_from"); args.append(Self.text(fallbackFrom)) }
        if let latencyMilliseconds { args.append("latency_ms"); args.append(latencyMilliseconds) }
        args.append("worker"); args.append(Self.text(worker))
        if let platform { args.append("platform"); args.append(Self.text(platform)) }
        if let fcmName { args.append("fcm_name"); args.append(Self.text(fcmName)) }
        if let traceparent { args.append("traceparent"); args.append(Self.text(traceparent)) }
        if let messageID { args.append("message_id"); args.append(Self.text(messageID)) }
    }

    /// Its field in the job's result index: the token, else the broadcast channel, else "" (one entry per job).
    public var indexField: String { token ?? channel ?? "" }

    /// The entry as the result index keeps it (`QueueKeys.resultIndex`): a JSON object of its fields as the
    /// stream holds them (strings), after the queue key the job was claimed from.
    public func indexJSON(queue: String) -> String {
        var out = "{\"queue\":" + jsonEscaped(queue)
        for (field, value) in fields { out += ",\"" + field + "\":" + jsonEscaped(value) }
        return out + "}"
    }

    /// Reads an entry back from a stream's field map (for tools and tests).
    public init?(fields map: [String: String]) {
        guard let id = map["id"], let outcomeText = map["outcome"], let outcome = Outcome(rawValue: outcomeText),
              let worker = map["worker"] else { return nil }
        self.init(id: id, outcome: outcome, status: Int(map["status"] ?? "0") ?? 0, reason: map["reason"],
                  token: map["token"], topic: map["topic"], environment: map["environment"], app: map["app"],
                  apnsID: map["apns_id"], apnsUniqueID: map["apns_unique_id"], attempt: Int(map["attempt"] ?? "1") ?? 1,
                  retryAt: map["retry_at"].flatMap { Int64($0) }, invalidSince: map["invalid_since"].flatMap { Int64($0) },
                  latencyMilliseconds: map["latency_ms"].flatMap { Int($0) }, worker: worker)
        fallbackFrom = map["fallback_from"]
        channel = map["channel"]
        platform = map["platform"]
        fcmName = map["fcm_name"]
        traceparent = map["traceparent"]
        messageID = map["message_id"]
    }

    public static func == (a: ResultEntry, b: ResultEntry) -> Bool { a.fields.elementsEqual(b.fields, by: ==) }
}

/// One entry of `<prefix>:dropped-tokens`: a token the producer should delete.
public struct DroppedToken: Sendable, Equatable {
    public var token: String
    public var topic: String
    public var environment: String
    public var reason: String
    public var invalidSince: Int64?
    /// The token's `Platform` raw value (nil on entries made elsewhere).
    public var platform: String?
    /// The app whose credential the token was dropped for: for FCM its project (SENDER_ID_MISMATCH drops a
    /// token for one project only).
    public var app: String?

    /// The token's platform has environments (APNs): its entry always names a topic and an environment, empty
    /// or not; without (FCM), only those given. The platform's own answer (`Platform.hasEnvironments`), as data.
    public var hasEnvironments: Bool

    public init(token: String, topic: String, environment: String, reason: String, invalidSince: Int64? = nil,
                platform: String? = nil, app: String? = nil, hasEnvironments: Bool = true) {
        self.hasEnvironments = hasEnvironments
        self.token = token
        self.topic = topic
        self.environment = environment
        self.reason = reason
        self.invalidSince = invalidSince
        self.platform = platform
        self.app = app
    }

    /// Capped like `ResultEntry`'s fields; FCM tokens have no environment, and usually no topic.
    var fields: [(String, String)] {
        var out = [("token", ResultEntry.text(token))]
        if !topic.isEmpty || hasEnvironments { out.append(("topic", ResultEntry.text(topic))) }
        if !environment.isEmpty || hasEnvironments { out.append(("environment", ResultEntry.text(environment))) }
        out.append(("reason", ResultEntry.reason(reason)))
        if let invalidSince { out.append(("invalid_since", String(invalidSince))) }
        if let platform { out.append(("platform", ResultEntry.text(platform))) }
        if let app { out.append(("app", ResultEntry.text(app))) }
        return out
    }
}

/// One entry of `<prefix>:dropped-channels`: a broadcast channel APNs no longer knows (ChannelNotRegistered), which
/// the producer should stop using (and stop handing to devices).
public struct DroppedChannel: Sendable, Equatable {
    public var channel: String
    /// The app's bundle ID (channels belong to it, per environment).
    public var bundleID: String
    public var environment: String
    public var reason: String

    public init(channel: String, bundleID: String, environment: String, reason: String) {
        self.channel = channel
        self.bundleID = bundleID
        self.environment = environment
        self.reason = reason
    }

    /// Capped like `ResultEntry`'s fields.
    var fields: [(String, String)] {
        [("channel", ResultEntry.text(channel)), ("bundle_id", ResultEntry.text(bundleID)),
         ("environment", ResultEntry.text(environment)), ("reason", ResultEntry.reason(reason))]
    }
}
