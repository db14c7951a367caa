import PushCore
import Testing
@testable import WebPush

/// random() = 0.5: delays come out unjittered (5xx base 900 s, 429 base 10 s by default).
private let policy = OutcomePolicy(random: { 0.5 })

private func answer(_ status: Int, _ body: String = "", location: String? = nil, retryAfter: String? = nil) -> DeliveryResult {
    .answer(WebPushResponse.decode(status: status, body: Array(body.utf8), location: location, retryAfter: retryAfter))
}

@Suite struct WebPushOutcomeTests {
    enum Class: Equatable {
        case delivered, drop(String), retry(ms: Int64, reason: String), park(String), fail(String)
    }

    static func classify(_ d: Decision) -> Class? {
        switch d {
        case .delivered: .delivered
        case .dropToken(_, let r): .drop(r)
        case .retry(let ms, let r): .retry(ms: ms, reason: r)
        case .deferForConfiguration(let r): .park(r)
        case .fail(let r): .fail(r)
        default: nil
        }
    }

    /// The issue's classes, row by row: the push service's answer, and what Herald does with the job.
    static let table: [(String, DeliveryResult, Class)] = [
        ("201 Created", answer(201, location: "https://fcm.googleapis.com/m/abc123"), .delivered),
        ("202 Accepted (async receipt)", answer(202), .delivered),
        ("404 subscription unknown", answer(404, "Not Found"), .drop("NotFound")),
        ("410 subscription expired or unsubscribed", answer(410, #"{"code":410,"errno":106,"error":"Gone"}"#), .drop("Gone")),
        ("413 payload too large", answer(413, #"{"code":413,"errno":104}"#), .fail("PayloadTooLarge")),
        ("429 without Retry-After", answer(429), .retry(ms: 10_000, reason: "HTTP 429")),
        ("429 with Retry-After", answer(429, "Too many requests", retryAfter: "60"), .retry(ms: 60_000, reason: "Too many requests")),
        ("500", answer(500), .retry(ms: 900_000, reason: "HTTP 500")),
        ("503 with a longer Retry-After", answer(503, #"{"reason":"ServiceUnavailable"}"#, retryAfter: "2000"),
         .retry(ms: 2_000_000, reason: "ServiceUnavailable")),
        ("Safari 403 BadJwtToken", answer(403, #"{"reason":"BadJwtToken"}"#), .park("VAPIDRefused: BadJwtToken")),
        ("FCM 403 VapidPkHashMismatch after a key rotation", answer(403, "VapidPkHashMismatch"), .park("VAPIDRefused: VapidPkHashMismatch")),
        ("Mozilla 401 errno 109", answer(401, #"{"code":401,"errno":109,"error":"Unauthorized","message":"Request did not validate invalid token"}"#),
         .park("VAPIDRefused: Request did not validate invalid token (errno 109)")),
        ("401 with no body", answer(401), .park("VAPIDRefused: HTTP 401")),
        ("400 naming the Crypto-Key", answer(400, "Invalid Crypto-Key header"), .park("VAPIDRefused: Invalid Crypto-Key header")),
        ("400 about the message", answer(400, #"{"reason":"BadTopic"}"#), .fail("BadTopic")),
        ("403 not about the key", answer(403, #"{"reason":"Forbidden"}"#), .fail("Forbidden")),
        ("400 without a body", answer(400), .fail("HTTP 400")),
    ]

    @Test func everyWebPushAnswerLandsInItsClass() {
        for (label, result, expected) in Self.table {
            let decision = policy.decide(result, attempt: 1, expiration: nil, nowSeconds: 1_800_000_000)
            #expect(Self.classify(decision) == expected, "\(label): \(decision)")
        }
    }

    @Test func aDeliveryRecordsTheMessageIDFromLocation() {
        let response = WebPushResponse.decode(status: 201, body: [], location: "https://updates.push.services.mozilla.com/m/gAAAAABk", retryAfter: nil)
        #expect(response.resultFields.messageName == "gAAAAABk")
        #expect(response.metricsReason == "")
        #expect(WebPushResponse(status: 410).metricsReason == "other")
    }

    @Test func aThrottleHoldsOnlyTheMessageNotTheApp() {
        #expect(policy.slowDownMilliseconds(answer(429, retryAfter: "30")) == nil)
        #expect(policy.refusesCredential(answer(403, #"{"reason":"BadJwtToken"}"#)))
        #expect(!policy.refusesCredential(answer(410)))
    }

    @Test func aHostileBodyIsBoundedAndBinaryIsNoReason() {
        let long = String(repeating: "x", count: 5000)
        #expect(WebPushResponse.decode(status: 400, body: Array(long.utf8), location: nil, retryAfter: nil).reasonName.utf8.count <= 256)
        #expect(WebPushResponse.decode(status: 400, body: [0x00, 0xFF, 0x01], location: nil, retryAfter: nil).reasonName == "HTTP 400")
        #expect(WebPushResponse.decode(status: 429, body: [], location: nil, retryAfter: "soon").retryAfterSeconds == nil)
    }
}
