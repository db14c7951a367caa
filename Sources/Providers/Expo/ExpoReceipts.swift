import Basics
import CurlHTTP
import ProviderKit
import PushCore

/// Expo's `POST /--/api/v2/push/getReceipts`: the ask for up to 1,000 tickets' receipts, and its answer
/// `{"data":{"<id>":{"status":"ok"},"<id>":{"status":"error","message":"...","details":{"error":"..."}}}}` read into
/// a verdict per ticket (none for a receipt not there yet). Blocking, for the receipts poller's thread.
public enum ExpoReceipts {
    public static let path = "/--/api/v2/push/getReceipts"

    /// A receipt's verdict: `ok` delivered, `DeviceNotRegistered` drops the token, any other error fails the token
    /// with Expo's code (and its message after a colon).
    public static func verdict(status: String?, error: String?, message: String?) -> ReceiptVerdict? {
        switch (status, error) {
        case ("ok"?, _): return .delivered
        case ("error"?, "DeviceNotRegistered"?): return .dropToken(reason: "DeviceNotRegistered")
        case ("error"?, let code): return .fail(reason: (code ?? "ReceiptError") + (message.map { ": " + $0 } ?? ""))
        default: return nil
        }
    }

    /// The answer's receipts, for the asked `tickets` only.
    public static func decode(body: [UInt8], tickets: Set<String>) -> [String: ReceiptVerdict] {
        var out: [String: ReceiptVerdict] = [:]
        body.withUnsafeBufferPointer { buffer in
            guard (try? JSONScanner.validate(buffer))?.kind == .object else { return }
            let scanner = JSONScanner(buffer)
            for (key, data) in scanner.members(at: 0) where key == "data" && data.kind == .object {
                for (id, receipt) in scanner.members(at: data.range.lowerBound) where receipt.kind == .object && tickets.contains(id) {
                    var status: String?, error: String?, message: String?
                    for (k, v) in scanner.members(at: receipt.range.lowerBound) {
                        switch (k, v.kind) {
                        case ("status", .string): status = ExpoResponse.text(scanner, v)
                        case ("message", .string): message = ExpoResponse.text(scanner, v)
                        case ("details", .object):
                            for (dk, dv) in scanner.members(at: v.range.lowerBound) where dk == "error" && dv.kind == .string { error = ExpoResponse.text(scanner, dv) }
                        default: break
                        }
                    }
                    out[id] = verdict(status: status, error: error, message: message)
                }
            }
        }
        return out
    }

    /// `{"ids":[...]}`; ticket ids are Expo's (letters, digits, dashes), escaped all the same.
    public static func body(_ tickets: [String]) -> [UInt8] {
        var out = Array("{\"ids\":[".utf8)
        for (index, ticket) in tickets.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            appendJSONString(ticket, to: &out)
        }
        out.append(contentsOf: "]}".utf8)
        return out
    }

    /// Asks once (blocking): the verdicts Expo has, or why there was no usable answer.
    public static func ask(_ tickets: [String], credential: ExpoCredential, settings: ExpoSettings) -> Result<[String: ReceiptVerdict], ReceiptAskFailure> {
        let options = CurlPost.Options(timeoutMilliseconds: settings.pool.requestTimeoutMs, connectTimeoutMilliseconds: settings.pool.connectTimeoutMs,
                                       caFile: settings.pool.caFile, proxy: settings.pool.proxy)
        guard let session = CurlSession(options, keepBodyBytes: 4 << 20) else { return .failure(ReceiptAskFailure("libcurl could not be set up")) }
        let headers = ["Content-Type: application/json", "Accept: application/json", "Authorization: " + credential.header]
        switch session.post(url: settings.pool.url + path, headers: headers, body: body(tickets)) {
        case .failure(let failure): return .failure(ReceiptAskFailure("getReceipts: \(failure)"))
        case .success(let answer) where answer.status != 200:
            return .failure(ReceiptAskFailure("getReceipts answered HTTP \(answer.status)"))
        case .success(let answer): return .success(decode(body: answer.body, tickets: Set(tickets)))
        }
    }
}
