import Basics

/// Parsing and writing HTTP/1.1 heads, pure so tests feed it garbage directly.
enum HTTPRequestHead {
    /// The index just past the blank line ending the head, if it has arrived.
    static func end(of bytes: [UInt8]) -> Int? {
        guard bytes.count >= 2 else { return nil }
        var i = 0
        while i + 1 < bytes.count {
            if bytes[i] == 10 {
                if bytes[i + 1] == 10 { return i + 2 }
                if bytes[i + 1] == 13, i + 2 < bytes.count, bytes[i + 2] == 10 { return i + 3 }
            }
            i += 1
        }
        return nil
    }

    /// The request line: `METHOD SP target SP HTTP/1.x`; nil for anything else.
    static func parse(_ head: ArraySlice<UInt8>) -> HTTPListener.Request? {
        let line = head.prefix { $0 != 13 && $0 != 10 }
        let parts = line.split(separator: 32, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2].starts(with: Array("HTTP/1.".utf8)), let first = parts[1].first, first == UInt8(ascii: "/") else {
            return nil
        }
        guard parts[0].allSatisfy({ $0 >= 65 && $0 <= 90 }), !parts[0].isEmpty,
              parts[1].allSatisfy({ $0 > 32 && $0 < 127 }) else { return nil }
        let target = String(decoding: parts[1], as: UTF8.self)
        let path: Substring
        let query: Substring
        if let mark = target.firstIndex(of: "?") {
            path = target[..<mark]
            query = target[target.index(after: mark)...]
        } else {
            path = target[...]
            query = ""
        }
        return HTTPListener.Request(method: String(decoding: parts[0], as: UTF8.self), path: String(path), query: String(query))
    }

    static func serialize(_ response: HTTPListener.Response, omitBody: Bool) -> [UInt8] {
        let head = HTTPResponseHead.text(status: response.status, contentType: response.contentType, contentLength: response.body.count,
                                         keepAlive: false, extra: [("Cache-Control", "no-store")] + response.headers)
        var bytes = Array(head.utf8)
        if !omitBody { bytes += response.body }
        return bytes
    }
}
