/// Everything the simulator can refuse at set-up time, with enough words to fix the cause.
public enum SimulatorError: Error, CustomStringConvertible, Sendable {
    case openSSL(String)
    case file(String)
    case configuration(String)
    case nghttp2(String)

    public var description: String {
        switch self {
        case .openSSL(let text): return "OpenSSL: \(text)"
        case .file(let text): return "file: \(text)"
        case .configuration(let text): return "configuration: \(text)"
        case .nghttp2(let text): return "nghttp2: \(text)"
        }
    }
}
