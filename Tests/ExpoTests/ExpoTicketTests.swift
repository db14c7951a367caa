import Expo
import PushCore
import Testing

/// Every documented ticket answer lands in its class (docs/expo.md's table).
@Suite struct ExpoTicketTests {
    private static func ticket(_ status: Int, _ body: String, count: Int = 1, index: Int = 0) -> ExpoResponse {
        var response = ExpoResponse.decode(status: status, body: Array(body.utf8), count: count)[index]
        response.receiptDelayMilliseconds = 900_000
        return response
    }

    @Test func everyExpoAnswerLandsInItsClass() {
        let ok = Self.ticket(200, #"{"data":[{"status":"ok","id":"XXXX-1"}]}"#)
        #expect(ok.answerClass == .awaitReceipt(ticket: "XXXX-1", afterMilliseconds: 900_000))
        #expect(ok.resultFields.messageID == "XXXX-1")
        #expect(ok.metricsReason == "")
        let error = { (code: String) in Self.ticket(200, #"{"data":[{"status":"error","message":"m","details":{"error":"\#(code)"}}]}"#) }
        #expect(error("DeviceNotRegistered").answerClass == .dropToken(invalidSince: nil, reason: "DeviceNotRegistered"))
        #expect(error("MessageRateExceeded").answerClass == .throttled(reason: "MessageRateExceeded", retryAfterMilliseconds: 0, slowsDestination: false))
        for code in ["MessageTooBig", "InvalidCredentials", "MismatchSenderId", "SomethingNew"] {
            #expect(error(code).answerClass == .fail(reason: code))
        }
        #expect(Self.ticket(429, #"{"errors":[{"code":"TOO_MANY_REQUESTS","message":"m"}]}"#).answerClass
                == .throttled(reason: "TOO_MANY_REQUESTS", retryAfterMilliseconds: 0, slowsDestination: true))
        #expect(Self.ticket(503, "<html>busy</html>").answerClass == .serverError(reason: "HTTP 503", retryAfterMilliseconds: 0))
        #expect(Self.ticket(500, #"{"errors":[{"code":"INTERNAL_SERVER_ERROR","message":"m"}]}"#).answerClass
                == .serverError(reason: "INTERNAL_SERVER_ERROR", retryAfterMilliseconds: 0))
        #expect(Self.ticket(401, #"{"errors":[{"code":"UNAUTHORIZED","message":"m"}]}"#).answerClass == .resendNow(freshConnection: false, refreshToken: true))
        var refused = Self.ticket(401, "")
        refused.afterTokenRefresh = true
        #expect(refused.answerClass == .deferForConfiguration(reason: "HTTP 401: access token refused twice"))
        #expect(Self.ticket(400, #"{"errors":[{"code":"PUSH_TOO_MANY_EXPERIENCE_IDS","message":"m"}]}"#).answerClass
                == .fail(reason: "PUSH_TOO_MANY_EXPERIENCE_IDS"))
        // A 200 that holds no ticket for this message: retried, never taken as delivered.
        #expect(Self.ticket(200, #"{"data":[]}"#).answerClass == .serverError(reason: "NoTicket: the answer held no ticket for this message", retryAfterMilliseconds: 0))
    }

    @Test func aBatchAnswerIsReadPerMessageInOrder() {
        let body = #"{"data":[{"status":"ok","id":"a"},{"status":"error","message":"m","details":{"error":"DeviceNotRegistered"}},{"status":"ok","id":"c"}]}"#
        let tickets = ExpoResponse.decode(status: 200, body: Array(body.utf8), count: 3)
        #expect(tickets.map(\.ticketID) == ["a", nil, "c"])
        #expect(tickets[1].error == "DeviceNotRegistered")
    }

    @Test func receiptsAreReadIntoVerdicts() {
        let body = #"{"data":{"a":{"status":"ok"},"b":{"status":"error","message":"gone","details":{"error":"DeviceNotRegistered"}},"c":{"status":"error","message":"big","details":{"error":"MessageTooBig"}},"x":{"status":"ok"}}}"#
        let verdicts = ExpoReceipts.decode(body: Array(body.utf8), tickets: ["a", "b", "c", "d"])
        #expect(verdicts == ["a": .delivered, "b": .dropToken(reason: "DeviceNotRegistered"), "c": .fail(reason: "MessageTooBig: big")])
    }
}
