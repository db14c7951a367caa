/// `Retry-After` as delta-seconds (RFC 9110 section 10.2.3), spaces and tabs around it allowed; an HTTP-date is
/// not read (FCM and the push services send seconds). Shared by every provider that reads the header.
public func parseRetryAfterSeconds(_ value: String) -> Int64? {
    var s = Substring(value)
    while s.first == " " || s.first == "\t" { s = s.dropFirst() }
    while s.last == " " || s.last == "\t" { s = s.dropLast() }
    guard !s.isEmpty, s.utf8.count <= 9, s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
    return Int64(s)
}
