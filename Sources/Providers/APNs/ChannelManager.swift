import Basics
import HTTP2
import ProviderKit
import PushCore
import Reactor

/// One channel-management call for a configured app, from any thread: loads the app's credential, connects to the
/// environment's channel-management host on a loop of its own, runs the call and waits for the answer. For
/// `herald channels` and tests; the worker never manages channels.
public enum ChannelManager {
    /// - Parameter url: overrides `apns.channels_<environment>_url`.
    /// - Throws: `ConfigurationError` for a bad URL or credential; the call's own failures are in the result.
    public static func perform(
        _ operation: ChannelManagement.Operation, app: Configuration.AppSettings, environment: APNsEnvironment,
        apns: Configuration.APNsSettings, url: String? = nil, requestID: String? = nil, timeoutMilliseconds: Int? = nil
    ) throws -> Result<APNsChannelClient.Reply, APNsChannelClient.Failure> {
        let credentials = try APNsCredential.load(app.apnsAuth, caFile: apns.caFile)
        let urlText = url ?? apns.channelsURL(environment)
        guard let endpoint = APNsURL(urlText) else { throw ConfigurationError(["channel-management URL must look like https://host[:port], got '\(urlText)'"]) }
        let timeout = timeoutMilliseconds ?? apns.requestTimeoutMs
        let loop = try EventLoop.startThread(name: "herald-channels")
        defer { loop.stop(); loop.waitUntilStopped() }
        let answer = LockedValue<Result<APNsChannelClient.Reply, APNsChannelClient.Failure>?>(nil)
        let options = HTTP2ConnectionOptions(connectTimeoutMilliseconds: apns.connectTimeoutMs)
        let bundleID = app.bundleID
        let proxy = apns.proxy
        try loop.submit {
            let client = try APNsChannelClient(
                loop: loop, host: endpoint.host, port: endpoint.port, tls: credentials.tls, bundleID: bundleID,
                tokenCache: credentials.tokenCache, requestTimeoutMilliseconds: timeout, proxy: proxy, connectionOptions: options)
            client.perform(operation, requestID: requestID) { result in
                answer.withLock { $0 = result }
                client.close(graceful: false)
            }
        }
        let waited = answer.wait(until: { $0 != nil }, timeoutSeconds: Double(timeout + 15_000) / 1000, then: { $0 }) ?? nil
        return waited ?? .failure(.transport(.timedOut))
    }
}
