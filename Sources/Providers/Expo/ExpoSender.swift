import HTTP2
import ProviderKit
import PushCore
import Reactor

/// `PushSender` over Expo's push service: per app its access token and one HTTP/2 pool (`BearerPoolSender`, shared
/// with FCM's and Huawei's), and a batch per app: the messages sent within one loop turn (or `batch_wait_ms`) go as
/// one `POST /--/api/v2/push/send` of up to `batch_size` messages, and each job hears its own ticket. A refused
/// access token is dropped before the core hears it, so the core resends once (a second refusal parks the app, whose
/// pause ends by reading the token file again). Loop-confined.
public final class ExpoSender: BearerPoolBacked {
    public let shared: BearerPoolSender
    private let loop: EventLoop
    private let settings: ExpoSettings
    /// One message of a batch: its bytes (the job's payload with its `to`), who waits for its ticket.
    private struct Waiting {
        let message: [UInt8]
        let afterConnection: Int
        let completion: (PushOutcome) -> Void
    }
    private var waiting: [Int: [Waiting]] = [:]
    private var flushScheduled: Set<Int> = []
    /// Requests sent and messages they carried (tests and the bench read them).
    public private(set) var requests = 0, messages = 0

    public init(apps: [ProviderApp<ExpoAuth, ExpoCredential>], loop: EventLoop, expo: ExpoSettings, logger: Logger) {
        shared = BearerPoolSender(loop: loop, settings: expo.pool, platform: .expo, logger: logger)
        self.loop = loop
        self.settings = expo
        for app in apps {
            let auth = app.auth
            shared.add(index: app.index, name: app.name, path: Self.sendPath, exchange: app.credential.exchange) {
                // Reads the access token file again (a reload after a pause).
                (try auth.load().exchange, Self.sendPath)
            }
        }
    }

    public static let sendPath = "/--/api/v2/push/send"

    /// One message: `{"to":"<token>",` and the payload's members (`{"to":"<token>"}` for an empty payload); the
    /// producer's bytes are not re-encoded.
    public static func message(token: String, payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(payload.count + token.utf8.count + 8)
        out.append(contentsOf: "{\"to\":\"".utf8)
        out.append(contentsOf: token.utf8)
        out.append(UInt8(ascii: "\""))
        var rest = payload.drop { $0 != UInt8(ascii: "{") }.dropFirst()
        let isEmpty = rest.first { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 } == UInt8(ascii: "}")
        if isEmpty { rest = [UInt8(ascii: "}")][...] } else { out.append(UInt8(ascii: ",")) }
        out.append(contentsOf: rest)
        return out
    }

    public func send(_ notification: PushNotification, to destination: Destination, afterConnection: Int,
                     completion: @escaping (PushOutcome) -> Void) -> SendAdmission {
        let app = destination.app
        guard shared.apps[app] != nil else { return .unavailable("app \(app) has no Expo credential") }
        waiting[app, default: []].append(Waiting(message: Self.message(token: notification.deviceToken, payload: notification.payload),
                                                 afterConnection: afterConnection, completion: completion))
        if waiting[app]!.count >= settings.batchSize {
            flush(app)
        } else if flushScheduled.insert(app).inserted {
            _ = loop.schedule(afterMilliseconds: settings.batchWaitMs) { [weak self] in
                self?.flushScheduled.remove(app)
                self?.flush(app)
            }
        }
        return .accepted
    }

    /// Sends what waits for `app`, `batch_size` messages a request.
    private func flush(_ app: Int) {
        guard var pending = waiting.removeValue(forKey: app) else { return }
        while !pending.isEmpty {
            let batch = Array(pending.prefix(settings.batchSize))
            pending.removeFirst(batch.count)
            post(batch, app: app)
        }
    }

    private func post(_ batch: [Waiting], app: Int) {
        var body: [UInt8] = [UInt8(ascii: "[")]
        body.reserveCapacity(batch.reduce(2) { $0 + $1.message.count + 1 })
        for (index, item) in batch.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(contentsOf: item.message)
        }
        body.append(UInt8(ascii: "]"))
        requests += 1
        messages += batch.count
        let delay = settings.receiptDelaySeconds * 1000
        /// The batch's tickets, read once by `read` and handed out by the completion.
        final class Answers { var tickets: [ExpoResponse] = [] }
        let answers = Answers()
        let admission = shared.send(
            app: app, body: body, afterConnection: batch.map(\.afterConnection).max() ?? 0,
            grantRefused: { .transport(.connectionFailed("Expo access token unavailable: " + $0)) },
            read: { response, token in
                var tickets = ExpoResponse.decode(status: response.status, body: response.body, count: batch.count)
                for index in tickets.indices {
                    tickets[index].afterTokenRefresh = token.afterRefusal
                    tickets[index].receiptDelayMilliseconds = delay
                }
                answers.tickets = tickets
                let verdict: BearerPoolSender.TokenVerdict = tickets.first?.refusesAccessToken == true ? .refused : response.status == 200 ? .accepted : .unknown
                return (tickets.first.map(DeliveryResult.expo) ?? .transport(.notProcessed), verdict)
            },
            completion: { outcome in
                for (index, item) in batch.enumerated() {
                    let result = answers.tickets.isEmpty || !outcome.result.isAnswer ? outcome.result : .expo(answers.tickets[index])
                    item.completion(PushOutcome(result: result, connectionID: outcome.connectionID))
                }
            })
        switch admission {
        case .accepted: break
        case .refused: for item in batch { item.completion(PushOutcome(result: .transport(.notProcessed), connectionID: 0)) }
        case .unavailable(let why): for item in batch { item.completion(PushOutcome(result: .transport(.connectionFailed(why)), connectionID: 0)) }
        }
    }

    /// What to check when Expo refused an app's access token.
    public static func credentialHint(_ reason: String) -> String {
        "check the app's access_token_file (expo.dev, the project's Access tokens; enhanced push security on); herald check-config reads it"
    }
}
