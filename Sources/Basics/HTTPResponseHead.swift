/// The head of an HTTP/1.1 response, for Herald's two HTTP/1.1 servers (the metrics listener and `herald api`).
public enum HTTPResponseHead {
    /// `HTTP/1.1 <status> <reason>`, the framing fields, `extra` in order, and the blank line.
    public static func text(status: Int, contentType: String, contentLength: Int, keepAlive: Bool, extra: [(String, String)] = []) -> String {
        var head = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
        head += "Content-Type: \(contentType)\r\nContent-Length: \(contentLength)\r\n"
        head += keepAlive ? "Connection: keep-alive\r\n" : "Connection: close\r\n"
        for (name, value) in extra { head += "\(name): \(value)\r\n" }
        return head + "\r\n"
    }

    public static func reasonPhrase(_ status: Int) -> String {
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
