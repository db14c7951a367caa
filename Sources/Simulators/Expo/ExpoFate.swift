/// What the Expo simulator does with a push token, by the text inside its brackets (`ExponentPushToken[gone-1]`):
/// its ticket, and for an `ok` ticket its receipt. Anything else is delivered.
enum ExpoFate: String, CaseIterable, Sendable {
    /// Ticket `ok`, receipt `ok` at once.
    case ok
    /// Ticket error `DeviceNotRegistered`.
    case gone
    /// Ticket error `MessageRateExceeded`.
    case rate
    /// Ticket error `MessageTooBig`.
    case big
    /// Ticket `ok`, receipt error `DeviceNotRegistered`.
    case rgone
    /// Ticket `ok`, receipt error `InvalidCredentials`.
    case rerr
    /// Ticket `ok`, receipt `ok` only `--receipt-late-ms` after the ticket.
    case late
    /// Ticket `ok`, no receipt ever.
    case never

    /// The fate a token names (the longest matching prefix of its inside), `ok` for any other.
    init(token: String) {
        let inside = token.drop { $0 != "[" }.dropFirst()
        self = Self.allCases.filter { $0 != .ok && inside.hasPrefix($0.rawValue) }.max { $0.rawValue.count < $1.rawValue.count } ?? .ok
    }

    /// A ticket error's code, nil for an `ok` ticket.
    var ticketError: String? {
        switch self {
        case .gone: "DeviceNotRegistered"
        case .rate: "MessageRateExceeded"
        case .big: "MessageTooBig"
        default: nil
        }
    }

    /// An `ok` ticket's receipt error, nil for a receipt `ok` (or none).
    var receiptError: String? {
        switch self {
        case .rgone: "DeviceNotRegistered"
        case .rerr: "InvalidCredentials"
        default: nil
        }
    }
}
