import Foundation
import HeraldTestSupport
@testable import Simulators

/// A running Push Kit simulator with its own temporary directory and TLS files, and one app (10000001, secret
/// "s3cret"). `stop()` ends the server and removes the directory; every test calls it (via `defer`).
final class HMSFixture: @unchecked Sendable {
    let directory: String
    let server: MockHMSServer
    static let appID = "10000001"
    static let secret = "s3cret"
    /// Shaped like an HMS token (they are ~130 characters of base64-ish text).
    static let token = "IQAAAACy0kYQAADZ3m4_good-token-0001-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"

    init(faults: MockHMSFaultScript = MockHMSFaultScript(), _ configure: (inout MockHMSConfiguration) -> Void = { _ in }) throws {
        directory = makeTemporaryDirectory("herald-sim-test")
        var configuration = MockHMSConfiguration()
        configuration.tls = try MockTLSFiles.generate(in: directory)
        configuration.apps = [MockHMSApp(appId: Self.appID, clientSecret: Self.secret), MockHMSApp(appId: "20000002", clientSecret: "other")]
        configuration.faults = faults
        configuration.recordAccepted = true
        configure(&configuration)
        server = try MockHMSServer(configuration: configuration)
    }

    func stop() {
        server.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    var caFile: String { server.caFile! }

    /// One form POST to the token endpoint, as Huawei's SDKs send it (HTTP/1.1).
    func tokenRequest(_ form: String) throws -> CurlAnswer {
        try curl(caFile: caFile, [(server.tokenURL, "POST", ["content-type: application/x-www-form-urlencoded;charset=utf-8"], form)], extra: ["--http1.1"])[0]
    }

    /// A fresh access token through the real token endpoint.
    func accessToken(app: String = HMSFixture.appID, secret: String = HMSFixture.secret) throws -> String {
        let answer = try tokenRequest("grant_type=client_credentials&client_id=\(app)&client_secret=\(secret)")
        guard answer.status == 200, let token = answer.json["access_token"] as? String else {
            throw ProcessError.failed("token endpoint answered \(answer.status): \(answer.body)")
        }
        return token
    }

    /// One `messages:send` (HTTP/2 unless `http1`).
    func send(_ body: String, bearer: String?, app: String? = nil, http1: Bool = false) throws -> CurlAnswer {
        var headers = ["content-type: application/json;charset=utf-8"]
        if let bearer { headers.append("authorization: Bearer \(bearer)") }
        return try curl(caFile: caFile, [(server.sendURL(app: app), "POST", headers, body)], extra: http1 ? ["--http1.1"] : [])[0]
    }

    /// A message to `tokens` with a notification and data.
    static func message(_ tokens: [String] = [HMSFixture.token], extra: String = "") -> String {
        let list = tokens.map { "\"\($0)\"" }.joined(separator: ",")
        return #"{"validate_only":false,"message":{"data":"{\"k\":\"v\"}","notification":{"title":"t","body":"b"}\#(extra),"token":[\#(list)]}}"#
    }
}

extension CurlAnswer {
    /// Push Kit's `code` (a string of eight digits).
    var hmsCode: String? { json["code"] as? String }
    var hmsMsg: String? { json["msg"] as? String }
}
