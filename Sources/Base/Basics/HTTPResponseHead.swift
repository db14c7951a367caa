/// The head of an HTTP/1.1 response, for Herald's two HTTP/1.1 servers (the metrics listener and `herald api`).
public enum HTTPResponseHead {
    /// `HTTP/1.1 <status> <reason>`, the framing fields, `extra` in order, and the blank line.
    public static func text(status: Int, contentType: String, contentLength: Int, keepAlive: Bool, extra: [(String, String)] = []) -> String {
        var head: [UInt8] = []
        append(status: status, contentType: contentType, contentLength: contentLength, keepAlive: keepAlive, extra: extra, to: &head)
        return String(decoding: head, as: UTF8.self)
    }

    /// The same head appended as bytes: what a server writes, without building a string first (an HTTP/1.1
    /// answer of the API costs a few hundred instructions this way, several thousand by interpolation).
    public static func append(status: Int, contentType: String, contentLength: Int, keepAlive: Bool, extra: [(String, String)] = [],
                              to out: inout [UInt8]) {
        appendStatic("HTTP/1.1 ", to: &out)
        appendDecimal(status, to: &out)
        out.append(32)
        appendStatic(reasonPhrase(status), to: &out)
        appendStatic("\r\nContent-Type: ", to: &out)
        appendUTF8(contentType, to: &out)
        appendStatic("\r\nContent-Length: ", to: &out)
        appendDecimal(contentLength, to: &out)
        appendStatic(keepAlive ? "\r\nConnection: keep-alive\r\n" : "\r\nConnection: close\r\n", to: &out)
        for (name, value) in extra {
            appendUTF8(name, to: &out)
            appendStatic(": ", to: &out)
            appendUTF8(value, to: &out)
            appendStatic("\r\n", to: &out)
        }
        appendStatic("\r\n", to: &out)
    }

    public static func reasonPhrase(_ status: Int) -> StaticString {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 202: "Accepted"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status"
        }
    }
}
