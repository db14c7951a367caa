import Foundation
import Glibc
import HeraldTestSupport
@testable import Simulators

/// A running FCM simulator with its own temporary directory, TLS files and generated service account.
/// `stop()` ends the server and removes the directory; every test calls it (via `defer`).
final class FCMFixture: @unchecked Sendable {
    let directory: String
    let server: MockFCMServer
    static let token = "fcm-token-0123456789_abcdefABCDEF:APA91b"

    init(faults: MockFCMFaultScript = MockFCMFaultScript(), _ configure: (inout MockFCMConfiguration) -> Void = { _ in }) throws {
        directory = makeTemporaryDirectory("herald-sim-test")
        var configuration = MockFCMConfiguration()
        configuration.tls = try MockTLSFiles.generate(in: directory)
        configuration.faults = faults
        configuration.recordAccepted = true
        configure(&configuration)
        server = try MockFCMServer(configuration: configuration)
    }

    func stop() {
        server.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    var caFile: String { server.caFile! }

    /// One form POST to the token endpoint, as google-auth and libcurl send it (HTTP/1.1).
    func tokenRequest(assertion: String, grantType: String = FCMTokenGrant.grantType) throws -> CurlAnswer {
        let form = "grant_type=\(grantType.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)&assertion=\(assertion)"
        return try curl(caFile: caFile, [(server.tokenURI, "POST", ["content-type: application/x-www-form-urlencoded"], form)], extra: ["--http1.1"])[0]
    }

    /// A fresh access token through the real token endpoint.
    func accessToken(scope: String = MockFCMScopes.messaging, account: MockServiceAccount? = nil) throws -> String {
        let answer = try tokenRequest(assertion: try (account ?? server.serviceAccount).makeAssertion(audience: server.tokenURI, scope: scope))
        guard answer.status == 200, let token = answer.json["access_token"] as? String else {
            throw ProcessError.failed("token endpoint answered \(answer.status): \(answer.body)")
        }
        return token
    }

    /// One `messages:send` (HTTP/2 unless `http1`).
    func send(_ body: String, bearer: String?, project: String? = nil, http1: Bool = false) throws -> CurlAnswer {
        var headers = ["content-type: application/json"]
        if let bearer { headers.append("authorization: Bearer \(bearer)") }
        return try curl(caFile: caFile, [(server.sendURL(project: project), "POST", headers, body)], extra: http1 ? ["--http1.1"] : [])[0]
    }

    /// A message to `token` with a little data.
    static func message(token: String = FCMFixture.token, extra: String = "") -> String {
        #"{"message":{"token":"\#(token)","data":{"k":"v"}\#(extra)}}"#
    }
}

extension CurlAnswer {
    /// `error.details[]` entry of type FcmError: its errorCode.
    var fcmErrorCode: String? {
        let details = (json["error"] as? [String: Any])?["details"] as? [[String: Any]] ?? []
        return details.first { $0["@type"] as? String == "type.googleapis.com/google.firebase.fcm.v1.FcmError" }?["errorCode"] as? String
    }
    var errorStatus: String? { (json["error"] as? [String: Any])?["status"] as? String }
    var errorCode: Int? { (json["error"] as? [String: Any])?["code"] as? Int }
    var errorMessage: String? { (json["error"] as? [String: Any])?["message"] as? String }
    var fieldViolations: [String] {
        let details = (json["error"] as? [String: Any])?["details"] as? [[String: Any]] ?? []
        return details.flatMap { ($0["fieldViolations"] as? [[String: Any]] ?? []).compactMap { $0["field"] as? String } }
    }
}
